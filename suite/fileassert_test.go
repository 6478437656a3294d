package suite

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/skillfleet/skillfleet/assert"
	"github.com/skillfleet/skillfleet/skill"
)

// TestFileAssertions reads every file kind from a prompt case and a command case, in each form
// it may be written; paths come out cleaned.
func TestFileAssertions(t *testing.T) {
	root := filepath.Join("testdata", "files")
	s := Load([]string{root}, skill.Options{})
	if s.Diagnostics.HasErrors() {
		t.Fatalf("errors:\n%s", diagText(root, s.Diagnostics))
	}
	type row struct {
		Type  assert.Type
		Path  string
		Value string
		JSON  string
		Line  int
	}
	want := map[string][]row{
		"writes-report": {
			{Type: assert.FileExists, Path: "out/report.md", Line: 5},
			{Type: assert.FileNotExists, Path: "scratch.tmp", Line: 6},
			{Type: assert.FileNotExists, Path: "debug.log", Line: 6},
			{Type: assert.FileContains, Path: "out/report.md", Value: "Quarterly", Line: 8},
			{Type: assert.FileMatches, Path: "out/report.md", Value: `(?m)^# Q[1-4] \d{4}$`, Line: 11},
			{Type: assert.FileMatches, Path: "out/summary.json", Value: `"total"`, Line: 13},
			{Type: assert.FileJSON, Path: "out/summary.json", JSON: `{"ok":true,"total":3}`, Line: 15},
		},
		"keeps-script": {
			{Type: assert.ExitCode, Line: 5},
			{Type: assert.FileExists, Path: "scripts/check.sh", Line: 6},
			{Type: assert.FileNotExists, Path: "build", Line: 7},
			{Type: assert.FileContains, Path: "scripts/check.sh", Value: "#!/bin/sh", Line: 8},
			{Type: assert.FileMatches, Path: "scripts/check.sh", Value: "exit 0$", Line: 9},
			{Type: assert.FileJSON, Path: "data/config.json", JSON: `{"mode":"strict"}`, Line: 11},
		},
	}
	if len(s.Cases) != len(want) {
		t.Fatalf("planned %d cases, want %d", len(s.Cases), len(want))
	}
	for _, c := range s.Cases {
		var got []row
		for _, a := range c.Assertions {
			r := row{Type: a.Type, Path: a.Path, Value: a.Value, Line: a.Line}
			if a.JSON != nil {
				b, err := json.Marshal(a.JSON)
				if err != nil {
					t.Fatal(err)
				}
				r.JSON = string(b)
			}
			got = append(got, r)
		}
		if !reflect.DeepEqual(got, want[c.Name]) {
			t.Errorf("case %s:\n got  %+v\n want %+v", c.Name, got, want[c.Name])
		}
	}
}
