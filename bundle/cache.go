package bundle

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// BundleSource is where suite bundles come from (the JetStream object store).
type BundleSource interface {
	// GetBundle writes the bundle with the given digest to w, failing if what it read does
	// not hash to the digest.
	GetBundle(ctx context.Context, digest string, w io.Writer) error
}

// Cache keeps extracted suite bundles on local disk, one directory per digest, so a worker
// (or the coordinator, to plan) fetches each suite once however many of its jobs it runs. Directories are written
// under a temporary name and renamed into place, so a crash never leaves a half bundle that
// looks whole; they are made read-only for everyone but the worker, and sandboxes mount them
// read-only on top.
type Cache struct {
	dir    string
	src    BundleSource
	keep   int
	mu     sync.Mutex
	flight map[string]*fetch
	// refs counts the jobs using each bundle directory; recent orders names, most recently
	// used last. Only bundles nobody uses are evicted: a sandbox's bind mount shares the
	// directory, so removing it would pull the files out from under a running job.
	refs   map[string]int
	recent []string
}

type fetch struct {
	done chan struct{}
	err  error
}

// NewCache opens (and cleans up) a cache in dir that keeps at most keep unused bundles.
func NewCache(dir string, src BundleSource, keep int) (*Cache, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("bundle cache: %w", err)
	}
	c := &Cache{dir: dir, src: src, keep: max(keep, 1), flight: make(map[string]*fetch), refs: make(map[string]int)}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		switch {
		case strings.HasPrefix(e.Name(), ".tmp-"):
			// Leftovers of a crash mid-download are never valid.
			_ = os.RemoveAll(filepath.Join(dir, e.Name()))
		case strings.HasPrefix(e.Name(), "sha256-"):
			// Complete: bundles are renamed into place only after they were verified.
			c.recent = append(c.recent, e.Name())
		}
	}
	c.evictLocked()
	return c, nil
}

// Get returns the directory holding the extracted bundle, fetching it once per digest even
// when many jobs ask at the same time. The caller must call release when it no longer reads the directory.
func (c *Cache) Get(ctx context.Context, digest string) (dir string, release func(), err error) {
	name, err := dirName(digest)
	if err != nil {
		return "", nil, err
	}
	final := filepath.Join(c.dir, name)
	release = func() {
		c.mu.Lock()
		c.refs[name]--
		c.evictLocked()
		c.mu.Unlock()
	}
	for {
		c.mu.Lock()
		if slices.Contains(c.recent, name) {
			// recent holds exactly the bundles on disk, so no stat per job.
			c.touchLocked(name)
			c.mu.Unlock()
			return final, release, nil
		}
		f, busy := c.flight[name]
		if !busy {
			f = &fetch{done: make(chan struct{})}
			c.flight[name] = f
			c.mu.Unlock()
			f.err = c.download(ctx, digest, final)
			c.mu.Lock()
			delete(c.flight, name)
			if f.err == nil {
				c.touchLocked(name)
			}
			c.mu.Unlock()
			close(f.done)
			if f.err != nil {
				return "", nil, f.err
			}
			return final, release, nil
		}
		c.mu.Unlock()
		select {
		case <-f.done:
			if f.err != nil {
				return "", nil, f.err
			}
		case <-ctx.Done():
			return "", nil, ctx.Err()
		}
	}
}

// Dir is the directory the cache keeps bundles in. A directory made in it whose name starts
// with ".tmp-" is on the cache's file system (so Adopt can rename it in) and is removed by the
// next NewCache if its maker crashed.
func (c *Cache) Dir() string { return c.dir }

// Adopt moves tree, a bundle the caller has extracted (and so validated) under Dir, into the
// cache as the bundle with digest, sparing a later Get the download and extraction. When the
// cache has that bundle already, or is fetching it, tree is left where it is for the caller to
// remove.
func (c *Cache) Adopt(digest, tree string) error {
	name, err := dirName(digest)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, busy := c.flight[name]; busy || slices.Contains(c.recent, name) {
		return nil
	}
	if err := os.Chmod(tree, 0o755); err != nil {
		return fmt.Errorf("bundle cache: %w", err)
	}
	if err := os.Rename(tree, filepath.Join(c.dir, name)); err != nil {
		return fmt.Errorf("bundle cache: %w", err)
	}
	c.recent = append(c.recent, name)
	c.evictLocked()
	return nil
}

func (c *Cache) download(ctx context.Context, digest, final string) error {
	tmp, err := os.MkdirTemp(c.dir, ".tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	tarPath := filepath.Join(tmp, "bundle.tar")
	f, err := os.Create(tarPath)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := c.src.GetBundle(ctx, digest, f); err != nil {
		return fmt.Errorf("fetch bundle %s: %w", digest, err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		return err
	}
	tree := filepath.Join(tmp, "tree")
	// An empty bundle is still a directory (with no skills to plan), not a missing one.
	if err := os.Mkdir(tree, 0o755); err != nil {
		return err
	}
	if err := ExtractBundle(f, tree); err != nil {
		return fmt.Errorf("extract bundle %s: %w", digest, err)
	}
	if err := os.Chmod(tree, 0o755); err != nil {
		return err
	}
	return os.Rename(tree, final)
}

// touchLocked takes a reference on a bundle and marks it most recently used.
func (c *Cache) touchLocked(name string) {
	c.refs[name]++
	if i := slices.Index(c.recent, name); i >= 0 {
		c.recent = slices.Delete(c.recent, i, i+1)
	}
	c.recent = append(c.recent, name)
	c.evictLocked()
}

// evictLocked removes the least recently used unreferenced bundles beyond keep.
func (c *Cache) evictLocked() {
	for i := 0; len(c.recent) > c.keep && i < len(c.recent); {
		name := c.recent[i]
		if c.refs[name] > 0 {
			i++
			continue
		}
		c.recent = slices.Delete(c.recent, i, i+1)
		delete(c.refs, name)
		_ = os.RemoveAll(filepath.Join(c.dir, name))
	}
}

// dirName maps "sha256:<hex>" to a directory name, refusing anything else: the digest comes
// from a message and must not be able to name a path.
func dirName(digest string) (string, error) {
	hex, ok := strings.CutPrefix(digest, DigestPrefix)
	if !ok || len(hex) != 64 || strings.Trim(hex, "0123456789abcdef") != "" {
		return "", errors.New("bad bundle digest " + fmt.Sprintf("%q", digest))
	}
	return "sha256-" + hex, nil
}
