package skill

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/diag"
)

func TestSuppressions(t *testing.T) {
	tests := []struct {
		name string
		body string
		file []string         // rules silenced for the file
		next map[int][]string // body line -> rules silenced there
		bad  []int            // body lines with a lint.suppression finding
	}{
		{name: "next line", body: "<!-- skillfleet-lint-disable-next-line references.broken -->\nx",
			next: map[int][]string{2: {RuleReferencesBroken}}},
		{name: "list with spaces", body: "<!--skillfleet-lint-disable-next-line  references.broken ,defaults-over-menus-->",
			next: map[int][]string{2: {RuleReferencesBroken, RuleLintDefaultsOverMenus}}},
		{name: "file", body: "a\n<!-- skillfleet-lint-disable description-quality -->",
			file: []string{RuleLintDescriptionQuality}},
		{name: "two comments on one line", body: "<!-- skillfleet-lint-disable gotchas-present --> <!-- skillfleet-lint-disable-next-line context-budget -->",
			file: []string{RuleLintGotchasPresent}, next: map[int][]string{2: {RuleLintContextBudget}}},
		{name: "inline code is an example", body: "`<!-- skillfleet-lint-disable gotchas-present -->`"},
		{name: "fenced code is an example", body: "```\n<!-- skillfleet-lint-disable gotchas-present -->\n```"},
		{name: "typo in rule", body: "<!-- skillfleet-lint-disable gotcha-present -->", bad: []int{1}},
		{name: "validate rule", body: "x\n<!-- skillfleet-lint-disable-next-line name.format -->", bad: []int{2}},
		{name: "itself", body: "<!-- skillfleet-lint-disable lint.suppression -->", bad: []int{1}},
		{name: "no rule", body: "<!-- skillfleet-lint-disable-next-line -->", bad: []int{1}},
		{name: "unknown directive", body: "<!-- skillfleet-lint-enable references.broken -->", bad: []int{1}},
		{name: "good and bad in one list", body: "<!-- skillfleet-lint-disable references.broken,nope -->",
			file: []string{RuleReferencesBroken}, bad: []int{1}},
		{name: "unrelated comment", body: "<!-- TODO: skillfleet later -->"},
	}
	for _, tc := range tests {
		s := &Skill{File: "s/SKILL.md", Body: tc.body, BodyLine: 1}
		sp := parseSuppressions(s, splitBody(s.Body, s.BodyLine))
		var file []string
		for r := range sp.file {
			file = append(file, r)
		}
		slices.Sort(file)
		want := slices.Sorted(slices.Values(tc.file))
		if !slices.Equal(file, want) {
			t.Errorf("%s: file rules %v, want %v", tc.name, file, want)
		}
		if len(sp.lines) != len(tc.next) {
			t.Errorf("%s: lines %v, want %v", tc.name, sp.lines, tc.next)
		}
		for line, rules := range tc.next {
			for _, r := range rules {
				if !sp.lines[line][r] {
					t.Errorf("%s: %s not silenced on line %d: %v", tc.name, r, line, sp.lines)
				}
			}
		}
		var bad []int
		for _, d := range sp.diags {
			if d.Rule != RuleLintSuppression || d.Severity != diag.SeverityWarning {
				t.Errorf("%s: %v", tc.name, d)
			}
			bad = append(bad, d.Line)
		}
		if !slices.Equal(bad, tc.bad) {
			t.Errorf("%s: lint.suppression on lines %v, want %v: %v", tc.name, bad, tc.bad, sp.diags)
		}
	}
}

func TestSuppressionMessages(t *testing.T) {
	known := SilenceableRules()
	for id, want := range map[string]string{
		"gotcha-present":          `did you mean "gotchas-present"?`,
		"Context-Budget":          `did you mean "context-budget"?`,
		"name.format":             "is not a lint rule and cannot be silenced",
		"zzz":                     "the lint rules are context-budget, ",
		RuleLintSuppression:       "cannot be silenced",
		strings.Repeat("x", 5000): "…",
	} {
		if got := unknownRuleMessage(id, known); !strings.Contains(got, want) {
			t.Errorf("%.20s: %q does not contain %q", id, got, want)
		}
	}
	if slices.Contains(known, RuleLintSuppression) || !slices.Contains(known, RuleReferencesBroken) || slices.Contains(known, RuleNameFormat) {
		t.Errorf("silenceable rules %v", known)
	}
}

// TestSizeFindings: a long body with nothing split out gets progressive-disclosure, which
// replaces context-budget; silencing progressive-disclosure brings context-budget back, so the
// size is still reported; silencing both leaves nothing.
func TestSizeFindings(t *testing.T) {
	long := strings.Repeat("Step: run `tool`.\n", BodyLineBudget+1)
	tests := []struct {
		name    string
		comment string
		refs    bool
		want    []string
	}{
		{"no references", "", false, []string{RuleLintProgressive}},
		{"with references", "", true, []string{RuleLintContextBudget}},
		{"progressive-disclosure silenced", "<!-- skillfleet-lint-disable progressive-disclosure -->\n", false, []string{RuleLintContextBudget}},
		{"context-budget silenced", "<!-- skillfleet-lint-disable context-budget -->\n", false, []string{RuleLintProgressive}},
		{"both silenced", "<!-- skillfleet-lint-disable progressive-disclosure,context-budget -->\n", false, nil},
	}
	for _, tc := range tests {
		dir := filepath.Join(t.TempDir(), "long")
		if tc.refs {
			if err := os.MkdirAll(filepath.Join(dir, "references"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		s := &Skill{Name: "long", Description: "Long. Use when testing.", Dir: dir, File: filepath.Join(dir, FileName),
			Body: "## Gotchas\n" + tc.comment + long, BodyLine: 5}
		var got []string
		for _, d := range Lint(s, OptInRules()...) {
			got = append(got, d.Rule)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: rules %v, want %v", tc.name, got, tc.want)
		}
	}
}
