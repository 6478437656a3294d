package coordinator_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/internal/tenant"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/queue/queuetest"
)

// What the coordinator's work costs as the stored runs grow, not only on an empty fleet: 10,000
// finished runs of 100 teams, a few days of an organisation's runs under retention, each as a
// finished run stores it.
const storedRuns, storedTeams = 10_000, 100

// startWithStoredRuns stores storedRuns finished runs of suite's bundle and starts a
// coordinator on them; it returns the coordinator and the suite.
func startWithStoredRuns(b *testing.B) (*coordinator.Coordinator, []byte) {
	_, _, topo := queuetest.Start(b)
	ctx := context.Background()
	suite := commandSuite(b, 1)
	digest, err := topo.PutBundle(ctx, bytes.NewReader(suite))
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	for i := range storedRuns {
		// Every field a finished 20-case run stores (258 bytes, read back from one): the
		// listing decodes what users' runs hold, not a skeleton.
		id := fmt.Sprintf("r20261129t%06d-%08x", i, i)
		st := &pb.RunStatus{
			Id: id, State: pb.RunState_RUN_STATE_COMPLETED, Cases: &pb.Counts{Total: 20, Passed: 18, Failed: 2},
			TotalJobs: 20, DoneJobs: 20, Published: 20, UpdatedAt: timestamppb.New(now), FinishedAt: timestamppb.New(now),
			JobKey: bytes.Repeat([]byte{7}, 32), SubmittedBy: "ci-bot", ResultBytes: 6810, ReportStored: true, Curtailed: true, RecordsStored: true,
			Spec: &pb.RunSpec{Id: id, Name: "nightly", Priority: pb.Priority_PRIORITY_ON_DEMAND, Team: fmt.Sprintf("team%02d", i%storedTeams),
				BundleDigest: digest, CreatedAt: timestamppb.New(now)},
		}
		data, err := proto.Marshal(st)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := topo.Runs().Put(ctx, id, data); err != nil {
			b.Fatal(err)
		}
	}
	return startOn(b, topo, coordinator.Config{TeamDefaults: coordinator.TeamPolicy{MaxBundleBytes: 1 << 30}}), suite
}

// BenchmarkSubmitWithStoredRuns admits a one-case run.
func BenchmarkSubmitWithStoredRuns(b *testing.B) {
	c, suite := startWithStoredRuns(b)
	submit := func() {
		if _, err := c.Submit(member("team07"), bytes.NewReader(suite), &pb.RunSpec{Name: "ci"}); err != nil {
			b.Fatal(err)
		}
	}
	submit() // the first admission after a start may look at every stored run once
	for b.Loop() {
		submit()
	}
}

// BenchmarkListWithStoredRuns lists the runs as an admin (GET /v1/runs, the viewer's runs
// page): every stored run is read.
func BenchmarkListWithStoredRuns(b *testing.B) {
	c, _ := startWithStoredRuns(b)
	for b.Loop() {
		runs, err := c.List(context.Background())
		if err != nil || len(runs) != storedRuns {
			b.Fatalf("listed %d runs, %v; want %d", len(runs), err, storedRuns)
		}
	}
}

// BenchmarkSchedulesWithStoredRuns lists the schedules, as the schedule loop does every 30 s
// and GET /v1/schedules on demand.
func BenchmarkSchedulesWithStoredRuns(b *testing.B) {
	c, _ := startWithStoredRuns(b)
	admin := tenant.With(context.Background(), tenant.Principal{Name: "ops", Role: tenant.Admin})
	for b.Loop() {
		if _, err := c.Schedules(admin); err != nil {
			b.Fatal(err)
		}
	}
}
