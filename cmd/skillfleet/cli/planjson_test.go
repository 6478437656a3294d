package cli

import (
	"bytes"
	"testing"

	"github.com/skillfleet/skillfleet/diag"
)

// The streamed plan must be byte for byte what the one-shot encoder writes.
func TestWritePlanJSONMatchesOneShotEncoding(t *testing.T) {
	job := func(id, name string) planJob {
		return planJob{ID: id, Skill: "s<&>", Case: name, Kind: "prompt", Epoch: 2, TimeoutMS: 30000, Parallel: true}
	}
	diags := diag.Diagnostics{{File: "a/SKILL.md", Line: 3, Rule: "name", Severity: diag.SeverityError, Message: "bad \"name\" <x>"}}
	tests := []struct {
		name string
		doc  planDoc
	}{
		{"empty", planDoc{Jobs: []planJob{}, Diagnostics: diag.Diagnostics{}}},
		{"one job", planDoc{SuiteDigest: "sha256:ab", Jobs: []planJob{job("j1", "c1")}, Diagnostics: diag.Diagnostics{}}},
		{"jobs and diagnostics", planDoc{SuiteDigest: "sha256:ab", Jobs: []planJob{job("j1", "ünï"), {ID: "j2", Agent: "claude"}}, Diagnostics: diags}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var want, got bytes.Buffer
			if err := writeJSON(&want, tt.doc); err != nil {
				t.Fatal(err)
			}
			if err := writePlanJSON(&got, tt.doc); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Errorf("streamed plan differs:\n got: %s\nwant: %s", got.String(), want.String())
			}
		})
	}
}
