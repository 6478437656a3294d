package worker

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// TestActivationDetectorReadsTheBundle: the detector knows the catalog's skills by the bodies
// in the bundle; a catalog path that tries to leave the bundle reads nothing outside it.
func TestActivationDetectorReadsTheBundle(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "bundle")
	body := "Collect every merged pull request since the last tag.\nGroup the entries under Added, Changed and Fixed.\nWrite the result above the previous release section.\n"
	if err := os.MkdirAll(filepath.Join(dir, "notes"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes", "SKILL.md"), []byte("---\nname: notes\ndescription: d\n---\n"+body), 0o644); err != nil {
		t.Fatal(err)
	}
	secret := "A file outside the bundle that must never be read by a job.\nIts second line is also long enough to be a fingerprint.\nAnd so is its third line, which completes the set.\n"
	if err := os.WriteFile(filepath.Join(root, "SKILL.md"), []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	job := &pb.Job{Catalog: []*pb.CatalogEntry{
		{Name: "notes", Path: "notes/SKILL.md"},
		{Name: "escape", Path: "../SKILL.md"},
		{Name: "gone", Path: "gone/SKILL.md"},
	}}
	d := activationDetector(job, dir)
	if got := d.Scan(body); !slices.Equal(got, []string{"notes"}) {
		t.Errorf("Scan(body) = %v, want [notes]", got)
	}
	if got := d.Scan(secret); got != nil {
		t.Errorf("a catalog path read a file outside the bundle: %v", got)
	}
	if got := d.Scan("---\nname: notes\ndescription: d\n---\n"); got != nil {
		t.Errorf("the frontmatter alone activates %v", got)
	}
}

// TestDetectorsAreSharedByARunsJobs: jobs naming the same bundle and catalog share one
// detector; another catalog gets its own; the cache stays bounded.
func TestDetectorsAreSharedByARunsJobs(t *testing.T) {
	dir := t.TempDir()
	var c detectors
	job := func(bundle, catalog string) *pb.Job {
		return &pb.Job{BundleDigest: bundle, CatalogDigest: catalog, Catalog: []*pb.CatalogEntry{{Name: "x", Path: "x/SKILL.md"}}}
	}
	a, b := c.get(job("b1", "c1"), dir), c.get(job("b1", "c1"), dir)
	if a != b {
		t.Error("two jobs of one run built two detectors")
	}
	if c.get(job("b1", "c2"), dir) == a {
		t.Error("another catalog shared the detector")
	}
	first := c.get(job("", ""), dir)
	if second := c.get(job("", ""), dir); first == second {
		t.Error("jobs naming no catalog shared a detector")
	}
	for i := range 3 * maxDetectors {
		c.get(job("b", fmt.Sprint(i)), dir)
	}
	if len(c.byKey) != maxDetectors || len(c.order) != maxDetectors {
		t.Errorf("cache holds %d (%d in order), want %d", len(c.byKey), len(c.order), maxDetectors)
	}
}
