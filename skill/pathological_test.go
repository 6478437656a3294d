package skill

import (
	"fmt"
	"strings"
	"testing"
)

// TestPathologicalInputs runs inputs that are cheap to write and would be expensive for a
// quadratic implementation: each must finish (a regression shows up as a test timeout, and in
// BenchmarkPathological), with the expected findings.
func TestPathologicalInputs(t *testing.T) {
	for name, tc := range pathological() {
		t.Run(name, func(t *testing.T) {
			s, ds := Parse("p/SKILL.md", []byte(tc.src))
			ds = append(ds, Validate(s, Options{})...)
			s.Dir = ""
			ds = append(ds, Lint(s, OptInRules()...)...)
			if got := ruleSet(ds); strings.Join(got, ",") != strings.Join(tc.rules, ",") {
				t.Errorf("rules %v, want %v", got, tc.rules)
			}
		})
	}
}

func BenchmarkPathological(b *testing.B) {
	for name, tc := range pathological() {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				s, _ := Parse("p/SKILL.md", []byte(tc.src))
				Validate(s, Options{})
				s.Dir = ""
				Lint(s, OptInRules()...)
			}
		})
	}
}

type pathologicalCase struct {
	src   string
	rules []string
}

func pathological() map[string]pathologicalCase {
	head := "---\nname: p\ndescription: A fixture. Use when testing.\n---\n"
	var keys strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&keys, "  k%d: v\n", i)
	}
	var badName strings.Builder
	for r := rune(0x2000); r < 0x2000+3000; r++ {
		badName.WriteRune(r)
	}
	return map[string]pathologicalCase{
		"one line of code spans": {
			src:   head + strings.Repeat("`a` ", 200_000) + "\n",
			rules: []string{RuleLintContextBudget},
		},
		"many links on one line": {
			src:   head + strings.Repeat("[x](https://e.x/y) ", 40_000) + "\n",
			rules: []string{RuleLintContextBudget},
		},
		"unmatched backticks": {
			src:   head + strings.Repeat("``x`", 200_000) + "\n",
			rules: []string{RuleLintContextBudget},
		},
		"many keys": {
			src:   "---\nname: p\ndescription: A fixture. Use when testing.\nmetadata:\n" + keys.String() + "---\n",
			rules: nil,
		},
		"many duplicate keys": {
			src:   "---\nname: p\ndescription: A fixture. Use when testing.\nmetadata:\n" + strings.Repeat("  k: v\n", 5000) + "---\n",
			rules: []string{RuleFrontmatterDuplicateKey},
		},
		"name of many symbols": {
			src:   "---\nname: \"" + badName.String() + "\"\ndescription: A fixture. Use when testing.\n---\n",
			rules: []string{RuleNameFormat, RuleNameMatchesDirectory, RuleNameMaxLength},
		},
		"many example spans on one line": {
			src:   head + "e.g. " + strings.Repeat("`a/b.py`, ", 100_000) + "\n",
			rules: []string{RuleLintContextBudget},
		},
		"many quoted anti-examples on one line": {
			src:   head + strings.Repeat(`Don't "follow best practices". `, 20_000) + "\n",
			rules: []string{RuleLintContextBudget},
		},
		"many unclosed suppression comments": {
			src:   head + strings.Repeat("<!-- skillfleet-lint-disable x ", 20_000) + "\n",
			rules: []string{RuleLintContextBudget},
		},
		"many bad suppression comments": {
			src:   head + strings.Repeat("<!-- skillfleet-lint-disable no-such-rule -->", 10_000) + "\n",
			rules: []string{RuleLintContextBudget, RuleLintSuppression},
		},
		"many table rows": {
			src:   head + "| a | b |\n|---|---|\n" + strings.Repeat("| you can use a or b | x |\n", 20_000),
			rules: []string{RuleLintGotchasPresent, RuleLintProgressive},
		},
		"many menu lines": {
			src:   head + strings.Repeat("You can use a, b or c. ", 20_000) + "\n",
			rules: []string{RuleLintContextBudget, RuleLintDefaultsOverMenus},
		},
	}
}
