package bundle

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/skillfleet/skillfleet/internal/testutil"
)

func TestExtractBundleRefusesUnsafeEntries(t *testing.T) {
	tests := []struct {
		name string
		hdr  tar.Header
	}{
		{"parent", tar.Header{Name: "../escape", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644}},
		{"absolute", tar.Header{Name: "/etc/passwd", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644}},
		{"symlink", tar.Header{Name: "link", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}},
		{"hardlink", tar.Header{Name: "hard", Typeflag: tar.TypeLink, Linkname: "x"}},
		{"device", tar.Header{Name: "dev", Typeflag: tar.TypeChar}},
		{"huge", tar.Header{Name: "big", Typeflag: tar.TypeReg, Size: MaxBundleBytes + 1, Mode: 0o644}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			tw := tar.NewWriter(&buf)
			if err := tw.WriteHeader(&tt.hdr); err != nil {
				t.Fatal(err)
			}
			if tt.hdr.Typeflag == tar.TypeReg && tt.hdr.Size < 1024 {
				_, _ = tw.Write(bytes.Repeat([]byte("x"), int(tt.hdr.Size)))
			}
			_ = tw.Flush()
			err := ExtractBundle(&buf, t.TempDir())
			if !errors.Is(err, ErrUnsafeBundle) {
				t.Fatalf("err = %v, want ErrUnsafeBundle", err)
			}
		})
	}
}

// memSource serves bundles from memory and counts fetches.
type memSource struct {
	mu      sync.Mutex
	bundles map[string][]byte
	fetches atomic.Int32
	gate    chan struct{}
}

func (m *memSource) GetBundle(ctx context.Context, digest string, w io.Writer) error {
	m.fetches.Add(1)
	if m.gate != nil {
		<-m.gate
	}
	m.mu.Lock()
	b, ok := m.bundles[digest]
	m.mu.Unlock()
	if !ok {
		return fmt.Errorf("bundle %s not found", digest)
	}
	_, err := w.Write(b)
	return err
}

// examples is the example suite: real skill directories to bundle.
const examples = "../examples/skills"

// bundleOf bundles every skill directory directly under root.
func bundleOf(t *testing.T, root string) (string, []byte) {
	t.Helper()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var dirs []Dir
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(root, e.Name(), "SKILL.md")); err == nil {
			dirs = append(dirs, Dir{Name: e.Name(), Path: filepath.Join(root, e.Name())})
		}
	}
	var buf bytes.Buffer
	b, err := WriteBundle(&buf, dirs)
	if err != nil {
		t.Fatal(err)
	}
	return b.Digest, buf.Bytes()
}

func TestCacheFetchesOncePerDigest(t *testing.T) {
	digest, data := bundleOf(t, examples)
	src := &memSource{bundles: map[string][]byte{digest: data}, gate: make(chan struct{})}
	c, err := NewCache(t.TempDir(), src, 2)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	dirs := make([]string, 8)
	for i := range dirs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dir, release, err := c.Get(context.Background(), digest)
			if err != nil {
				t.Error(err)
				return
			}
			defer release()
			dirs[i] = dir
		}()
	}
	close(src.gate)
	wg.Wait()
	if n := src.fetches.Load(); n != 1 {
		t.Fatalf("%d fetches for one digest, want 1", n)
	}
	if _, err := os.Stat(filepath.Join(dirs[0], "env-selector", "SKILL.md")); err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs[1:] {
		if d != dirs[0] {
			t.Fatalf("different directories for one digest: %s %s", d, dirs[0])
		}
	}
}

func TestCacheRejectsBadDigestsAndKeepsNothingBroken(t *testing.T) {
	_, data := bundleOf(t, examples)
	src := &memSource{bundles: map[string][]byte{}}
	dir := t.TempDir()
	c, err := NewCache(dir, src, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "sha256:../../etc", "md5:abc", DigestPrefix + "ABC"} {
		if _, _, err := c.Get(context.Background(), bad); err == nil {
			t.Errorf("digest %q accepted", bad)
		}
	}
	if src.fetches.Load() != 0 {
		t.Fatal("a malformed digest reached the source")
	}
	// A source error leaves no directory behind, so a later Get tries again.
	missing := DigestPrefix + hex.EncodeToString(make([]byte, 32))
	if _, _, err := c.Get(context.Background(), missing); err == nil {
		t.Fatal("missing bundle: no error")
	}
	src.bundles[missing] = []byte("not a tar at all, but long enough to not be empty.........")
	if _, _, err := c.Get(context.Background(), missing); err == nil {
		t.Fatal("garbage bundle: no error")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Fatalf("cache kept %d entries after failures", len(entries))
	}
	_ = data
}

func TestCacheEvictsOnlyUnusedBundles(t *testing.T) {
	src := &memSource{bundles: map[string][]byte{}}
	var digests []string
	for _, skillName := range []string{"env-selector", "logging-standards", "deploy-checklist"} {
		root := t.TempDir()
		testutil.CopyTree(t, filepath.Join(examples, skillName), filepath.Join(root, skillName))
		if skillName == "deploy-checklist" {
			testutil.CopyTree(t, filepath.Join(examples, "env-selector"), filepath.Join(root, "env-selector"))
			testutil.CopyTree(t, filepath.Join(examples, "logging-standards"), filepath.Join(root, "logging-standards"))
		}
		d, b := bundleOf(t, root)
		src.bundles[d] = b
		digests = append(digests, d)
	}
	c, err := NewCache(t.TempDir(), src, 1)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	d0, rel0, err := c.Get(ctx, digests[0])
	if err != nil {
		t.Fatal(err)
	}
	_, rel1, err := c.Get(ctx, digests[1])
	if err != nil {
		t.Fatal(err)
	}
	rel1()
	// digests[0] is still in use: it must survive although the cache keeps only one.
	if _, err := os.Stat(d0); err != nil {
		t.Fatalf("a bundle in use was evicted: %v", err)
	}
	rel0()
	d2, rel2, err := c.Get(ctx, digests[2])
	if err != nil {
		t.Fatal(err)
	}
	defer rel2()
	if _, err := os.Stat(d0); !os.IsNotExist(err) {
		t.Fatalf("an unused bundle beyond the limit was kept: %v", err)
	}
	if _, err := os.Stat(d2); err != nil {
		t.Fatal(err)
	}
}

// FuzzPromptCases feeds arbitrary bytes to the prompt-case loader: it must never panic and must
// never return a case without input or assertions.
