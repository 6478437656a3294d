package coordinator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/coordinator"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/queue/queuetest"
	"github.com/skillfleet/skillfleet/report"
	"github.com/skillfleet/skillfleet/stats"
	"github.com/skillfleet/skillfleet/verdict"
)

// autoSuite is n prompt cases of `runs: auto` (max_runs 20, confidence 0.8).
func autoSuite(n int) string {
	var b strings.Builder
	b.WriteString("cases:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - {name: c%02d, input: hi, runs: auto, max_runs: 20, confidence: 0.8, assertions: {output_contains: [x]}}\n", i)
	}
	return b.String()
}

// script says whether epoch e (1-based) of case i passes in an arm ("" for with_skill).
type script func(arm string, i, e int) bool

// runScripted submits a run of n auto cases with a without_skill baseline and answers every
// job it publishes by the script, until the run completes. With restartAfter > 0 the
// coordinator is restarted once that many results are counted, and the new one resumes the
// run. It returns the final status, the report, the jobs published by "arm/case/epoch", and
// the report as a new coordinator rebuilds it from the results once the stored one is gone.
func runScripted(t *testing.T, n int, sc script, restartAfter int) (*pb.RunStatus, report.Report, map[string]bool, func() report.Report) {
	t.Helper()
	_, _, topo := queuetest.Start(t)
	ctx := context.Background()
	cfg := coordinator.Config{DataDir: t.TempDir(), Agents: []string{"fixture-agent"}}
	c := startOn(t, topo, cfg)
	replied := 0
	st, err := c.Submit(ctx, strings.NewReader(string(bundleOf(t, writeFiles(t, map[string]string{
		"s/SKILL.md": okSkill, "s/cases.yaml": autoSuite(n),
	})))), &pb.RunSpec{Baseline: "without_skill"})
	if err != nil {
		t.Fatal(err)
	}
	if !st.GetCurtailed() || st.GetTotalJobs() != int32(2*n*20) {
		t.Fatalf("admitted: curtailed %v, %d jobs; want curtailed, %d", st.GetCurtailed(), st.GetTotalJobs(), 2*n*20)
	}
	published := map[string]bool{}
	key := func(j *pb.Job) string {
		return fmt.Sprintf("%s/%s/%d", cmpOr(j.GetArm(), "with_skill"), j.GetCaseName(), j.GetEpoch())
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		fin, err := c.Status(ctx, st.GetId())
		if err != nil {
			t.Fatal(err)
		}
		if fin.GetState() == pb.RunState_RUN_STATE_COMPLETED {
			rep, err := c.Report(ctx, st.GetId())
			if err != nil {
				t.Fatal(err)
			}
			rebuilt := func() report.Report {
				t.Helper()
				if err := topo.DeleteReport(ctx, st.GetId()); err != nil {
					t.Fatal(err)
				}
				rep, err := startOn(t, topo, cfg).Report(ctx, st.GetId())
				if err != nil {
					t.Fatal(err)
				}
				return rep
			}
			return fin, rep, published, rebuilt
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run did not complete; %d jobs published", len(published))
		}
		for k, tj := range takeKeyed(t, topo, 0, key) {
			if published[k] {
				t.Errorf("job %s published twice", k)
			}
			published[k] = true
			arm := tj.GetArm()
			if arm == "with_skill" {
				arm = ""
			}
			var i int
			if _, err := fmt.Sscanf(tj.GetCaseName(), "c%02d", &i); err != nil {
				t.Fatal(err)
			}
			v := pb.Verdict_VERDICT_FAILED
			if sc(arm, i, int(tj.GetEpoch())) {
				v = pb.Verdict_VERDICT_PASSED
			}
			reply(t, topo, tj, v)
			if replied++; replied == restartAfter {
				eventually(t, "the results to be counted", func() bool {
					s, err := c.Status(ctx, st.GetId())
					return err == nil && int(s.GetDoneJobs()) == restartAfter
				})
				_ = c.Close(ctx)
				c = startOn(t, topo, cfg)
			}
		}
	}
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// allEpochsVerdict is the verdict a case's sequential rule gives over all 20 epochs of the
// script: what a run that never stopped would say.
func allEpochsVerdict(t *testing.T, sc script, arm string, i int) pb.Verdict {
	t.Helper()
	test, err := stats.NewSPRT(0.8, stats.DefaultSPRTDelta, stats.DefaultSPRTAlpha, stats.DefaultSPRTBeta)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]pb.Verdict, 20)
	for e := range out {
		out[e] = pb.Verdict_VERDICT_FAILED
		if sc(arm, i, e+1) {
			out[e] = pb.Verdict_VERDICT_PASSED
		}
	}
	v, _, _ := verdict.Sequential{Test: test, MaxRuns: 20, Confidence: 0.8}.Decide(out)
	return v
}

// largeDifference: with the skill every epoch passes; without it, even cases fail every epoch
// and odd ones pass all but epochs 3 and 8.
func largeDifference(arm string, i, e int) bool {
	if arm == "" {
		return true
	}
	return i%2 == 1 && e != 3 && e != 8
}

// TestGroupSequentialBaseline: a run with a baseline whose cases are `runs: auto` runs both
// arms in lockstep to each look, stops the comparison as soon as it is significant (a large
// difference) or futile (no difference, too few cases ever to be significant), withdraws the
// baseline arm's remaining epochs, lets the with_skill cases go on until their own sequential
// test decides, and reports where and why it stopped. No verdict passes a case all its epochs
// would not pass, and a with_skill verdict is exactly the one all its epochs give.
func TestGroupSequentialBaseline(t *testing.T) {
	for _, c := range []struct {
		name string
		n    int
		sc   script
		// the comparison's stop, and the jobs published (of 2·n·20)
		look, epochs int
		reason       string
		published    int
		// stoppedUndecided counts the baseline cases undecided for the stop: skipped.
		stoppedUndecided int
		// restartAfter restarts the coordinator after that many results (0: never).
		restartAfter int
	}{
		{
			// With the skill every epoch passes; without it, even cases fail every epoch and
			// odd ones pass all but epochs 3 and 8 (their test undecided at epoch 10). Ten
			// cases all better by the same sign: p = 2^-9 = 0.00195 at look 2 (10 epochs),
			// below its level 0.0056; look 1's 8.9e-5 is out of reach of ten cases and was
			// carried to look 2. The with_skill cases pass at epoch 12 (their SPRT), so they
			// run two more epochs: 10·2·10 + 10·2 = 220 jobs.
			name: "large difference stops significant",
			n:    10,
			sc:   largeDifference,
			look: 2, epochs: 10, reason: stats.StopSignificant, published: 220, stoppedUndecided: 5,
		},
		{
			// The same, with the coordinator restarted after 205 results: the comparison
			// stopped at look 2 and five with_skill cases have their eleventh epoch. The new
			// coordinator takes the looks again over the results replayed, to the same stop,
			// and publishes the rest as the first would have.
			name: "large difference, restarted after the stop",
			n:    10,
			sc:   largeDifference,
			look: 2, epochs: 10, reason: stats.StopSignificant, published: 220, stoppedUndecided: 5,
			restartAfter: 205,
		},
		{
			// Both arms alike, five cases: no exact test of five cases reaches p ≤ 0.05, so
			// the comparison is futile at its first look (5 epochs). The with_skill cases,
			// passing every epoch, go on to their SPRT's pass at 12: 5·2·5 + 5·7 = 85 jobs.
			name: "no difference stops futile",
			n:    5,
			sc:   func(arm string, i, e int) bool { return true },
			look: 1, epochs: 5, reason: stats.StopFutile, published: 85, stoppedUndecided: 5,
		},
		{
			// Both arms alike, ten cases that pass all but every fifth epoch: the difference
			// is 0 at every look but could still become significant until the last, so
			// every epoch of both arms runs, the with_skill ones in lockstep too.
			name: "no difference runs to the end",
			n:    10,
			sc:   func(arm string, i, e int) bool { return e%5 != 0 },
			look: 4, epochs: 20, reason: stats.StopMax, published: 400,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			fin, rep, published, rebuilt := runScripted(t, c.n, c.sc, c.restartAfter)
			if len(published) != c.published {
				t.Errorf("%d jobs published, want %d", len(published), c.published)
			}
			if got := int(fin.GetWithdrawnJobs()); got != 2*c.n*20-c.published || int(fin.GetTotalJobs()) != c.published {
				t.Errorf("status: %d withdrawn, %d total; want %d, %d", got, fin.GetTotalJobs(), 2*c.n*20-c.published, c.published)
			}
			for k := range published {
				var arm, name string
				var e int
				parts := strings.Split(k, "/")
				arm, name = parts[0], parts[1]
				if _, err := fmt.Sscanf(parts[2], "%d", &e); err != nil {
					t.Fatal(err)
				}
				if arm == "without_skill" && e > c.epochs {
					t.Errorf("baseline job %s/%d published after the comparison stopped at epoch %d", name, e, c.epochs)
				}
			}
			if len(rep.Sequential) != 1 {
				t.Fatalf("report: sequential %+v, want one skill", rep.Sequential)
			}
			s := rep.Sequential[0]
			if s.Skill != "s" || s.StoppedAtLook != c.look || s.EpochsRun != c.epochs || s.Reason != c.reason || s.Epochs != 20 || len(s.PLooks) != c.look {
				t.Errorf("sequential: %+v; want stopped at look %d, epoch %d of 20, %s", s, c.look, c.epochs, c.reason)
			}
			undecided := 0
			for _, cs := range rep.Cases {
				if cs.Arm != "" && cs.Status == report.StatusSkipped {
					undecided++
				}
				var i int
				if _, err := fmt.Sscanf(cs.Case, "c%02d", &i); err != nil {
					t.Fatal(err)
				}
				all := report.StatusOf(allEpochsVerdict(t, c.sc, cs.Arm, i))
				switch {
				case cs.Arm == "" && cs.Status != all:
					t.Errorf("with_skill %s: %s, all epochs give %s", cs.Case, cs.Status, all)
				case (cs.Status == report.StatusPassed || cs.Status == report.StatusFailed) && cs.Status != all:
					t.Errorf("%s %s: %s, all epochs give %s", cs.Arm, cs.Case, cs.Status, all)
				case cs.Arm != "" && cs.EpochsRun != c.epochs:
					t.Errorf("%s %s: %d epochs run, want the comparison's %d", cs.Arm, cs.Case, cs.EpochsRun, c.epochs)
				case cs.Arm != "" && cs.Status == report.StatusSkipped && (!cs.Undecided || !strings.Contains(cs.Reason, "comparison of its skill stopped")):
					t.Errorf("%s %s: skipped without saying why: undecided %v, %q", cs.Arm, cs.Case, cs.Undecided, cs.Reason)
				}
			}
			if undecided != c.stoppedUndecided {
				t.Errorf("%d baseline cases undecided for the stop, want %d", undecided, c.stoppedUndecided)
			}
			// A run finished before coordinators stored reports, or whose stored report was
			// lost, is read from its results: the same report, stop and verdicts included.
			want, err := json.Marshal(rep)
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.Marshal(rebuilt())
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("the report rebuilt from the results\n%s\nwant the stored one\n%s", got, want)
			}
		})
	}
}
