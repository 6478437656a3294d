package coordinator

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/skillfleet/skillfleet/assert"
	"github.com/skillfleet/skillfleet/assert/assertpb"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/skill"
	"github.com/skillfleet/skillfleet/suite"
)

// TestJobMessageOfAnEval: the job of an evals.json case carries its prompt, its input files and
// the judge's reference beside its criteria; a YAML prompt case carries neither files nor a
// reference, so its job is what it was before the fields existed. Every job names the skill's
// test definitions as hidden.
func TestJobMessageOfAnEval(t *testing.T) {
	s := suite.Load([]string{filepath.Join("..", "suite", "testdata", "evals", "good")}, skill.Options{})
	if s.Diagnostics.HasErrors() {
		t.Fatalf("suite: %v", s.Diagnostics)
	}
	p, err := s.Plan(suite.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalogOf(s.Catalog.Skills(), nil)
	if err != nil {
		t.Fatal(err)
	}
	spec := &pb.RunSpec{Id: "r1", BundleDigest: p.SuiteDigest}
	tests := []struct {
		caseName, input, reference string
		files, criteria            []string
	}{
		{caseName: "yaml-case", input: "say hi"},
		{
			caseName: "eval-1", input: "Find the best month in evals/files/sales.csv.",
			reference: "Names february as the best month, with revenue 20.",
			files:     []string{"evals/files/sales.csv"},
			criteria:  []string{"The answer names february", "The answer gives the revenue 20"},
		},
		{
			caseName: "eval-7", input: "Summarise the skill in one line.",
			reference: "A one-line summary of what the skill does.",
			criteria:  []string{"A one-line summary of what the skill does."},
		},
	}
	for _, tt := range tests {
		t.Run(tt.caseName, func(t *testing.T) {
			i := slices.IndexFunc(p.Jobs, func(j suite.Job) bool { return j.Case.Name == tt.caseName })
			if i < 0 {
				t.Fatalf("no job for %s", tt.caseName)
			}
			m, err := jobMessage(spec, p, cat, p.Jobs[i], 3, nil)
			if err != nil {
				t.Fatal(err)
			}
			if m.GetKind() != pb.CaseKind_CASE_KIND_PROMPT || m.GetInput() != tt.input || m.GetCaseName() != tt.caseName {
				t.Errorf("job %s %v input %q, want a prompt job with input %q", m.GetCaseName(), m.GetKind(), m.GetInput(), tt.input)
			}
			if !strings.HasPrefix(m.GetCaseDigest(), "sha256:") {
				t.Errorf("case digest %q, want a sha256 digest", m.GetCaseDigest())
			}
			if m.GetReference() != tt.reference || !slices.Equal(m.GetFiles(), tt.files) {
				t.Errorf("reference %q files %v, want %q %v", m.GetReference(), m.GetFiles(), tt.reference, tt.files)
			}
			// Whichever format the case came from, the job's sandbox shows none of the skill's
			// test definitions (issue 31).
			if want := []string{"s/tests", "s/evals", "s/test/cases.yaml"}; !slices.Equal(m.GetHidden(), want) {
				t.Errorf("hidden %q, want %q", m.GetHidden(), want)
			}
			if tt.criteria == nil {
				return
			}
			var got []string
			for _, a := range m.GetAssertions() {
				if a.GetType() != "semantic_match" || a.GetLine() < 1 {
					t.Errorf("assertion %v is not a located semantic_match", a)
				}
				got = append(got, a.GetValue())
			}
			if !slices.Equal(got, tt.criteria) {
				t.Errorf("criteria %q, want %q", got, tt.criteria)
			}
		})
	}
}

// TestCaseDigest: a case's digest changes with what defines the case (input, assertions,
// epochs, a fixture's bytes) and not with where it was written.
func TestCaseDigest(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "data.txt"), []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := func() *suite.Case {
		return &suite.Case{
			Skill: &skill.Skill{Name: "s", Dir: dir}, Name: "c", Kind: suite.KindPrompt, Input: "hello",
			Files: []string{"data.txt"}, Runs: 1, Confidence: 1, File: "cases.yaml", Line: 3,
			Assertions: []suite.Assertion{{Assertion: assert.Assertion{Type: assert.OutputContains, Value: "hi"}, Line: 4}},
		}
	}
	digest := func(c *suite.Case) string {
		t.Helper()
		m := &pb.Job{Kind: pb.CaseKind_CASE_KIND_PROMPT, Input: c.Input, Files: c.Files}
		for _, a := range c.Assertions {
			pa, err := assertpb.Encode(a.Assertion, c.File, a.Line, a.Votes)
			if err != nil {
				t.Fatal(err)
			}
			m.Assertions = append(m.Assertions, pa)
		}
		return caseDigest(c, m)
	}
	want := digest(base())
	tests := []struct {
		name   string
		change func(c *suite.Case)
		same   bool
	}{
		{"moved to another line", func(c *suite.Case) { c.Line, c.Assertions[0].Line = 30, 31 }, true},
		{"another input", func(c *suite.Case) { c.Input = "hello!" }, false},
		{"another assertion value", func(c *suite.Case) { c.Assertions[0].Value = "ho" }, false},
		{"more epochs", func(c *suite.Case) { c.Runs = 3 }, false},
		{"a lower confidence", func(c *suite.Case) { c.Confidence = 0.5 }, false},
		{"another fixture", func(c *suite.Case) {
			d := t.TempDir()
			if err := os.WriteFile(filepath.Join(d, "data.txt"), []byte("two"), 0o644); err != nil {
				t.Fatal(err)
			}
			c.Skill = &skill.Skill{Name: "s", Dir: d}
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base()
			tt.change(c)
			if got := digest(c); (got == want) != tt.same {
				t.Errorf("digest %s vs %s: same = %v, want %v", got, want, got == want, tt.same)
			}
		})
	}
}

// TestCommandCaseDigestWithItsFixtures: a command job carries its fixtures (its sandbox shows
// them under the hidden tests/) without changing its case digest, so runs before and after
// the field compare and reuse as they did; the fixture's bytes still count.
func TestCommandCaseDigestWithItsFixtures(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "in.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := &suite.Case{Skill: &skill.Skill{Name: "s", Dir: dir}, Name: "c", Kind: suite.KindCommand, Command: "cat in.json",
		Files: []string{"in.json"}, Runs: 1, Confidence: 1}
	before := caseDigest(c, &pb.Job{Kind: pb.CaseKind_CASE_KIND_COMMAND, Command: c.Command})
	now := caseDigest(c, &pb.Job{Kind: pb.CaseKind_CASE_KIND_COMMAND, Command: c.Command, Files: c.Files})
	if now != before {
		t.Errorf("a command job carrying its fixtures has digest %s, want the one before the field, %s", now, before)
	}
	if err := os.WriteFile(filepath.Join(dir, "in.json"), []byte(`{"a": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if changed := caseDigest(c, &pb.Job{Kind: pb.CaseKind_CASE_KIND_COMMAND, Command: c.Command, Files: c.Files}); changed == now {
		t.Error("a changed fixture left the command case's digest as it was")
	}
}

// TestKeysAsFmtMadeThem: cell keys and result keys are stored in the history and looked up
// by later runs, so the buffer-built ones must be the bytes fmt and the hash writer made.
func TestKeysAsFmtMadeThem(t *testing.T) {
	fmtCellKey := func(m *pb.Job, closure, oldClosure, catalogFiles string) string {
		h := sha256.New()
		arm := m.GetArm()
		fmt.Fprintf(h, "cell/2\x00%q\x00%q\x00%q\x00%q\x00%s\x00%s\x00", m.GetSkill(), m.GetCaseName(), m.GetAgent(), arm, m.GetCaseDigest(), closure)
		if arm == string(suite.ArmOldSkill) {
			fmt.Fprintf(h, "old %s\x00", oldClosure)
		}
		if m.GetKind() == pb.CaseKind_CASE_KIND_PROMPT {
			fmt.Fprintf(h, "catalog %s\x00", catalogFiles)
		}
		if l := m.GetLimits(); l != nil {
			data, _ := proto.MarshalOptions{Deterministic: true}.Marshal(l)
			h.Write(data)
		}
		return "sha256:" + hex.EncodeToString(h.Sum(nil))
	}
	fmtResultKey := func(skillName, caseName string) string {
		h := sha256.New()
		h.Write([]byte(skillName))
		h.Write([]byte{0})
		h.Write([]byte(caseName))
		return "c" + hex.EncodeToString(h.Sum(nil)[:8])
	}
	long := strings.Repeat("x", 700) // past the stack buffers
	for _, tc := range []struct {
		name string
		job  *pb.Job
	}{
		{"command", &pb.Job{Skill: "s", CaseName: "c", Kind: pb.CaseKind_CASE_KIND_COMMAND, CaseDigest: "sha256:ab"}},
		{"prompt", &pb.Job{Skill: "pdf-tools", CaseName: "extracts tables", Agent: "claude", Kind: pb.CaseKind_CASE_KIND_PROMPT, CaseDigest: "sha256:cd"}},
		{"quotes and escapes", &pb.Job{Skill: `a"b\c`, CaseName: "tab\tnew\nline\x00nul\x7f", Agent: "é ü 漢字 \u2028", Arm: "without_skill", Kind: pb.CaseKind_CASE_KIND_PROMPT}},
		{"invalid UTF-8", &pb.Job{Skill: "s\xff\xfe", CaseName: "c\xc3", Kind: pb.CaseKind_CASE_KIND_COMMAND}},
		{"old skill", &pb.Job{Skill: "s", CaseName: "c", Arm: string(suite.ArmOldSkill), Kind: pb.CaseKind_CASE_KIND_PROMPT}},
		{"limits", &pb.Job{Skill: "s", CaseName: "c", Kind: pb.CaseKind_CASE_KIND_PROMPT, Limits: &pb.Limits{MemoryBytes: 1 << 30, Pids: 64}}},
		{"long", &pb.Job{Skill: long, CaseName: long, Agent: long, CaseDigest: long, Kind: pb.CaseKind_CASE_KIND_PROMPT, Limits: &pb.Limits{MemoryBytes: 1}}},
	} {
		for _, closure := range []string{"", "sha256:closure", long} {
			if got, want := cellKey(tc.job, closure, "sha256:old", "sha256:files"), fmtCellKey(tc.job, closure, "sha256:old", "sha256:files"); got != want {
				t.Errorf("%s, closure of %d bytes: cellKey = %s, want %s", tc.name, len(closure), got, want)
			}
		}
		if got, want := resultKey(tc.job.GetSkill(), tc.job.GetCaseName()), fmtResultKey(tc.job.GetSkill(), tc.job.GetCaseName()); got != want {
			t.Errorf("%s: resultKey = %s, want %s", tc.name, got, want)
		}
	}
}
