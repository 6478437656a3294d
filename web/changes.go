package web

import (
	"strings"

	"github.com/skillfleet/skillfleet/report"
)

// maxChangesListed bounds each list of "what changed" on a page; the rest is counted.
const maxChangesListed = 100

// changesView is a report's "what changed" section.
type changesView struct {
	Previous, PreviousHref, Note string
	Lists                        []changeList
	Flaky                        []flakyRow
	FlakyMore                    int
	Stats                        *report.ChangeStats
}

// changeList is one category of changed cases.
type changeList struct {
	Name, Class string
	Cases       []changedRow
	More        int
}

// changedRow is a changed case, linked to its case when the run has it.
type changedRow struct {
	Skill, Case, Previous, Current, Href string
	Flipped                              []int
}

// flakyRow is a flaky cell.
type flakyRow struct {
	Name, Evidence, Quarantined, Href string
}

// caseLinker finds where a case named as "what changed" names it ("name [agent]") links.
type caseLinker func(skill, name string) string

// caseLinks links the with_skill cases of a run's report to their pages.
func caseLinks(run string, cases []report.Case) caseLinker {
	return linksBy(cases, func(i int) string { return caseHref(run, i, &cases[i]) })
}

// linksBy maps the display names of the with_skill cases to href(i).
func linksBy(cases []report.Case, href func(i int) string) caseLinker {
	m := make(map[string]int, len(cases))
	for i := range cases {
		c := &cases[i]
		if c.Arm != "" && c.Arm != report.ArmWithSkill {
			continue
		}
		display := c.Case
		if c.Agent != "" {
			display += " [" + c.Agent + "]"
		}
		m[c.Skill+"\x00"+display] = i
	}
	return func(skill, display string) string {
		if i, ok := m[skill+"\x00"+display]; ok {
			return href(i)
		}
		return ""
	}
}

// changesOf is the section's view; nil when the report has none.
func changesOf(c *report.Changes, link caseLinker) *changesView {
	if c == nil {
		return nil
	}
	v := &changesView{Note: c.Note, Stats: c.Stats}
	if c.Previous != nil {
		v.Previous, v.PreviousHref = *c.Previous, runHref(*c.Previous)
	}
	for _, l := range []struct {
		name, class string
		cases       []report.ChangedCase
	}{
		{"newly failing", "bad", c.NewlyFailing}, {"fixed", "ok", c.Fixed}, {"still failing", "bad", c.StillFailing},
		{"new", "", c.New}, {"removed", "", c.Removed},
	} {
		if len(l.cases) == 0 {
			continue
		}
		cl := changeList{Name: l.name, Class: l.class, More: max(0, len(l.cases)-maxChangesListed)}
		for _, cc := range l.cases[:min(len(l.cases), maxChangesListed)] {
			row := changedRow{Skill: name(cc.Skill), Case: name(cc.Case), Previous: cc.Previous, Current: cc.Current, Flipped: cc.FlippedEpochs}
			if link != nil {
				row.Href = link(cc.Skill, cc.Case)
			}
			cl.Cases = append(cl.Cases, row)
		}
		v.Lists = append(v.Lists, cl)
	}
	for i, f := range c.Flaky {
		if i == maxChangesListed {
			v.FlakyMore = len(c.Flaky) - i
			break
		}
		label := name(f.Skill) + "/" + name(f.Case)
		var at []string
		if f.Agent != "" {
			at = append(at, name(f.Agent))
		}
		if f.Model != "" {
			at = append(at, name(f.Model))
		}
		if len(at) > 0 {
			label += " [" + strings.Join(at, ", ") + "]"
		}
		row := flakyRow{Name: label, Evidence: oneLine(f.Evidence, 2000), Quarantined: f.Quarantined}
		if link != nil {
			display := f.Case
			if f.Agent != "" {
				display += " [" + f.Agent + "]"
			}
			row.Href = link(f.Skill, display)
		}
		v.Flaky = append(v.Flaky, row)
	}
	return v
}
