package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/skillfleet/skillfleet/bundle"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// maxCatalogBytes bounds a fetched catalog: 20,000 skills with the spec's longest
// descriptions fit in it.
const maxCatalogBytes = 32 << 20

// catalogs fetches the run catalogs prompt jobs name by digest, and keeps the last few in
// memory: every prompt job of a run names the same one.
type catalogs struct {
	src  bundle.BundleSource
	keep int

	mu    sync.Mutex
	byKey map[string]*pb.Catalog
	order []string // oldest first
}

func newCatalogs(src bundle.BundleSource, keep int) *catalogs {
	return &catalogs{src: src, keep: max(keep, 1), byKey: map[string]*pb.Catalog{}}
}

// resolve puts into a prompt job the catalog it names by digest, as the job's arm shows it
// (armCatalog). An error (the store is unreachable, or what it holds does not hash to the
// digest) is an infrastructure failure: the job is tried again, never run with a catalog
// other than its own.
func (c *catalogs) resolve(ctx context.Context, job *pb.Job) error {
	digest := job.GetCatalogDigest()
	if job.GetKind() != pb.CaseKind_CASE_KIND_PROMPT {
		return nil
	}
	if digest == "" || len(job.GetCatalog()) > 0 {
		job.Catalog = armCatalog(&pb.Catalog{Entries: job.GetCatalog()}, job)
		return nil
	}
	c.mu.Lock()
	cat, ok := c.byKey[digest]
	c.mu.Unlock()
	if !ok {
		var err error
		if cat, err = c.fetch(ctx, digest); err != nil {
			return err
		}
		c.put(digest, cat)
	}
	job.Catalog = armCatalog(cat, job)
	return nil
}

func (c *catalogs) fetch(ctx context.Context, digest string) (*pb.Catalog, error) {
	var buf capped
	if err := c.src.GetBundle(ctx, digest, &buf); err != nil {
		return nil, fmt.Errorf("catalog %s: %w", digest, err)
	}
	cat := &pb.Catalog{}
	if err := proto.Unmarshal(buf.b, cat); err != nil {
		return nil, fmt.Errorf("catalog %s: %w", digest, err)
	}
	if len(cat.GetEntries()) == 0 {
		return nil, fmt.Errorf("catalog %s: no skill in it", digest)
	}
	return cat, nil
}

func (c *catalogs) put(digest string, entries *pb.Catalog) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKey[digest]; ok {
		return
	}
	c.byKey[digest] = entries
	c.order = append(c.order, digest)
	for len(c.order) > c.keep {
		delete(c.byKey, c.order[0])
		c.order = c.order[1:]
	}
}

// capped is a buffer that refuses to grow past maxCatalogBytes.
type capped struct{ b []byte }

func (w *capped) Write(p []byte) (int, error) {
	if len(w.b)+len(p) > maxCatalogBytes {
		return 0, errors.New("larger than the catalog limit")
	}
	w.b = append(w.b, p...)
	return len(p), nil
}
