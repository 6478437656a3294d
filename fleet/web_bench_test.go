package fleet

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/internal/testutil"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/skill"
	"github.com/skillfleet/skillfleet/suite"
)

// chattyPasser passes every job with 2 KiB of stdout, about what an agent's answer weighs.
type chattyPasser struct{}

func (chattyPasser) Execute(context.Context, *pb.Job, string) (*pb.Result, error) {
	return &pb.Result{Verdict: pb.Verdict_VERDICT_PASSED, Stdout: strings.Repeat("a line the agent printed\n", 2048/25),
		Assertions: []*pb.AssertionResult{{Type: "output_contains", Passed: true}}}, nil
}

// BenchmarkCasePage serves a case page of a finished 10,000-case run (100 skills × 100 prompt
// cases) from the in-process coordinator: its results are read back from the results stream,
// which is what a case page costs on a real coordinator (the report itself is cached).
func BenchmarkCasePage(b *testing.B) {
	const skills, cases = 100, 100
	ctx := context.Background()
	root := filepath.Join(b.TempDir(), "big")
	var list strings.Builder
	for c := range cases {
		fmt.Fprintf(&list, "  - {name: c%03d, input: hi, assertions: {output_contains: [line]}}\n", c)
	}
	for s := range skills {
		dir := filepath.Join(root, fmt.Sprintf("s%03d", s))
		writeFile(b, filepath.Join(dir, "SKILL.md"), fmt.Sprintf("---\nname: s%03d\ndescription: Synthetic skill %d. Use when measuring the viewer.\ntest:\n  cases: cases.yaml\n---\n\nAnswer.\n", s, s))
		writeFile(b, filepath.Join(dir, "cases.yaml"), "cases:\n"+list.String())
	}
	f, err := StartInProcess(ctx, InProcessConfig{DataDir: b.TempDir(), Workers: 2, Slots: 8, Executor: chattyPasser{}, Log: zap.NewNop()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = f.Close(ctx) })
	st := suite.Load([]string{root}, skill.Options{})
	var bundle bytes.Buffer
	if _, err := suite.WriteBundle(&bundle, st.Graph, st.Catalog.Skills()); err != nil {
		b.Fatal(err)
	}
	run, err := f.Coordinator.Submit(ctx, bytes.NewReader(bundle.Bytes()), &pb.RunSpec{Name: "big"})
	if err != nil {
		b.Fatal(err)
	}
	testutil.Eventually(b, 10*time.Minute, 20*time.Millisecond, func() bool {
		cur, _ := f.Coordinator.Status(ctx, run.GetId())
		return cur.GetState() == pb.RunState_RUN_STATE_COMPLETED
	}, "run %s did not complete", run.GetId())
	if rep, err := f.Coordinator.Report(ctx, run.GetId()); err != nil || rep.Summary.Passed != skills*cases {
		b.Fatalf("report: %v; want %d cases passed", err, skills*cases)
	}
	h, err := CoordinatorHandler(f.Coordinator, coordinator.APIConfig{Token: "bench-token"}, WebConfig{}, Tenancy{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	login := httptest.NewRequest("POST", "/login", strings.NewReader(url.Values{"token": {"bench-token"}, "next": {"/"}}.Encode()))
	login.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	lw := httptest.NewRecorder()
	h.ServeHTTP(lw, login)
	if len(lw.Result().Cookies()) == 0 {
		b.Fatalf("login: %d, no cookie", lw.Code)
	}
	cookie := lw.Result().Cookies()[0]
	for _, bc := range []struct{ name, target string }{
		{"run page", "/runs/" + run.GetId()},
		{"case page", "/runs/" + run.GetId() + "/cases?" + url.Values{"skill": {"s050"}, "case": {"c050"}}.Encode()},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				r := httptest.NewRequest("GET", bc.target, nil)
				r.AddCookie(cookie)
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if w.Code != http.StatusOK {
					b.Fatalf("%s: %d: %.300s", bc.target, w.Code, w.Body)
				}
			}
		})
	}
}
