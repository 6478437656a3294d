package history

import (
	"context"
	"crypto/rand"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// withTrajectory is a result with an inline trajectory of n incompressible bytes.
func withTrajectory(job string, n int) *pb.Result {
	r := result("r1", job, "s", job, 1, pb.Verdict_VERDICT_PASSED, "", t0)
	data := make([]byte, n)
	_, _ = rand.Read(data)
	r.Trajectory = &pb.StoredDocument{Data: data, Size: int64(n), Encoding: "json"}
	r.Outputs = []*pb.OutputFile{{Path: "out.txt", Content: []byte("hello")}}
	return r
}

func each(rs ...*pb.Result) func(func(*pb.Result) error) error {
	return func(fn func(*pb.Result) error) error {
		for _, r := range rs {
			if err := fn(r); err != nil {
				return err
			}
		}
		return nil
	}
}

func TestArchive(t *testing.T) {
	forEachBackend(t, func(t *testing.T, target string) {
		ctx := context.Background()
		s := open(t, target)
		st := status("r1", "suite", 0, pb.RunState_RUN_STATE_COMPLETED, t0)
		small, big := withTrajectory("small", 100), withTrajectory("big", 8<<10)
		report := []byte(`{"run": "r1", "cases": []}`)

		// A result over the per-result bound is kept without its trajectory, and says so.
		stats, err := s.WriteArchive(ctx, st, report, each(small, big), ArchiveLimits{MaxResultBytes: 4 << 10})
		if err != nil {
			t.Fatal(err)
		}
		if stats.Results != 2 || stats.Trimmed != 1 || stats.Omitted != 0 || stats.Bytes <= 0 {
			t.Fatalf("stats %+v: want 2 results, 1 trimmed", stats)
		}
		a, err := s.ArchivedRun(ctx, "r1")
		if err != nil {
			t.Fatal(err)
		}
		if string(a.Report) != string(report) || !proto.Equal(a.Status, st) || a.Stats != stats {
			t.Errorf("archive: report %s, status %v, stats %+v", a.Report, a.Status, a.Stats)
		}
		var got []*pb.Result
		if err := s.ArchivedResults(ctx, "r1", func(r *pb.Result) error { got = append(got, r); return nil }); err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || !proto.Equal(got[0], small) {
			t.Fatalf("results: %v", got)
		}
		if d := got[1].GetTrajectory(); len(d.GetData()) != 0 || d.GetSize() != 8<<10 || !strings.Contains(d.GetNote(), "not kept in the history") {
			t.Errorf("the big result's trajectory: %v", d)
		}
		if got[1].GetVerdict() != pb.Verdict_VERDICT_PASSED || len(got[1].GetAssertions()) != 1 || len(got[1].GetOutputs()) != 1 {
			t.Errorf("a trimmed result keeps its verdict, evidence and outputs: %v", got[1])
		}

		// Written again, within a run's bound that holds one result: the second is trimmed to
		// fit or, when even trimmed it does not, omitted; the archive is replaced, not added to.
		empty, err := s.WriteArchive(ctx, st, report, each(), ArchiveLimits{})
		if err != nil {
			t.Fatal(err)
		}
		whole, err := encodeResult(big)
		if err != nil {
			t.Fatal(err)
		}
		cut, _, err := fitResult(big, 1<<10, 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		bound := empty.Bytes + int64(len(whole)+len(cut)+len(cut)/2)
		stats, err = s.WriteArchive(ctx, st, report, each(big, big, big), ArchiveLimits{MaxRunBytes: bound})
		if err != nil {
			t.Fatal(err)
		}
		if stats.Results != 2 || stats.Trimmed != 1 || stats.Omitted != 1 || stats.Bytes > bound {
			t.Errorf("within the run's bound: %+v", stats)
		}
		n := 0
		if err := s.ArchivedResults(ctx, "r1", func(*pb.Result) error { n++; return nil }); err != nil || n != 2 {
			t.Errorf("%d results kept, %v", n, err)
		}

		// The run's row came with the archive; Runs and Status read the archived status.
		runs, err := s.Runs(ctx, 0)
		if err != nil || len(runs) != 1 || !proto.Equal(runs[0], st) {
			t.Fatalf("Runs = %v, %v", runs, err)
		}
		// A run with its rows only is listed from them, and says it has no archive.
		other := status("r0", "suite", pb.Priority_PRIORITY_SCHEDULED, pb.RunState_RUN_STATE_FAILED, t0.Add(-time.Hour))
		if err := s.WriteRun(ctx, FromStatus(other)); err != nil {
			t.Fatal(err)
		}
		if runs, err = s.Runs(ctx, 0); err != nil || len(runs) != 2 || runs[1].GetId() != "r0" {
			t.Fatalf("Runs = %v, %v", runs, err)
		}
		if got := runs[1]; got.GetState() != pb.RunState_RUN_STATE_FAILED || got.GetSpec().GetName() != "suite" ||
			got.GetSpec().GetPriority() != pb.Priority_PRIORITY_SCHEDULED || got.GetCases().GetFailed() != 1 || got.GetTotalJobs() != 4 {
			t.Errorf("a run from its row: %v", got)
		}
		if _, err := s.ArchivedRun(ctx, "r0"); !errors.Is(err, ErrNotArchived) {
			t.Errorf("ArchivedRun(rows only) = %v, want ErrNotArchived", err)
		}
		if _, err := s.Status(ctx, "nope"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Status(unknown) = %v, want ErrNotFound", err)
		}

		// Retention takes a run's archive with its row.
		if _, _, err := s.DeleteBefore(ctx, t0.Add(time.Hour), 1); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ArchivedRun(ctx, "r1"); !errors.Is(err, ErrNotFound) {
			t.Errorf("after retention: %v, want ErrNotFound", err)
		}
		var left int
		if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM result_archives").Scan(&left); err != nil || left != 0 {
			t.Errorf("%d archived results left, %v", left, err)
		}
	})
}
