package skill

import (
	"slices"
	"strings"
	"testing"
)

// TestNameRules follows the reference validator's cases (skills-ref tests), including its
// i18n and NFKC behaviour.
func TestNameRules(t *testing.T) {
	tests := []struct {
		name string
		want []string // rules
	}{
		{"pdf-processing", nil},
		{"my-skill-v2", nil},
		{"a", nil},
		{"技能", nil},
		{"мой-навык", nil},
		{"café", nil},
		{"cafe\u0301", nil}, // decomposed é: NFKC composes it
		{"ｍｙ－ｓｋｉｌｌ", nil},   // fullwidth: NFKC maps to my-skill
		{"skill²", nil},     // NFKC turns ² into 2
		{"НАВЫК", []string{RuleNameFormat}},
		{"PDF-Processing", []string{RuleNameFormat}},
		{"Code-Review", []string{RuleNameFormat}},
		{"-pdf", []string{RuleNameFormat}},
		{"pdf-", []string{RuleNameFormat}},
		{"pdf--processing", []string{RuleNameFormat}},
		{"my_skill", []string{RuleNameFormat}},
		{"my skill", []string{RuleNameFormat}},
		{"my.skill", []string{RuleNameFormat}},
		{"emoji-😀", []string{RuleNameFormat}},
		{strings.Repeat("a", 64), nil},
		{strings.Repeat("a", 65), []string{RuleNameMaxLength}},
		{strings.Repeat("é", 64), nil}, // 128 bytes, 64 characters
		{strings.Repeat("A", 65), []string{RuleNameMaxLength, RuleNameFormat}},
	}
	for _, tc := range tests {
		var got []string
		for _, d := range nameDiagnostics(NormalizeName(tc.name)) {
			if !slices.Contains(got, d.rule) {
				got = append(got, d.rule)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q: %v, want %v", tc.name, got, tc.want)
		}
		if (len(NameProblems(tc.name)) == 0) != (tc.want == nil) {
			t.Errorf("NameProblems(%q) = %v", tc.name, NameProblems(tc.name))
		}
	}
}

func TestNameMatchesDirectory(t *testing.T) {
	tests := []struct {
		name, dir string
		ok        bool
	}{
		{"my-skill", "skills/my-skill", true},
		{"my-skill", "skills/my-skill/", true},
		{"my-skill", "skills/other", false},
		{"café", "skills/cafe\u0301", true},
		{"my-skill", "skills/My-Skill", false},
	}
	for _, tc := range tests {
		if got := nameMatchesDir(tc.name, tc.dir) == ""; got != tc.ok {
			t.Errorf("nameMatchesDir(%q, %q) ok = %v, want %v", tc.name, tc.dir, got, tc.ok)
		}
	}
}

func TestValidateHandBuilt(t *testing.T) {
	ok := &Skill{Name: "x", Description: "Does x. Use when x.", Dir: "skills/x", File: "skills/x/SKILL.md"}
	if ds := Validate(ok, Options{Strict: true}); len(ds) != 0 {
		t.Errorf("valid hand-built skill: %v", ds)
	}
	bad := &Skill{Description: strings.Repeat("d", MaxDescriptionLength+1), Compatibility: strings.Repeat("c", 501)}
	got := ruleSet(Validate(bad, Options{}))
	want := []string{RuleCompatibilityMaxLength, RuleDescriptionMaxLength, RuleNameRequired}
	if !slices.Equal(got, want) {
		t.Errorf("rules %v, want %v", got, want)
	}
	if Validate(nil, Options{}) != nil || Lint(nil) != nil {
		t.Error("nil skill")
	}
}

func TestStrictUnknownFields(t *testing.T) {
	src := "---\nname: s\ndescription: d\ncontext: fork\nrequires: []\nversion: 1.0.0\n---\n"
	s, _ := Parse("s/SKILL.md", []byte(src))
	for _, tc := range []struct {
		opts Options
		want []string
	}{
		{Options{}, []string{"warning frontmatter.unknownField"}},
		{Options{Strict: true}, []string{"error frontmatter.unknownField", "error frontmatter.unknownField", "error frontmatter.unknownField"}},
	} {
		if got := rules(Validate(s, tc.opts)); !slices.Equal(got, tc.want) {
			t.Errorf("strict=%v: %v, want %v", tc.opts.Strict, got, tc.want)
		}
	}
	if !slices.Contains(KnownFields(Options{}), "requires") || slices.Contains(KnownFields(Options{Strict: true}), "requires") {
		t.Error("KnownFields")
	}
}

// TestUnquotedDatesAreStrings: YAML 1.2, which the specification's frontmatter and skills-ref
// read, has no timestamp type, so an unquoted date is a string wherever a string is asked for;
// only an explicit tag makes it a date.
func TestUnquotedDatesAreStrings(t *testing.T) {
	tests := []struct {
		name  string
		extra string // frontmatter lines after name and description
		rules []string
		meta  map[string]string // expected metadata entries
	}{
		{"a date in metadata", "metadata:\n  updated: 2025-01-15\n", nil, map[string]string{"updated": "2025-01-15"}},
		{"a date and time in metadata", "metadata:\n  at: 2025-01-15T10:30:00Z\n", nil, map[string]string{"at": "2025-01-15T10:30:00Z"}},
		{"a spaced date and time in metadata", "metadata:\n  at: 2001-12-14 21:59:43.10 -5\n", nil, map[string]string{"at": "2001-12-14 21:59:43.10 -5"}},
		{"a date as license", "license: 2024-01-01\n", nil, nil},
		{"an explicitly tagged date", "metadata:\n  updated: !!timestamp 2025-01-15\n", []string{RuleMetadataValueType}, nil},
		{"a number is still a number", "metadata:\n  version: 1.0\n", []string{RuleMetadataValueType}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "---\nname: s\ndescription: A fixture. Use when testing.\n" + tt.extra + "---\nbody\n"
			s, ds := Parse("s/SKILL.md", []byte(src))
			ds = append(ds, Validate(s, Options{Strict: true})...)
			if got := ruleSet(ds); !slices.Equal(got, tt.rules) {
				t.Errorf("rules %v, want %v (%v)", got, tt.rules, ds)
			}
			for k, v := range tt.meta {
				if s.Metadata[k] != v {
					t.Errorf("metadata.%s = %q, want %q", k, s.Metadata[k], v)
				}
			}
		})
	}
}
