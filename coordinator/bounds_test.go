package coordinator_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/internal/tenant"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/queue/queuetest"
)

func member(team string) context.Context {
	return tenant.With(context.Background(), tenant.Principal{Name: team + "-ci", Team: team, Role: tenant.Member})
}

// commandSuite is a suite of n command cases.
func commandSuite(t testing.TB, n int) []byte {
	t.Helper()
	files := map[string]string{"s/SKILL.md": "---\nname: s\ndescription: A fixture skill. Use when testing bounds.\n---\n\nBody.\n"}
	for i := range n {
		files[fmt.Sprintf("s/tests/cases/c%d.yaml", i)] = fmt.Sprintf("name: c%d\ninput:\n  command: \"true\"\nexpected:\n  exit-code: 0\n", i)
	}
	return bundleOf(t, writeFiles(t, files))
}

// answer takes the next queued job, if one comes within wait, and publishes its result with
// out bytes of stdout; it returns the job (nil when none came).
func answer(t *testing.T, topo *queue.Topology, out int, wait time.Duration) *pb.Job {
	t.Helper()
	ds, err := topo.LaneConsumers()[0].Fetch(1, wait)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) == 0 {
		return nil
	}
	job := &pb.Job{}
	if err := proto.Unmarshal(ds[0].Data(), job); err != nil {
		t.Fatal(err)
	}
	data, err := proto.Marshal(&pb.Result{
		JobId: job.GetId(), RunId: job.GetRunId(), Skill: job.GetSkill(), CaseName: job.GetCaseName(), Epoch: job.GetEpoch(),
		Kind: job.GetKind(), Attempt: 1, Verdict: pb.Verdict_VERDICT_FAILED, Secret: job.GetSecret(), Stdout: strings.Repeat("o", out),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := topo.PublishResult(context.Background(), job.GetRunId(), job.GetResultKey(), job.GetId(), 1, data); err != nil {
		t.Fatal(err)
	}
	if err := ds[0].Ack(); err != nil {
		t.Fatal(err)
	}
	return job
}

// TestOneTeamCannotStopTheFleet plays the review's flood: team b's run with large outputs goes
// over b's bound of results. From then on b's runs are not fed and b's new runs are refused
// with a sentence naming the bound and the usage, while team a's runs are admitted and run;
// b's run, with nothing left out, is stopped rather than left waiting. Once finished, b's
// results are kept but count against nobody, and are evicted when the stream needs room: the
// report stays, the case pages say the results are gone.
func TestOneTeamCannotStopTheFleet(t *testing.T) {
	qcfg := queue.DefaultConfig()
	qcfg.ResultsMaxBytes = 4 << 20
	_, _, topo := queuetest.StartConfig(t, qcfg, queue.EmbeddedConfig{})
	ctx := context.Background()
	c := startOn(t, topo, coordinator.Config{
		// The streams are looked at when a run finishes or is admitted, not on a timer: the
		// test says when b's stuck run may be stopped (when a's run finishes).
		DataDir: t.TempDir(), StatusEvery: 20 * time.Millisecond, EvictEvery: time.Hour,
		TeamDefaults: coordinator.TeamPolicy{MaxResultBytes: 512 << 10},
		EvictAbove:   0.5, EvictTo: 0.25,
	})

	runB, err := c.Submit(member("teamB"), bytes.NewReader(commandSuite(t, 60)), &pb.RunSpec{Name: "big"})
	if err != nil {
		t.Fatal(err)
	}
	// 64 KiB of stdout per result: b is over its 512 KiB after 8. A job is waited for as
	// long as a loaded machine may take to feed one (the loops end when none comes).
	const feedWait = 3 * time.Second
	answered := 0
	for answer(t, topo, 64<<10, feedWait) != nil {
		answered++
	}
	if answered >= 60 {
		t.Fatalf("all %d of b's jobs were fed although b went over its bound", answered)
	}
	_, err = c.Submit(member("teamB"), bytes.NewReader(commandSuite(t, 1)), &pb.RunSpec{Name: "more"})
	var quota *coordinator.QuotaError
	if !errors.As(err, &quota) || !strings.Contains(err.Error(), "max_result_bytes") || !strings.Contains(err.Error(), "512.0 KiB") {
		t.Errorf("team b's next run while over its bound: %v, want a QuotaError naming the bound and the usage", err)
	}
	usage, err := c.Usage(member("teamB"), "")
	if err != nil || len(usage) != 1 || usage[0].Team != "teamB" || usage[0].Over == "" || usage[0].Results.Live < 512<<10 {
		t.Errorf("team b's usage = %+v, %v; want b alone, over its bound", usage, err)
	}
	if _, err := c.Usage(member("teamB"), "teamA"); !errors.Is(err, coordinator.ErrNotFound) {
		t.Errorf("team b read team a's usage: %v", err)
	}

	// Team a notices nothing: admitted, fed, finished.
	runA, err := c.Submit(member("teamA"), bytes.NewReader(commandSuite(t, 3)), &pb.RunSpec{Name: "small"})
	if err != nil {
		t.Fatalf("team a refused while b is over its bound: %v", err)
	}
	for range 3 {
		if job := answer(t, topo, 100, 5*time.Second); job == nil || job.GetRunId() != runA.GetId() {
			t.Fatalf("fed %v while team a waits, want a's job", job)
		}
	}
	eventually(t, "team a's run to finish", func() bool {
		s, err := c.Status(ctx, runA.GetId())
		return err == nil && s.GetState() == pb.RunState_RUN_STATE_COMPLETED
	})

	// Nothing of b's is out: its run is stopped, with the reason.
	eventually(t, "team b's run to be stopped", func() bool {
		s, err := c.Status(ctx, runB.GetId())
		return err == nil && s.GetState() == pb.RunState_RUN_STATE_CANCELLED
	})
	s, _ := c.Status(ctx, runB.GetId())
	if !strings.Contains(s.GetReason(), "max_result_bytes") || s.GetResultBytes() < 512<<10 {
		t.Errorf("b's run stopped with %q holding %d bytes, want the bound named", s.GetReason(), s.GetResultBytes())
	}
	// Its results now kept, b is under its bound again.
	if _, err := c.Submit(member("teamB"), bytes.NewReader(commandSuite(t, 1)), &pb.RunSpec{Name: "more"}); err != nil {
		t.Errorf("team b refused once its big run finished: %v", err)
	}
	for answer(t, topo, 100, feedWait) != nil {
	}

	// Kept results fill the stream past EvictAbove: the oldest of the team holding the most go.
	// How much b's big run holds depends on how many of its jobs were out when b went over
	// (15 on an idle machine, fewer on a loaded one), so filling runs are added until the
	// stream is past EvictAbove or the eviction has come, not a fixed number of them.
	for i := 0; ; i++ {
		if s, err := c.Status(ctx, runB.GetId()); err == nil && s.GetResultsEvictedAt() != nil {
			break
		}
		used, limit, err := topo.ResultsUsage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if float64(used) > 0.5*float64(limit) {
			break
		}
		if i == 10 {
			t.Fatalf("10 filling runs of 448 KiB left the results stream at %d of %d bytes", used, limit)
		}
		st, err := c.Submit(member("teamB"), bytes.NewReader(commandSuite(t, 7)), &pb.RunSpec{Name: fmt.Sprintf("fill%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		for answer(t, topo, 64<<10, feedWait) != nil {
		}
		eventually(t, "a filling run to finish", func() bool {
			s, err := c.Status(ctx, st.GetId())
			return err == nil && s.GetState() == pb.RunState_RUN_STATE_COMPLETED
		})
	}
	if used, limit, err := topo.ResultsUsage(ctx); err == nil {
		t.Logf("b's big run was fed %d jobs; the results stream held %d of %d bytes once filled", answered, used, limit)
	}
	eventually(t, "b's big run to be evicted", func() bool {
		s, err := c.Status(ctx, runB.GetId())
		return err == nil && s.GetResultsEvictedAt() != nil
	})
	if err := c.CaseResults(ctx, runB.GetId(), "s", "c0", func(*pb.Result) error { return nil }); !errors.Is(err, coordinator.ErrEvicted) {
		t.Errorf("case page of an evicted run: %v, want ErrEvicted", err)
	}
	if rep, err := c.Report(ctx, runB.GetId()); err != nil || rep.Summary.Total != 60 {
		t.Errorf("the evicted run's report: %d cases, %v; want its 60", rep.Summary.Total, err)
	}
	if s, err := c.Status(ctx, runA.GetId()); err != nil || s.GetResultsEvictedAt() != nil {
		t.Errorf("team a's run was evicted while team b held more: %v", err)
	}
	used, limit, err := topo.ResultsUsage(ctx)
	if err != nil || float64(used) > 0.5*float64(limit) {
		t.Errorf("the results stream holds %d of %d after eviction (%v), want at most half", used, limit, err)
	}
}
