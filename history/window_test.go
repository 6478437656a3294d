package history

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

func TestWindowVerdictsAndPreviousRunOf(t *testing.T) {
	forEachBackend(t, func(t *testing.T, target string) {
		s := open(t, target)
		const sc = pb.Priority_PRIORITY_SCHEDULED
		runs := []*pb.RunStatus{
			status("w1", "alpha", sc, pb.RunState_RUN_STATE_COMPLETED, t0),
			status("w2", "alpha", sc, pb.RunState_RUN_STATE_FAILED, t0.Add(time.Hour)),
			status("w3", "alpha", sc, pb.RunState_RUN_STATE_COMPLETED, t0.Add(2*time.Hour)),
			status("w4", "alpha", sc, pb.RunState_RUN_STATE_RUNNING, t0.Add(3*time.Hour)),
			status("x1", "beta", sc, pb.RunState_RUN_STATE_COMPLETED, t0.Add(time.Hour)),
		}
		for _, st := range runs {
			var rows []Result
			// c1 is in every run; c2 only from w3 on.
			for _, cs := range []string{"c1", "c2"} {
				if cs == "c2" && (st.GetId() == "w1" || st.GetId() == "w2") {
					continue
				}
				res := result(st.GetId(), "j-"+cs, "sk", cs, 1, pb.Verdict_VERDICT_PASSED, "", t0)
				rows = append(rows, FromResult(res, st.GetSpec(), t0))
			}
			if err := s.write(ctx(), []Run{FromStatus(st)}, rows); err != nil {
				t.Fatal(err)
			}
		}
		tests := []struct {
			name    string
			n       int
			exclude string
			want    []string // cell: runs, newest first
		}{
			{"the last two finished runs", 2, "", []string{"c1:w3,w2", "c2:w3"}},
			{"excluding the reported run", 2, "w3", []string{"c1:w2,w1"}},
			{"more than stored", 10, "", []string{"c1:w3,w2,w1", "c2:w3"}},
			{"none", 0, "", nil},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				cells, err := s.WindowVerdicts(ctx(), "", "alpha", "scheduled", tt.n, tt.exclude)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, c := range cells {
					var ids []string
					for _, v := range c.Verdicts {
						ids = append(ids, v.RunID)
					}
					got = append(got, c.Case+":"+strings.Join(ids, ","))
				}
				if !slices.Equal(got, tt.want) {
					t.Errorf("got %v, want %v", got, tt.want)
				}
			})
		}
		// The reported run need not be stored: w4 is unknown to PreviousRun's lookup by id
		// until its rows arrive, PreviousRunOf needs only its suite, lane and time.
		prev, ok, err := s.PreviousRunOf(ctx(), "", "alpha", "scheduled", t0.Add(5*time.Hour), "w9")
		if err != nil || !ok || prev.ID != "w3" {
			t.Errorf("PreviousRunOf = %s %v %v, want w3 (the last completed)", prev.ID, ok, err)
		}
		if _, ok, err := s.PreviousRunOf(ctx(), "", "alpha", "scheduled", t0, "w1"); ok || err != nil {
			t.Errorf("the first run has a previous run: %v %v", ok, err)
		}
	})
}

func TestWriterFlush(t *testing.T) {
	forEachBackend(t, func(t *testing.T, target string) {
		s := open(t, target)
		// Neither the size nor the time would write these soon: only Flush does.
		w := NewWriter(s, WriterConfig{BatchRows: 1000, FlushEvery: time.Hour}, zap.NewNop())
		st := status("f1", "alpha", 0, pb.RunState_RUN_STATE_RUNNING, t0)
		for i := range 7 {
			w.Record(result("f1", fmt.Sprint("j", i), "sk", "c", 0, pb.Verdict_VERDICT_PASSED, "", t0), st)
		}
		if err := w.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := count(t, s, "f1"); n != 7 {
			t.Errorf("%d rows after Flush, want 7", n)
		}
		if err := w.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(context.Background()); err == nil {
			t.Error("Flush after Close succeeded")
		}
	})
}
