// Package testutil holds what the project's tests share: golden files, copying fixture trees
// and waiting, boundedly, for a condition.
package testutil

import (
	"bytes"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// update is the -update flag of every test binary that checks golden files.
var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// Golden compares got with the file at path, or rewrites the file when the test runs with
// -update.
func Golden(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden (run with -update to create it): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (run with -update to accept):\n--- got\n%s--- want\n%s", path, got, want)
	}
}

// CopyTree copies the directory src to dst, keeping file modes.
func CopyTree(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, info.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Eventually checks cond every tick until it holds, and fails the test with msg (a format and
// its arguments, as for fmt.Sprintf) when timeout passes first: a test that waits for another
// goroutine or process fails with a reason instead of hanging. cond is always checked once
// more at the deadline, so a slow machine does not lose a last chance.
func Eventually(t testing.TB, timeout, tick time.Duration, cond func() bool, msg ...any) {
	t.Helper()
	if !waitFor(timeout, tick, cond) {
		t.Fatalf("not within %v: %s", timeout, message(msg))
	}
}

// waitFor is Eventually without the test: it reports whether cond held within timeout.
func waitFor(timeout, tick time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	for {
		if cond() {
			return true
		}
		select {
		case <-deadline.C:
			return cond()
		case <-ticker.C:
		}
	}
}

func message(msg []any) string {
	if len(msg) == 0 {
		return "condition never held"
	}
	if format, ok := msg[0].(string); ok {
		return fmt.Sprintf(format, msg[1:]...)
	}
	return fmt.Sprint(msg...)
}

// WriteFile writes text to dir/name (mode 0600) and returns its path.
func WriteFile(t testing.TB, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// FreeAddr returns a loopback address (host:port) nothing listens on now, for a daemon the
// test starts to listen on.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// SyncBuffer is a buffer a command or process writes while the test reads it.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String is what was written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
