package web

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// BenchmarkRunPage renders one page (200 cases) of a 10,000-case run, as a logged-in operator:
// the report is at hand (a finished run's is cached by the coordinator), so this is the
// viewer's own work — filtering, paginating and rendering.
func BenchmarkRunPage(b *testing.B) {
	src := newFake()
	st, rep, _ := bigRun("big", 10_000, pb.RunState_RUN_STATE_COMPLETED, false, "")
	src.add(st, rep, nil)
	s := testServer(b, src)
	cookie := login(b, s, operatorToken)
	for _, bc := range []struct{ name, target string }{
		{"first page", "/runs/big"},
		{"last page", "/runs/big?page=50"},
		{"failing of a skill", "/runs/big?status=failing&skill=skill-010"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r := httptest.NewRequest("GET", bc.target, nil)
			r.AddCookie(cookie)
			for b.Loop() {
				w := httptest.NewRecorder()
				s.ServeHTTP(w, r)
				if w.Code != http.StatusOK {
					b.Fatalf("status %d", w.Code)
				}
			}
		})
	}
}

// BenchmarkReport writes the HTML report of a 10,000-case run whose every job left a stdout,
// a stderr and an output file; "bytes" is the file's size.
func BenchmarkReport(b *testing.B) {
	for _, bc := range []struct {
		name   string
		output string
	}{
		{"4 KiB outputs", strings.Repeat("line of output\n", 4<<10/15)},
		{"64 KiB hostile outputs", strings.Repeat("<b>&", 16<<10)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			st, rep, res := bigRun("big", 10_000, pb.RunState_RUN_STATE_COMPLETED, true, bc.output)
			in := ReportInput{Status: st, Report: rep, Results: replay(res)}
			var n int
			for b.Loop() {
				cw := &countingWriter{}
				if err := WriteReport(cw, in); err != nil {
					b.Fatal(err)
				}
				n = cw.n
			}
			b.ReportMetric(float64(n), "bytes")
		})
	}
}

type countingWriter struct{ n int }

func (c *countingWriter) Write(p []byte) (int, error) { c.n += len(p); return len(p), nil }

var _ io.Writer = (*countingWriter)(nil)
