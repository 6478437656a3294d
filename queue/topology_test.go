package queue_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/queue/queuetest"
)

func TestEnsureIsIdempotent(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	ctx := testCtx(t)
	before := topo.RawJobs().CachedInfo().Created

	again, err := queue.Ensure(ctx, topo.RawConn(), topo.Config)
	if err != nil {
		t.Fatalf("second Ensure: %v", err)
	}
	if got := again.RawJobs().CachedInfo().Created; !got.Equal(before) {
		t.Errorf("jobs stream recreated: created %v, then %v", before, got)
	}
	names := map[string]bool{}
	for name := range again.RawJobs().ConsumerNames(ctx).Name() {
		names[name] = true
	}
	if len(names) != 2 || !names[queue.OnDemandConsumer] || !names[queue.ScheduledConsumer] {
		t.Errorf("jobs consumers = %v, want exactly the two lane consumers", names)
	}

	// A changed setting is applied in place; MaxWaiting, which the server cannot change, is kept.
	cfg := topo.Config
	cfg.AckWait = 45 * time.Second
	cfg.MaxDeliver = 5
	cfg.MaxWaiting = 17
	updated, err := queue.Ensure(ctx, topo.RawConn(), cfg)
	if err != nil {
		t.Fatalf("Ensure with new settings: %v", err)
	}
	for _, c := range []jetstream.Consumer{updated.RawOnDemand(), updated.RawScheduled()} {
		got := c.CachedInfo().Config
		if got.AckWait != 45*time.Second || got.MaxDeliver != 5 {
			t.Errorf("%s: AckWait %s MaxDeliver %d, want 45s and 5", c.CachedInfo().Name, got.AckWait, got.MaxDeliver)
		}
		if got.MaxWaiting != queue.DefaultConfig().MaxWaiting {
			t.Errorf("%s: MaxWaiting %d, want the original %d", c.CachedInfo().Name, got.MaxWaiting, queue.DefaultConfig().MaxWaiting)
		}
		if len(got.BackOff) != 0 {
			t.Errorf("%s: BackOff %v; it would replace AckWait", c.CachedInfo().Name, got.BackOff)
		}
	}
}

func TestOpen(t *testing.T) {
	_, conn, _ := startBare(t)
	ctx := testCtx(t)
	if _, err := queue.Open(ctx, conn, queue.DefaultConfig()); err == nil || !strings.Contains(err.Error(), "has Ensure run?") {
		t.Fatalf("Open before Ensure = %v, want a hint to run Ensure", err)
	}
	if _, err := queue.Ensure(ctx, conn, queue.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	topo, err := queue.Open(ctx, conn, queue.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := topo.PublishJob(ctx, queue.LaneOnDemand, "run1", "j1", nil); err != nil {
		t.Fatal(err)
	}
	if m := fetchOne(t, topo.RawOnDemand(), 5*time.Second); m == nil {
		t.Error("no job through an opened topology")
	}
}

func TestEnsureCreatesTheTopology(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	def := queue.DefaultConfig()

	jobs := topo.RawJobs().CachedInfo().Config
	if jobs.Retention != jetstream.WorkQueuePolicy || jobs.Storage != jetstream.FileStorage || jobs.Duplicates != def.JobsDuplicates {
		t.Errorf("jobs stream: retention %s storage %s duplicates %s", jobs.Retention, jobs.Storage, jobs.Duplicates)
	}
	results := topo.RawResults().CachedInfo().Config
	if results.Retention != jetstream.LimitsPolicy || results.MaxAge != def.ResultsMaxAge || results.Duplicates != def.ResultsDuplicates {
		t.Errorf("results stream: retention %s max age %s duplicates %s", results.Retention, results.MaxAge, results.Duplicates)
	}
	for _, tc := range []struct {
		c      jetstream.Consumer
		name   string
		filter string
	}{
		{topo.RawOnDemand(), "workers-ondemand", "skillfleet.jobs.ondemand.>"},
		{topo.RawScheduled(), "workers-scheduled", "skillfleet.jobs.scheduled.>"},
	} {
		info := tc.c.CachedInfo()
		if info.Name != tc.name || info.Config.FilterSubject != tc.filter || info.Config.AckPolicy != jetstream.AckExplicitPolicy ||
			info.Config.AckWait != def.AckWait || info.Config.MaxDeliver != def.MaxDeliver || info.Config.MaxAckPending != def.MaxAckPending {
			t.Errorf("consumer %s: %+v", tc.name, info.Config)
		}
	}
	kv, err := topo.RawRuns().Status(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if kv.Bucket() != queue.RunsBucket || kv.History() != 1 {
		t.Errorf("runs bucket %s history %d", kv.Bucket(), kv.History())
	}
	rates, err := topo.RawRates().Status(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if rates.Bucket() != queue.RatesBucket || rates.History() != 1 {
		t.Errorf("rates bucket %s history %d", rates.Bucket(), rates.History())
	}
	obs, err := topo.RawBundles().Status(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if obs.Bucket() != queue.BundlesBucket || obs.Storage() != jetstream.FileStorage {
		t.Errorf("bundles store %s storage %s", obs.Bucket(), obs.Storage())
	}
}

func TestEnsureRefusesIncompatibleStreams(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stream jetstream.StreamConfig
	}{
		{"jobs with limits retention", jetstream.StreamConfig{
			Name: queue.JobsStream, Subjects: []string{"skillfleet.jobs.>"}, Retention: jetstream.LimitsPolicy, Storage: jetstream.FileStorage}},
		{"jobs in memory", jetstream.StreamConfig{
			Name: queue.JobsStream, Subjects: []string{"skillfleet.jobs.>"}, Retention: jetstream.WorkQueuePolicy, Storage: jetstream.MemoryStorage}},
		{"results as a work queue", jetstream.StreamConfig{
			Name: queue.ResultsStream, Subjects: []string{"skillfleet.results.>"}, Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, conn, js := startBare(t)
			ctx := testCtx(t)
			if _, err := js.CreateStream(ctx, tc.stream); err != nil {
				t.Fatal(err)
			}
			_, err := queue.Ensure(ctx, conn, queue.DefaultConfig())
			if !errors.Is(err, queue.ErrIncompatibleStream) {
				t.Fatalf("Ensure = %v, want ErrIncompatibleStream", err)
			}
			if !strings.Contains(err.Error(), tc.stream.Name) {
				t.Errorf("error %q does not name stream %s", err, tc.stream.Name)
			}
			// Left alone.
			s, err := js.Stream(ctx, tc.stream.Name)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.CachedInfo().Config; got.Retention != tc.stream.Retention || got.Storage != tc.stream.Storage {
				t.Errorf("stream changed to %s/%s", got.Retention, got.Storage)
			}
		})
	}
}

// TestWorkQueueConsumerConstraints documents what nats-server 2.15 allows on a WorkQueue stream:
// any number of consumers whose filters do not overlap (our two lanes), and nothing that
// overlaps them, an unfiltered consumer included.
func TestWorkQueueConsumerConstraints(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	ctx := testCtx(t)
	for _, tc := range []struct {
		name    string
		cfg     jetstream.ConsumerConfig
		wantErr jetstream.ErrorCode // 0: accepted
	}{
		// 10099 "multiple non-filtered consumers not allowed", though no other is unfiltered.
		{"unfiltered", jetstream.ConsumerConfig{Durable: "all"}, 10099},
		// 10100 "filtered consumer not unique on workqueue stream".
		{"overlapping both lanes", jetstream.ConsumerConfig{Durable: "wide", FilterSubject: "skillfleet.jobs.>"}, 10100},
		{"overlapping one run of a lane", jetstream.ConsumerConfig{Durable: "one-run", FilterSubject: "skillfleet.jobs.ondemand.r1"}, 10100},
		{"the same filter as a lane", jetstream.ConsumerConfig{Durable: "twin", FilterSubject: "skillfleet.jobs.scheduled.>"}, 10100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.AckPolicy = jetstream.AckExplicitPolicy
			_, err := topo.RawJobs().CreateConsumer(ctx, tc.cfg)
			var apiErr *jetstream.APIError
			if !errors.As(err, &apiErr) || apiErr.ErrorCode != tc.wantErr {
				t.Fatalf("CreateConsumer = %v, want API error %d", err, tc.wantErr)
			}
			t.Logf("rejected: %v", err)
		})
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mutate  func(*queue.Config)
		wantErr string
	}{
		{"default", func(*queue.Config) {}, ""},
		{"zero AckWait", func(c *queue.Config) { c.AckWait = 0 }, "AckWait"},
		{"zero MaxDeliver", func(c *queue.Config) { c.MaxDeliver = 0 }, "MaxDeliver"},
		{"zero MaxAckPending", func(c *queue.Config) { c.MaxAckPending = 0 }, "MaxAckPending"},
		{"zero MaxWaiting", func(c *queue.Config) { c.MaxWaiting = 0 }, "MaxWaiting"},
		{"duplicates beyond max age", func(c *queue.Config) { c.ResultsMaxAge = time.Minute }, "must not exceed"},
		{"six replicas", func(c *queue.Config) { c.Replicas = 6 }, "Replicas"},
		{"no limits", func(c *queue.Config) {
			c.JobsMaxBytes, c.JobsMaxMsgs, c.ResultsMaxBytes, c.BundlesMaxBytes = 0, 0, 0, 0
		}, ""},
		{"negative limit", func(c *queue.Config) { c.BundlesMaxBytes = -1 }, "BundlesMaxBytes must not be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := queue.DefaultConfig()
			tc.mutate(&cfg)
			err := cfg.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate = %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Validate = %v, want an error about %s", err, tc.wantErr)
			}
		})
	}
	if got := queue.DefaultConfig().HeartbeatInterval(); got != 10*time.Second {
		t.Errorf("HeartbeatInterval = %s, want 10s", got)
	}
}

// TestEnsureAppliesLimits: the streams and the object store get their size limits, on an
// existing topology too; a full jobs stream refuses new jobs rather than dropping queued ones;
// a limit below what a stream holds is refused rather than letting the server delete.
func TestEnsureAppliesLimits(t *testing.T) {
	_, conn, js := startBare(t)
	ctx := testCtx(t)
	// A topology as older versions made it: no limits, and a jobs stream that discards old.
	unlimited := queue.DefaultConfig()
	unlimited.JobsMaxBytes, unlimited.JobsMaxMsgs, unlimited.ResultsMaxBytes, unlimited.BundlesMaxBytes = 0, 0, 0, 0
	old, err := queue.Ensure(ctx, conn, unlimited)
	if err != nil {
		t.Fatal(err)
	}
	jcfg := old.RawJobs().CachedInfo().Config
	jcfg.Discard = jetstream.DiscardOld
	if _, err := js.UpdateStream(ctx, jcfg); err != nil {
		t.Fatal(err)
	}
	// Artifacts as older versions kept them: a later publish replaced a chunk.
	acfg := old.RawArtifacts().CachedInfo().Config
	acfg.Discard, acfg.DiscardNewPerSubject = jetstream.DiscardOld, false
	if _, err := js.UpdateStream(ctx, acfg); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := old.PublishJob(ctx, queue.LaneOnDemand, "run1", fmt.Sprintf("j%d", i), []byte("job")); err != nil {
			t.Fatal(err)
		}
	}

	cfg := queue.DefaultConfig()
	cfg.JobsMaxMsgs, cfg.JobsMaxMsgSize, cfg.BundlesMaxBytes = 3, 64<<10, 4096
	topo, err := queue.Ensure(ctx, conn, cfg)
	if err != nil {
		t.Fatalf("Ensure with limits over an unlimited topology: %v", err)
	}
	jobs := topo.RawJobs().CachedInfo().Config
	if jobs.MaxMsgs != 3 || jobs.MaxBytes != cfg.JobsMaxBytes || jobs.MaxMsgSize != 64<<10 || jobs.Discard != jetstream.DiscardNew {
		t.Errorf("jobs stream: MaxMsgs %d MaxBytes %d MaxMsgSize %d Discard %s", jobs.MaxMsgs, jobs.MaxBytes, jobs.MaxMsgSize, jobs.Discard)
	}
	if a := topo.RawArtifacts().CachedInfo().Config; a.Discard != jetstream.DiscardNew || !a.DiscardNewPerSubject {
		t.Errorf("artifacts stream: Discard %s, DiscardNewPerSubject %v; want a stored chunk kept", a.Discard, a.DiscardNewPerSubject)
	}
	if got := topo.RawResults().CachedInfo().Config.MaxBytes; got != cfg.ResultsMaxBytes {
		t.Errorf("results stream MaxBytes %d, want %d", got, cfg.ResultsMaxBytes)
	}
	st, err := topo.RawBundles().Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if bs := st.(*jetstream.ObjectBucketStatus).StreamInfo().Config.MaxBytes; bs != 4096 {
		t.Errorf("bundle store MaxBytes %d, want 4096", bs)
	}

	// Full: the fourth job is refused and the three queued stay.
	if err := topo.PublishJob(ctx, queue.LaneOnDemand, "run1", "j3", []byte("job")); err == nil {
		t.Error("a fourth job was accepted by a jobs stream limited to 3")
	}
	if got := streamMsgs(t, topo.RawJobs(), ""); got != 3 {
		t.Errorf("%d jobs queued, want the 3 first", got)
	}
	// A bundle over the store's limit is refused.
	if _, err := topo.PutBundle(ctx, strings.NewReader(strings.Repeat("b", 8192))); err == nil {
		t.Error("a bundle over the store's limit was stored")
	}

	// Lowering the limit below what is queued would delete jobs: refused, nothing deleted.
	cfg.JobsMaxMsgs = 2
	if _, err := queue.Ensure(ctx, conn, cfg); !errors.Is(err, queue.ErrIncompatibleStream) || !strings.Contains(err.Error(), "would delete") {
		t.Errorf("Ensure lowering the limit below the queue = %v, want ErrIncompatibleStream", err)
	}
	if got := streamMsgs(t, topo.RawJobs(), ""); got != 3 {
		t.Errorf("%d jobs queued after a refused shrink, want 3", got)
	}
}

// TestEnsureBoundsTheRatesBucket: a rate bucket made before it was bounded (no byte limit, and
// the client library's refusal of new entries when full) is bounded by Ensure and discards its
// oldest entries, and stays so when Ensure runs again (which updates the bucket through the
// client library, whose config refuses).
func TestEnsureBoundsTheRatesBucket(t *testing.T) {
	_, conn, js := startBare(t)
	ctx := testCtx(t)
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: queue.RatesBucket, History: 1, TTL: 24 * time.Hour, MaxValueSize: 1024}); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if _, err := queue.Ensure(ctx, conn, queue.DefaultConfig()); err != nil {
			t.Fatalf("Ensure %d: %v", i, err)
		}
		s, err := js.Stream(ctx, "KV_"+queue.RatesBucket)
		if err != nil {
			t.Fatal(err)
		}
		if c := s.CachedInfo().Config; c.MaxBytes != queue.RatesMaxBytes || c.Discard != jetstream.DiscardOld || c.MaxMsgsPerSubject != 1 {
			t.Fatalf("after Ensure %d: max bytes %d, discard %s, history %d; want %d, old, 1", i, c.MaxBytes, c.Discard, c.MaxMsgsPerSubject, queue.RatesMaxBytes)
		}
	}
}
