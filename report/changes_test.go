package report

import (
	"bytes"
	"io"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/internal/testutil"
)

// changesFixture is the render fixture with a "what changed" section, a flaky case and a
// quarantined one.
func changesFixture() Report {
	r := fixture()
	prev := "r-prev"
	r.Changes = &Changes{
		Previous:     &prev,
		NewlyFailing: []ChangedCase{{Skill: "pdf-tools", Case: "extracts text", Previous: "passing", Current: "failing"}},
		Fixed:        []ChangedCase{{Skill: "pdf-tools", Case: "counts pages", Previous: "failing", Current: "passing"}},
		StillFailing: []ChangedCase{{Skill: "greeter", Case: "waves", Previous: "failing", Current: "failing", FlippedEpochs: []int{3}}},
		New:          []ChangedCase{{Skill: "greeter", Case: "mostly polite", Previous: "absent", Current: "passing"}},
		Removed:      []ChangedCase{{Skill: "greeter", Case: "retired", Previous: "passing", Current: "absent"}},
		Flaky: []FlakyCell{{Skill: "greeter", Case: "waves", Model: "m-1",
			Evidence: "5 flips in 9 decided runs (PFPPFPFFP), pass rate 0.56 [0.27, 0.81]; flip rate 0.62 ≥ 0.30"}},
		Stats: &ChangeStats{Cases: 6, PassRatePrevious: 0.8333, PassRateCurrent: 0.5, Delta: -0.3333,
			Interval: [2]float64{-0.7, 0.1}, P: 0.5, Test: "mcnemar_exact"},
	}
	for i := range r.Cases {
		if r.Cases[i].Case == "waves" {
			r.Cases[i].Flaky = &CaseFlaky{Model: "m-1", Runs: 10, Decided: 9, Flips: 5, FlipRate: 5.0 / 8, PassRate: 5.0 / 9,
				Evidence: r.Changes.Flaky[0].Evidence}
		}
	}
	r.Quarantine(func(c Case) string {
		if c.Flaky != nil {
			return "flaky"
		}
		if c.Case == "large file" {
			return "listed"
		}
		return ""
	})
	return r
}

func TestChangesGoldens(t *testing.T) {
	r := changesFixture()
	none := fixture()
	none.Changes = &Changes{Note: "no previous completed run of suite nightly in lane scheduled"}
	tests := []struct {
		file  string
		write func(io.Writer) error
	}{
		{"changes.json", func(w io.Writer) error { return WriteJSON(w, r) }},
		{"changes.junit.xml", func(w io.Writer) error { return WriteJUnit(w, r) }},
		{"changes.txt", func(w io.Writer) error { return WriteText(w, r, TextOptions{MaxOutputLines: 2}) }},
		{"changes-none.txt", func(w io.Writer) error {
			return WriteText(w, none, TextOptions{MaxPassedListed: -1, MaxOutputLines: 1})
		}},
		{"changes-none.json", func(w io.Writer) error {
			// Only the section: the rest is report.json's.
			n := Report{Run: none.Run, Changes: none.Changes}
			return WriteJSON(w, n)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			var buf bytes.Buffer
			if err := tt.write(&buf); err != nil {
				t.Fatal(err)
			}
			testutil.Golden(t, filepath.Join("testdata", tt.file), buf.Bytes())
		})
	}
}

func TestChangesFirstAndRoundTrip(t *testing.T) {
	r := changesFixture()
	var txt bytes.Buffer
	if err := WriteText(&txt, r, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(txt.String(), "\n"); first != "what changed since run r-prev: 1 newly failing, 1 fixed, 1 still failing, 1 new, 1 removed, 1 flaky" {
		t.Errorf("first line = %q", first)
	}
	var js bytes.Buffer
	if err := WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	got, err := FromJSON(&js)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, r) {
		t.Errorf("FromJSON(WriteJSON(r)) differs:\n got %+v\nwant %+v", got.Changes, r.Changes)
	}
	var none bytes.Buffer
	if err := WriteJSON(&none, Report{Run: "r", Changes: &Changes{Note: "no history"}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(none.String(), `"previous": null`) {
		t.Errorf("a section without a previous run lacks \"previous\": null:\n%s", none.String())
	}
}

func TestQuarantineSummary(t *testing.T) {
	tests := []struct {
		name        string
		quarantine  func(Case) string
		quarantined int
		failing     bool
	}{
		{"none", func(Case) string { return "" }, 0, true},
		// Every case that did not pass quarantined: the run no longer fails, and the passed
		// ones do not count as quarantined.
		{"all", func(Case) string { return "listed" }, 6, false},
		{"some", func(c Case) string {
			if c.Status == StatusFailed {
				return "flaky"
			}
			return ""
		}, 3, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := fixture()
			r.Quarantine(tt.quarantine)
			if r.Summary.Quarantined != tt.quarantined || r.Summary.Failing() != tt.failing {
				t.Errorf("summary %+v: quarantined %d failing %v, want %d %v", r.Summary, r.Summary.Quarantined, r.Summary.Failing(), tt.quarantined, tt.failing)
			}
			if r.Summary.Failed != 3 {
				t.Errorf("quarantined cases left the failed count: %+v", r.Summary)
			}
		})
	}
	if (Summary{}).Failing() != true {
		t.Error("a run without cases must fail")
	}
}
