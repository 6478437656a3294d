package web

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/report"
)

// caseStatuses are the statuses the cases filter on; "failing" is every status but passed.
var caseStatuses = []string{"failing", report.StatusPassed, report.StatusFailed, report.StatusErrored, report.StatusTimedOut, report.StatusSkipped, report.StatusPending}

// maxReasonRunes bounds a case's reason in a list.
const maxReasonRunes = 300

// runPage is a run: its summary, what changed, and a page of its cases.
type runPage struct {
	runHead
	Summary summaryView
	Changes *changesView
	// CompareHref compares the run's arms, for a run with a baseline.
	CompareHref string
	// Cancel is the cancel form, for an operator on a run still going.
	Cancel *cancelForm
	// ReportHref downloads the run's self-contained HTML report.
	ReportHref string

	Status, Skill, Agent, Arm, Mark string
	Statuses, Skills, Agents, Arms  []string
	Cases                           []caseRow
	Pager                           pager
}

// runHead is what a run's pages say about the run on top.
type runHead struct {
	ID, Href, Suite, SuiteHref, Lane, State, Reason, Baseline string
	Created, Finished                                         time.Time
	Done, Total                                               int32
	// Live: the run is still going.
	Live bool
	// AA: the baseline is a2, the with_skill arm run again (an A/A run, --aa): its arms'
	// comparison is the suite's noise floor.
	AA bool
	// Partial is set on a run its cost cap stopped, Epochs when curtailment or `runs: auto`
	// left epochs unrun; both need the run's report (see noted).
	Partial *partialView
	Epochs  *epochsView
	// suite is the suite's full name, for links (Suite may be clipped), and team its team's.
	suite, team string
}

// cancelForm is a POST form with the session's CSRF token.
type cancelForm struct {
	Action, CSRF string
}

// summaryView is a report's counts and usage.
type summaryView struct {
	Summary     report.Summary
	Baseline    *report.Summary
	BaselineArm string
	// AA: the "baseline" is a2, the with_skill arm run again, not a configuration expected
	// to fail.
	AA    bool
	Usage *report.Usage
}

// caseRow is one case in a list of cases. Index is its place in the run's report.
type caseRow struct {
	Index                                            int
	Skill, SkillHref, Case, Agent, Arm, Status, Href string
	Epochs, PassedEpochs                             int
	// EpochsRun of EpochsPlanned ran: fewer when Curtailed, the verdict being settled
	// without the others. Sequential marks a `runs: auto` case (EpochsPlanned is its
	// max_runs); Undecided one that reached it undecided, Interval its pass rate's.
	EpochsRun, EpochsPlanned int
	Curtailed, Sequential    bool
	Undecided                bool
	Interval                 *[2]float64
	DurationMS               int64
	Flaky                    *report.CaseFlaky
	Quarantined              string
	Reason                   string
}

// caseHref is the page of case i of a run's report. A case whose names are too long to put
// in a link is linked by its index in the report instead (the report's order is its plan's).
func caseHref(run string, i int, c *report.Case) string {
	if len(c.Skill)+len(c.Case)+len(c.Agent) > maxNameBytes {
		return runHref(run) + "/cases?n=" + strconv.Itoa(i)
	}
	v := url.Values{"skill": {c.Skill}, "case": {c.Case}}
	if c.Agent != "" {
		v.Set("agent", c.Agent)
	}
	if c.Arm != "" {
		v.Set("arm", c.Arm)
	}
	return runHref(run) + "/cases?" + v.Encode()
}

// headOf is a run's head from its status.
func headOf(st *pb.RunStatus) runHead {
	spec := st.GetSpec()
	h := runHead{
		ID: st.GetId(), Href: runHref(st.GetId()), Suite: name(spec.GetName()), suite: spec.GetName(), team: spec.GetTeam(), Lane: laneName(spec.GetPriority()),
		State: stateName(st.GetState()), Reason: st.GetReason(), Baseline: spec.GetBaseline(),
		Created: spec.GetCreatedAt().AsTime(), Done: st.GetDoneJobs(), Total: st.GetTotalJobs(), Live: isActive(st.GetState()),
		AA: spec.GetBaseline() == armA2,
	}
	if st.GetFinishedAt() != nil {
		h.Finished = st.GetFinishedAt().AsTime()
	}
	if h.suite != "" {
		h.SuiteHref = "/?" + url.Values{"suite": {h.suite}}.Encode()
	}
	return h
}

// noted is h with what the run's report says of it: the cost cap's banner and the epochs
// that did not run.
func (h runHead) noted(st *pb.RunStatus, rep *report.Report) runHead {
	h.Partial, h.Epochs = partialOf(st, rep), epochsOf(st, rep)
	return h
}

// summaryOf is a report's summary view.
func summaryOf(rep *report.Report) summaryView {
	sv := summaryView{Summary: rep.Summary, Baseline: rep.Baseline, Usage: rep.Usage}
	if rep.Baseline != nil {
		for _, c := range rep.Cases {
			if c.Arm != "" && c.Arm != report.ArmWithSkill {
				sv.BaselineArm, sv.AA = c.Arm, c.Arm == armA2
				break
			}
		}
	}
	return sv
}

// caseFilter is the run page's filter of cases.
type caseFilter struct {
	status, skill, agent, arm, mark string
}

func (f caseFilter) keep(c *report.Case) bool {
	switch {
	case f.status == "failing" && c.Status == report.StatusPassed,
		f.status != "" && f.status != "failing" && c.Status != f.status,
		f.skill != "" && c.Skill != f.skill,
		f.agent != "" && c.Agent != f.agent,
		f.arm == report.ArmWithSkill && c.Arm != "" && c.Arm != report.ArmWithSkill,
		f.arm != "" && f.arm != report.ArmWithSkill && c.Arm != f.arm,
		f.mark == "flaky" && c.Flaky == nil,
		f.mark == "quarantined" && c.Quarantined == "":
		return false
	}
	return true
}

// runAndReport reads a run's status and report, or answers the request with the lookup's
// failure and returns false.
func (s *Server) runAndReport(w http.ResponseWriter, r *http.Request, v *visitor, id string) (*pb.RunStatus, report.Report, bool) {
	st, err := s.src.Status(r.Context(), id)
	if err != nil {
		s.fail(w, r, v, lookupCode(err), err)
		return nil, report.Report{}, false
	}
	rep, err := s.src.Report(r.Context(), id)
	if err != nil {
		s.fail(w, r, v, lookupCode(err), err)
		return nil, report.Report{}, false
	}
	return st, rep, true
}

func (s *Server) runPage(w http.ResponseWriter, r *http.Request, v *visitor) {
	id := r.PathValue("id")
	st, rep, ok := s.runAndReport(w, r, v, id)
	if !ok {
		return
	}
	q := r.URL.Query()
	f := caseFilter{status: q.Get("status"), skill: q.Get("skill"), agent: q.Get("agent"), arm: q.Get("arm"), mark: q.Get("mark")}
	p := runPage{
		runHead: headOf(st).noted(st, &rep), Summary: summaryOf(&rep), Changes: changesOf(rep.Changes, caseLinks(id, rep.Cases)),
		Status: f.status, Skill: f.skill, Agent: f.agent, Arm: f.arm, Mark: f.mark, Statuses: caseStatuses,
	}
	if p.Baseline != "" {
		p.CompareHref = "/compare?" + url.Values{"run": {id}}.Encode()
	}
	p.ReportHref = runHref(id) + "/report.html"
	if p.Live && v.CanCancel() && !s.cfg.ReadOnly {
		p.Cancel = &cancelForm{Action: runHref(id) + "/cancel", CSRF: v.CSRF}
	}
	skills, agents, arms := map[string]bool{}, map[string]bool{}, map[string]bool{}
	var kept []int
	for i := range rep.Cases {
		c := &rep.Cases[i]
		skills[c.Skill], agents[c.Agent], arms[armName(c.Arm)] = true, true, true
		if f.keep(c) {
			kept = append(kept, i)
		}
	}
	p.Skills, p.Agents, p.Arms = options(skills), options(agents), options(arms)
	lo, hi, pg := paginate(len(kept), s.cfg.PageSize, q.Get("page"), runHref(id), q)
	p.Pager = pg
	p.Pager.One, p.Pager.Many = "case", "cases"
	for _, i := range kept[lo:hi] {
		row := rowOf(&rep.Cases[i], i, skillHref(rep.Cases[i].Skill, p.team, p.suite))
		row.Href = caseHref(id, i, &rep.Cases[i])
		p.Cases = append(p.Cases, row)
	}
	s.render(w, r, http.StatusOK, "run", "Run "+id, v, p)
}

// rowOf is the row of case i of a report; skillLink is where its skill links. The caller
// sets where the case links.
func rowOf(c *report.Case, i int, skillLink string) caseRow {
	return caseRow{
		Index: i, Skill: name(c.Skill), SkillHref: skillLink, Case: name(c.Case), Agent: name(c.Agent), Arm: c.Arm, Status: c.Status,
		Epochs: c.Epochs, PassedEpochs: c.PassedEpochs, DurationMS: c.DurationMS,
		EpochsRun: c.EpochsRun, EpochsPlanned: c.EpochsPlanned, Curtailed: c.Curtailed(), Sequential: c.Sequential, Undecided: c.Undecided,
		Interval: c.Interval, Flaky: c.Flaky, Quarantined: c.Quarantined, Reason: oneLine(c.Reason, maxReasonRunes),
	}
}

// armName is a case's arm by name; "" is with_skill.
func armName(a string) string {
	if a == "" {
		return report.ArmWithSkill
	}
	return a
}

// options are a filter's choices, sorted; nil when there are too many to list (or only one,
// which is no choice) — the filter is then a text field.
func options(set map[string]bool) []string {
	if len(set) > maxSelectOptions {
		return nil
	}
	var out []string
	for k := range set {
		if k != "" {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// oneLine is s on one line, clipped to n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

func (s *Server) cancel(w http.ResponseWriter, r *http.Request, v *visitor) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if s.cfg.ReadOnly {
		s.fail(w, r, v, http.StatusForbidden, errors.New("this viewer only reads: it cancels nothing"))
		return
	}
	if !v.CanCancel() {
		s.audit(v.Principal, "cancel", "run/"+r.PathValue("id"), "denied", "role "+v.Role.String())
		s.fail(w, r, v, http.StatusForbidden, errors.New("a viewer's token cannot cancel runs: log in with a member's token"))
		return
	}
	if err := checkPost(r, v); err != nil {
		s.fail(w, r, v, http.StatusForbidden, err)
		return
	}
	id := r.PathValue("id")
	if _, err := s.src.Cancel(r.Context(), id); err != nil {
		s.fail(w, r, v, lookupCode(err), err)
		return
	}
	http.Redirect(w, r, runHref(id), http.StatusSeeOther)
}
