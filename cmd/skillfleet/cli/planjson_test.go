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
		{"every optional field", planDoc{SuiteDigest: "sha256:ab", Jobs: []planJob{
			{ID: "j3", Skill: "s", Case: "c", Kind: "prompt", Epoch: 1000, TimeoutMS: -5, Agent: "a b", Arm: "without_skill", ReuseFrom: "r1"},
			{ID: "j4", Arm: "old_skill"}, {ID: "j5", ReuseFrom: "r2"}}, Diagnostics: diags}},
		{"strings to escape", planDoc{Jobs: []planJob{
			job("j6", "quote \" backslash \\ tab \t nl \n cr \r bell \a"),
			job("j7", "line sep \u2028 par sep \u2029 del \x7f nul \x00"),
			job("j8", "invalid \xff\xfe utf-8 <script>&amp;"),
			{ID: "j\"9", Skill: "\x1f", Case: "é", Kind: "\\", Agent: "\u00e9\"", Arm: "<a>", ReuseFrom: "\xc3"},
		}, Diagnostics: diag.Diagnostics{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var want, got bytes.Buffer
			if err := writeJSON(&want, tt.doc); err != nil {
				t.Fatal(err)
			}
			if err := writePlanJSON(&got, planDoc{SuiteDigest: tt.doc.SuiteDigest, Diagnostics: tt.doc.Diagnostics}, heldJobs(tt.doc.Jobs)); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Errorf("streamed plan differs:\n got: %s\nwant: %s", got.String(), want.String())
			}
		})
	}
}

// heldJobs is a jobList of jobs made beforehand.
type heldJobs []planJob

func (js heldJobs) len() int         { return len(js) }
func (js heldJobs) at(i int) planJob { return js[i] }
