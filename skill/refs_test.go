package skill

import (
	"path/filepath"
	"slices"
	"testing"
)

func TestReferences(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []string // targets found, in order
	}{
		{"footnote definition", "[^1]: Some note text", nil},
		{"footnote text is prose: a bare path in it counts", "[^note]: Numbers in references/NOTE.md", []string{"references/NOTE.md"}},
		{"footnote reference before parentheses", "Retry twice[^1](see below).", nil},
		{"link inside a footnote", "[^2]: See [the guide](references/GUIDE.md).", []string{"references/GUIDE.md"}},
		{"link definition", "[guide]: references/GUIDE.md", []string{"references/GUIDE.md"}},
		{"example after e.g.", "Open the entry point, e.g. `src/app/main.py`.", nil},
		{"example in parentheses", "Open the entry point (e.g., `src/app/main.py`).", nil},
		{"examples listed", "Modules such as `lib/a.py`, `lib/b.py` or `lib/c.py` and `lib/d.py`.", nil},
		{"for example", "For example: `scripts/your-tool.py`.", nil},
		{"for instance", "for instance `assets/logo.png`", nil},
		{"like", "Formats like `assets/template.docx` come from the user.", nil},
		{"list ends at prose", "e.g. `lib/a.py`, then run `scripts/b.sh`", []string{"scripts/b.sh"}},
		{"marker after the path", "Run `scripts/run.sh` like the README says.", []string{"scripts/run.sh"}},
		{"unlike is no marker", "Unlike `scripts/old.sh`, this works.", []string{"scripts/old.sh"}},
		{"likely is no marker", "It is likely `scripts/old.sh`.", []string{"scripts/old.sh"}},
		{"example link still checked", "e.g. [the guide](references/GUIDE.md)", []string{"references/GUIDE.md"}},
		{"example bare path still checked", "e.g. scripts/run.sh", []string{"scripts/run.sh"}},
		{"plugin command", "Run [review](/code-tools:review).", nil},
		{"plugin command with a dotted name", "[x](/my.plugin:skill-name)", nil},
		{"absolute path", "[log](/var/log/app.log)", []string{"/var/log/app.log"}},
		{"plugin-like path with a slash after the colon", "[x](/a:b/c.md)", []string{"/a:b/c.md"}},
	}
	for _, tc := range tests {
		var got []string
		for _, r := range references(splitBody(tc.body, 1)) {
			got = append(got, r.target)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q: references %q, want %q", tc.name, tc.body, got, tc.want)
		}
	}
}

func TestCodeSpans(t *testing.T) {
	line := "a `x` b ``y ` z`` c `unclosed"
	var got []string
	for _, sp := range codeSpans(line) {
		got = append(got, sp.text+"@"+line[sp.start:sp.end])
	}
	want := []string{"x@`x`", "y ` z@``y ` z``"}
	if !slices.Equal(got, want) {
		t.Errorf("codeSpans = %q, want %q", got, want)
	}
}

func TestReferencesNotMeant(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []string
	}{
		{"placeholder path/to", "Read [the doc](path/to/doc.md).", nil},
		{"placeholder your-", "Put it in `references/your-topic.md`.", nil},
		{"placeholder example-", "[x](../example-skill/SKILL.md)", nil},
		{"real name with example inside", "See `references/examples.md`.", []string{"references/examples.md"}},
		{"created before use", "Run `scripts/extract.py`.\n\nSave `scripts/extract.py`:", nil},
		{"created", "Write the report to `references/out.md`.", nil},
		{"named as illustration", "a file named `references/topic.md` per topic", nil},
		{"changelog", "Renamed `scripts/old.py` to `scripts/new.py`.", nil},
		{"changelog bare", "formerly scripts/old.py", nil},
		{"changelog keeps links", "Moved to [the guide](references/GUIDE.md).", []string{"references/GUIDE.md"}},
		{"plain reference", "Run `scripts/extract.py` on the file.", []string{"scripts/extract.py"}},
	}
	for _, tc := range tests {
		var got []string
		for _, r := range references(splitBody(tc.body, 1)) {
			got = append(got, r.target)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q: references %q, want %q", tc.name, tc.body, got, tc.want)
		}
	}
}

// TestReferencesOutside: a reference that resolves only outside the skill (a sibling skill,
// a shared directory above it) is references.outside at info; one that resolves nowhere is
// references.broken.
func TestReferencesOutside(t *testing.T) {
	tmp := t.TempDir()
	root := filepath.Join(tmp, "repo")
	writeFile(t, filepath.Join(root, ".git", "HEAD"), "ref: refs/heads/main\n")
	writeFile(t, filepath.Join(root, "shared", "style.md"), "x")
	writeFile(t, filepath.Join(root, "plugin", "scripts", "run.sh"), "x")
	writeFile(t, filepath.Join(root, "plugin", "skills", "other", FileName), minimalSkill("other"))
	dir := filepath.Join(root, "plugin", "skills", "mine")
	writeFile(t, filepath.Join(dir, FileName), minimalSkill("mine"))
	tests := []struct {
		body string
		rule string // "" when nothing fires
	}{
		{"[other](../other/SKILL.md)", RuleReferencesOutside},
		{"[style](../../../shared/style.md)", RuleReferencesOutside},
		{"Run `scripts/run.sh`.", RuleReferencesOutside},
		{"[gone](../gone/SKILL.md)", RuleReferencesBroken},
		{"Run `scripts/missing.sh`.", RuleReferencesBroken},
		{"[abs](/shared/style.md)", RuleReferencesBroken},
		{"[mine](SKILL.md)", ""},
		// The search stops at the repository root: a file beyond it does not count.
		{"Run `scripts/beyond.sh`.", RuleReferencesBroken},
	}
	writeFile(t, filepath.Join(tmp, "scripts", "beyond.sh"), "x")
	for _, tc := range tests {
		s := &Skill{File: filepath.Join(dir, FileName), Dir: dir, Body: tc.body, BodyLine: 5}
		got := lintBrokenReferences(s, references(splitBody(s.Body, s.BodyLine)))
		var rules []string
		for _, d := range got {
			rules = append(rules, d.Rule)
		}
		want := []string{}
		if tc.rule != "" {
			want = []string{tc.rule}
		}
		if len(rules) != len(want) || (len(want) == 1 && rules[0] != want[0]) {
			t.Errorf("%q: rules %v, want %v", tc.body, rules, want)
		}
	}
}
