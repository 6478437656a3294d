package bundle

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/internal/testutil"
)

// readAheadSuite writes skills whose files are read ahead, streamed, or some of each: small
// files, one past the per-file bound, and a skill past the per-skill bound, more skills than
// the preparers may hold at once.
func readAheadSuite(t *testing.T) []Dir {
	t.Helper()
	root := t.TempDir()
	var dirs []Dir
	write := func(skill, rel string, size int, mode os.FileMode) {
		p := filepath.Join(root, skill, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		data := bytes.Repeat([]byte(skill+rel), size/len(skill+rel)+1)[:size]
		if err := os.WriteFile(p, data, mode); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 12 {
		name := fmt.Sprintf("s%02d", i)
		write(name, "SKILL.md", 100+i, 0o644)
		write(name, "scripts/run.sh", 40, 0o755)
		switch i % 4 {
		case 1:
			write(name, "assets/big.bin", aheadFileBytes+1, 0o644)
			write(name, "assets/small.txt", 10, 0o644)
		case 2:
			for j := range 6 {
				write(name, fmt.Sprintf("data/%d.bin", j), 200<<10, 0o644)
			}
		case 3:
			write(name, "empty.txt", 0, 0o644)
		}
		dirs = append(dirs, Dir{Name: name, Path: filepath.Join(root, name), Closure: []string{name}})
	}
	return dirs
}

// TestReadAheadWritesTheSameBundle: what is read ahead of the writer, and how far ahead, does
// not change a byte of the bundle or its digests.
func TestReadAheadWritesTheSameBundle(t *testing.T) {
	dirs := readAheadSuite(t)
	var want bytes.Buffer
	wantB, err := writeBundle(&want, dirs, aheadLimits{file: -1, skill: -1, skillsPerWorker: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, lim := range []aheadLimits{
		{file: aheadFileBytes, skill: aheadSkillBytes, skillsPerWorker: aheadSkillsPerWorker},
		{file: 1 << 30, skill: 1 << 30, skillsPerWorker: 1},
		{file: 100, skill: 150, skillsPerWorker: 100},
	} {
		var got bytes.Buffer
		gotB, err := writeBundle(&got, dirs, lim)
		if err != nil {
			t.Fatalf("%+v: %v", lim, err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) || !reflect.DeepEqual(gotB, wantB) {
			t.Errorf("%+v: the bundle differs from the one streamed file by file (digest %s, want %s)", lim, gotB.Digest, wantB.Digest)
		}
	}
	if _, err := CheckBundle(bytes.NewReader(want.Bytes())); err != nil {
		t.Errorf("the bundle does not check: %v", err)
	}
}

// TestReadAheadStopsWithTheWriter: a skill that cannot be bundled fails the bundle with the
// error it always gave, however far the preparers had run, and leaves none of them running.
func TestReadAheadStopsWithTheWriter(t *testing.T) {
	dirs := readAheadSuite(t)
	outside := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(outside, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dirs[3].Path, "link")); err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	for _, lim := range []aheadLimits{
		{file: -1, skill: -1, skillsPerWorker: 1},
		{file: aheadFileBytes, skill: aheadSkillBytes, skillsPerWorker: aheadSkillsPerWorker},
	} {
		_, err := writeBundle(&bytes.Buffer{}, dirs, lim)
		if err == nil || !strings.HasPrefix(err.Error(), "bundle skill s03: link: symlink points outside") {
			t.Errorf("%+v: error %v, want skill s03's symlink", lim, err)
		}
		// The preparers are waited for (stop), but a goroutine past its last statement is
		// still counted for a moment: on a loaded machine, the count can lag the return.
		testutil.Eventually(t, 10*time.Second, 5*time.Millisecond, func() bool { return runtime.NumGoroutine() <= before },
			"%+v: goroutines after the bundle failed, %d before", lim, before)
	}
}
