package coordinator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/skillfleet/skillfleet/bundle"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/skill"
	"github.com/skillfleet/skillfleet/suite"
)

// jobCatalog is what the agent of a run's prompt jobs is told about the suite's skills,
// computed once per run. It is stored once, beside the bundles, and each prompt job names it
// by digest: inline, a catalog of thousands of skills would make every job message hundreds of
// kilobytes (and a 200-skill suite's prompt job went from 308 bytes to 23 KB).
type jobCatalog struct {
	data    []byte            // the pb.Catalog, deterministically marshalled
	digest  string            // bundle.DigestPrefix + hex(sha256(data))
	allowed map[string]string // skill name → its allowed-tools
	// allowedOld is the allowed-tools of the old versions (old_skill jobs).
	allowedOld map[string]string
	// files digests the content of every SKILL.md of the catalog, current and old: a prompt
	// job's sandbox holds each of them (its agent may read any to activate the skill), so
	// a prompt job's cell key covers them (see cellKey and worker skillMounts).
	files string
	// tests and testsOld are the bundle paths of each skill's test definitions (suite.TestPaths),
	// of the current and the old versions by name: a job's sandbox shows none of them
	// (pb.Job.hidden).
	tests, testsOld map[string][]string
	// cases caches each case's digest (*suite.Case → string): a case's fixtures are read
	// once per run, not once per epoch and agent.
	cases sync.Map
}

// catalogOf makes a run's catalog from the skills of its bundle, in the order given (name
// order: the bundle's), and the old versions an old_skill run's bundle holds (nil for other
// runs). A skill's file lies at "<name>/SKILL.md" (or "<name>/skill.md") in every bundle, an
// old version's under bundle.BaselineDir. The worker makes each job's catalog from this one
// by the job's arm (worker/arms.go): a run stores one catalog, whatever its arms.
func catalogOf(skills, old []*skill.Skill) (*jobCatalog, error) {
	c := &jobCatalog{allowed: make(map[string]string, len(skills)), allowedOld: make(map[string]string, len(old)),
		tests: make(map[string][]string, len(skills)), testsOld: make(map[string][]string, len(old))}
	testPaths := func(s *skill.Skill, dir string) []string {
		rel := suite.TestPaths(s)
		out := make([]string, len(rel))
		for i, p := range rel {
			out[i] = path.Join(dir, p)
		}
		return out
	}
	entry := func(s *skill.Skill, dir string) *pb.CatalogEntry {
		// The file's own name: a lowercase skill.md is accepted too, and a bundle keeps it.
		file := skill.FileName
		if s.File != "" {
			file = filepath.Base(s.File)
		}
		return &pb.CatalogEntry{Name: s.Name, Description: s.Description, Path: path.Join(dir, file)}
	}
	cat := &pb.Catalog{Entries: make([]*pb.CatalogEntry, 0, len(skills))}
	fh := sha256.New()
	for _, s := range skills {
		cat.Entries = append(cat.Entries, entry(s, s.Name))
		c.allowed[s.Name] = s.AllowedTools
		c.tests[s.Name] = testPaths(s, s.Name)
		skillFileDigest(fh, s)
	}
	for _, s := range old {
		cat.Baseline = append(cat.Baseline, entry(s, path.Join(bundle.BaselineDir, s.Name)))
		c.allowedOld[s.Name] = s.AllowedTools
		c.testsOld[s.Name] = testPaths(s, path.Join(bundle.BaselineDir, s.Name))
		fmt.Fprintf(fh, "old\x00")
		skillFileDigest(fh, s)
	}
	c.files = bundle.DigestPrefix + hex.EncodeToString(fh.Sum(nil))
	// Deterministic, so the same bundle gives the same digest when a resumed run plans again.
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(cat)
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	sum := sha256.Sum256(data)
	c.data, c.digest = data, bundle.DigestPrefix+hex.EncodeToString(sum[:])
	return c, nil
}

// skillFileDigest adds a skill's name and the content of its SKILL.md to h. A file that cannot
// be read is said so in the digest rather than ignored: the planner read it moments ago.
func skillFileDigest(h io.Writer, s *skill.Skill) {
	fmt.Fprintf(h, "%q\x00", s.Name)
	data, err := os.ReadFile(s.File)
	if err != nil {
		fmt.Fprintf(h, "unreadable\x00")
		return
	}
	sum := sha256.Sum256(data)
	fmt.Fprintf(h, "%x\x00", sum)
}

// hasPrompts reports whether a plan has a prompt job, the only kind that needs the catalog.
func hasPrompts(p *suite.Plan) bool {
	for _, c := range p.Cases {
		if c.Kind == suite.KindPrompt {
			return true
		}
	}
	return false
}

// storeCatalog stores r's catalog beside the bundles, if its jobs need one, and records its
// digest in the run's spec so that the retention sweep keeps it as long as the run. Storing is
// idempotent: a resumed run stores it again (a run admitted by an older coordinator never did).
func (c *Coordinator) storeCatalog(ctx context.Context, r *run) error {
	if !hasPrompts(r.plan) {
		return nil
	}
	f, err := os.CreateTemp(c.cache.Dir(), ".tmp-catalog-")
	if err != nil {
		return fmt.Errorf("store catalog: %w", err)
	}
	defer func() { _ = os.Remove(f.Name()) }()
	_, err = f.Write(r.catalog.data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("store catalog: %w", err)
	}
	stored, err := c.bundles.PutBundleFile(ctx, f.Name())
	if err != nil {
		return fmt.Errorf("store catalog: %w", err)
	}
	if stored != r.catalog.digest {
		return fmt.Errorf("store catalog: hashed %s, stored %s", r.catalog.digest, stored)
	}
	r.spec.CatalogDigest = stored
	return nil
}
