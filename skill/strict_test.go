package skill

import (
	"slices"
	"strings"
	"testing"
)

// TestStrictDifferences pins --strict's side of every disagreement StrictDifferences
// documents, on a skill of that shape. skills-ref's side is read from its source (commit
// 00d5a46 of agentskills/agentskills, parser.py and validator.py); it cannot run here.
func TestStrictDifferences(t *testing.T) {
	long := strings.Repeat("x", MaxDescriptionLength)
	tests := []struct {
		shape string // a StrictDifference.Shape
		file  string // SKILL.md of a skill named s
		rule  string // what --strict reports; "" for nothing
	}{
		{"allowed-tools as a YAML list", "---\nname: s\ndescription: d\nallowed-tools:\n  - Read\n  - Bash\n---\n", RuleAllowedToolsType},
		{"a metadata value that is not a string (a number, a list, a mapping)", "---\nname: s\ndescription: d\nmetadata:\n  a:\n    b: c\n---\n", RuleMetadataValueType},
		{"a number, true or false as name, description, license or compatibility", "---\nname: s\ndescription: d\ncompatibility: 1.0\n---\n", RuleCompatibilityType},
		{"YAML flow style ({...} or [...])", "---\nname: s\ndescription: d\nmetadata: {author: x}\n---\n", ""},
		{"YAML tags (!!str)", "---\nname: s\ndescription: !!str d\n---\n", ""},
		{"a block scalar (| or >) whose last line ends with a newline", "---\nname: s\ndescription: |\n  " + long + "\n---\n", ""},
		{"a UTF-8 byte order mark before the first ---", "\ufeff---\nname: s\ndescription: d\n---\n", ""},
	}
	pinned := map[string]bool{}
	for _, tc := range tests {
		pinned[tc.shape] = true
		t.Run(tc.shape, func(t *testing.T) {
			s, ds := Parse("s/SKILL.md", []byte(tc.file))
			ds = append(ds, Validate(s, Options{Strict: true})...)
			var rules []string
			for _, d := range ds {
				rules = append(rules, d.Rule)
			}
			switch {
			case tc.rule == "" && len(ds) > 0:
				t.Errorf("--strict reports %v, want the skill accepted", ds)
			case tc.rule != "" && (len(ds) != 1 || ds[0].Rule != tc.rule):
				t.Errorf("--strict reports %v, want one %s", rules, tc.rule)
			}
		})
	}
	// The newline is all that is spared: one character more is over the limit.
	over := "---\nname: s\ndescription: |\n  " + long + "x\n---\n"
	if s, _ := Parse("s/SKILL.md", []byte(over)); !slices.Contains(ruleSet(Validate(s, Options{Strict: true})), RuleDescriptionMaxLength) {
		t.Errorf("a block scalar description of %d characters is accepted", MaxDescriptionLength+1)
	}
	for _, d := range StrictDifferences() {
		if !pinned[d.Shape] {
			t.Errorf("difference %q is documented but not pinned by a case here", d.Shape)
		}
	}
	if len(pinned) != len(StrictDifferences()) {
		t.Errorf("%d cases for %d documented differences", len(pinned), len(StrictDifferences()))
	}
}
