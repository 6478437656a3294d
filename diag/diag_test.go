package diag

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestDiagnosticString(t *testing.T) {
	tests := []struct {
		d    Diagnostic
		want string
	}{
		{Diagnostic{Rule: "name.format", Severity: SeverityError, Message: "bad", File: "path/SKILL.md", Line: 3}, "path/SKILL.md:3: error name.format: bad"},
		{Diagnostic{Rule: "discovery.root", Severity: SeverityError, Message: "gone", File: "root"}, "root: error discovery.root: gone"},
		{Diagnostic{Rule: "x", Severity: SeverityInfo, Message: "m"}, "info x: m"},
	}
	for _, tc := range tests {
		if got := tc.d.String(); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}

func TestDiagnosticJSON(t *testing.T) {
	b, err := json.Marshal(Diagnostic{Rule: "r", Severity: SeverityWarning, Message: "m", File: "f", Line: 2})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"rule":"r","severity":"warning","message":"m","file":"f","line":2}`; string(b) != want {
		t.Errorf("got %s, want %s", b, want)
	}
}

func TestDiagnosticsCountAndSort(t *testing.T) {
	ds := Diagnostics{
		{Rule: "b", Severity: SeverityWarning, File: "b", Line: 1},
		{Rule: "z", Severity: SeverityError, File: "a", Line: 2},
		{Rule: "a", Severity: SeverityError, File: "a", Line: 2},
		{Rule: "a", Severity: SeverityInfo, File: "a", Line: 1},
	}
	if ds.Errors() != 2 || ds.Warnings() != 1 || !ds.HasErrors() {
		t.Errorf("counts %d %d", ds.Errors(), ds.Warnings())
	}
	ds.Sort()
	var got []string
	for _, d := range ds {
		got = append(got, d.File+d.Rule)
	}
	if want := []string{"aa", "aa", "az", "bb"}; !slices.Equal(got, want) {
		t.Errorf("order %v", got)
	}
	if ds[0].Line != 1 {
		t.Error("line order")
	}
	if (Diagnostics{}).HasErrors() {
		t.Error("empty has errors")
	}
}
