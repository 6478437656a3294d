package skill

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/skillfleet/skillfleet/diag"
	"golang.org/x/text/unicode/norm"
)

// Limits from the specification, counted in characters (runes), as the reference validator
// counts them, not bytes.
const (
	MaxNameLength          = 64
	MaxDescriptionLength   = 1024
	MaxCompatibilityLength = 500
)

// Validate checks a parsed skill against the specification's rules and the RFC's field shapes.
// It does not repeat Parse's diagnostics: a skill whose frontmatter could not be decoded yields
// none here. It touches the file system only to compare the name with Dir and to check that
// test.cases exists.
func Validate(s *Skill, opts Options) diag.Diagnostics {
	if s == nil {
		return nil
	}
	parsed := s.parsed
	if parsed && !s.decoded {
		return nil
	}
	ds := slices.Clone(s.decodeDiags)
	add := func(d diag.Diagnostic) { ds = append(ds, d) }
	line := func(field string) int {
		if l := s.Line(field); l > 0 {
			return l
		}
		// An absent field is reported on the opening --- line.
		return 1
	}
	present := func(field string, value string) bool {
		if parsed {
			return s.Has(field)
		}
		return value != ""
	}

	// name
	switch {
	case s.badType["name"]:
	case !present("name", s.Name):
		add(diag.Error(RuleNameRequired, s.File, line("name"), "missing required field name"))
	case s.Name == "":
		add(diag.Error(RuleNameRequired, s.File, line("name"), "name must not be empty"))
	default:
		for _, d := range nameDiagnostics(s.Name) {
			add(diag.Error(d.rule, s.File, line("name"), d.msg))
		}
		if s.Dir != "" {
			if msg := nameMatchesDir(s.Name, s.Dir); msg != "" {
				add(diag.Error(RuleNameMatchesDirectory, s.File, line("name"), msg))
			}
		}
	}

	// description
	switch {
	case s.badType["description"]:
	case !present("description", s.Description):
		add(diag.Error(RuleDescriptionRequired, s.File, line("description"), "missing required field description"))
	case strings.TrimSpace(s.Description) == "":
		// The specification says 1-1024 characters, non-empty; whitespace is not a description.
		add(diag.Error(RuleDescriptionRequired, s.File, line("description"), "description must not be empty"))
	default:
		if n := utf8.RuneCountInString(strings.TrimSpace(s.Description)); n > MaxDescriptionLength {
			add(diag.Error(RuleDescriptionMaxLength, s.File, line("description"),
				fmt.Sprintf("description is %d characters; the limit is %d", n, MaxDescriptionLength)))
		}
	}

	// compatibility
	if !s.badType["compatibility"] && present("compatibility", s.Compatibility) {
		n := utf8.RuneCountInString(s.Compatibility)
		switch {
		case strings.TrimSpace(s.Compatibility) == "":
			add(diag.Error(RuleCompatibilityEmpty, s.File, line("compatibility"),
				"compatibility is empty; the specification asks for 1-500 characters, or leave the field out"))
		case n > MaxCompatibilityLength:
			add(diag.Error(RuleCompatibilityMaxLength, s.File, line("compatibility"),
				fmt.Sprintf("compatibility is %d characters; the limit is %d", n, MaxCompatibilityLength)))
		}
	}

	// test.cases must name a file in the skill (its shape was checked while decoding).
	if s.Test != nil && !s.badType["test.cases"] && s.Test.Cases != "" && s.Dir != "" {
		p := filepath.Join(s.Dir, filepath.FromSlash(s.Test.Cases))
		if info, err := os.Stat(p); err != nil {
			add(diag.Error(RuleTestCases, s.File, s.Line("test.cases"), fmt.Sprintf("cases file %q does not exist", s.Test.Cases)))
		} else if !info.Mode().IsRegular() {
			add(diag.Error(RuleTestCases, s.File, s.Line("test.cases"), fmt.Sprintf("cases file %q is %s, not a regular file", s.Test.Cases, describeMode(info.Mode()))))
		}
	}

	// unknown top-level fields
	for _, k := range s.keys {
		if isKnownField(k, opts) {
			continue
		}
		msg := unknownFieldMessage(k, opts.Strict)
		if opts.Strict {
			add(diag.Error(RuleFrontmatterUnknownField, s.File, line(k), msg))
		} else {
			add(diag.Warning(RuleFrontmatterUnknownField, s.File, line(k), msg))
		}
	}
	ds.Sort()
	return ds
}

type ruleMsg struct{ rule, msg string }

// nameDiagnostics applies the reference validator's name rules to an NFKC-normalised name:
// at most 64 characters; equal to its lowercase; no leading, trailing or doubled hyphen; every
// character a Unicode letter or digit or a hyphen (so i18n names such as "café" are valid).
func nameDiagnostics(name string) []ruleMsg {
	var out []ruleMsg
	quoted := clip(name)
	if n := utf8.RuneCountInString(name); n > MaxNameLength {
		out = append(out, ruleMsg{RuleNameMaxLength, fmt.Sprintf("name is %d characters; the limit is %d", n, MaxNameLength)})
	}
	if name != strings.ToLower(name) {
		out = append(out, ruleMsg{RuleNameFormat, fmt.Sprintf("name %q must be lowercase (%q)", quoted, clip(strings.ToLower(name)))})
	}
	if strings.HasPrefix(name, "-") || strings.HasSuffix(name, "-") {
		out = append(out, ruleMsg{RuleNameFormat, fmt.Sprintf("name %q must not start or end with a hyphen", quoted)})
	}
	if strings.Contains(name, "--") {
		out = append(out, ruleMsg{RuleNameFormat, fmt.Sprintf("name %q must not contain consecutive hyphens", quoted)})
	}
	// List the first few offending characters; a hostile name may have thousands.
	const listed = 5
	var bad []string
	more := false
	for _, r := range name {
		if r == '-' || unicode.IsLetter(r) || unicode.IsNumber(r) {
			continue
		}
		q := fmt.Sprintf("%q", r)
		switch {
		case slices.Contains(bad, q):
		case len(bad) < listed:
			bad = append(bad, q)
		default:
			more = true
		}
	}
	if len(bad) > 0 {
		list := strings.Join(bad, ", ")
		if more {
			list += " and others"
		}
		out = append(out, ruleMsg{RuleNameFormat, fmt.Sprintf("name %q contains %s; only letters, digits and hyphens are allowed", quoted, list)})
	}
	return out
}

// NameProblems returns why name is not a valid skill name (empty when it is valid), for tools
// that take a name from the user, such as init.
func NameProblems(name string) []string {
	n := NormalizeName(name)
	if n == "" {
		return []string{"name must not be empty"}
	}
	var out []string
	for _, d := range nameDiagnostics(n) {
		out = append(out, d.msg)
	}
	return out
}

func nameMatchesDir(name, dir string) string {
	base := filepath.Base(filepath.Clean(dir))
	if base == "." || base == string(filepath.Separator) {
		// "validate ." from inside the skill: compare with the real directory name.
		if abs, err := filepath.Abs(dir); err == nil {
			base = filepath.Base(abs)
		}
	}
	if norm.NFKC.String(base) != name {
		return fmt.Sprintf("name %q does not match its directory %q", clip(name), clip(base))
	}
	return ""
}
