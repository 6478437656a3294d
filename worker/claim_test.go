package worker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
)

// noWait makes a busy lock count as taken at once.
var noWait = ClaimOptions{Busy: time.Nanosecond, Sleep: func(time.Duration) {}}

func mustClaim(t *testing.T, root, id string) *Claim {
	t.Helper()
	c, err := ClaimDir(root, id, noWait, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Release() })
	return c
}

func writeFile(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func entries(t *testing.T, root string) []string {
	t.Helper()
	es, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestClaimDirPrunesOnlyGoneWorkers(t *testing.T) {
	root := t.TempDir()
	alive := mustClaim(t, root, "alive")
	writeFile(t, filepath.Join(alive.Dir, "bundles", "b1"))

	// A worker that ran and ended: its lock file is there, nobody holds it.
	dead, err := ClaimDir(root, "dead", noWait, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dead.Dir, "bundles", "b1"))
	if err := dead.Release(); err != nil {
		t.Fatal(err)
	}
	// No lock file: a worker creating its directory, or one from before locks.
	writeFile(t, filepath.Join(root, "unlocked", "bundles", "b1"))
	// What a pruner that died while removing left.
	writeFile(t, filepath.Join(root, gonePrefix+"old-123", "bundles", "b1"))
	// Not a directory: not ours to judge.
	writeFile(t, filepath.Join(root, "notes.txt"))

	me := mustClaim(t, root, "me")
	if me.Dir != filepath.Join(root, "me") {
		t.Errorf("Dir = %s", me.Dir)
	}
	want := []string{"alive", "me", "notes.txt", "unlocked"}
	if got := entries(t, root); !slices.Equal(got, want) {
		t.Errorf("after the claim the root holds %v, want %v", got, want)
	}
	if _, err := os.Stat(filepath.Join(alive.Dir, "bundles", "b1")); err != nil {
		t.Errorf("a live worker's cache was touched: %v", err)
	}
}

func TestClaimDirRefusesATakenID(t *testing.T) {
	root := t.TempDir()
	mustClaim(t, root, "w1")
	slept := 0
	opts := ClaimOptions{Busy: 200 * time.Millisecond, Sleep: func(time.Duration) { slept++ }}
	_, err := ClaimDir(root, "w1", opts, zap.NewNop())
	if err == nil || !strings.Contains(err.Error(), "held by another running worker with id w1") {
		t.Fatalf("err = %v, want the id refused", err)
	}
	if slept == 0 {
		t.Error("a held lock was not waited for: a pruner holds one only for a moment")
	}
}

func TestClaimDirKeepsAReleasedDirectoryForItsID(t *testing.T) {
	root := t.TempDir()
	c, err := ClaimDir(root, "w1", noWait, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(c.Dir, "bundles", "b1"))
	if err := c.Release(); err != nil {
		t.Fatal(err)
	}
	// The same worker restarting: its cache is still warm.
	mustClaim(t, root, "w1")
	if _, err := os.Stat(filepath.Join(root, "w1", "bundles", "b1")); err != nil {
		t.Errorf("a restart lost its own cache: %v", err)
	}
}

func TestClaimDirRejectsIDsThatAreNotAPathElement(t *testing.T) {
	for _, id := range []string{"", ".", "..", "a/b", `a\b`, ".hidden", "../escape"} {
		if _, err := ClaimDir(t.TempDir(), id, noWait, zap.NewNop()); !errors.Is(err, ErrBadID) {
			t.Errorf("id %q: err = %v, want ErrBadID", id, err)
		}
	}
}

// Workers starting together on one root, each pruning while the others claim: every one ends
// up holding its own directory, and the ended ones' directories are gone.
func TestClaimDirUnderConcurrentStarts(t *testing.T) {
	root := t.TempDir()
	for i := range 8 {
		c := mustClaim(t, root, fmt.Sprintf("ended-%d", i))
		if err := c.Release(); err != nil {
			t.Fatal(err)
		}
	}
	const n = 16
	claims := make([]*Claim, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			claims[i], errs[i] = ClaimDir(root, fmt.Sprintf("w%02d", i), ClaimOptions{}, zap.NewNop())
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("worker %d: %v", i, err)
		}
		defer claims[i].Release()
	}
	for _, c := range claims {
		if ok, err := stillAt(c.lock, filepath.Join(c.Dir, lockName)); err != nil || !ok {
			t.Errorf("%s: the held lock is not the directory's (%v): a pruner took a live directory", c.Dir, err)
		}
	}
	for _, name := range entries(t, root) {
		if !strings.HasPrefix(name, "w") {
			t.Errorf("%s left under the root", name)
		}
	}
}

// A pruner that takes a directory for dead between its owner's open and lock moves it away; the
// owner notices that the file it locked is no longer its lock file and claims afresh.
func TestClaimDirSurvivesAPrunerBetweenOpenAndLock(t *testing.T) {
	root := t.TempDir()
	pruned := false
	opts := noWait
	opts.afterOpen = func() {
		if !pruned {
			pruned = true
			prune(root, "someone-else", zap.NewNop())
		}
	}
	c, err := ClaimDir(root, "w1", opts, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	if !pruned {
		t.Fatal("the pruner never ran")
	}
	if ok, err := stillAt(c.lock, filepath.Join(root, "w1", lockName)); err != nil || !ok {
		t.Errorf("the claim holds a lock file that is no longer at %s (%v)", c.Dir, err)
	}
	// The moved directory is gone too.
	if got := entries(t, root); !slices.Equal(got, []string{"w1"}) {
		t.Errorf("root holds %v, want [w1]", got)
	}
}
