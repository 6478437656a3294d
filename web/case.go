package web

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/report"
)

// A case's page shows at most casePageBytes of untrusted text (escaped), and casePieceBytes of
// any one output, message or file: a case whose agent wrote 64 MiB still renders quickly. The
// full trajectory downloads apart.
const (
	casePageBytes  = 8 << 20
	casePieceBytes = 256 << 10
)

// casePage is one case of a run: its verdict over the epochs and every epoch's evidence.
type casePage struct {
	Run    runHead
	Detail caseDetail
	// Siblings are the same case against the run's other agents and arms.
	Siblings []sibling
}

// caseDetail is what the case page and the HTML report show of a case.
type caseDetail struct {
	Anchor                                      string
	Skill, SkillHref, Case, Agent, Arm          string
	Kind, Status                                string
	Epochs, PassedEpochs, RequiredPasses        int
	FailedEpochs, ErroredEpochs, TimedOutEpochs int
	SkippedEpochs                               int
	// EpochsRun of EpochsPlanned ran; Curtailed says the others were not needed: the
	// verdict was settled without them.
	EpochsRun, EpochsPlanned int
	Curtailed                bool
	// Sequential: a `runs: auto` case, its epochs run until the sequential test decided,
	// EpochsPlanned (its max_runs) at most. Undecided: one whose test reached max_runs
	// without deciding; its verdict is the fixed rule's.
	Sequential  bool
	Undecided   bool
	Confidence  float64
	Interval    *[2]float64
	File        string
	Line        int
	Reason      Clip
	DurationMS  int64
	Attempts    int
	Usage       *report.Usage
	Flaky       *report.CaseFlaky
	Quarantined string
	// Evidence is the report's evidence epoch (assertions, output excerpts), shown when the
	// results themselves are not at hand.
	Evidence []assertionView
	Results  []epochView
	// NoResults says why there are no epochs to show.
	NoResults string
	// Clipped: the budget cut something on this case; ClipNote says how it bounds it.
	Clipped  bool
	ClipNote string
}

// sibling links the same case in another agent or arm.
type sibling struct {
	Label, Href, Status string
}

// detailOf is a report case's detail, before its results are added.
func detailOf(c *report.Case, b *budget) caseDetail {
	d := caseDetail{
		Skill: name(c.Skill), Case: name(c.Case), Agent: name(c.Agent), Arm: c.Arm, Kind: c.Kind, Status: c.Status,
		Epochs: c.Epochs, PassedEpochs: c.PassedEpochs, RequiredPasses: c.RequiredPasses, FailedEpochs: c.FailedEpochs,
		ErroredEpochs: c.ErroredEpochs, TimedOutEpochs: c.TimedOutEpochs, SkippedEpochs: c.SkippedEpochs,
		EpochsRun: c.EpochsRun, EpochsPlanned: c.EpochsPlanned, Curtailed: c.Curtailed(), Sequential: c.Sequential, Undecided: c.Undecided,
		Confidence: c.Confidence, Interval: c.Interval, File: name(c.File), Line: c.Line, Reason: b.take(c.Reason),
		DurationMS: c.DurationMS, Attempts: c.Attempts, Usage: c.Usage, Flaky: c.Flaky, Quarantined: c.Quarantined,
	}
	for _, a := range c.Assertions {
		if !b.charge(costAssertion) {
			break
		}
		d.Evidence = append(d.Evidence, assertionView{Type: a.Type, Passed: a.Passed, Errored: a.Errored, Path: a.Path,
			Expected: b.take(a.Expected), Actual: b.take(a.Actual), Message: b.take(a.Message), Judge: a.Type == "semantic_match"})
	}
	return d
}

// sameCase reports whether a result is one of the case's jobs.
func sameCase(res *pb.Result, skill, name, agent, arm string) bool {
	return res.GetSkill() == skill && res.GetCaseName() == name && res.GetAgent() == agent && armName(res.GetArm()) == armName(arm)
}

// findCase returns the report's case, or nil.
func findCase(rep *report.Report, skill, name, agent, arm string) *report.Case {
	for i := range rep.Cases {
		c := &rep.Cases[i]
		if c.Skill == skill && c.Case == name && c.Agent == agent && armName(c.Arm) == armName(arm) {
			return c
		}
	}
	return nil
}

// trajectoryHref is where one epoch's full trajectory downloads.
func trajectoryHref(run string, res *pb.Result) string {
	v := url.Values{"skill": {res.GetSkill()}, "case": {res.GetCaseName()}, "epoch": {strconv.Itoa(int(res.GetEpoch()))}}
	if res.GetAgent() != "" {
		v.Set("agent", res.GetAgent())
	}
	if res.GetArm() != "" {
		v.Set("arm", res.GetArm())
	}
	return runHref(run) + "/trajectory?" + v.Encode()
}

func (s *Server) casePage(w http.ResponseWriter, r *http.Request, v *visitor) {
	ctx, id, q := r.Context(), r.PathValue("id"), r.URL.Query()
	skill, caseName, agent, arm := q.Get("skill"), q.Get("case"), q.Get("agent"), q.Get("arm")
	n, byIndex := -1, q.Has("n")
	if byIndex {
		var err error
		if n, err = strconv.Atoi(q.Get("n")); err != nil || n < 0 {
			s.fail(w, r, v, http.StatusBadRequest, errors.New("n must be a case's index in the run"))
			return
		}
	} else if skill == "" || caseName == "" {
		http.Redirect(w, r, runHref(id), http.StatusSeeOther)
		return
	}
	st, rep, ok := s.runAndReport(w, r, v, id)
	if !ok {
		return
	}
	var c *report.Case
	switch {
	case byIndex && n < len(rep.Cases):
		c = &rep.Cases[n]
	case !byIndex:
		c = findCase(&rep, skill, caseName, agent, arm)
	}
	if c == nil {
		s.fail(w, r, v, http.StatusNotFound, fmt.Errorf("run %s has no such case: %s/%s (agent %q, arm %q)", id, name(skill), name(caseName), name(agent), armName(arm)))
		return
	}
	b := newBudget(casePageBytes, casePieceBytes)
	p := casePage{Run: headOf(st), Detail: detailOf(c, b)}
	p.Detail.SkillHref = skillHref(c.Skill, p.Run.team, p.Run.suite)
	for i := range rep.Cases {
		o := &rep.Cases[i]
		if o != c && o.Skill == c.Skill && o.Case == c.Case {
			label := "agent " + name(o.Agent)
			if o.Agent == "" {
				label = "no agent"
			}
			p.Siblings = append(p.Siblings, sibling{Label: label + ", arm " + armName(o.Arm), Href: caseHref(id, i, o), Status: o.Status})
		}
	}
	err := s.src.CaseResults(ctx, id, c.Skill, c.Case, func(res *pb.Result) error {
		if !sameCase(res, c.Skill, c.Case, c.Agent, c.Arm) {
			return nil
		}
		s.src.ResolveDocuments(ctx, res)
		p.Detail.Results = append(p.Detail.Results, epochOf(res, b, trajectoryHref(id, res)))
		return nil
	})
	if err != nil {
		s.fail(w, r, v, lookupCode(err), err)
		return
	}
	d := &p.Detail
	sortEpochs(d.Results)
	if len(d.Results) == 0 {
		d.NoResults = "No result of this case has been accepted yet."
		if !p.Run.Live {
			d.NoResults = "No result of this case was accepted: its epochs never ran (the run ended first) or their results have expired."
		}
	}
	if b.spent {
		d.Clipped = true
		d.ClipNote = fmt.Sprintf("This page shows at most %s of any one output, message or file, and %s in all; clipped pieces are marked. Each epoch's full trajectory downloads as ATIF JSON.", byteSize(casePieceBytes), byteSize(casePageBytes))
	}
	s.render(w, r, http.StatusOK, "case", name(c.Skill)+"/"+name(c.Case), v, p)
}

// trajectoryFile serves one epoch's full trajectory, as the ATIF JSON document it is, for
// download: never rendered, so it is sent as an attachment.
func (s *Server) trajectoryFile(w http.ResponseWriter, r *http.Request, v *visitor) {
	ctx, id, q := r.Context(), r.PathValue("id"), r.URL.Query()
	skill, caseName, agent, arm := q.Get("skill"), q.Get("case"), q.Get("agent"), q.Get("arm")
	epoch, err := strconv.Atoi(q.Get("epoch"))
	if err != nil || skill == "" || caseName == "" {
		s.fail(w, r, v, http.StatusBadRequest, errors.New("skill, case and epoch are required"))
		return
	}
	var found *pb.Result
	err = s.src.CaseResults(ctx, id, skill, caseName, func(res *pb.Result) error {
		if found == nil && sameCase(res, skill, caseName, agent, arm) && int(res.GetEpoch()) == epoch {
			found = res
		}
		return nil
	})
	if err != nil {
		s.fail(w, r, v, lookupCode(err), err)
		return
	}
	if found == nil {
		s.fail(w, r, v, http.StatusNotFound, fmt.Errorf("run %s has no result for %s/%s epoch %d", id, name(skill), name(caseName), epoch))
		return
	}
	s.src.ResolveDocuments(ctx, found)
	d := found.GetTrajectory()
	if len(d.GetData()) == 0 || d.GetEncoding() != "json" {
		why := d.GetNote()
		if why == "" {
			why = "a command case, or a worker older than trajectories"
		}
		s.fail(w, r, v, http.StatusNotFound, fmt.Errorf("no trajectory for %s/%s epoch %d: %s", name(skill), name(caseName), epoch, why))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Disposition", `attachment; filename="trajectory.json"`)
	_, _ = w.Write(d.GetData())
}
