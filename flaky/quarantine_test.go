package flaky

import "testing"

func TestQuarantine(t *testing.T) {
	cell := Cell{Suite: "nightly", Skill: "pdf", Case: "fills-form", Agent: "builtin", Model: "m1"}
	other := Cell{Suite: "nightly", Skill: "pdf", Case: "reads-table", Agent: "builtin", Model: "m1"}
	tests := []struct {
		name   string
		policy Policy
		cell   Cell
		label  Label
		want   Decision
	}{
		{"no policy: a flaky cell still sets the exit code", Policy{}, cell, Flaky, Decision{}},
		{"flaky quarantine on: a flaky cell does not", Policy{Flaky: true}, cell, Flaky, Decision{true, "flaky"}},
		{"flaky quarantine on: a stable-fail cell does", Policy{Flaky: true}, cell, StableFail, Decision{}},
		{"flaky quarantine on: an insufficient cell does", Policy{Flaky: true}, cell, Insufficient, Decision{}},
		{"listed exactly", Policy{Cells: []Cell{cell}}, cell, StableFail, Decision{true, "listed"}},
		{"listed wins over flaky as the reason", Policy{Flaky: true, Cells: []Cell{cell}}, cell, Flaky, Decision{true, "listed"}},
		{"listed for every agent and model", Policy{Cells: []Cell{{Skill: "pdf", Case: "fills-form"}}}, cell, StablePass, Decision{true, "listed"}},
		{"listed for every suite and skill, one model", Policy{Cells: []Cell{{Case: "fills-form", Model: "m1"}}}, cell, StableFail, Decision{true, "listed"}},
		{"listed for another model", Policy{Cells: []Cell{{Case: "fills-form", Model: "m2"}}}, cell, StableFail, Decision{}},
		{"listed in another suite", Policy{Cells: []Cell{{Suite: "ci", Case: "fills-form"}}}, cell, StableFail, Decision{}},
		{"another case listed", Policy{Cells: []Cell{cell}}, other, StableFail, Decision{}},
		{"a listed cell without a case quarantines nothing", Policy{Cells: []Cell{{Skill: "pdf"}}}, cell, StableFail, Decision{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := NewQuarantine(tt.policy)
			got := q.Decide(tt.cell, tt.label)
			if got != tt.want {
				t.Errorf("Decide = %+v, want %+v", got, tt.want)
			}
			if q.SetsExitCode(tt.cell, tt.label) != !tt.want.Quarantined {
				t.Errorf("SetsExitCode = %v with decision %+v", q.SetsExitCode(tt.cell, tt.label), got)
			}
		})
	}
}

func TestQuarantineZeroValue(t *testing.T) {
	var q Quarantine
	if !q.SetsExitCode(Cell{Case: "c"}, Flaky) {
		t.Error("the zero Quarantine quarantined a cell")
	}
}
