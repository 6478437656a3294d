package skill

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse feeds arbitrary bytes through Parse, Validate and Lint. The invariants: nothing
// panics (Parse's recover would hide a panic as an "internal error" diagnostic, so that is a
// failure too), every diagnostic names the file, a known rule and a sane line, and a parsed
// body lies within the input.
func FuzzParse(f *testing.F) {
	_ = filepath.WalkDir(filepath.Join("testdata", "cases"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == FileName {
			if data, err := os.ReadFile(p); err == nil && len(data) < 1<<16 {
				f.Add(data)
			}
		}
		return nil
	})
	for _, s := range []string{
		"", "---", "---\n", "---\n---", "---\r\n---\r\n", "\ufeff---\nname: a\n---\n",
		"---\nname: [\n---\n", "---\na: &a [*a]\n---\n", "---\n? [a]\n: b\n---\n",
		"---\nrequires:\n  - skill: a\n    version: \"1\"\n  - {skill: b}\n---\n",
		"---\ntest:\n  cases: c\n  config: {timeout: 1e309, parallel: true}\n---\n",
		"---\nmetadata: {1: 2, [a]: b}\n---\n[x](../y) `scripts/z.py`\n",
	} {
		f.Add([]byte(s))
	}
	known := map[string]bool{}
	for _, r := range Rules() {
		known[r.ID] = true
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		const file = "fuzz/SKILL.md"
		s, ds := Parse(file, data)
		if s == nil {
			t.Fatal("nil skill")
		}
		all := append(ds, Validate(s, Options{})...)
		all = append(all, Validate(s, Options{Strict: true})...)
		s.Dir = "" // keep Lint off the file system
		all = append(all, Lint(s, OptInRules()...)...)
		lines := strings.Count(string(data), "\n") + 1
		for _, d := range all {
			if strings.Contains(d.Message, "internal error") {
				t.Fatalf("recovered panic: %v", d)
			}
			if !known[d.Rule] || d.File != file || d.Line < 0 || d.Line > lines+1 {
				t.Fatalf("bad diagnostic %+v (input has %d lines)", d, lines)
			}
		}
		if len(s.Body) > len(data) || (s.BodyLine > 0 && s.BodyLine > lines+1) {
			t.Fatalf("body %d bytes at line %d, input %d bytes %d lines", len(s.Body), s.BodyLine, len(data), lines)
		}
	})
}
