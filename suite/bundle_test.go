package suite

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/skillfleet/skillfleet/bundle"
	"github.com/skillfleet/skillfleet/internal/testutil"
	"github.com/skillfleet/skillfleet/skill"
)

// TestBundleRoundTrip writes the example suite as a bundle, extracts it elsewhere, and plans it
// again: the coordinator plans from the extracted bundle, so ids and digests must not move.
func TestBundleRoundTrip(t *testing.T) {
	s := Load([]string{examples}, skill.Options{})
	want, err := s.Plan(PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	b, err := WriteBundle(&buf, s.Graph, s.Catalog.Skills())
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(buf.Bytes())
	if got := bundle.DigestPrefix + hex.EncodeToString(sum[:]); got != b.Digest || b.Digest != want.SuiteDigest {
		t.Fatalf("bundle digest %s, sha256 of bytes %s, plan digest %s: all three must agree", b.Digest, got, want.SuiteDigest)
	}
	dir := t.TempDir()
	if err := bundle.ExtractBundle(bytes.NewReader(buf.Bytes()), dir); err != nil {
		t.Fatal(err)
	}
	// Scripts keep their executable bit.
	if st, err := os.Stat(filepath.Join(dir, "env-selector", "scripts", "select.py")); err != nil || st.Mode()&0o111 == 0 {
		t.Fatalf("script lost its executable bit: %v %v", st, err)
	}
	s2 := Load([]string{dir}, skill.Options{})
	if s2.Diagnostics.HasErrors() {
		t.Fatalf("extracted bundle has errors: %s", diagText(dir, s2.Diagnostics))
	}
	got, err := s2.Plan(PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.SuiteDigest != want.SuiteDigest || len(got.Jobs) != len(want.Jobs) {
		t.Fatalf("replanned bundle: digest %s jobs %d, want %s %d", got.SuiteDigest, len(got.Jobs), want.SuiteDigest, len(want.Jobs))
	}
	for i := range got.Jobs {
		if got.Jobs[i].ID != want.Jobs[i].ID {
			t.Fatalf("job %d: %s vs %s", i, got.Jobs[i].ID, want.Jobs[i].ID)
		}
	}
}

func TestBundleRefusesSymlinkOutOfSkill(t *testing.T) {
	root := t.TempDir()
	testutil.CopyTree(t, filepath.Join(examples, "logging-standards"), filepath.Join(root, "logging-standards"))
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("token"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(root, "logging-standards", "references", "leak.md")); err != nil {
		t.Fatal(err)
	}
	s := Load([]string{root}, skill.Options{})
	if _, err := s.Plan(PlanOptions{}); err == nil {
		t.Fatal("a symlink to a file outside the skill was bundled")
	}
}

func FuzzPromptCases(f *testing.F) {
	for _, p := range []string{"../examples/skills/env-selector/test/cases.yaml", "../examples/skills/deploy-checklist/test/cases.yaml"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("cases:\n  - name: a\n    input: x\n    assertions:\n      output_matches: ['(']\n"))
	f.Add([]byte("a: &a [*a]\ncases: *a\n"))
	sk := &skill.Skill{Name: "s", Dir: ".", Test: &skill.TestConfig{Cases: "c.yaml", Parallel: true}}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &reader{file: "c.yaml"}
		for _, c := range r.promptCases(sk, data) {
			if c.Input == "" || len(c.Assertions) == 0 || c.Runs < 1 || c.Confidence <= 0 || c.Confidence > 1 {
				t.Fatalf("invalid case accepted: %+v", c)
			}
		}
	})
}

// FuzzCommandCase does the same for seed-003 command cases.
func FuzzCommandCase(f *testing.F) {
	for _, p := range []string{"../examples/skills/env-selector/tests/cases/05-config-stdin.yaml", "../examples/skills/deploy-checklist/tests/cases/prod-json.yaml"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("name: x\ninput: {command: ls}\nexpected: {stdout-json: {a: [1, null, {b: 2.5}]}}\n"))
	sk := &skill.Skill{Name: "s", Dir: "."}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &reader{file: "c.yaml"}
		c := r.commandCase(sk, data, testConfig{timeout: DefaultCommandTimeout})
		if c != nil && (c.Command == "" || len(c.Assertions) == 0 || len(r.diags) > 0) {
			t.Fatalf("invalid case accepted: %+v %v", c, r.diags)
		}
	})
}
