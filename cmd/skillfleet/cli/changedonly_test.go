package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	runreport "github.com/skillfleet/skillfleet/report"
)

// changedOnlySuite writes four skills with a command case each: base, mid (requires base),
// top (requires mid, so base transitively) and other (requires nothing).
func changedOnlySuite(t *testing.T, root string) {
	t.Helper()
	skills := map[string]string{"base": "", "mid": "base", "top": "mid", "other": ""}
	for name, req := range skills {
		fm := fmt.Sprintf("---\nname: %s\ndescription: The %s fixture skill. Use when testing changed-only runs.\nmetadata:\n  version: \"1.0.0\"\n", name, name)
		if req != "" {
			fm += fmt.Sprintf("requires:\n  - skill: %s\n    version: \"1.0.0\"\n", req)
		}
		fm += "---\n\nSay ok.\n"
		files := map[string]string{
			"SKILL.md":              fm,
			"tests/cases/ok.yaml":   "name: ok\ninput:\n  command: \"echo ok\"\nexpected:\n  exit-code: 0\n  stdout-contains: [ok]\n",
			"tests/cases/also.yaml": "name: also\ninput:\n  command: \"echo also\"\nexpected:\n  stdout-contains: [also]\n",
		}
		for rel, body := range files {
			p := filepath.Join(root, name, filepath.FromSlash(rel))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestChangedOnly is the check: after a full run, a changed-only run with no change
// reuses every cell; after a one-skill change it re-runs exactly that skill's cells and those
// of the skills that require it (directly or not), reports the rest reused with the run they
// came from, and plan --changed-only shows the same before anything runs.
func TestChangedOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("real Docker test; skipped with -short")
	}
	root := filepath.Join(t.TempDir(), "nightly")
	changedOnlySuite(t, root)
	db := filepath.Join(t.TempDir(), "history.db")
	runJSON := func(args ...string) runreport.Report {
		t.Helper()
		code, out, errOut := run(append([]string{"test", "--workers", "2", "--history", db, "--format", "json"}, append(args, root)...)...)
		if code != ExitOK {
			t.Fatalf("test %v: exit %d\nstdout:\n%s\nstderr:\n%s", args, code, out, errOut)
		}
		rep, err := runreport.FromJSON(strings.NewReader(out))
		if err != nil {
			t.Fatalf("not a JSON report: %v\n%s", err, out)
		}
		return rep
	}
	ranAndReused := func(rep runreport.Report) (ran, reused []string) {
		for _, c := range rep.Cases {
			switch c.Status {
			case runreport.StatusPassed:
				ran = append(ran, c.Skill+"/"+c.Case)
			case runreport.StatusReused:
				reused = append(reused, c.Skill+"/"+c.Case)
			default:
				t.Errorf("case %s/%s: %s (%s)", c.Skill, c.Case, c.Status, c.Reason)
			}
		}
		slices.Sort(ran)
		slices.Sort(reused)
		return ran, reused
	}
	all := []string{"base/also", "base/ok", "mid/also", "mid/ok", "other/also", "other/ok", "top/also", "top/ok"}

	first := runJSON()
	if ran, _ := ranAndReused(first); !slices.Equal(ran, all) {
		t.Fatalf("full run ran %v, want %v", ran, all)
	}
	if ran, reused := ranAndReused(runJSON("--changed-only")); len(ran) != 0 || !slices.Equal(reused, all) {
		t.Fatalf("unchanged suite: ran %v, reused %v; want everything reused", ran, reused)
	}

	// Change mid: mid and top (which requires it) re-run; base and other are reused.
	skillMD := filepath.Join(root, "mid", "SKILL.md")
	data, err := os.ReadFile(skillMD)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(skillMD, []byte(strings.Replace(string(data), "Say ok.", "Say ok, now.", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run("plan", "--changed-only", "--history", db, root)
	if code != ExitOK || !strings.Contains(out, "changed-only: 4 of 8 jobs would run, 4 would be offered") {
		t.Errorf("plan --changed-only (exit %d):\n%s\n%s", code, out, errOut)
	}
	changed := runJSON("--changed-only")
	ran, reused := ranAndReused(changed)
	if want := []string{"mid/also", "mid/ok", "top/also", "top/ok"}; !slices.Equal(ran, want) {
		t.Errorf("after changing mid, ran %v, want %v", ran, want)
	}
	if want := []string{"base/also", "base/ok", "other/also", "other/ok"}; !slices.Equal(reused, want) {
		t.Errorf("after changing mid, reused %v, want %v", reused, want)
	}
	for _, c := range changed.Cases {
		if c.Status == runreport.StatusReused && c.ReusedFrom != first.Run {
			t.Errorf("%s/%s reused from %q, want the full run %s (a reusing run is never a source)", c.Skill, c.Case, c.ReusedFrom, first.Run)
		}
	}
	if s := changed.Summary; s.Passed != 4 || s.Reused != 4 || s.Total != 8 {
		t.Errorf("summary %+v: want 4 passed (fresh) and 4 reused", s)
	}
	if code, _, errOut := run("plan", "--changed-only", "--history", "off", root); code != ExitUsage {
		t.Errorf("plan --changed-only --history off: exit %d, want usage\n%s", code, errOut)
	}
}
