//go:build unix

package bundle

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestWriteBundleSkipsSpecialFiles: a FIFO in a skill directory is left out and returned in
// Skipped, by its type alone. Opening it would wait for a writer, so a writer that opened it
// hangs here (the test binary's timeout is then the failure); one that refused it failed the
// whole bundle.
func TestWriteBundleSkipsSpecialFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	if err := os.MkdirAll(filepath.Join(dir, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: s\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "scripts", "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("no FIFO: %v", err)
	}
	var buf bytes.Buffer
	b, err := WriteBundle(&buf, []Dir{{Name: "s", Path: dir}})
	if err != nil {
		t.Fatalf("WriteBundle: %v", err)
	}
	if len(b.Skipped) != 1 || b.Skipped[0] != (SkippedFile{Skill: "s", Path: fifo, Mode: fs.ModeNamedPipe}) {
		t.Errorf("skipped %+v", b.Skipped)
	}
	tr := tar.NewReader(&buf)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name == "s/scripts/pipe" {
			t.Errorf("the FIFO is in the bundle")
		}
	}
}
