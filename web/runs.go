package web

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/skillfleet/skillfleet/internal/tenant"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// maxSelectOptions is how many values a filter offers as a list; past it the filter is a text
// field (a fleet of 10,000 skills would make a list nobody can use, and a heavy page).
const maxSelectOptions = 200

// runStates are the states the runs list filters on.
var runStates = []string{"pending", "running", "completed", "cancelled", "deadline_exceeded", "failed"}

// runsPage is the runs list.
type runsPage struct {
	Suite, Lane, State string
	// Suites are the suite names to pick from; nil when there are too many (a text field).
	Suites []string
	States []string
	Runs   []runRow
	Pager  pager
	// Live: a listed run is still going.
	Live bool
}

// runRow is one run in the list.
type runRow struct {
	ID, Href, Suite, SuiteHref, Lane, State, Baseline string
	Created                                           time.Time
	Done, Total                                       int32
	// Case counts; Errored includes the timed-out cases.
	Passed, Failed, Errored, Skipped int32
	// Partial: the run's cost cap stopped it, so its counts are not the whole suite's.
	Partial bool
}

// pager is one page of a list: which, how many, and the links to the pages around it.
type pager struct {
	Page, Pages, From, To, Total int
	Prev, Next                   string
	// One and Many name the items: "case", "cases".
	One, Many string
}

// paginate returns the bounds of page (1-based, clamped) of n items, size a page, and links
// built from q with its "page" set.
func paginate(n, size int, page string, base string, q url.Values) (lo, hi int, p pager) {
	p.Total = n
	p.Pages = max(1, (n+size-1)/size)
	p.Page, _ = strconv.Atoi(page)
	p.Page = min(max(p.Page, 1), p.Pages)
	lo, hi = (p.Page-1)*size, min(p.Page*size, n)
	p.From, p.To = lo+1, hi
	if n == 0 {
		p.From = 0
	}
	link := func(k int) string {
		v := url.Values{}
		for key, vals := range q {
			if key != "page" {
				v[key] = vals
			}
		}
		if k > 1 {
			v.Set("page", strconv.Itoa(k))
		}
		if len(v) == 0 {
			return base
		}
		return base + "?" + v.Encode()
	}
	if p.Page > 1 {
		p.Prev = link(p.Page - 1)
	}
	if p.Page < p.Pages {
		p.Next = link(p.Page + 1)
	}
	return lo, hi, p
}

// laneName is a run's lane as the viewer filters on it.
func laneName(p pb.Priority) string {
	if p == pb.Priority_PRIORITY_SCHEDULED {
		return "scheduled"
	}
	return "ondemand"
}

// isActive reports whether a run is still going.
func isActive(s pb.RunState) bool {
	return s == pb.RunState_RUN_STATE_PENDING || s == pb.RunState_RUN_STATE_RUNNING
}

// runHref is a run's page.
func runHref(id string) string { return "/runs/" + url.PathEscape(id) }

// skillHref is a skill's page in a team's suite.
func skillHref(skill, team, suite string) string {
	v := url.Values{}
	if suite != "" {
		v.Set("suite", suite)
	}
	if team != "" && team != tenant.DefaultTeam {
		v.Set("team", team)
	}
	h := "/skills/" + url.PathEscape(skill)
	if len(v) > 0 {
		h += "?" + v.Encode()
	}
	return h
}

func (s *Server) runsPage(w http.ResponseWriter, r *http.Request, v *visitor) {
	q := r.URL.Query()
	all, err := s.src.List(r.Context())
	if err != nil {
		s.fail(w, r, v, http.StatusInternalServerError, err)
		return
	}
	p := runsPage{Suite: q.Get("suite"), Lane: q.Get("lane"), State: q.Get("state"), States: runStates}
	if p.Lane == "on-demand" {
		p.Lane = "ondemand"
	}
	suites := map[string]bool{}
	var kept []*pb.RunStatus
	for _, st := range all {
		spec := st.GetSpec()
		suites[spec.GetName()] = true
		if (p.Suite != "" && spec.GetName() != p.Suite) || (p.Lane != "" && laneName(spec.GetPriority()) != p.Lane) ||
			(p.State != "" && stateName(st.GetState()) != p.State) {
			continue
		}
		kept = append(kept, st)
	}
	if len(suites) <= maxSelectOptions {
		for name := range suites {
			if name != "" {
				p.Suites = append(p.Suites, name)
			}
		}
		slices.Sort(p.Suites)
	}
	lo, hi, pg := paginate(len(kept), s.cfg.RunsPageSize, q.Get("page"), "/", q)
	p.Pager = pg
	p.Pager.One, p.Pager.Many = "run", "runs"
	for _, st := range kept[lo:hi] {
		spec := st.GetSpec()
		row := runRow{
			ID: st.GetId(), Href: runHref(st.GetId()), Suite: name(spec.GetName()), Lane: laneName(spec.GetPriority()),
			State: stateName(st.GetState()), Baseline: spec.GetBaseline(), Created: spec.GetCreatedAt().AsTime(),
			Done: st.GetDoneJobs(), Total: st.GetTotalJobs(), Partial: st.GetCostCapped(),
		}
		c := st.GetCases()
		row.Passed, row.Failed, row.Errored, row.Skipped = c.GetPassed(), c.GetFailed(), c.GetErrored()+c.GetTimedOut(), c.GetSkipped()
		if spec.GetName() != "" {
			v := url.Values{"suite": {spec.GetName()}}
			row.SuiteHref = "/?" + v.Encode()
		}
		if isActive(st.GetState()) {
			p.Live = true
		}
		p.Runs = append(p.Runs, row)
	}
	s.render(w, r, http.StatusOK, "runs", "Runs", v, p)
}
