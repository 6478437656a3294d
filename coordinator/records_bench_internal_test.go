package coordinator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"net/http/httptest"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/skillfleet/skillfleet/comparison"
	"github.com/skillfleet/skillfleet/internal/testutil"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/queue/queuetest"
)

// fillRecords keeps a record of every job of r as the run loop would, from results like a
// nightly's (2% errored, the pass rate varying by case), seeded; it returns the heap they
// take. The case digests are in the catalog first, as publishing each case's jobs puts them.
func fillRecords(r *run, seed uint64) uint64 {
	for _, c := range r.plan.Cases {
		sum := sha256.Sum256([]byte(c.Skill.Name + "/" + c.Name))
		r.catalog.cases.Store(c, "sha256:"+hex.EncodeToString(sum[:]))
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	before := heapInUse()
	var p float64
	for i, j := range r.plan.Jobs {
		if i == 0 || j.Case != r.plan.Jobs[i-1].Case {
			p = rng.Float64()
		}
		v := pb.Verdict_VERDICT_FAILED
		switch x := rng.Float64(); {
		case x < 0.02:
			v = pb.Verdict_VERDICT_ERRORED
		case x < p:
			v = pb.Verdict_VERDICT_PASSED
		}
		d, _ := r.catalog.cases.Load(j.Case)
		r.records.add(r.plan, r.catalog, i, &pb.Result{
			// A result's strings are its own, as decoding makes them.
			Verdict: v, Model: strings.Clone("model-x"), JudgeModel: strings.Clone("judge-y"), JudgePrompt: strings.Clone("prompt/1"), CaseDigest: strings.Clone(d.(string)),
			Usage:   &pb.Usage{PromptTokens: 1000 + rng.Int64N(2000), CompletionTokens: 100, Cost: 0.01},
			Timings: &pb.Timings{TotalMs: rng.Int64N(60000)},
		})
	}
	return heapInUse() - before
}

// BenchmarkCompareRecords1M compares two finished runs of 100,000 cases × 10 epochs (1,000,000
// records each) as skillfleet compare does through a coordinator: their records are kept as
// the run loop keeps them and stored as a finished run stores them (setup, measured apart),
// then each iteration reads both over HTTP from the coordinator's handler, decodes them,
// compares them and renders the text and JSON. It reports the median wall time of the
// iterations and the peak heap above the process's baseline (sampled every 10 ms; the
// process holds the embedded NATS server and the coordinator too, so it bounds the CLI's
// own from above), under the soft memory limit skillfleet compare sets. Issue 30 asks for
// under 10 s and 1 GiB. Run with -benchtime 3x.
func BenchmarkCompareRecords1M(b *testing.B) {
	const cases, epochs = 100_000, 10
	_, _, topo := queuetest.Start(b)
	c, err := New(Config{DataDir: b.TempDir()}, Deps{Queue: topo, Runs: topo.Runs(), Bundles: topo})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close(context.Background()) })
	ctx := context.Background()
	var ids []string
	var stored int64
	var store time.Duration
	var perJob float64
	for i, id := range []string{"ra", "rb"} {
		r := planRun(b, cases, epochs, 1)
		r.id, r.spec.Id = id, id
		perJob = float64(fillRecords(r, uint64(i+1))) / float64(len(r.plan.Jobs))
		start := time.Now()
		if err := c.storeRecords(ctx, r); err != nil {
			b.Fatal(err)
		}
		store = max(store, time.Since(start))
		st := &pb.RunStatus{Id: id, Spec: r.spec, State: pb.RunState_RUN_STATE_COMPLETED, DoneJobs: int32(len(r.plan.Jobs)),
			TotalJobs: int32(len(r.plan.Jobs)), RecordsStored: true, FinishedAt: timestamppb.Now()}
		if err := c.save(ctx, st, nil); err != nil {
			b.Fatal(err)
		}
		rc, size, err := c.queue.OpenRecords(ctx, id)
		if err != nil {
			b.Fatal(err)
		}
		_ = rc.Close()
		stored = size
		ids = append(ids, id)
	}

	srv := httptest.NewServer(c.Handler(APIConfig{Token: "bench-token"}))
	b.Cleanup(srv.Close)
	client := NewClient(srv.URL, "bench-token", nil)
	var walls []time.Duration
	var peak uint64
	// The soft limit skillfleet compare runs under (cmdutil.LimitMemoryForComparison).
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(1 << 30))
	b.ResetTimer()
	for range b.N {
		stop := testutil.PeakHeap(heapInUse())
		start := time.Now()
		var sides [2]comparison.Side
		for i, id := range ids {
			records, err := client.Records(ctx, id, comparison.WithSkill, comparison.ReadLimits{MaxRecords: cases * epochs})
			if err != nil {
				b.Fatal(err)
			}
			sides[i] = comparison.Side{Label: "run " + id, Run: id, Results: records}
		}
		rep, err := comparison.Compare(sides[0], sides[1], comparison.Options{Seed: 1})
		if err == nil {
			err = rep.WriteText(io.Discard)
		}
		if err == nil {
			err = rep.WriteJSON(io.Discard)
		}
		walls = append(walls, time.Since(start))
		peak = max(peak, stop())
		if err != nil {
			b.Fatal(err)
		}
		if n := len(rep.Comparison.Cases); n != cases {
			b.Fatalf("%d cases compared, want %d", n, cases)
		}
	}
	slices.Sort(walls)
	// After the loop: ResetTimer drops the metrics reported before it.
	b.ReportMetric(perJob, "record-B/job")
	b.ReportMetric(float64(stored)/(1<<20), "stored-MiB/run")
	b.ReportMetric(store.Seconds(), "store-s/run")
	b.ReportMetric(walls[len(walls)/2].Seconds(), "median-s/compare")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
}
