package worker

import (
	"io"
	"os"
	"path"
	"path/filepath"
	"sync"

	"github.com/skillfleet/skillfleet/activation"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// maxSkillFileBytes bounds the SKILL.md read from a bundle to fingerprint it; the suite's
// validation refuses larger ones, so this only guards against a bundle that skipped it.
const maxSkillFileBytes = 1 << 20

// detectors caches the activation detectors of recent (bundle, catalog) pairs: every job of a
// run shares them, and building one reads every SKILL.md of the catalog.
type detectors struct {
	mu    sync.Mutex
	byKey map[string]*activation.Detector
	order []string // oldest first
}

// maxDetectors bounds the cache: a few runs' worth.
const maxDetectors = 16

// get returns the detector of the job's catalog in bundleDir, building it on a miss.
func (c *detectors) get(job *pb.Job, bundleDir string) *activation.Detector {
	key := job.GetBundleDigest() + "\x00" + job.GetCatalogDigest()
	if baselineJob(job) {
		// A baseline job's catalog is the run's made by its arm (and, without_skill, its skill).
		key += "\x00" + job.GetArm() + "\x00" + job.GetSkill()
	}
	if job.GetBundleDigest() == "" || job.GetCatalogDigest() == "" {
		return activationDetector(job, bundleDir) // nothing names the catalog: no sharing
	}
	c.mu.Lock()
	d, ok := c.byKey[key]
	c.mu.Unlock()
	if ok {
		return d
	}
	d = activationDetector(job, bundleDir)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byKey == nil {
		c.byKey = map[string]*activation.Detector{}
	}
	if _, ok := c.byKey[key]; !ok {
		c.byKey[key] = d
		c.order = append(c.order, key)
		if len(c.order) > maxDetectors {
			delete(c.byKey, c.order[0])
			c.order = c.order[1:]
		}
	}
	return d
}

// activationDetector fingerprints the bodies of the skills in the job's catalog, read from the
// extracted bundle, so that the agent's run can tell which of them it activated whatever way
// it read them. A file that cannot be read leaves its skill to detection by path.
func activationDetector(job *pb.Job, bundleDir string) *activation.Detector {
	skills := make([]activation.Skill, 0, len(job.GetCatalog()))
	for _, c := range job.GetCatalog() {
		// Clean against a root: a catalog path can never leave the bundle.
		p := filepath.Join(bundleDir, filepath.FromSlash(path.Clean("/"+c.GetPath())))
		b, err := readCapped(p, maxSkillFileBytes)
		if err != nil {
			continue
		}
		skills = append(skills, activation.Skill{Name: c.GetName(), Body: activation.BodyOf(string(b))})
	}
	return activation.New(skills)
}

func readCapped(p string, n int64) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	return io.ReadAll(io.LimitReader(f, n))
}
