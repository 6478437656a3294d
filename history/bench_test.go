package history

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/skillfleet/skillfleet/bundle"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/suite"
)

// BenchmarkIngest writes the 1,000,000 results of one run (ingestRun's) through a Writer (its
// default batches and writers) into each backend and reports rows/s. Run it alone:
// go test -run '^$' -bench Ingest -benchtime 1x ./history
func BenchmarkIngest(b *testing.B) {
	run := newIngestRun()
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				s := open(b, be.target(b))
				w := NewWriter(s, WriterConfig{QueueRows: 200_000}, zap.NewNop())
				st := status(fmt.Sprintf("r20260301t120000-%08d", i), "bench", 0, pb.RunState_RUN_STATE_RUNNING, t0)
				b.StartTimer()
				start := time.Now()
				run.record(w, st)
				if err := w.Close(context.Background()); err != nil {
					b.Fatal(err)
				}
				elapsed := time.Since(start)
				b.StopTimer()
				if w.Dropped() != 0 || w.Written() != int64(len(run.jobs)) {
					b.Fatalf("written %d, dropped %d", w.Written(), w.Dropped())
				}
				b.ReportMetric(float64(len(run.jobs))/elapsed.Seconds(), "rows/s")
			}
		})
	}
}

// ingestRun is a run of 1,000,000 jobs shaped as a nightly's: 1,000 skills of 50 prompt cases,
// each against 2 agents for 10 epochs, with the ids and digests the planner and the
// coordinator give them (job ids hashed from what names the job, so in no order the results
// table's key has; a cell key and digest per case × agent; a case digest per case), finishing
// one a millisecond in plan order, one in twenty failing with a reason. What varies per job is
// made before the clock starts, so that the benchmark times the writer, not the fixture.
type ingestRun struct {
	jobs  []ingestJob
	cells []ingestCell
}

type ingestJob struct {
	id    string
	cell  int32
	epoch int32
}

type ingestCell struct {
	skill, caseName, agent, caseDigest, cellKey string
}

func newIngestRun() *ingestRun {
	const (
		skills, cases, epochs = 1000, 50, 10
	)
	agents := []string{"builtin", "claude-cli"}
	digest := func(parts ...string) string {
		sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
		return bundle.DigestPrefix + hex.EncodeToString(sum[:])
	}
	r := &ingestRun{jobs: make([]ingestJob, 0, skills*cases*len(agents)*epochs)}
	for sk := range skills {
		skill := fmt.Sprintf("skill-%04d", sk)
		for c := range cases {
			caseName := fmt.Sprintf("case-%02d", c)
			caseDigest := digest("case", skill, caseName)
			for _, agent := range agents {
				cell := int32(len(r.cells))
				r.cells = append(r.cells, ingestCell{skill: skill, caseName: caseName, agent: agent, caseDigest: caseDigest,
					cellKey: digest("cell", skill, caseName, agent)})
				for e := 1; e <= epochs; e++ {
					r.jobs = append(r.jobs, ingestJob{id: suite.JobID(skill, caseName, suite.KindPrompt, e, agent), cell: cell, epoch: int32(e)})
				}
			}
		}
	}
	return r
}

// record records every job's result of the run st describes.
func (r *ingestRun) record(w *Writer, st *pb.RunStatus) {
	res := result(st.GetId(), "", "", "", 0, pb.Verdict_VERDICT_PASSED, "", t0)
	res.Model, res.JudgeModel = "gpt-4.1-mini", "gpt-4.1"
	passed := res.GetAssertions()
	for j, job := range r.jobs {
		c := &r.cells[job.cell]
		res.JobId, res.Epoch = job.id, job.epoch
		res.Skill, res.CaseName, res.Agent = c.skill, c.caseName, c.agent
		res.CaseDigest, res.CellKey, res.CellDigest = c.caseDigest, c.cellKey, c.cellKey
		res.FinishedAt = timestamppb.New(t0.Add(time.Duration(j) * time.Millisecond))
		if j%20 == 7 {
			res.Verdict, res.Reason, res.Assertions = pb.Verdict_VERDICT_FAILED, "assertion output_contains failed", nil
		} else {
			res.Verdict, res.Reason, res.Assertions = pb.Verdict_VERDICT_PASSED, "", passed
		}
		w.Record(res, st)
	}
}

// BenchmarkWriterSustained feeds a Writer 1,000,000 results at the coordinator's peak rate
// (20,000/s, in bursts of 200 every 10 ms, catching up when a Record waited) and reports what
// the caller sees: how far behind the pace it ended, its longest wait in one Record, and how
// many results were dropped. Run it alone: go test -run '^$' -bench WriterSustained -benchtime 1x ./history
func BenchmarkWriterSustained(b *testing.B) {
	const (
		rows  = 1_000_000
		burst = 200
		every = 10 * time.Millisecond
	)
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				s := open(b, be.target(b))
				w := NewWriter(s, WriterConfig{}, zap.NewNop())
				st := status(fmt.Sprint("sustained", i), "bench", 0, pb.RunState_RUN_STATE_RUNNING, t0)
				res := result(st.GetId(), "", "skill", "case", 0, pb.Verdict_VERDICT_FAILED, "assertion output_contains failed", t0)
				start := time.Now()
				var longest time.Duration
				for j := range rows {
					if j%burst == 0 {
						if due := start.Add(time.Duration(j/burst) * every); time.Until(due) > 0 {
							time.Sleep(time.Until(due))
						}
					}
					res.JobId = fmt.Sprintf("job-%07d", j)
					res.CaseName = fmt.Sprintf("case-%d", j%5000)
					t := time.Now()
					w.Record(res, st)
					longest = max(longest, time.Since(t))
				}
				behind := time.Since(start) - rows/burst*every
				if err := w.Close(context.Background()); err != nil {
					b.Log(err)
				}
				b.ReportMetric(behind.Seconds(), "s-behind")
				b.ReportMetric(float64(longest.Milliseconds()), "ms-longest-Record")
				b.ReportMetric(float64(w.Dropped()), "dropped")
				b.ReportMetric(float64(w.Written()), "written")
			}
		})
	}
}

// BenchmarkReuseLookup is a changed-only run's lookup of the cells of one dispatch chunk (512
// jobs, one cell each) in a week of nightlies: 7 finished runs of 10,000 cells × 5 epochs,
// 350,000 results, every cell reusable. Run it alone: go test -run '^$' -bench ReuseLookup ./history
func BenchmarkReuseLookup(b *testing.B) {
	const runs, cells, epochs, chunk = 7, 10_000, 5, 512
	keys := make([]string, cells)
	for i := range keys {
		sum := sha256.Sum256(fmt.Appendf(nil, "cell %d", i))
		keys[i] = bundle.DigestPrefix + hex.EncodeToString(sum[:])
	}
	lookup := make(map[string]int, chunk)
	for i := range chunk {
		lookup[keys[i*cells/chunk]] = epochs
	}
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			ctx := context.Background()
			s := open(b, be.target(b))
			for r := range runs {
				at := t0.Add(time.Duration(r) * 24 * time.Hour)
				st := status(fmt.Sprintf("r%d", r), "nightly", pb.Priority_PRIORITY_SCHEDULED, pb.RunState_RUN_STATE_COMPLETED, at)
				rows := make([]Result, 0, 10_000)
				for c, key := range keys {
					for e := 1; e <= epochs; e++ {
						rows = append(rows, Result{RunID: st.GetId(), JobID: suite.JobID("skill", fmt.Sprint("case-", c), suite.KindPrompt, e, ""),
							Team: "default", Suite: "nightly", Lane: "scheduled", Skill: "skill", Case: fmt.Sprint("case-", c), Agent: "builtin",
							Model: "m1", Arm: "with_skill", Epoch: e, Attempt: 1, Verdict: "passed", CaseDigest: key, CellKey: key, CellDigest: key,
							FinishedAt: at.Add(time.Duration(len(rows)) * time.Millisecond), RecordedAt: at})
						if len(rows) == cap(rows) {
							if err := s.write(ctx, []Run{FromStatus(st)}, rows); err != nil {
								b.Fatal(err)
							}
							rows = rows[:0]
						}
					}
				}
			}
			// As the database's own statistics would have it some time after the writes.
			if _, err := s.db.ExecContext(ctx, "ANALYZE"); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				found, err := s.Reusable(ctx, "", "nightly", t0.Add(-time.Hour), "", lookup)
				if err != nil {
					b.Fatal(err)
				}
				if len(found) != chunk {
					b.Fatalf("%d of %d cells reusable", len(found), chunk)
				}
			}
		})
	}
}
