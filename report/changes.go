package report

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/skillfleet/skillfleet/internal/text"
)

// Changes is what changed since the previous completed run of the same suite and lane, and
// which of the run's cells are flaky. Its JSON field names are stable:
//
//   - "previous": the id of the run compared against; null when there is none, "note" then
//     says why in words ("no previous completed run of suite S in lane L");
//   - "newly_failing" (passing then, failing now), "fixed" (failing then, passing now),
//     "still_failing", "new" (only in this run), "removed" (only in the previous one): cases,
//     each {"skill", "case" (with its agent in brackets), "previous", "current" (the outcomes
//     "passing", "failing", "undecided", "absent"), "flipped_epochs"}; an empty list is absent;
//   - "flaky": the cells labelled flaky over the window of runs that ends with this one, each
//     {"skill", "case", "agent", "model", "evidence", "quarantined"};
//   - "stats": the paired comparison of the cases both runs decided, when at least one was
//     paired (pass rates and their difference as fractions, the 95% interval, p, significance);
//   - "agents": the command agents whose CLI version differs from the previous run's, each
//     {"agent", "previous", "current"} (the versions each run's results named, sorted): a
//     change the cases' outcomes may come from.
//
// A report without history has no Changes at all (the JSON field is absent).
type Changes struct {
	Previous *string `json:"previous"`
	Note     string  `json:"note,omitempty"`

	NewlyFailing []ChangedCase `json:"newly_failing,omitempty"`
	Fixed        []ChangedCase `json:"fixed,omitempty"`
	StillFailing []ChangedCase `json:"still_failing,omitempty"`
	New          []ChangedCase `json:"new,omitempty"`
	Removed      []ChangedCase `json:"removed,omitempty"`
	Flaky        []FlakyCell   `json:"flaky,omitempty"`
	Stats        *ChangeStats  `json:"stats,omitempty"`
	Agents       []AgentChange `json:"agents,omitempty"`
}

// AgentChange is a command agent whose CLI version changed between the runs compared.
type AgentChange struct {
	Agent    string   `json:"agent"`
	Previous []string `json:"previous"`
	Current  []string `json:"current"`
}

// ChangedCase is one case in a list of Changes.
type ChangedCase struct {
	Skill string `json:"skill"`
	// Case is the case's name, with its agent in brackets when it has one.
	Case          string `json:"case"`
	Previous      string `json:"previous"`
	Current       string `json:"current"`
	FlippedEpochs []int  `json:"flipped_epochs,omitempty"`
}

// FlakyCell is a case × agent × model labelled flaky, with the evidence in words.
type FlakyCell struct {
	Skill    string `json:"skill"`
	Case     string `json:"case"`
	Agent    string `json:"agent,omitempty"`
	Model    string `json:"model,omitempty"`
	Evidence string `json:"evidence"`
	// Quarantined is "flaky" or "listed" when the run's quarantine policy covers the cell.
	Quarantined string `json:"quarantined,omitempty"`
}

// ChangeStats is the paired comparison of this run (current) against the previous one over
// the cases both decided.
type ChangeStats struct {
	// Cases is how many cases were paired.
	Cases            int        `json:"cases"`
	PassRatePrevious float64    `json:"pass_rate_previous"`
	PassRateCurrent  float64    `json:"pass_rate_current"`
	Delta            float64    `json:"delta"`
	Interval         [2]float64 `json:"interval"`
	P                float64    `json:"p"`
	Significant      bool       `json:"significant"`
	Test             string     `json:"test,omitempty"`
}

// CaseFlaky marks a case of the report whose cell is labelled flaky.
type CaseFlaky struct {
	// Model is the cell's model, when known.
	Model    string  `json:"model,omitempty"`
	Runs     int     `json:"runs"`
	Decided  int     `json:"decided"`
	Flips    int     `json:"flips"`
	FlipRate float64 `json:"flip_rate"`
	PassRate float64 `json:"pass_rate"`
	// Evidence says in words why the cell is flaky.
	Evidence string `json:"evidence"`
}

// maxChangesListed caps each list of the text section; the JSON holds every case.
const maxChangesListed = 20

// changesHeadline is the section's first line.
func changesHeadline(c *Changes) string {
	if c.Previous == nil {
		note := c.Note
		if note == "" {
			note = "no previous completed run"
		}
		return "what changed: " + oneLine(note, maxValueRunes)
	}
	return fmt.Sprintf("what changed since run %s: %d newly failing, %d fixed, %d still failing, %d new, %d removed, %d flaky",
		oneLine(*c.Previous, maxValueRunes), len(c.NewlyFailing), len(c.Fixed), len(c.StillFailing), len(c.New), len(c.Removed), len(c.Flaky))
}

// writeChanges writes the section at the top of the text report.
func (t *textWriter) writeChanges(c *Changes) {
	t.printf("%s\n", t.paint(sgrBold, changesHeadline(c)))
	if c.Previous == nil {
		t.printf("\n")
		return
	}
	lists := []struct {
		name  string
		sgr   string
		cases []ChangedCase
	}{{"newly failing", sgrRed, c.NewlyFailing}, {"fixed", sgrGreen, c.Fixed}, {"still failing", sgrRed, c.StillFailing},
		{"new", sgrCyan, c.New}, {"removed", sgrCyan, c.Removed}}
	for _, l := range lists {
		for i, cc := range l.cases {
			if i == maxChangesListed {
				t.printf("  %s … and %d more\n", t.paint(l.sgr, l.name+":"), len(l.cases)-i)
				break
			}
			t.printf("  %s %s/%s\n", t.paint(l.sgr, l.name+":"), oneLine(cc.Skill, maxLineRunes), oneLine(cc.Case, maxLineRunes))
		}
	}
	for i, f := range c.Flaky {
		if i == maxChangesListed {
			t.printf("  %s … and %d more\n", t.paint(sgrYellow, "flaky:"), len(c.Flaky)-i)
			break
		}
		q := ""
		if f.Quarantined != "" {
			q = " [quarantined]"
		}
		t.printf("  %s %s%s: %s\n", t.paint(sgrYellow, "flaky:"), flakyName(f), q, oneLine(f.Evidence, 500))
	}
	for _, a := range c.Agents {
		t.printf("  %s %s\n", t.paint(sgrYellow, "agent "+oneLine(a.Agent, maxValueRunes)+" changed:"),
			oneLine(strings.Join(a.Previous, ", ")+" → "+strings.Join(a.Current, ", "), 500))
	}
	if s := c.Stats; s != nil {
		sig := "not significant"
		if s.Significant {
			sig = "significant"
		}
		t.printf("  pass rate %s → %s (%+.1f pp, 95%% CI %+.1f to %+.1f, p=%s, %s, %d paired %s)\n",
			percent(s.PassRatePrevious), percent(s.PassRateCurrent), 100*s.Delta, 100*s.Interval[0], 100*s.Interval[1],
			strconv.FormatFloat(s.P, 'g', 3, 64), sig, s.Cases, text.Plural(s.Cases, "case", "cases"))
	}
	t.printf("\n")
}

func flakyName(f FlakyCell) string {
	name := oneLine(f.Skill, maxLineRunes) + "/" + oneLine(f.Case, maxLineRunes)
	var at []string
	if f.Agent != "" {
		at = append(at, oneLine(f.Agent, maxValueRunes))
	}
	if f.Model != "" {
		at = append(at, oneLine(f.Model, maxValueRunes))
	}
	if len(at) > 0 {
		name += " (" + strings.Join(at, ", ") + ")"
	}
	return name
}

func percent(f float64) string { return strconv.FormatFloat(100*f, 'f', 1, 64) + "%" }

// ChangesProperties are the section as JUnit properties, for a testsuite named "changes":
// "changes.previous" (the run id, or "none"), and per list "changes.newly_failing",
// "changes.fixed", "changes.still_failing", "changes.new", "changes.removed" and
// "changes.flaky" the count, with ".cases" the cases comma-separated (at most 20, then "…");
// "changes.agents" the agents whose CLI version changed ("agent: old → new", comma-separated),
// when any did; with paired statistics "changes.delta", "changes.interval" ("lo,hi"),
// "changes.p" and "changes.significant".
func ChangesProperties(c *Changes) []Property {
	if c == nil {
		return nil
	}
	if c.Previous == nil {
		return []Property{{Name: "changes.previous", Value: "none"}, {Name: "changes.note", Value: c.Note}}
	}
	props := []Property{{Name: "changes.previous", Value: *c.Previous}}
	list := func(name string, names []string) {
		props = append(props, Property{Name: "changes." + name, Value: strconv.Itoa(len(names))})
		if len(names) == 0 {
			return
		}
		if len(names) > maxChangesListed {
			names = append(names[:maxChangesListed:maxChangesListed], "…")
		}
		props = append(props, Property{Name: "changes." + name + ".cases", Value: strings.Join(names, ", ")})
	}
	names := func(cs []ChangedCase) []string {
		out := make([]string, len(cs))
		for i, cc := range cs {
			out[i] = cc.Skill + "/" + cc.Case
		}
		return out
	}
	list("newly_failing", names(c.NewlyFailing))
	list("fixed", names(c.Fixed))
	list("still_failing", names(c.StillFailing))
	list("new", names(c.New))
	list("removed", names(c.Removed))
	fl := make([]string, len(c.Flaky))
	for i, f := range c.Flaky {
		fl[i] = flakyName(f)
	}
	list("flaky", fl)
	if len(c.Agents) > 0 {
		ag := make([]string, len(c.Agents))
		for i, a := range c.Agents {
			ag[i] = a.Agent + ": " + strings.Join(a.Previous, " ") + " → " + strings.Join(a.Current, " ")
		}
		props = append(props, Property{Name: "changes.agents", Value: strings.Join(ag, ", ")})
	}
	if s := c.Stats; s != nil {
		f := func(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) }
		props = append(props,
			Property{Name: "changes.delta", Value: f(s.Delta)},
			Property{Name: "changes.interval", Value: f(s.Interval[0]) + "," + f(s.Interval[1])},
			Property{Name: "changes.p", Value: f(s.P)},
			Property{Name: "changes.significant", Value: strconv.FormatBool(s.Significant)})
	}
	return props
}

// Quarantine marks the cases decide names (decide returns "flaky" or "listed", or "" for a
// case it does not quarantine) and recounts the summaries: a quarantined case that did not
// pass is counted in Summary.Quarantined, and does not make the run fail.
func (r *Report) Quarantine(decide func(Case) string) {
	for i := range r.Cases {
		c := &r.Cases[i]
		if c.Arm != "" && c.Arm != ArmWithSkill {
			continue
		}
		c.Quarantined = decide(*c)
	}
	if r.Changes != nil && len(r.Changes.Flaky) > 0 {
		marked := make(map[CaseKey]string)
		for _, c := range r.Cases {
			if c.Quarantined != "" {
				marked[CaseKey{Skill: c.Skill, Case: c.Case, Agent: c.Agent}] = c.Quarantined
			}
		}
		for i := range r.Changes.Flaky {
			f := &r.Changes.Flaky[i]
			f.Quarantined = marked[CaseKey{Skill: f.Skill, Case: f.Case, Agent: f.Agent}]
		}
	}
	r.Summary, r.Baseline = summarizeArms(r.Cases)
}

// Failing reports whether the run's with_skill cases make it fail: none at all, or one that
// did not pass, was not reused and is not quarantined.
func (s Summary) Failing() bool {
	return s.Total == 0 || s.Passed+s.Reused+s.Quarantined != s.Total
}
