package queue_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/queue/queuetest"
)

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return queue.DigestPrefix + hex.EncodeToString(sum[:])
}

func TestBundleRoundTrip(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	ctx := testCtx(t)
	// Several chunks of the object store (128 KiB each) and a ragged end.
	bundle := make([]byte, 300_000)
	_, _ = rand.NewChaCha8([32]byte{1}).Read(bundle)

	d1, err := topo.PutBundle(ctx, bytes.NewReader(bundle))
	if err != nil {
		t.Fatal(err)
	}
	if d1 != digestOf(bundle) {
		t.Fatalf("digest %s, want %s", d1, digestOf(bundle))
	}
	before, err := topo.RawBundles().Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d2, err := topo.PutBundle(ctx, bytes.NewReader(bundle))
	if err != nil || d2 != d1 {
		t.Fatalf("second PutBundle = %s, %v", d2, err)
	}
	after, err := topo.RawBundles().Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after.Size() != before.Size() {
		t.Errorf("second PutBundle stored again: bucket grew from %d to %d bytes", before.Size(), after.Size())
	}
	objs, err := topo.RawBundles().List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 || objs[0].Name != d1 {
		t.Errorf("objects = %d, first %q; want one named %s (':' is allowed in object names)", len(objs), objs[0].Name, d1)
	}

	var got bytes.Buffer
	if err := topo.GetBundle(ctx, d1, &got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), bundle) {
		t.Error("bundle read back differs")
	}

	empty, err := topo.PutBundle(ctx, strings.NewReader(""))
	if err != nil || empty != digestOf(nil) {
		t.Fatalf("empty bundle = %s, %v", empty, err)
	}
	got.Reset()
	if err := topo.GetBundle(ctx, empty, &got); err != nil || got.Len() != 0 {
		t.Fatalf("empty bundle read back: %d bytes, %v", got.Len(), err)
	}
}

func TestGetBundleErrors(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	ctx := testCtx(t)
	good, tampered := []byte("the real bundle"), []byte("something else!")
	// Stored directly under the digest of other bytes, as a buggy or hostile writer could.
	if _, err := topo.RawBundles().PutBytes(ctx, digestOf(good), tampered); err != nil {
		t.Fatal(err)
	}
	missing := digestOf([]byte("never stored"))

	for _, tc := range []struct {
		name    string
		digest  string
		wantErr error
		wantMsg []string
	}{
		{"tampered", digestOf(good), queue.ErrDigestMismatch, []string{digestOf(good), digestOf(tampered)}},
		{"missing", missing, queue.ErrBundleNotFound, []string{missing}},
		{"not a digest", "sha256:XYZ", nil, []string{"invalid bundle digest"}},
		{"another algorithm", "sha512:" + strings.Repeat("0", 64), nil, []string{"invalid bundle digest"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := topo.GetBundle(ctx, tc.digest, io.Discard)
			if err == nil || (tc.wantErr != nil && !errors.Is(err, tc.wantErr)) {
				t.Fatalf("GetBundle = %v, want %v", err, tc.wantErr)
			}
			for _, s := range tc.wantMsg {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %s", err, s)
				}
			}
		})
	}

	// PutBundle of the real content replaces the mislabelled object, though the lengths agree.
	d, err := topo.PutBundle(ctx, bytes.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := topo.GetBundle(ctx, d, &got); err != nil || got.String() != string(good) {
		t.Fatalf("after repair: %q, %v", got.String(), err)
	}
}

func TestGetBundleFile(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	ctx := testCtx(t)
	dir := t.TempDir()
	d, err := topo.PutBundle(ctx, strings.NewReader("bundle"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "bundle.tar")
	if err := topo.GetBundleFile(ctx, d, path); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "bundle" {
		t.Fatalf("file = %q, %v", b, err)
	}

	bad := digestOf([]byte("x"))
	if _, err := topo.RawBundles().PutString(ctx, bad, "y"); err != nil {
		t.Fatal(err)
	}
	badPath := filepath.Join(dir, "bad.tar")
	if err := topo.GetBundleFile(ctx, bad, badPath); !errors.Is(err, queue.ErrDigestMismatch) {
		t.Fatalf("GetBundleFile = %v, want ErrDigestMismatch", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries after a failed fetch, want only bundle.tar", len(entries))
	}
}

// patternReader produces n deterministic, poorly compressible bytes without holding them.
type patternReader struct {
	rng *rand.ChaCha8
	n   int64
}

func (r *patternReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > r.n {
		p = p[:r.n]
	}
	n, _ := r.rng.Read(p)
	r.n -= int64(n)
	return n, nil
}

// peakHeap samples the live heap (as of the last GC) until stopped and returns the largest
// sample.
func peakHeap() (stop func() uint64) {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var (
		mu   sync.Mutex
		peak uint64
		done = make(chan struct{})
		wg   sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(sample)
			mu.Lock()
			peak = max(peak, sample[0].Value.Uint64())
			mu.Unlock()
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		wg.Wait()
		return peak
	}
}

// BenchmarkBundle50MiB stores and reads back a generated 50 MiB bundle. peak-live-heap-MiB is
// the largest live heap seen during the round trip, and includes the in-process server's
// buffers and block caches (most of it, by heap profile: the client side held under 1 MiB
// while uploading and about 10 MiB of pushed chunks while downloading a 100 MiB bundle).
func BenchmarkBundle50MiB(b *testing.B) {
	const size = 50 << 20
	_, _, topo := queuetest.Start(b)
	ctx := testCtx(b)
	b.SetBytes(size)
	var peak uint64
	for i := 0; b.Loop(); i++ {
		stop := peakHeap()
		d, err := topo.PutBundle(ctx, &patternReader{rng: rand.NewChaCha8([32]byte{byte(i)}), n: size})
		if err != nil {
			b.Fatal(err)
		}
		var n countingWriter
		if err := topo.GetBundle(ctx, d, &n); err != nil {
			b.Fatal(err)
		}
		peak = max(peak, stop())
		if n != size {
			b.Fatalf("read back %d bytes", n)
		}
		// Each iteration stores a new bundle; drop it so the store does not grow.
		if err := topo.RawBundles().Delete(ctx, d); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-live-heap-MiB")
}

type countingWriter int64

func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}

// TestPutBundleFile stores a spooled file under the same digest PutBundle gives its content,
// and stores it once.
func TestPutBundleFile(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	ctx := testCtx(t)
	content := bytes.Repeat([]byte("spooled bundle "), 10_000)
	path := filepath.Join(t.TempDir(), "bundle.tar")
	if err := os.WriteFile(path, content, 0o600); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		d, err := topo.PutBundleFile(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		if d != digestOf(content) {
			t.Fatalf("digest %s, want %s", d, digestOf(content))
		}
	}
	var got bytes.Buffer
	if err := topo.GetBundle(ctx, digestOf(content), &got); err != nil || !bytes.Equal(got.Bytes(), content) {
		t.Fatalf("GetBundle = %v, %d bytes; want the file's %d", err, got.Len(), len(content))
	}
	if infos, err := topo.ListBundles(ctx); err != nil || len(infos) != 1 {
		t.Errorf("bundles stored: %v (%v), want one", infos, err)
	}
	if _, err := topo.PutBundleFile(ctx, filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("PutBundleFile of a missing file succeeded")
	}
}

// TestWorkerTopologyReadsBundlesByName: a topology from OpenWorker, which does not bind the
// object store, reads bundles of any size by digest, and tells a missing one apart.
func TestWorkerTopologyReadsBundlesByName(t *testing.T) {
	_, conn, topo := queuetest.Start(t)
	ctx := testCtx(t)
	wtopo, err := queue.OpenWorker(ctx, conn, queue.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if wtopo.RawBundles() != nil || wtopo.RawRuns() != nil || wtopo.RawRates() != nil || wtopo.RawJobs() != nil || wtopo.RawResults() != nil {
		t.Fatal("OpenWorker bound more than the lane consumers")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{0, 1, 128 << 10, 3<<20 + 17} {
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(rng.UintN(256))
		}
		d, err := topo.PutBundle(ctx, bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := wtopo.GetBundle(ctx, d, &got); err != nil {
			t.Fatalf("%d bytes: %v", size, err)
		}
		if !bytes.Equal(got.Bytes(), data) {
			t.Fatalf("%d bytes: read back %d bytes that differ", size, got.Len())
		}
	}
	err = wtopo.GetBundle(ctx, digestOf([]byte("never stored")), io.Discard)
	if !errors.Is(err, queue.ErrBundleNotFound) {
		t.Fatalf("missing bundle: %v, want ErrBundleNotFound", err)
	}
	// Each read's consumer is gone with it, not left for nats.go's 5 idle minutes: a fleet's
	// workers read a bundle per run each.
	if n := bundleConsumers(t, topo); n != 0 {
		t.Errorf("%d consumers left on the bundles' stream after the reads ended, want 0", n)
	}
}

// bundleConsumers is how many consumers the bundles' stream has.
func bundleConsumers(t *testing.T, topo *queue.Topology) int {
	t.Helper()
	return streamConsumers(t, topo, "OBJ_"+queue.BundlesBucket)
}

// streamConsumers is how many consumers the named stream has.
func streamConsumers(t *testing.T, topo *queue.Topology, name string) int {
	t.Helper()
	stream, err := topo.RawJS().Stream(testCtx(t), name)
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Consumers
}

// TestBundleTransferThatStallsFails: the review's stuck slot. A connection cut while a worker
// fetched a bundle left the transfer waiting for a chunk that never came, for as long as the
// job's context lasted, while the worker heartbeated the job: the run never finished. Here the
// chunks are gone from the store, so that no byte ever comes: both the worker's read by name
// and the bound object store's fail with ErrBundleStalled once BundleStall passes.
func TestBundleTransferThatStallsFails(t *testing.T) {
	_, conn, topo := queuetest.Start(t)
	ctx := testCtx(t)
	data := bytes.Repeat([]byte("stall "), 64<<10) // several chunks
	d, err := topo.PutBundle(ctx, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	info, err := topo.RawBundles().GetInfo(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := topo.RawJS().Stream(ctx, "OBJ_"+queue.BundlesBucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Purge(ctx, jetstream.WithPurgeSubject("$O."+queue.BundlesBucket+".C."+info.NUID)); err != nil {
		t.Fatal(err)
	}
	cfg := queue.DefaultConfig()
	cfg.BundleStall = 300 * time.Millisecond
	worker, err := queue.OpenWorker(ctx, conn, cfg)
	if err != nil {
		t.Fatal(err)
	}
	bound, err := queue.Open(ctx, conn, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for name, tp := range map[string]*queue.Topology{"worker": worker, "bound": bound} {
		// The transfer's own context lasts far longer than the stall bound: only the bound
		// ends the wait.
		tctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		err := tp.GetBundle(tctx, d, io.Discard)
		outerEnded := tctx.Err()
		cancel()
		if !errors.Is(err, queue.ErrBundleStalled) || outerEnded != nil {
			t.Errorf("%s: GetBundle of a bundle whose chunks never come = %v (the transfer's context: %v), want ErrBundleStalled before the context ends", name, err, outerEnded)
		}
		if n := bundleConsumers(t, topo); n != 0 {
			t.Errorf("%s: %d consumers left on the bundles' stream after a stalled read, want 0", name, n)
		}
	}
}
