package worker

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/skillfleet/skillfleet/agent"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/sandbox"
)

// specSandboxes hands out one recording sandbox and keeps the spec it was asked for.
type specSandboxes struct {
	sb   *recordingSandbox
	spec *sandbox.Spec
}

func (s specSandboxes) Acquire(_ context.Context, spec sandbox.Spec) (Sandbox, error) {
	*s.spec = spec
	return s.sb, nil
}
func (s specSandboxes) Release(context.Context, Sandbox) error { return nil }

// catalogAgent keeps the catalog it was shown.
type catalogAgent struct{ got *[]agent.SkillRef }

func (a catalogAgent) Run(_ context.Context, _ agent.Sandbox, req agent.Request) (string, agent.Transcript, error) {
	*a.got = req.Catalog
	return "ready", agent.Transcript{}, nil
}

// armsBundle writes an extracted bundle: skills s (the one under test, requiring dep) and
// other, and old versions of s and dep under the baseline directory.
func armsBundle(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, p := range []string{"s/SKILL.md", "s/data/in.csv", "dep/SKILL.md", "other/SKILL.md", "other/scripts/helper.sh", ".skillfleet-baseline/s/SKILL.md", ".skillfleet-baseline/dep/SKILL.md"} {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("---\nname: x\ndescription: d\n---\nbody of "+p+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestArmJobs: a without_skill job's agent is shown the run's catalog without the job's skill
// and its sandbox mounts only the catalog's skills (whole for its closure, the SKILL.md alone
// for the others: a sibling's scripts are not the job's to run); an old_skill job sees the old
// versions where the skills are; a with_skill job of a bundle with old versions does not see
// them; and a baseline job's input files come from the current skill on the worker.
func TestArmJobs(t *testing.T) {
	bundleDir := armsBundle(t)
	entry := func(name, p string) *pb.CatalogEntry {
		return &pb.CatalogEntry{Name: name, Description: "d " + name, Path: p}
	}
	cat := &pb.Catalog{
		Entries:  []*pb.CatalogEntry{entry("dep", "dep/SKILL.md"), entry("other", "other/SKILL.md"), entry("s", "s/SKILL.md")},
		Baseline: []*pb.CatalogEntry{entry("dep", ".skillfleet-baseline/dep/SKILL.md"), entry("s", ".skillfleet-baseline/s/SKILL.md")},
	}
	data, err := proto.Marshal(cat)
	if err != nil {
		t.Fatal(err)
	}
	const digest = "sha256:cat"
	mount := func(src, dst string) sandbox.Mount {
		return sandbox.Mount{Source: filepath.Join(bundleDir, src), Target: dst}
	}
	tests := []struct {
		arm        string
		wantShown  []string // locations in the agent's catalog
		wantMounts []sandbox.Mount
	}{
		{
			arm:        "without_skill",
			wantShown:  []string{"/skills/dep/SKILL.md", "/skills/other/SKILL.md"},
			wantMounts: []sandbox.Mount{mount("dep", "/skills/dep"), mount("other/SKILL.md", "/skills/other/SKILL.md")},
		},
		{
			arm:        "old_skill",
			wantShown:  []string{"/skills/dep/SKILL.md", "/skills/other/SKILL.md", "/skills/s/SKILL.md"},
			wantMounts: []sandbox.Mount{mount(".skillfleet-baseline/dep", "/skills/dep"), mount("other/SKILL.md", "/skills/other/SKILL.md"), mount(".skillfleet-baseline/s", "/skills/s")},
		},
		{
			arm:        "",
			wantShown:  []string{"/skills/dep/SKILL.md", "/skills/other/SKILL.md", "/skills/s/SKILL.md"},
			wantMounts: []sandbox.Mount{mount("dep", "/skills/dep"), mount("other/SKILL.md", "/skills/other/SKILL.md"), mount("s", "/skills/s")},
		},
		{
			// An A/A run's second arm runs exactly as with_skill.
			arm:        "a2",
			wantShown:  []string{"/skills/dep/SKILL.md", "/skills/other/SKILL.md", "/skills/s/SKILL.md"},
			wantMounts: []sandbox.Mount{mount("dep", "/skills/dep"), mount("other/SKILL.md", "/skills/other/SKILL.md"), mount("s", "/skills/s")},
		},
	}
	for _, tt := range tests {
		t.Run("arm "+tt.arm, func(t *testing.T) {
			job := promptJob(saysReady)
			job.Catalog, job.CatalogDigest, job.Arm, job.SkillPath, job.Files = nil, digest, tt.arm, "s", []string{"data/in.csv"}
			job.Closure = []string{"s", "dep"}
			if err := newCatalogs(&fakeStore{objects: map[string][]byte{digest: data}}, 2).resolve(context.Background(), job); err != nil {
				t.Fatal(err)
			}
			sb := &recordingSandbox{}
			var spec sandbox.Spec
			var shown []agent.SkillRef
			e := NewExecutor(specSandboxes{sb, &spec}, nil).WithAgents(map[string]AgentSpec{"": {Agent: catalogAgent{&shown}}}, nil, 1)
			out, err := e.Execute(context.Background(), job, bundleDir)
			if err != nil {
				t.Fatal(err)
			}
			if out.GetVerdict() != pb.Verdict_VERDICT_PASSED {
				t.Fatalf("verdict %v: %s", out.GetVerdict(), out.GetReason())
			}
			var locs []string
			for _, r := range shown {
				locs = append(locs, r.Location)
			}
			if !slices.Equal(locs, tt.wantShown) {
				t.Errorf("agent shown %v, want %v", locs, tt.wantShown)
			}
			if !slices.Equal(spec.Mounts, tt.wantMounts) {
				t.Errorf("mounts %v, want %v", spec.Mounts, tt.wantMounts)
			}
			// A baseline job's input file comes from the current skill on the worker, through
			// stdin; a with_skill job's is copied inside the sandbox, where the skill is.
			if len(sb.reqs) == 0 {
				t.Fatal("no input file copied")
			}
			first := sb.reqs[0]
			if tt.arm == "" || tt.arm == "a2" {
				if len(first.Cmd) < 3 || first.Cmd[2] != copyScript {
					t.Errorf("with_skill copy %q, want the copy script", first.Cmd)
				}
			} else if !strings.Contains(string(first.Stdin), "body of s/data/in.csv") || first.Cmd[len(first.Cmd)-1] != "/work/data/in.csv" {
				t.Errorf("input file not copied from the current skill: %q stdin %q", first.Cmd, first.Stdin)
			}
		})
	}
}

// TestArmCatalogKeepsRunCatalog: making a job's catalog never changes the run's, which every
// job of the run shares from the cache.
func TestArmCatalogKeepsRunCatalog(t *testing.T) {
	cat := &pb.Catalog{
		Entries:  []*pb.CatalogEntry{{Name: "a", Path: "a/SKILL.md"}, {Name: "s", Path: "s/SKILL.md"}},
		Baseline: []*pb.CatalogEntry{{Name: "s", Path: ".skillfleet-baseline/s/SKILL.md"}, {Name: "z", Path: ".skillfleet-baseline/z/SKILL.md"}},
	}
	without := armCatalog(cat, &pb.Job{Skill: "s", Arm: "without_skill"})
	old := armCatalog(cat, &pb.Job{Skill: "s", Arm: "old_skill"})
	if len(without) != 1 || without[0].GetName() != "a" {
		t.Errorf("without_skill catalog %v", without)
	}
	if len(old) != 3 || old[1].GetPath() != ".skillfleet-baseline/s/SKILL.md" || old[2].GetName() != "z" {
		t.Errorf("old_skill catalog %v", old)
	}
	if len(cat.GetEntries()) != 2 || cat.GetEntries()[1].GetPath() != "s/SKILL.md" {
		t.Errorf("the run's catalog changed: %v", cat.GetEntries())
	}
	if r := oldVersionMissing(&pb.Job{Skill: "s", Arm: "old_skill", Catalog: cat.GetEntries()}); r == "" {
		t.Error("an old_skill job without an old version would run")
	}
}

// TestCommandJobMountsItsClosure: a command job's sandbox holds its skill and what it
// requires, not the bundle's other skills: their files are not in the job's cell key, so a
// case that could run a sibling's script would be reused after that script changed (issue 25).
func TestCommandJobMountsItsClosure(t *testing.T) {
	bundleDir := armsBundle(t)
	var spec sandbox.Spec
	e := NewExecutor(specSandboxes{&recordingSandbox{}, &spec}, nil)
	job := commandJob(exitZero)
	job.SkillPath, job.Closure = "s", []string{"s", "dep"}
	out, err := e.Execute(context.Background(), job, bundleDir)
	if err != nil {
		t.Fatal(err)
	}
	if spec.JobID != job.GetId() {
		t.Fatalf("no sandbox acquired: %v %s", out.GetVerdict(), out.GetReason())
	}
	want := []sandbox.Mount{
		{Source: filepath.Join(bundleDir, "s"), Target: "/skills/s"},
		{Source: filepath.Join(bundleDir, "dep"), Target: "/skills/dep"},
	}
	if !slices.Equal(spec.Mounts, want) {
		t.Errorf("mounts %v, want %v", spec.Mounts, want)
	}
}
