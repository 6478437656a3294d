package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/internal/clock"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	verdictpkg "github.com/skillfleet/skillfleet/verdict"
)

func commandJob(id string, as ...*pb.Assertion) *pb.Job {
	return &pb.Job{Id: id, RunId: "r1", Kind: pb.CaseKind_CASE_KIND_COMMAND, Assertions: as}
}

var exitZero = &pb.Assertion{Type: "exit_code"}

// TestSimExecutorVerdicts: the job's own assertions decide, so the simulator's passes are
// ones the report counts (verdict.Counted), and its failures are failures.
func TestSimExecutorVerdicts(t *testing.T) {
	for _, tc := range []struct {
		name     string
		failRate float64
		job      *pb.Job
		want     pb.Verdict
		exit     int32
	}{
		{"exit_code 0 passes when the command exits 0", 0, commandJob("j", exitZero), pb.Verdict_VERDICT_PASSED, 0},
		{"exit_code 0 fails when the command is made to fail", 1, commandJob("j", exitZero), pb.Verdict_VERDICT_FAILED, 1},
		{"an exit code of 1 expected passes a failure", 1, commandJob("j", &pb.Assertion{Type: "exit_code", ExitCode: 1}), pb.Verdict_VERDICT_PASSED, 1},
		{"stdout the simulator does not print fails", 0, commandJob("j", exitZero, &pb.Assertion{Type: "stdout_contains", Value: "READY"}), pb.Verdict_VERDICT_FAILED, 0},
		{"stdout it prints passes", 0, commandJob("j", &pb.Assertion{Type: "stdout_contains", Value: "simulated output"}), pb.Verdict_VERDICT_PASSED, 0},
		{"a job without assertions is errored", 0, commandJob("j"), pb.Verdict_VERDICT_ERRORED, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := newSimExecutor(simExecConfig{OutputBytes: 1000, FailRate: tc.failRate, Track: true}, clock.Real{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			res, err := e.Execute(context.Background(), tc.job, "")
			if err != nil {
				t.Fatal(err)
			}
			if res.GetVerdict() != tc.want || res.GetExitCode() != tc.exit {
				t.Fatalf("verdict %v exit %d (%s), want %v exit %d", res.GetVerdict(), res.GetExitCode(), res.GetReason(), tc.want, tc.exit)
			}
			if counted, why := verdictpkg.Counted(res); counted != tc.want {
				t.Fatalf("the report counts it %v (%s), the simulator said %v", counted, why, tc.want)
			}
			if tc.job.GetAssertions() != nil && len(res.GetStdout()) != 1000 {
				t.Errorf("stdout of %d bytes, want 1000", len(res.GetStdout()))
			}
			if got := e.counts(); got.Executions != 1 || got.ByVerdict[tc.want] != 1 {
				t.Errorf("counts %+v, want one %v", got, tc.want)
			}
		})
	}
}

// TestSimExecutorWaitsOnItsClock: a job takes JobTime on the injected clock, and a job whose
// context ends first is an error (a drain's grace over), not a result.
func TestSimExecutorWaitsOnItsClock(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_700_000_000, 0))
	e, err := newSimExecutor(simExecConfig{JobTime: time.Minute}, fake, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan *pb.Result, 1)
	go func() {
		res, _ := e.Execute(ctx, commandJob("j", exitZero), "")
		done <- res
	}()
	if err := fake.WaitFor(ctx, 1); err != nil {
		t.Fatal(err)
	}
	fake.Advance(59 * time.Second)
	select {
	case <-done:
		t.Fatal("the job ended before its time")
	default:
	}
	fake.Advance(time.Second)
	if res := <-done; res.GetVerdict() != pb.Verdict_VERDICT_PASSED {
		t.Fatalf("verdict %v, want passed", res.GetVerdict())
	}

	stopped, stop := context.WithCancel(ctx)
	stop()
	if res, err := e.Execute(stopped, commandJob("k", exitZero), ""); err == nil {
		t.Fatalf("a job stopped mid-way returned %v, want an error", res)
	}
}

// TestSimExecutorFailsBySeed: which jobs fail depends on the seed and the job alone (a
// redelivery fails again), at about the rate asked.
func TestSimExecutorFailsBySeed(t *testing.T) {
	const n, rate = 10000, 0.2
	mk := func(seed uint64) *simExecutor {
		e, err := newSimExecutor(simExecConfig{FailRate: rate, Seed: seed, Track: true}, clock.Real{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	a, again, other := mk(1), mk(1), mk(2)
	failed, differ := 0, 0
	var failing *pb.Job
	for i := range n {
		job := commandJob(fmt.Sprintf("skill/case-%d/1", i), exitZero)
		if a.fails(job) != again.fails(job) {
			t.Fatalf("job %s: the same seed decided twice differently", job.GetId())
		}
		if a.fails(job) {
			failed++
			failing = job
		}
		if a.fails(job) != other.fails(job) {
			differ++
		}
	}
	if got := float64(failed) / n; got < rate-0.03 || got > rate+0.03 {
		t.Errorf("%d of %d jobs fail (%.3f), want about %.2f", failed, n, got, rate)
	}
	if differ == 0 {
		t.Error("another seed fails the same jobs")
	}
	if failing == nil {
		t.Fatal("no job failed")
	}
	// Run twice, as a redelivery would: two executions made to fail, one job.
	for range 2 {
		if _, err := a.Execute(context.Background(), failing, ""); err != nil {
			t.Fatal(err)
		}
	}
	if got, made := a.failedJobs("r1"), a.counts().Made; got != 1 || made != 2 || !a.madeToFail("r1", failing.GetId()) {
		t.Errorf("a job run twice: %d distinct failures and %d executions made to fail, want 1 and 2", got, made)
	}
}
