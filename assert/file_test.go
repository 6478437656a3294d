package assert

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestCompileFile(t *testing.T) {
	tests := []struct {
		name     string
		a        Assertion
		err      string // "" for success
		path     bool   // the error wraps ErrPath
		wantPath string // the cleaned path, on success
	}{
		{name: "exists", a: Assertion{Type: FileExists, Path: "out/report.md"}, wantPath: "out/report.md"},
		{name: "cleaned", a: Assertion{Type: FileExists, Path: "./out//a/../report.md"}, wantPath: "out/report.md"},
		{name: "directory with a slash", a: Assertion{Type: FileNotExists, Path: "build/"}, wantPath: "build"},
		{name: "dot dot inside", a: Assertion{Type: FileExists, Path: "a/../b"}, wantPath: "b"},
		{name: "name starting with dots", a: Assertion{Type: FileExists, Path: "..hidden"}, wantPath: "..hidden"},
		{name: "empty path", a: Assertion{Type: FileExists, Path: " "}, err: "the path is empty", path: true},
		{name: "absolute", a: Assertion{Type: FileExists, Path: "/etc/passwd"}, path: true,
			err: `the path "/etc/passwd" is absolute; write it relative to the directory the case's files are checked in`},
		{name: "escape", a: Assertion{Type: FileNotExists, Path: "../x"}, path: true,
			err: `the path "../x" leaves the directory the case's files are checked in`},
		{name: "escape after cleaning", a: Assertion{Type: FileContains, Path: "a/../../x", Value: "y"}, path: true,
			err: `the path "a/../../x" leaves the directory the case's files are checked in`},
		{name: "the directory itself", a: Assertion{Type: FileExists, Path: "a/.."}, path: true,
			err: `the path "a/.." leaves the directory the case's files are checked in`},
		{name: "NUL", a: Assertion{Type: FileExists, Path: "a\x00b"}, path: true, err: `the path "a\x00b" contains a NUL byte`},
		{name: "not UTF-8", a: Assertion{Type: FileExists, Path: "a\xff"}, path: true, err: `the path "a\xff" is not valid UTF-8`},
		{name: "too long", a: Assertion{Type: FileExists, Path: strings.Repeat("a", MaxFilePathBytes+1)},
			err: "the path is 1025 bytes, more than 1024"},
		{name: "contains", a: Assertion{Type: FileContains, Path: "a", Value: "x"}, wantPath: "a"},
		{name: "contains empty text", a: Assertion{Type: FileContains, Path: "a"}, err: "the text is empty"},
		{name: "matches", a: Assertion{Type: FileMatches, Path: "a", Value: `^v\d`}, wantPath: "a"},
		{name: "matches bad pattern", a: Assertion{Type: FileMatches, Path: "a", Value: `a(`},
			err: "error parsing regexp: missing closing ): `a(`"},
		{name: "matches costly pattern", a: Assertion{Type: FileMatches, Path: "a", Value: `x{1000}`},
			err: "the pattern compiles to 1002 instructions, more than 1000: matching it would cost the worker too much time"},
		{name: "json", a: Assertion{Type: FileJSON, Path: "a.json", JSON: map[string]any{"ok": true}}, wantPath: "a.json"},
		{name: "json missing", a: Assertion{Type: FileJSON, Path: "a.json"}, err: "the expected JSON document is missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := tt.a
			err := Compile(&a)
			if tt.err == "" {
				if err != nil {
					t.Fatalf("Compile: %v", err)
				}
				if a.Path != tt.wantPath {
					t.Errorf("path %q, want %q", a.Path, tt.wantPath)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("Compile error %v, want one wrapping ErrInvalid with %q", err, tt.err)
			}
			if errors.Is(err, ErrPath) != tt.path {
				t.Errorf("errors.Is(err, ErrPath) = %v, want %v", !tt.path, tt.path)
			}
		})
	}
}

func TestEvaluateFile(t *testing.T) {
	regular := func(content string) File {
		return File{State: FileRegular, Size: int64(len(content)), Content: []byte(content)}
	}
	// big is a file of which the worker read only the first part.
	big := File{State: FileRegular, Size: 5 << 20, Content: []byte(`{"done": true, "items": [`), Truncated: true}
	obs := Observation{Files: map[string]File{
		"report.md":  regular("# Report\nAll Done.\n"),
		"empty.txt":  regular(""),
		"out":        {State: FileDirectory},
		"fifo":       {State: FileOther},
		"gone.txt":   {State: FileMissing},
		"r.json":     regular(`{"total": 3, "items": [{"id": 1}], "extra": "x"}`),
		"bad.json":   regular("{\n  \"total\": 3,\n}"),
		"big.json":   big,
		"locked":     {State: FileUnknown, Problem: "the directory cannot be searched"},
		"escape.txt": {State: FileUnknown, Problem: "a symbolic link leads out of the directory"},
	}}
	doc := func(s string) any {
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	tests := []struct {
		name    string
		a       Assertion
		obs     *Observation // nil: obs
		passed  bool
		errored bool
		msg     string
		path    string // Result.Path
	}{
		{name: "exists", a: Assertion{Type: FileExists, Path: "report.md"}, passed: true, msg: `file "report.md" exists (a file of 19 bytes)`},
		{name: "exists, a directory", a: Assertion{Type: FileExists, Path: "out"}, passed: true, msg: `file "out" exists (a directory)`},
		{name: "exists, missing", a: Assertion{Type: FileExists, Path: "gone.txt"}, msg: `file "gone.txt" does not exist`},
		{name: "exists, unknown", a: Assertion{Type: FileExists, Path: "locked"}, errored: true,
			msg: `file_exists was not decided: the state of file "locked" is unknown: the directory cannot be searched`},
		{name: "exists, not gathered", a: Assertion{Type: FileExists, Path: "other"}, errored: true,
			msg: `file_exists was not decided: file "other" was not gathered`},
		{name: "exists, no files at all", a: Assertion{Type: FileExists, Path: "report.md"}, obs: &Observation{}, errored: true,
			msg: "file_exists was not decided: the job's files were not gathered"},
		{name: "not exists", a: Assertion{Type: FileNotExists, Path: "gone.txt"}, passed: true, msg: `file "gone.txt" does not exist`},
		{name: "not exists, there", a: Assertion{Type: FileNotExists, Path: "report.md"}, msg: `file "report.md" exists (a file of 19 bytes)`},
		// A negative check on a path whose state is unknown is never a pass.
		{name: "not exists, unknown", a: Assertion{Type: FileNotExists, Path: "locked"}, errored: true,
			msg: `file_not_exists was not decided: the state of file "locked" is unknown`},
		{name: "not exists, symlink out", a: Assertion{Type: FileNotExists, Path: "escape.txt"}, errored: true,
			msg: "a symbolic link leads out of the directory"},
		{name: "not exists, not gathered", a: Assertion{Type: FileNotExists, Path: "other"}, errored: true, msg: "was not gathered"},
		{name: "not exists, no files at all", a: Assertion{Type: FileNotExists, Path: "x"}, obs: &Observation{}, errored: true,
			msg: "the job's files were not gathered"},
		{name: "contains", a: Assertion{Type: FileContains, Path: "report.md", Value: "Done"}, passed: true,
			msg: `file "report.md" contains "Done" at line 2, column 5`},
		{name: "contains, other case", a: Assertion{Type: FileContains, Path: "report.md", Value: "done"},
			msg: `file "report.md" does not contain "done" (case-sensitive); it appears with different case at line 2, column 5: "Done"`},
		{name: "contains, empty file", a: Assertion{Type: FileContains, Path: "empty.txt", Value: "x"},
			msg: `file "empty.txt" does not contain "x" (case-sensitive); the file is empty`},
		{name: "contains, missing", a: Assertion{Type: FileContains, Path: "gone.txt", Value: "x"}, msg: `file "gone.txt" does not exist`},
		{name: "contains, directory", a: Assertion{Type: FileContains, Path: "out", Value: "x"},
			msg: `file "out" is a directory, not a regular file`},
		{name: "contains, special", a: Assertion{Type: FileContains, Path: "fifo", Value: "x"},
			msg: `file "fifo" is a device, pipe or socket, not a regular file`},
		// Found in the part read: the file does contain it.
		{name: "contains, found in a truncated read", a: Assertion{Type: FileContains, Path: "big.json", Value: "done"}, passed: true,
			msg: `file "big.json" contains "done" at line 1, column 3`},
		// Not found in the part read: it may be in the rest.
		{name: "contains, not found in a truncated read", a: Assertion{Type: FileContains, Path: "big.json", Value: "zzz"}, errored: true,
			msg: `file_contains was not decided: file "big.json" is 5242880 bytes and only the first 25 were read`},
		{name: "contains, unknown", a: Assertion{Type: FileContains, Path: "locked", Value: "x"}, errored: true, msg: "is unknown"},
		{name: "matches", a: Assertion{Type: FileMatches, Path: "report.md", Value: `(?m)^All \w+\.$`}, passed: true,
			msg: `file "report.md" matches /(?m)^All \w+\.$/ at line 2, column 1`},
		{name: "matches, no match", a: Assertion{Type: FileMatches, Path: "report.md", Value: `^All`},
			msg: `file "report.md" does not match /^All/`},
		{name: "matches, empty file", a: Assertion{Type: FileMatches, Path: "empty.txt", Value: `x`},
			msg: `file "empty.txt" does not match /x/; the file is empty`},
		{name: "matches, truncated read", a: Assertion{Type: FileMatches, Path: "big.json", Value: `done`}, errored: true,
			msg: `file_matches was not decided: file "big.json" is 5242880 bytes and only the first 25 were read`},
		{name: "matches, missing", a: Assertion{Type: FileMatches, Path: "gone.txt", Value: `x`}, msg: `file "gone.txt" does not exist`},
		{name: "json", a: Assertion{Type: FileJSON, Path: "r.json", JSON: doc(`{"total": 3.0, "items": [{}]}`)}, passed: true,
			msg: `file "r.json" JSON matches the expected document`},
		{name: "json differs", a: Assertion{Type: FileJSON, Path: "r.json", JSON: doc(`{"total": 4, "items": [{"id": 2}]}`)},
			msg: `file "r.json" JSON differs at $.items[0].id: expected 2, got 1 (and 1 more difference)`, path: "$.items[0].id"},
		{name: "json invalid", a: Assertion{Type: FileJSON, Path: "bad.json", JSON: doc(`{}`)},
			msg: `file "bad.json" is not valid JSON: invalid character '}' looking for beginning of object key string (line 3, column 1)`},
		{name: "json empty", a: Assertion{Type: FileJSON, Path: "empty.txt", JSON: doc(`{}`)},
			msg: `file "empty.txt" is empty; expected a JSON document`},
		{name: "json truncated read", a: Assertion{Type: FileJSON, Path: "big.json", JSON: doc(`{}`)}, errored: true,
			msg: "only the first 25 were read"},
		{name: "json directory", a: Assertion{Type: FileJSON, Path: "out", JSON: doc(`{}`)}, msg: "is a directory, not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := obs
			if tt.obs != nil {
				o = *tt.obs
			}
			r, err := Evaluate(tt.a, o)
			if err != nil {
				t.Fatalf("Evaluate: %v", err)
			}
			if r.Passed != tt.passed || r.Errored != tt.errored {
				t.Errorf("passed %v errored %v, want %v %v (%s)", r.Passed, r.Errored, tt.passed, tt.errored, r.Message)
			}
			if r.Passed && r.Errored {
				t.Error("a result both passed and errored")
			}
			if !strings.Contains(r.Message, tt.msg) {
				t.Errorf("message %q, want it to contain %q", r.Message, tt.msg)
			}
			if r.Path != tt.path {
				t.Errorf("path %q, want %q", r.Path, tt.path)
			}
			if r.Type != tt.a.Type || r.Expected == "" {
				t.Errorf("type %q expected %q: want the type and a description", r.Type, r.Expected)
			}
		})
	}
}

// TestFileMatchesDeadline: a file_matches still running at the job's deadline is errored.
func TestFileMatchesDeadline(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	a := Assertion{Type: FileMatches, Path: "a", Value: "x"}
	results, _ := EvaluateAllContext(ctx, []Assertion{a}, Observation{Files: map[string]File{"a": {State: FileRegular, Content: []byte("x")}}})
	if !results[0].Errored || results[0].Passed {
		t.Fatalf("result %+v, want errored", results[0])
	}
}

func TestFileForms(t *testing.T) {
	for typ, want := range map[Type]struct {
		form Form
		key  string
	}{
		FileExists: {FormPaths, ""}, FileNotExists: {FormPaths, ""},
		FileContains: {FormFile, "text"}, FileMatches: {FormFile, "pattern"}, FileJSON: {FormFile, "json"},
	} {
		if typ.Form() != want.form || typ.FileValueKey() != want.key || !typ.IsFile() {
			t.Errorf("%s: form %d key %q file %v, want %d %q true", typ, typ.Form(), typ.FileValueKey(), typ.IsFile(), want.form, want.key)
		}
	}
	if OutputContains.IsFile() || OutputContains.FileValueKey() != "" {
		t.Error("output_contains counts as a file type")
	}
}
