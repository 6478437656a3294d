package queue

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/skillfleet/skillfleet/internal/ctxio"
)

var (
	// ErrBundleNotFound means the object store has no bundle under the digest.
	ErrBundleNotFound = errors.New("queue: bundle not found")
	// ErrDigestMismatch means the bytes read do not hash to the digest they were stored under.
	ErrDigestMismatch = errors.New("queue: bundle digest mismatch")
)

// PutBundle stores the bundle read from r under its content digest ("sha256:<hex>") and returns
// the digest. It spools r to a temporary file while hashing it, so a bundle of any size costs
// a fixed amount of memory, and skips the upload when the object store already has a bundle
// under that digest whose recorded SHA-256 agrees (a mislabelled one is replaced).
func (t *Topology) PutBundle(ctx context.Context, r io.Reader) (digest string, err error) {
	f, err := os.CreateTemp(t.Config.TempDir, "skillfleet-bundle-*")
	if err != nil {
		return "", fmt.Errorf("queue: spool bundle: %w", err)
	}
	defer func() {
		_ = f.Close()
		_ = os.Remove(f.Name())
	}()
	h := sha256.New()
	size, err := io.Copy(io.MultiWriter(f, h), ctxio.Reader(ctx, r))
	if err != nil {
		return "", fmt.Errorf("queue: spool bundle: %w", err)
	}
	return t.putSpooled(ctx, f, h.Sum(nil), size)
}

// PutBundleFile stores the bundle in the file at path, as PutBundle does, without copying it
// first: for a caller that has spooled (and checked) the upload already. The file must not
// change while it is stored.
func (t *Topology) PutBundleFile(ctx context.Context, path string) (digest string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("queue: store bundle: %w", err)
	}
	defer func() { _ = f.Close() }()
	h := sha256.New()
	size, err := io.Copy(h, ctxio.Reader(ctx, f))
	if err != nil {
		return "", fmt.Errorf("queue: store bundle: %w", err)
	}
	return t.putSpooled(ctx, f, h.Sum(nil), size)
}

// putSpooled stores the size bytes of f, whose SHA-256 is sum, unless they are stored already.
func (t *Topology) putSpooled(ctx context.Context, f *os.File, sum []byte, size int64) (digest string, err error) {
	digest = DigestPrefix + hex.EncodeToString(sum)
	// The object store records its own SHA-256 of what it was given, base64url-encoded.
	storeDigest := "SHA-256=" + base64.URLEncoding.EncodeToString(sum)

	info, err := t.bundles.GetInfo(ctx, bundleObjectName(digest))
	switch {
	case err == nil && info.Digest == storeDigest && info.Size == uint64(size):
		return digest, nil
	case err != nil && !errors.Is(err, jetstream.ErrObjectNotFound):
		return "", fmt.Errorf("queue: look up bundle %s: %w", digest, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", fmt.Errorf("queue: spool bundle: %w", err)
	}
	info, err = t.bundles.Put(ctx, jetstream.ObjectMeta{
		Name:        bundleObjectName(digest),
		Description: "skillfleet suite bundle",
	}, f)
	if err != nil {
		return "", fmt.Errorf("queue: store bundle %s: %w", digest, err)
	}
	if info.Digest != storeDigest || info.Size != uint64(size) {
		// The spool file changed under us; never label bytes with a digest they do not have.
		return "", fmt.Errorf("%w: stored %d bytes with %s under %s, spooled %d bytes",
			ErrDigestMismatch, info.Size, info.Digest, digest, size)
	}
	return digest, nil
}

// GetBundle writes the bundle stored under digest to w, hashing what it reads. When the hash
// is not the digest it returns ErrDigestMismatch naming both, but w has received the bytes by
// then: write to a scratch file and keep it only on success (GetBundleFile does). A missing
// bundle is ErrBundleNotFound. A transfer that makes no progress for the topology's bundle
// stall bound (bundleStall) fails with ErrBundleStalled, whatever ctx allows.
func (t *Topology) GetBundle(ctx context.Context, digest string, w io.Writer) error {
	if err := ValidateDigest(digest); err != nil {
		return err
	}
	ctx, progress, stop := watchStall(ctx, t.Config.bundleStall())
	defer stop()
	err := t.readBundleByName(ctx, digest, io.MultiWriter(w, progress))
	if err != nil && errors.Is(context.Cause(ctx), ErrBundleStalled) {
		return fmt.Errorf("queue: get bundle %s: %w (%v without a byte)", digest, ErrBundleStalled, t.Config.bundleStall())
	}
	return err
}

// ErrBundleStalled is GetBundle's error for a transfer that stopped making progress: a reply
// or a chunk lost across a reconnect leaves a request or an ordered consumer waiting for ever,
// and a job whose worker heartbeats it while its slot waits is never run (nor redelivered).
// The caller takes it as any infrastructure failure: the job is tried again.
var ErrBundleStalled = errors.New("bundle transfer stalled")

// bundleStall is how long a bundle transfer may go without a byte: BundleStall, else twice
// the ack wait and at least 10 s, so that a loaded machine does not pass for a stalled
// transfer.
func (c Config) bundleStall() time.Duration {
	if c.BundleStall > 0 {
		return c.BundleStall
	}
	return max(2*c.AckWait, 10*time.Second)
}

// watchStall returns a context that ends with ErrBundleStalled once d passes without a write
// to progress; stop releases it.
func watchStall(ctx context.Context, d time.Duration) (context.Context, io.Writer, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	timer := time.AfterFunc(d, func() { cancel(ErrBundleStalled) })
	return ctx, stallWriter{timer: timer, d: d}, func() {
		timer.Stop()
		cancel(nil)
	}
}

// stallWriter restarts the stall timer on every write.
type stallWriter struct {
	timer *time.Timer
	d     time.Duration
}

func (s stallWriter) Write(p []byte) (int, error) {
	s.timer.Reset(s.d)
	return len(p), nil
}

// GetBundleFile fetches the bundle stored under digest into path, which appears only once the
// content is verified (written beside it, then renamed).
func (t *Topology) GetBundleFile(ctx context.Context, digest, path string) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".partial-*")
	if err != nil {
		return fmt.Errorf("queue: fetch bundle %s: %w", digest, err)
	}
	keep := false
	defer func() {
		if !keep {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	if err := t.GetBundle(ctx, digest, f); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("queue: fetch bundle %s: %w", digest, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("queue: fetch bundle %s: %w", digest, err)
	}
	keep = true
	return nil
}

// readBundleByName is GetBundle's read, on any topology. It asks for nothing but the one
// bundle: the last message on its metadata subject (a direct get), then its chunks through an
// ordered consumer filtered on their subject, which is all deploy/nats/permissions.conf lets a
// worker do (a worker's topology has no object store bound: binding it asks for the store's
// stream info, which with a subjects_filter would list every bundle). The object store's own
// reader is not used even where it is bound: it holds its lock while it waits for a chunk until
// its context's deadline, so neither ending the context nor closing it ends a stalled read.
func (t *Topology) readBundleByName(ctx context.Context, digest string, w io.Writer) error {
	meta := "$O." + BundlesBucket + ".M." + base64.URLEncoding.EncodeToString([]byte(bundleObjectName(digest)))
	resp, err := t.conn.nc.RequestWithContext(ctx, "$JS.API.DIRECT.GET."+bundlesStream+"."+meta, nil)
	if err != nil {
		return fmt.Errorf("queue: get bundle %s: %w", digest, err)
	}
	if status := resp.Header.Get("Status"); status == "404" {
		return fmt.Errorf("%w: %s in object store %s", ErrBundleNotFound, digest, BundlesBucket)
	} else if status != "" {
		return fmt.Errorf("queue: get bundle %s: metadata: status %s %s", digest, status, resp.Header.Get("Description"))
	}
	var info jetstream.ObjectInfo
	if err := json.Unmarshal(resp.Data, &info); err != nil {
		return fmt.Errorf("queue: get bundle %s: metadata: %w", digest, err)
	}
	if info.Deleted {
		return fmt.Errorf("%w: %s in object store %s", ErrBundleNotFound, digest, BundlesBucket)
	}
	h := sha256.New()
	if info.Size > 0 {
		oc, err := t.js.OrderedConsumer(ctx, bundlesStream, jetstream.OrderedConsumerConfig{
			FilterSubjects: []string{"$O." + BundlesBucket + ".C." + info.NUID},
			// What a worker that dies mid-read leaves goes once a stalled read would have
			// failed anyway (see dropConsumer).
			InactiveThreshold: t.Config.bundleStall(),
		})
		if err != nil {
			return fmt.Errorf("queue: get bundle %s: %w", digest, err)
		}
		defer t.dropConsumer(ctx, bundlesStream, oc)
		it, err := oc.Messages()
		if err != nil {
			return fmt.Errorf("queue: get bundle %s: %w", digest, err)
		}
		defer it.Stop()
		out := io.MultiWriter(w, h)
		for n := uint64(0); n < info.Size; {
			m, err := it.Next(jetstream.NextContext(ctx))
			if err != nil {
				return fmt.Errorf("queue: get bundle %s: after %d of %d bytes: %w", digest, n, info.Size, err)
			}
			if _, err := out.Write(m.Data()); err != nil {
				return fmt.Errorf("queue: get bundle %s: %w", digest, err)
			}
			n += uint64(len(m.Data()))
		}
	}
	// The content's own digest is the check: chunks out of place, missing or extra show here.
	if got := hexDigest(h); got != digest {
		return fmt.Errorf("%w: stored under %s, content is %s", ErrDigestMismatch, digest, got)
	}
	return nil
}

// bundlesStream is the object store's stream, named as nats.go names it.
const bundlesStream = "OBJ_" + BundlesBucket

func hexDigest(h hash.Hash) string { return DigestPrefix + hex.EncodeToString(h.Sum(nil)) }

// BundleInfo describes one stored bundle.
type BundleInfo struct {
	Digest string
	Size   uint64
	// Stored is when it was uploaded; an upload of a bundle already stored does not renew it.
	Stored time.Time
}

// ListBundles returns every stored bundle.
func (t *Topology) ListBundles(ctx context.Context) ([]BundleInfo, error) {
	infos, err := t.bundles.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("queue: list bundles: %w", err)
	}
	out := make([]BundleInfo, 0, len(infos))
	for _, in := range infos {
		if ValidateDigest(in.Name) != nil {
			continue // not ours
		}
		out = append(out, BundleInfo{Digest: in.Name, Size: in.Size, Stored: in.ModTime})
	}
	return out, nil
}

// DeleteBundle removes a stored bundle; one that is gone already is not an error.
func (t *Topology) DeleteBundle(ctx context.Context, digest string) error {
	if err := ValidateDigest(digest); err != nil {
		return err
	}
	err := t.bundles.Delete(ctx, bundleObjectName(digest))
	if err == nil || errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil
	}
	return fmt.Errorf("queue: delete bundle %s: %w", digest, err)
}
