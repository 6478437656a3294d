package skill

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
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
		// Illustrations: a line labelled as an example, the lines under such a label, an
		// anti-example, a numbered placeholder, a file a step logs into.
		{"example label", "Example: `scripts/rotate_pdf.py` for PDF rotation tasks", nil},
		{"examples label", "- **Examples:** `references/finance.md`, `references/sales.md`", nil},
		{"under a label", "**Valid:**\n- `./scripts/tool.py` → fine\n\nRun `scripts/run.sh`.", []string{"scripts/run.sh"}},
		{"anti-example", "Bad: `reference/guide.md`", nil},
		{"numbered placeholder", "Move long sections into `references/NN-topic.md`.", nil},
		{"logged into", "log the tokens into an `evals/timing.json` file", nil},
		{"chinese such as", "引用时附带相对路径（如 `wiki/api/qwen-api.md`）", nil},
		// Commands in code blocks run the skill's files; a block in the user's project or
		// showing a document does not, nor does a line that writes files.
		{"code command", "```bash\npython scripts/fill.py in.pdf\n```", []string{"scripts/fill.py"}},
		{"code reads", "```\ncat references/api.md | head\n```", []string{"references/api.md"}},
		{"code writes", "```bash\npython scripts/a.py > scripts/out.py\nmkdir -p scripts/x.sh\n```", nil},
		{"code comment", "```bash\n# then scripts/later.py\n```", nil},
		{"code tree", "```\n├── scripts/run.py\n```", nil},
		{"code markdown", "```markdown\nSee [x](references/x.md) and scripts/y.py\n```", nil},
		{"code in the project", "From the project root:\n```bash\n./scripts/deploy.sh\n```", nil},
		{"code other directory", "```\nnode src/index.js\n```", nil},
		// Prose paths under any directory are found; checkable decides whether they count.
		{"bare other directory", "See wiki/api/qwen.md for the API.", []string{"wiki/api/qwen.md"}},
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
	writeFile(t, filepath.Join(dir, "scripts", "keep.sh"), "x") // the skill has scripts/
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

// TestReferencesAdvice: what a broken reference's message tells the author to do. A near
// miss is named; a site-absolute link asks for the full URL, not a relative path; a guide to
// writing skills shows paths that do not exist, and only its links are checked.
func TestReferencesAdvice(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mine")
	writeFile(t, filepath.Join(dir, FileName), minimalSkill("mine"))
	writeFile(t, filepath.Join(dir, "references", "api.md"), "x")
	writeFile(t, filepath.Join(dir, "assets", "templates", "header.py"), "x")
	writeFile(t, filepath.Join(dir, "wiki", "api", "models.md"), "x")
	writeFile(t, filepath.Join(dir, "Scripts", "Run.sh"), "x")
	if err := os.Symlink("../../nowhere/dangling.md", filepath.Join(dir, "references", "dangling.md")); err != nil {
		t.Skip("symlinks:", err)
	}
	tests := []struct {
		name, desc, body string
		want             string // the message's tail, "" when nothing fires
	}{
		{"singular directory", "Does x.", "Read `reference/api.md`.", `did you mean "references/api.md"?`},
		{"case", "Does x.", "Run [it](scripts/run.sh).", `did you mean "Scripts/Run.sh"?`},
		{"moved file", "Does x.", "Use `scripts/header.py`.", `did you mean "assets/templates/header.py"?`},
		{"moved in an existing directory", "Does x.", "See wiki/guides/models.md.", `did you mean "wiki/api/models.md"?`},
		{"no near miss", "Does x.", "Read `references/gone.md`.", "does not exist in the skill directory"},
		// A conventional directory the skill lacks (it has Scripts/, not scripts/): the path
		// is the user's project's or another's, unless it is a near miss (above).
		{"directory the skill lacks", "Does x.", "The wrapper `scripts/gone.py` loads secrets.", ""},
		{"dangling symlink", "Does x.", "See `references/dangling.md`.", "does not exist in the skill directory"},
		// A path the line gives to another skill or project.
		{"another skill's", "Does x.", "See `design-system`'s `references/gone.md`.", ""},
		{"in another repository", "Does x.", "Reference: `references/gone.md` in opendeviationbar-patterns.", ""},
		{"via another skill", "Does x.", "- `references/gone.md` - criteria (via execute-checklist skill)", ""},
		{"in other skills", "Does x.", "See `references/gone.md` §M3 in the doc + novel skills.", ""},
		{"shell test", "Does x.", "```bash\nif [[ -f references/gone.md ]]; then\n```", ""},
		{"docs-site link", "Does x.", "See [hooks](/en/hooks).", "write the full URL (https://...)"},
		{"file-system path", "Does x.", "See [log](/home/me/log.md).", "use a path relative to the skill directory"},
		{"authoring guide prose", "Guide for creating effective skills.", "Put it in `scripts/rotate_pdf.py`.", ""},
		{"authoring guide code", "Helps authors write SKILL.md files.", "```\npython scripts/rotate.py\n```", ""},
		{"authoring guide link", "Guide for creating effective skills.", "See [the guide](references/gone.md).", "does not exist in the skill directory"},
		{"this skill is no subject", "Use this skill when the user asks.", "Read `references/gone.md`.", "does not exist in the skill directory"},
	}
	for _, tc := range tests {
		s := &Skill{Name: "mine", Description: tc.desc, File: filepath.Join(dir, FileName), Dir: dir, Body: tc.body, BodyLine: 5}
		got := lintBrokenReferences(s, references(splitBody(s.Body, s.BodyLine)))
		switch {
		case tc.want == "" && len(got) > 0:
			t.Errorf("%s: %v, want nothing", tc.name, got)
		case tc.want != "" && (len(got) != 1 || !strings.HasSuffix(got[0].Message, tc.want)):
			t.Errorf("%s: %v, want one finding ending %q", tc.name, got, tc.want)
		}
	}
}
