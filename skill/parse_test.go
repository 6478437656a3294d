package skill

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/diag"
)

// referenceRE is the frontmatter regex of the reference implementation; splitFrontmatter must
// agree with it wherever the brief does not deliberately differ (trailing spaces on the
// delimiter lines, a BOM).
var referenceRE = regexp.MustCompile(`^---\r?\n([\s\S]*?)\r?\n---\r?\n?([\s\S]*)$`)

func TestSplitFrontmatter(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		ok       bool
		yaml     string // with its trailing line break, as the scanner keeps it
		body     string
		bodyLine int
		// regexDiffers marks the deliberate differences from the reference regex: trailing
		// blanks on a delimiter line are tolerated, and only a line that is exactly --- closes
		// the frontmatter (the regex's optional newline lets "--- x" close it).
		regexDiffers bool
	}{
		{name: "simple", in: "---\na: 1\n---\nbody\n", ok: true, yaml: "a: 1\n", body: "body\n", bodyLine: 4},
		{name: "crlf", in: "---\r\na: 1\r\n---\r\nbody\r\n", ok: true, yaml: "a: 1\r\n", body: "body\r\n", bodyLine: 4},
		{name: "later delimiters are body", in: "---\na: 1\n---\nx\n---\ny\n", ok: true, yaml: "a: 1\n", body: "x\n---\ny\n", bodyLine: 4},
		{name: "no body", in: "---\na: 1\n---", ok: true, yaml: "a: 1\n", body: "", bodyLine: 4},
		{name: "trailing spaces on delimiters", in: "--- \na: 1\n---\t \nbody", ok: true, yaml: "a: 1\n", body: "body", bodyLine: 4, regexDiffers: true},
		{name: "multi-line yaml", in: "---\na: 1\nb: |\n  x\n---\n\nbody\n", ok: true, yaml: "a: 1\nb: |\n  x\n", body: "\nbody\n", bodyLine: 6},
		{name: "indented dashes are yaml", in: "---\na: |\n  ---\n---\nb\n", ok: true, yaml: "a: |\n  ---\n", body: "b\n", bodyLine: 5},
		{name: "dashes with text are yaml", in: "---\na: 1\n--- x\n---\nb\n", ok: true, yaml: "a: 1\n--- x\n", body: "b\n", bodyLine: 5, regexDiffers: true},
		{name: "empty frontmatter", in: "---\n---\nb\n", ok: true, yaml: "", body: "b\n", bodyLine: 3},
		{name: "missing", in: "# title\n---\na: 1\n---\n"},
		{name: "leading blank line", in: "\n---\na: 1\n---\n"},
		{name: "four dashes", in: "----\na: 1\n----\n"},
		{name: "unterminated", in: "---\na: 1\nbody\n"},
		{name: "only opener", in: "---"},
		{name: "empty", in: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fm, ok := splitFrontmatter([]byte(tc.in))
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if !ok {
				return
			}
			if string(fm.yaml) != tc.yaml || string(fm.body) != tc.body || fm.bodyLine != tc.bodyLine {
				t.Errorf("got yaml %q body %q line %d, want %q %q %d", fm.yaml, fm.body, fm.bodyLine, tc.yaml, tc.body, tc.bodyLine)
			}
			// Elsewhere, where the reference regex matches at all, the split agrees with it.
			if m := referenceRE.FindStringSubmatch(tc.in); m != nil && !tc.regexDiffers {
				if strings.TrimRight(tc.yaml, "\r\n") != m[1] || tc.body != m[2] {
					t.Errorf("reference regex splits as %q / %q", m[1], m[2])
				}
			}
		})
	}
}

func TestParseFields(t *testing.T) {
	src := "\ufeff---\r\n" +
		"name: \" pdf-processing \"\r\n" +
		"description: >\r\n  Extract PDF text. Use when handling PDFs.\r\n" +
		"license: Apache-2.0\r\n" +
		"compatibility: Requires Python 3.14+ and uv\r\n" +
		"allowed-tools: Bash(git:*) Read\r\n" +
		"metadata:\r\n  author: example-org\r\n  version: \"1.0\"\r\n" +
		"requires:\r\n  - skill: base\r\n    version: \"1.2.0\"\r\n  - skill: extra\r\n" +
		"test:\r\n  cases: test/cases.yaml\r\n  config:\r\n    timeout: 1.5\r\n    parallel: false\r\n" +
		"---\r\n\r\n# Body\r\n"
	s, ds := Parse("x/pdf-processing/SKILL.md", []byte(src))
	if len(ds) > 0 {
		t.Fatalf("diagnostics: %v", ds)
	}
	if s.Name != "pdf-processing" || s.Description != "Extract PDF text. Use when handling PDFs." ||
		s.License != "Apache-2.0" || s.Compatibility != "Requires Python 3.14+ and uv" || s.AllowedTools != "Bash(git:*) Read" {
		t.Errorf("fields: %+v", s)
	}
	if s.Version != "1.0" || s.Metadata["author"] != "example-org" {
		t.Errorf("metadata: %v", s.Metadata)
	}
	wantReqs := []Requirement{{Skill: "base", Version: "1.2.0", Line: 12}, {Skill: "extra", Line: 14}}
	if !slices.Equal(s.Requires, wantReqs) {
		t.Errorf("requires %+v, want %+v", s.Requires, wantReqs)
	}
	if s.Test == nil || *s.Test != (TestConfig{Cases: "test/cases.yaml", Timeout: 1500 * time.Millisecond, Parallel: false, Line: 15}) {
		t.Errorf("test %+v", s.Test)
	}
	wantLines := map[string]int{"name": 2, "description": 3, "license": 5, "compatibility": 6, "allowed-tools": 7,
		"metadata": 8, "metadata.author": 9, "metadata.version": 10, "requires": 11, "test": 15,
		"test.cases": 16, "test.config": 17, "test.config.timeout": 18, "test.config.parallel": 19}
	for k, v := range wantLines {
		if s.Lines[k] != v {
			t.Errorf("Lines[%s] = %d, want %d", k, s.Lines[k], v)
		}
	}
	if s.BodyLine != 21 || s.Body != "\r\n# Body\r\n" {
		t.Errorf("body at %d: %q", s.BodyLine, s.Body)
	}
	if s.Dir != "x/pdf-processing" {
		t.Errorf("dir %q", s.Dir)
	}
}

func TestTestDefaults(t *testing.T) {
	s, _ := Parse("t/SKILL.md", []byte("---\nname: t\ndescription: d\ntest:\n  cases: c.yaml\n---\n"))
	if s.Test == nil || s.Test.Timeout != DefaultTestTimeout || !s.Test.Parallel || s.Test.Line != 4 {
		t.Errorf("defaults: %+v", s.Test)
	}
	s, _ = Parse("t/SKILL.md", []byte("---\nname: t\ndescription: d\n---\n"))
	if s.Test != nil {
		t.Errorf("no test field, got %+v", s.Test)
	}
}

// TestYAMLErrorLines checks that YAML errors point at file lines, not frontmatter lines, for
// both kinds of yaml.v3 errors (the scanner numbers lines from 1, the parser from 0).
func TestYAMLErrorLines(t *testing.T) {
	tests := []struct {
		yaml string
		line int
	}{
		{"description: [unclosed\n", 2},                  // parser, at the end of the stream
		{"name: x\ndescription: [unclosed\n", 3},         // parser: the sequence starts on 3
		{"name: x\nmeta:\n  a: 1\n - b\n", 5},            // parser: the stray item
		{"x:\n  - a\n  b: c\n", 3},                       // parser: the sequence starts on 3
		{"name: x\n  bad: indent\n", 3},                  // scanner
		{"\tname: x\n", 2},                               // scanner, first line (no number)
		{"name: x\ndescription: \"unterminated\n", 3},    // scanner: the scalar starts on 3
		{"name: x\ndescription: ok\nbad: @at\n", 4},      // scanner
		{"a: 1\nb: 2\nc: 3\nd: {x: 1\n", 5},              // parser: the flow mapping starts on 5
		{"a: 1\n!!foo b: 2\n- c\n", 4},                   // parser: the stray item
		{"a: 1\nb: 2\nc: 3\n\n\nkey with no colon\n", 7}, // scanner
	}
	for _, tc := range tests {
		_, ds := Parse("s/SKILL.md", []byte("---\n"+tc.yaml+"---\nbody\n"))
		if len(ds) != 1 || ds[0].Rule != RuleFrontmatterYAML {
			t.Errorf("%q: want one frontmatter.yaml, got %v", tc.yaml, ds)
			continue
		}
		if ds[0].Line != tc.line {
			t.Errorf("%q: line %d, want %d: %v", tc.yaml, ds[0].Line, tc.line, ds[0])
		}
	}
}

func TestSizeLimits(t *testing.T) {
	head := "---\nname: s\ndescription: d\n---\n"
	atLimit := head + strings.Repeat("x", MaxFileSize-len(head))
	if _, ds := Parse("s/SKILL.md", []byte(atLimit)); slices.ContainsFunc(ds, func(d diag.Diagnostic) bool { return d.Rule == RuleFileTooLarge }) {
		t.Errorf("a file of exactly MaxFileSize is accepted: %v", ds)
	}
	if _, ds := Parse("s/SKILL.md", []byte(atLimit+"x")); len(ds) != 1 || ds[0].Rule != RuleFileTooLarge {
		t.Errorf("one byte over: %v", ds)
	}
	fm := "---\nname: s\ndescription: d\nmetadata:\n  blob: \"" + strings.Repeat("y", MaxFrontmatterSize-100) + "\"\n---\n"
	if _, ds := Parse("s/SKILL.md", []byte(fm)); len(ds) != 0 {
		t.Errorf("frontmatter under the limit: %v", ds)
	}
}

// TestHostileYAML feeds the classic YAML attacks; each must end in one diagnostic.
func TestHostileYAML(t *testing.T) {
	laughs := "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
	prev := "a"
	for _, n := range []string{"b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m"} {
		laughs += n + ": &" + n + " [" + strings.TrimSuffix(strings.Repeat("*"+prev+",", 9), ",") + "]\n"
		prev = n
	}
	tests := map[string]struct {
		yaml string
		rule string
	}{
		"billion laughs":      {laughs, RuleFrontmatterAlias},
		"self-referencing":    {"a: &a [*a]\n", RuleFrontmatterAlias},
		"merge key":           {"base: &b {x: 1}\nname: {<<: *b}\n", RuleFrontmatterAlias},
		"deep flow nesting":   {"a: " + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + "\n", RuleFrontmatterYAML},
		"deep block nesting":  {deepBlock(200), RuleFrontmatterTooDeep},
		"deep mapping nest":   {"a: " + strings.Repeat("{a: ", 100) + "1" + strings.Repeat("}", 100) + "\n", RuleFrontmatterTooDeep},
		"huge alias fan-out":  {"a: &a x\nb: [" + strings.TrimSuffix(strings.Repeat("*a,", 10000), ",") + "]\n", RuleFrontmatterAlias},
		"tag on a scalar":     {"name: !!binary aGVsbG8=\ndescription: d\n", ""},
		"unknown custom tags": {"name: !custom x\ndescription: !other y\n", ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, ds := Parse("s/SKILL.md", []byte("---\n"+tc.yaml+"---\n"))
			if tc.rule == "" {
				if len(ds) != 0 {
					t.Fatalf("parse diagnostics %v", ds)
				}
				if vd := Validate(s, Options{}); !vd.HasErrors() {
					t.Errorf("tagged values must fail validation as non-strings: %v", vd)
				}
				return
			}
			if len(ds) != 1 || ds[0].Rule != tc.rule {
				t.Errorf("want one %s, got %v", tc.rule, ds)
			}
		})
	}
}

func deepBlock(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(strings.Repeat(" ", i))
		b.WriteString("k:\n")
	}
	return b.String()
}

func TestEncoding(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		rule string
		line int
	}{
		{"nul in body", []byte("---\nname: a\ndescription: d\n---\nx\x00y\n"), RuleFileBinary, 5},
		{"utf-16 le", []byte{0xFF, 0xFE, '-', 0, '-', 0}, RuleFileEncoding, 1},
		{"latin-1", []byte("---\nname: caf\xe9\n---\n"), RuleFileEncoding, 2},
		{"truncated rune", []byte("---\nname: a\ndescription: \xe2\x82\n---\n"), RuleFileEncoding, 3},
	}
	for _, tc := range tests {
		_, ds := Parse("s/SKILL.md", tc.in)
		if len(ds) != 1 || ds[0].Rule != tc.rule || ds[0].Line != tc.line {
			t.Errorf("%s: want %s at line %d, got %v", tc.name, tc.rule, tc.line, ds)
		}
	}
}

// TestYAMLLineBreaks checks line numbers when YAML breaks lines where editors do not: a lone
// CR, NEL, LS and PS end a YAML line, while file lines are counted by "\n" (found by
// FuzzParse: a duplicate key after lone CRs was reported past the end of the file).
func TestYAMLLineBreaks(t *testing.T) {
	for _, brk := range []string{"\r", "\u0085", "\u2028", "\u2029"} {
		src := "---\nname: a" + brk + "description: d\r\nname: b\nx: [\n---\n"
		_, ds := Parse("s/SKILL.md", []byte(src))
		if len(ds) != 1 || ds[0].Rule != RuleFrontmatterYAML || ds[0].Line != 4 {
			t.Errorf("break %q: want a YAML error on line 4, got %v", brk, ds)
		}
		src = "---\nname: a" + brk + "description: d\r\nname: b\n---\n"
		_, ds = Parse("s/SKILL.md", []byte(src))
		if len(ds) != 1 || ds[0].Rule != RuleFrontmatterDuplicateKey || ds[0].Line != 3 || !strings.Contains(ds[0].Message, "line 2") {
			t.Errorf("break %q: want the duplicate on line 3 naming line 2, got %v", brk, ds)
		}
	}
}
