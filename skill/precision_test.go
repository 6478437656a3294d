package skill

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestPrecisionJudgments replays the held-out judgments of docs/lint-precision.md
// (testdata/precision-judgments.tsv): for each judged finding, a true positive must still fire
// and a false positive must not fire again. Opt-in rules run too: being opt-in is no licence to
// be wrong.
//
// The judged SKILL.md files come from public repositories and stay out of this repository, as
// the workspace's rule for fetched content asks: they are read from the corpus directory
// (SKILLFLEET_LINT_CORPUS, by default the shared workspace's corpus/lint-precision beside the
// module), laid out as <owner>+<name>/<path> from the commits docs/lint-precision.md names, with
// the other files of each skill present by name (the reference rules read only whether a file
// exists). Without it the test skips and says so; the classes behind the judgments are pinned
// without it by the table tests of lint_test.go and refs_test.go.
//
// Rules that report a line (references.*, no-generic-instructions, defaults-over-menus) are
// matched by line; the others, about the skill as a whole, by file.
func TestPrecisionJudgments(t *testing.T) {
	rows := readJudgments(t, filepath.Join("testdata", "precision-judgments.tsv"))
	src := os.Getenv("SKILLFLEET_LINT_CORPUS")
	if src == "" {
		src = filepath.Join("..", "..", "shared", "corpus", "lint-precision")
	}
	if _, err := os.Stat(src); err != nil {
		t.Skipf("lint-precision corpus not available at %s (set SKILLFLEET_LINT_CORPUS): %v", src, err)
	}
	// A copy, with each repository's root marked as Git marks it: references are looked for
	// above a skill up to its repository's root, not into this module's testdata.
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			writeFile(t, filepath.Join(root, e.Name(), ".git", "HEAD"), "ref: refs/heads/main\n")
		}
	}

	// open lists the false positives that still fire, each with the class it belongs to:
	// known, read on a held-out set, and not fixed (see "What is not done").
	open := map[string]string{
		"kouko/monkey-skills loom-design/skills/design-critic/SKILL.md:89 references.broken":                          "the owner's name is on the line before the path",
		"kouko/monkey-skills repo-wiki/skills/query/SKILL.md:279 references.broken":                                   "a link in sample output",
		"yigitkonur/skills-by-yigitkonur plugins/init-makefiles/skills/init-makefiles/SKILL.md:140 references.broken": "the user's project's files to look for",
		"onescience-ai/OneSkills skills/onescience-installer/SKILL.md:6 gotchas-present":                              "a Chinese heading, 硬门禁 (hard gate): gotchas-present is opt-in for that reason",
	}

	findings := map[string]map[string][]int{} // file -> rule -> lines
	for _, r := range rows {
		if findings[r.file] != nil {
			continue
		}
		path := filepath.Join(root, strings.ReplaceAll(r.repo, "/", "+"), filepath.FromSlash(r.file))
		s, pds := ParseFile(path)
		if pds.HasErrors() {
			t.Fatalf("%s: %v", r.file, pds)
		}
		byRule := map[string][]int{}
		for _, d := range Lint(s, OptInRules()...) {
			byRule[d.Rule] = append(byRule[d.Rule], d.Line)
		}
		findings[r.file] = byRule
	}
	lineRules := map[string]bool{RuleReferencesBroken: true, RuleReferencesOutside: true, RuleLintNoGenericInstruction: true, RuleLintDefaultsOverMenus: true}
	for _, r := range rows {
		lines := findings[r.file][r.rule]
		fires := len(lines) > 0
		if lineRules[r.rule] {
			fires = false
			for _, l := range lines {
				fires = fires || l == r.line
			}
		}
		key := r.repo + " " + r.file + ":" + strconv.Itoa(r.line) + " " + r.rule
		want := r.verdict == "TP"
		if why, ok := open[key]; ok {
			if !fires {
				t.Errorf("%s: the open false positive (%s) no longer fires: take it off the open list", key, why)
			}
			continue
		}
		if fires != want {
			t.Errorf("%s: fires=%v, judged %s (%s)", key, fires, r.verdict, r.why)
		}
	}
}

// A judgment is one line of judgments.tsv.
type judgment struct {
	repo, file, rule, verdict, why string
	line                           int
}

func readJudgments(t *testing.T, path string) []judgment {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []judgment
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "#") {
			continue
		}
		c := strings.Split(sc.Text(), "\t")
		if len(c) != 7 {
			t.Fatalf("%s: %q: want 7 tab-separated columns", path, sc.Text())
		}
		line, err := strconv.Atoi(c[3])
		if err != nil {
			t.Fatalf("%s: line %q: %v", path, c[3], err)
		}
		out = append(out, judgment{repo: c[1], file: c[2], line: line, rule: c[4], verdict: c[5], why: c[6]})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("%s: no judgments", path)
	}
	return out
}
