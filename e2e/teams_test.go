package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/internal/testutil"
)

// The holders of the team fleet's tokens: a member of each team, a viewer of teamA on the API
// (role=viewer in --token-file), a viewer of teamA on the web viewer only (--viewer-token-file),
// and an admin of a third team.
const (
	tokAlice = "teams-e2e-alice-member-teamA-0001"
	tokBob   = "teams-e2e-bob-member-teamB-000002"
	tokVera  = "teams-e2e-vera-viewer-teamA-00003"
	tokWendy = "teams-e2e-wendy-webview-teamA-004"
	tokRoot  = "teams-e2e-root-admin-ops-00000005"
)

// The authenticating proxy's headers the team fleet's coordinator believes from 127.0.0.1.
const (
	proxyUser = "X-Webauth-User"
	proxyTeam = "X-Webauth-Team"
	proxyRole = "X-Webauth-Role"
)

// commandCases is how many command cases the example suite has: what `kind=command` runs.
const commandCases = 11

// teamFleet is a coordinator with the tokens above (and a proxy it trusts on 127.0.0.1) and a
// worker, as their own processes.
type teamFleet struct {
	*fleet
	client *http.Client
}

// startTeamFleet starts the fleet of TestTeamsShareOneFleet.
func startTeamFleet(t *testing.T) *teamFleet {
	t.Helper()
	viewers := writeFile(t, t.TempDir(), "viewer-tokens", "wendy "+tokWendy+" team=teamA\n")
	f := startFleetWith(t, fleetOptions{
		tokens: "# two teams, a viewer of the first, an admin\n" +
			"alice " + tokAlice + " team=teamA\n" +
			"bob " + tokBob + " team=teamB role=member\n" +
			"vera " + tokVera + " team=teamA role=viewer\n" +
			"root " + tokRoot + " team=ops role=admin\n",
		coordinatorArgs: []string{"--viewer-token-file", viewers,
			"--trusted-proxy", "127.0.0.1/32", "--proxy-user-header", proxyUser,
			"--proxy-team-header", proxyTeam, "--proxy-role-header", proxyRole},
	})
	return &teamFleet{fleet: f, client: &http.Client{Timeout: time.Minute}}
}

// call is one API request: a method, a path (with its query) and, for an upload, a body.
type call struct {
	method, path string
	body         []byte
}

// do sends c with the bearer token tok ("" none) and the headers hdr, and returns the status
// and the body.
func (f *teamFleet) do(t *testing.T, c call, tok string, hdr map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(c.method, f.api+c.path, bytes.NewReader(c.body))
	if err != nil {
		t.Fatal(err)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	switch {
	case c.body == nil:
	case strings.HasPrefix(c.path, "/v1/schedules/"):
		req.Header.Set("Content-Type", "application/json")
	default:
		req.Header.Set("Content-Type", "application/x-tar")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := f.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", c.method, c.path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the answer: %v", c.method, c.path, err)
	}
	return resp.StatusCode, string(b)
}

// runInfo is the part of a run's status (and of each run of GET /v1/runs) these tests read.
type runInfo struct {
	ID    string `json:"id"`
	State string `json:"state"`
	Spec  struct {
		Name string `json:"name"`
		Team string `json:"team"`
	} `json:"spec"`
	SubmittedBy string `json:"submitted_by"`
}

// submit posts bundle as the holder of tok with query and returns the admitted run.
func (f *teamFleet) submit(t *testing.T, tok, query string, bundle []byte) runInfo {
	t.Helper()
	code, body := f.do(t, call{http.MethodPost, "/v1/runs?" + query, bundle}, tok, nil)
	if code != http.StatusCreated {
		t.Fatalf("POST /v1/runs?%s: %d %s, want 201", query, code, body)
	}
	var st runInfo
	if err := json.Unmarshal([]byte(body), &st); err != nil || st.ID == "" {
		t.Fatalf("POST /v1/runs?%s: %v\n%s", query, err, body)
	}
	return st
}

// wait waits, within a bound, until run id has finished, and returns its report: the final
// one, with the "what changed" section the history adds, as soon as the status says the run
// finished (the coordinator keeps the final report before it says so).
func (f *teamFleet) wait(t *testing.T, id string) teamReport {
	t.Helper()
	f.waitState(t, id)
	rep := f.report(t, id)
	if rep.Changes == nil {
		t.Fatalf("run %s finished, but its report has no \"what changed\" section: the live report was served", id)
	}
	return rep
}

// waitState waits, within a bound, until run id has finished, and returns its state.
func (f *teamFleet) waitState(t *testing.T, id string) string {
	t.Helper()
	var st runInfo
	testutil.Eventually(t, 3*time.Minute, 100*time.Millisecond, func() bool {
		code, body := f.do(t, call{http.MethodGet, "/v1/runs/" + id, nil}, tokRoot, nil)
		if code != http.StatusOK || json.Unmarshal([]byte(body), &st) != nil {
			t.Fatalf("GET /v1/runs/%s: %d %s", id, code, body)
		}
		return st.State != "RUN_STATE_RUNNING" && st.State != "RUN_STATE_PENDING"
	}, "run %s to finish", id)
	return st.State
}

// teamReport is the part of a JSON report these tests read.
type teamReport struct {
	Run     string `json:"run"`
	Summary struct {
		Total, Passed, Failed, Errored, Skipped, Reused int
	} `json:"summary"`
	Cases []struct {
		Skill, Case, Status string
		Flaky               json.RawMessage `json:"flaky"`
	} `json:"cases"`
	Changes *struct {
		Previous     *string           `json:"previous"`
		NewlyFailing []json.RawMessage `json:"newly_failing"`
		Fixed        []json.RawMessage `json:"fixed"`
		StillFailing []json.RawMessage `json:"still_failing"`
		New          []json.RawMessage `json:"new"`
		Removed      []json.RawMessage `json:"removed"`
		Flaky        []json.RawMessage `json:"flaky"`
	} `json:"changes"`
}

// status is the status of case skill/name in rep ("" when absent).
func (rep teamReport) status(skill, name string) string {
	for _, c := range rep.Cases {
		if c.Skill == skill && c.Case == name {
			return c.Status
		}
	}
	return ""
}

// report is run id's JSON report as the admin reads it.
func (f *teamFleet) report(t *testing.T, id string) teamReport {
	t.Helper()
	code, body := f.do(t, call{http.MethodGet, "/v1/runs/" + id + "/report", nil}, tokRoot, nil)
	var rep teamReport
	if code != http.StatusOK || json.Unmarshal([]byte(body), &rep) != nil {
		t.Fatalf("GET /v1/runs/%s/report: %d %s", id, code, body)
	}
	return rep
}

// absentID is a run id shaped like id that names no run.
func absentID(id string) string {
	last := id[len(id)-1]
	swap := byte('0')
	switch {
	case last == '0':
		swap = '1'
	case last >= 'a' && last <= 'z':
		swap = 'a' + (last-'a'+1)%26
	case last >= 'A' && last <= 'Z':
		swap = 'A' + (last-'A'+1)%26
	}
	return id[:len(id)-1] + string(swap)
}

// hidden reports whether an answer about run id reads exactly as the answer about absent, a run
// that does not exist, once each names its own id: the run's existence is not disclosed.
func hidden(answer, id, absentAnswer, absent string) bool {
	return strings.ReplaceAll(answer, id, "RUN") == strings.ReplaceAll(absentAnswer, absent, "RUN")
}

// brokenExamples is a copy of the example suite in which env-selector/selects-dev fails (it
// expects UAT where the script says DEV).
func brokenExamples(t *testing.T) string {
	t.Helper()
	root := copyExamples(t)
	p := filepath.Join(root, "env-selector", "tests", "cases", "01-dev.yaml")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(string(b), "env: DEV", "env: UAT", 1)
	if broken == string(b) {
		t.Fatalf("%s no longer expects env: DEV; the test must break it another way", p)
	}
	if err := os.WriteFile(p, []byte(broken), 0o600); err != nil {
		t.Fatal(err)
	}
	return root
}

// slowSuite is one skill whose one command case sleeps long enough to be cancelled while it
// runs.
func slowSuite(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	d := filepath.Join(root, "slow")
	if err := os.MkdirAll(filepath.Join(d, "tests", "cases"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, d, "SKILL.md", "---\nname: slow\ndescription: Takes its time. Use when testing cancellation.\n---\n\n# Slow\n")
	writeFile(t, filepath.Join(d, "tests", "cases"), "sleeps.yaml", "name: sleeps\ninput:\n  command: \"sleep 25\"\nexpected:\n  exit-code: 0\n")
	return root
}

// TestTeamsShareOneFleet is issue 25's check against the built coordinator and a worker: two
// teams (a member each), an admin of a third team and viewers of teamA share one fleet. Each
// team runs the example suite's command cases under the same suite name; then every API route
// and every viewer page is tried as the other team (404, answered as for a run that does not
// exist), as a viewer (reads, 403 on changes) and as the admin (allowed); one team's pushed
// suite survives the other's push under its name; one team's history, flaky labels, "what
// changed" and changed-only reuse ignore the other's runs; the audit log keeps each team's
// records apart; and an authenticating proxy's headers name the caller on the API and the
// viewer.
func TestTeamsShareOneFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a coordinator and a worker")
	}
	f := startTeamFleet(t)
	examplesBundle := bundleOf(t, examples)
	brokenBundle := bundleOf(t, brokenExamples(t))
	const onlyDev = "name=nightly&kind=command&skill=env-selector&case=selects-dev"

	// Both teams run the command cases under the one name nightly.
	a1 := f.submit(t, tokAlice, "name=nightly&kind=command", examplesBundle)
	b1 := f.submit(t, tokBob, "name=nightly&kind=command", examplesBundle)
	if a1.Spec.Team != "teamA" || a1.SubmittedBy != "alice" || b1.Spec.Team != "teamB" || b1.SubmittedBy != "bob" {
		t.Fatalf("runs %+v and %+v: want teamA's by alice and teamB's by bob", a1, b1)
	}
	for _, r := range []runInfo{a1, b1} {
		if rep := f.wait(t, r.ID); rep.Summary.Total != commandCases || rep.Summary.Passed != commandCases {
			t.Fatalf("run %s of team %s: %+v, want %d command cases passed", r.ID, r.Spec.Team, rep.Summary, commandCases)
		}
	}
	// teamB then alternates a failing and a passing selects-dev under the same name, ending on
	// a failure: after its first run that is six decided runs, five flips, a flaky cell.
	var bRuns []runInfo
	for i := range 5 {
		bundle := brokenBundle
		if i%2 == 1 {
			bundle = examplesBundle
		}
		bRuns = append(bRuns, f.submit(t, tokBob, onlyDev, bundle))
	}

	t.Run("suites", func(t *testing.T) { checkTeamSuites(t, f, examplesBundle, brokenBundle) })
	t.Run("schedules", func(t *testing.T) { checkTeamSchedules(t, f) })
	t.Run("run routes", func(t *testing.T) { checkRunRoutes(t, f, a1, b1) })
	t.Run("submissions", func(t *testing.T) { checkTeamSubmissions(t, f, examplesBundle) })

	// teamA's history, flaky labels, "what changed" and reuse are its own.
	for i, r := range bRuns {
		want := "failed"
		if i%2 == 1 {
			want = "passed"
		}
		if got := f.wait(t, r.ID).status("env-selector", "selects-dev"); got != want {
			t.Fatalf("teamB's run %d (%s): selects-dev %q, want %q", i+1, r.ID, got, want)
		}
	}
	a2 := f.submit(t, tokAlice, "name=nightly&kind=command&changed_only=true", examplesBundle)
	rep2 := f.wait(t, a2.ID)
	t.Run("history", func(t *testing.T) { checkTeamHistory(t, f, a1, a2, bRuns, rep2) })

	t.Run("viewer pages", func(t *testing.T) { checkViewerPages(t, f, a1, a2, b1) })
	t.Run("viewer cancel", func(t *testing.T) { checkViewerCancel(t, f) })
	t.Run("proxy", func(t *testing.T) { checkProxy(t, f, a1, b1) })
	t.Run("audit", func(t *testing.T) { checkTeamAudit(t, f, a1, b1) })
}

// pushedSuite is one suite of GET /v1/suites and the answer of a push.
type pushedSuite struct {
	Name         string `json:"name"`
	Team         string `json:"team"`
	BundleDigest string `json:"bundle_digest"`
}

// checkTeamSuites: teamA's pushed suite nightly survives teamB's push of another bundle
// under the same name, in teamB's own namespace; teamB cannot name teamA's, a viewer pushes
// nothing, the admin pushes into the team it names.
func checkTeamSuites(t *testing.T, f *teamFleet, examplesBundle, brokenBundle []byte) {
	push := func(tok, query string, bundle []byte) (int, pushedSuite, string) {
		t.Helper()
		code, body := f.do(t, call{http.MethodPut, "/v1/suites/nightly" + query, bundle}, tok, nil)
		var ps pushedSuite
		if code == http.StatusOK {
			if err := json.Unmarshal([]byte(body), &ps); err != nil {
				t.Fatalf("push: %v %s", err, body)
			}
		}
		return code, ps, body
	}
	list := func(tok string) []pushedSuite {
		t.Helper()
		code, body := f.do(t, call{http.MethodGet, "/v1/suites", nil}, tok, nil)
		var l struct{ Suites []pushedSuite }
		if code != http.StatusOK || json.Unmarshal([]byte(body), &l) != nil {
			t.Fatalf("GET /v1/suites: %d %s", code, body)
		}
		return l.Suites
	}
	code, psA, body := push(tokAlice, "", examplesBundle)
	if code != http.StatusOK || psA.Team != "teamA" || psA.BundleDigest == "" {
		t.Fatalf("teamA's push: %d %s", code, body)
	}
	code, psB, body := push(tokBob, "", brokenBundle)
	if code != http.StatusOK || psB.Team != "teamB" || psB.BundleDigest == psA.BundleDigest {
		t.Fatalf("teamB's push of another bundle under the same name: %d %s, want 200 in team teamB", code, body)
	}
	for _, c := range []struct {
		who, tok, query string
		bundle          []byte
		want            int
	}{
		{"teamB naming teamA", tokBob, "?team=teamA", brokenBundle, http.StatusNotFound},
		{"teamA's viewer", tokVera, "", brokenBundle, http.StatusForbidden},
		{"the admin naming teamA", tokRoot, "?team=teamA", examplesBundle, http.StatusOK},
	} {
		code, ps, body := push(c.tok, c.query, c.bundle)
		if code != c.want || (c.want == http.StatusOK && ps.Team != "teamA") {
			t.Errorf("%s pushes nightly: %d %s, want %d", c.who, code, body, c.want)
		}
	}
	for _, c := range []struct {
		who, tok string
		want     []pushedSuite
	}{
		{"teamA", tokAlice, []pushedSuite{{"nightly", "teamA", psA.BundleDigest}}},
		{"teamA's viewer", tokVera, []pushedSuite{{"nightly", "teamA", psA.BundleDigest}}},
		{"teamB", tokBob, []pushedSuite{{"nightly", "teamB", psB.BundleDigest}}},
		{"the admin", tokRoot, []pushedSuite{{"nightly", "teamA", psA.BundleDigest}, {"nightly", "teamB", psB.BundleDigest}}},
	} {
		got := list(c.tok)
		slices.SortFunc(got, func(a, b pushedSuite) int { return strings.Compare(a.Team, b.Team) })
		if !slices.Equal(got, c.want) {
			t.Errorf("GET /v1/suites as %s: %+v, want %+v", c.who, got, c.want)
		}
	}
}

// checkTeamSchedules: a schedule is its team's: teamB neither sees, adds to nor removes
// teamA's; teamA's viewer sees it but changes nothing; the admin removes it.
func checkTeamSchedules(t *testing.T, f *teamFleet) {
	sched := []byte(`{"suite":"nightly","cron":"@daily"}`)
	names := func(tok string) []string {
		t.Helper()
		code, body := f.do(t, call{http.MethodGet, "/v1/schedules", nil}, tok, nil)
		var l struct {
			Schedules []struct{ Name, Team string }
		}
		if code != http.StatusOK || json.Unmarshal([]byte(body), &l) != nil {
			t.Fatalf("GET /v1/schedules: %d %s", code, body)
		}
		out := []string{}
		for _, s := range l.Schedules {
			out = append(out, s.Team+"/"+s.Name)
		}
		return out
	}
	type step struct {
		who, tok string
		c        call
		want     int
	}
	do := func(steps []step) {
		t.Helper()
		for _, s := range steps {
			if code, body := f.do(t, s.c, s.tok, nil); code != s.want {
				t.Errorf("%s %s as %s: %d %s, want %d", s.c.method, s.c.path, s.who, code, body, s.want)
			}
		}
	}
	do([]step{
		{"teamA", tokAlice, call{http.MethodPut, "/v1/schedules/nightly", sched}, http.StatusCreated},
		{"teamB naming teamA", tokBob, call{http.MethodPut, "/v1/schedules/nightly?team=teamA", sched}, http.StatusNotFound},
		{"teamB naming teamA", tokBob, call{http.MethodDelete, "/v1/schedules/nightly?team=teamA", nil}, http.StatusNotFound},
		{"teamB", tokBob, call{http.MethodDelete, "/v1/schedules/nightly", nil}, http.StatusNotFound},
		{"teamA's viewer", tokVera, call{http.MethodPut, "/v1/schedules/other", sched}, http.StatusForbidden},
		{"teamA's viewer", tokVera, call{http.MethodDelete, "/v1/schedules/nightly", nil}, http.StatusForbidden},
	})
	for _, c := range []struct {
		who, tok string
		want     []string
	}{
		{"teamA", tokAlice, []string{"teamA/nightly"}},
		{"teamA's viewer", tokVera, []string{"teamA/nightly"}},
		{"teamB", tokBob, []string{}},
		{"the admin", tokRoot, []string{"teamA/nightly"}},
	} {
		if got := names(c.tok); !slices.Equal(got, c.want) {
			t.Errorf("GET /v1/schedules as %s: %v, want %v", c.who, got, c.want)
		}
	}
	do([]step{
		{"the admin naming teamA", tokRoot, call{http.MethodDelete, "/v1/schedules/nightly?team=teamA", nil}, http.StatusNoContent},
		{"teamA", tokAlice, call{http.MethodPut, "/v1/schedules/nightly", sched}, http.StatusCreated},
		{"teamA", tokAlice, call{http.MethodDelete, "/v1/schedules/nightly", nil}, http.StatusNoContent},
	})
	if got := names(tokRoot); len(got) != 0 {
		t.Errorf("schedules left after their removal: %v", got)
	}
}

// checkRunRoutes: every route about teamA's run a1, as teamA (allowed), teamB (404, read
// exactly as for a run that does not exist), teamA's viewer (reads; 403 on cancel) and the
// admin (allowed); the runs list and the team-scoped reads hold only the caller's team's.
func checkRunRoutes(t *testing.T, f *teamFleet, a1, b1 runInfo) {
	id, absent := a1.ID, absentID(a1.ID)
	const (
		owner  = "teamA"
		other  = "teamB"
		viewer = "teamA's viewer"
		admin  = "the admin"
	)
	callers := []struct{ who, tok string }{{owner, tokAlice}, {other, tokBob}, {viewer, tokVera}, {admin, tokRoot}}
	routes := []struct {
		method, path string // {id} is the run's id
		// ok is what a caller allowed gets; a caller refused gets 404, or 403 in forbidden.
		ok        int
		forbidden []string
	}{
		{http.MethodGet, "/v1/runs/{id}", http.StatusOK, nil},
		{http.MethodGet, "/v1/runs/{id}/events", http.StatusOK, nil},
		{http.MethodGet, "/v1/runs/{id}/report", http.StatusOK, nil},
		{http.MethodGet, "/v1/runs/{id}/report?format=json", http.StatusOK, nil},
		{http.MethodGet, "/v1/runs/{id}/report?format=junit", http.StatusOK, nil},
		{http.MethodGet, "/v1/runs/{id}/report?format=text", http.StatusOK, nil},
		{http.MethodGet, "/v1/runs/{id}/results", http.StatusOK, nil},
		// A command case has no trajectory: the run is found, its trajectory not.
		{http.MethodGet, "/v1/runs/{id}/trajectory?skill=env-selector&case=selects-dev", http.StatusNotFound, nil},
		// Cancelling a finished run changes nothing, and answers its status.
		{http.MethodDelete, "/v1/runs/{id}", http.StatusOK, []string{viewer}},
	}
	for _, r := range routes {
		for _, c := range callers {
			want := r.ok
			switch {
			case c.who == other:
				want = http.StatusNotFound
			case slices.Contains(r.forbidden, c.who):
				want = http.StatusForbidden
			}
			code, body := f.do(t, call{r.method, strings.ReplaceAll(r.path, "{id}", id), nil}, c.tok, nil)
			absentCode, absentBody := f.do(t, call{r.method, strings.ReplaceAll(r.path, "{id}", absent), nil}, c.tok, nil)
			if absentCode != http.StatusNotFound {
				t.Fatalf("%s %s of a run that does not exist, as %s: %d %s", r.method, r.path, c.who, absentCode, absentBody)
			}
			switch isHidden := hidden(body, id, absentBody, absent); {
			case code != want:
				t.Errorf("%s %s as %s: %d %s, want %d", r.method, r.path, c.who, code, firstLine(body), want)
			case c.who == other && !isHidden:
				t.Errorf("%s %s as %s: %s; a run that does not exist: %s; want the same answer", r.method, r.path, c.who, firstLine(body), firstLine(absentBody))
			case c.who != other && isHidden:
				t.Errorf("%s %s as %s: the run was not found: %s", r.method, r.path, c.who, firstLine(body))
			}
		}
	}

	// The lists and the team-scoped reads.
	for _, c := range []struct {
		who, tok  string
		see, hide []string
		teams     []string
	}{
		{owner, tokAlice, []string{a1.ID}, []string{b1.ID}, []string{"teamA"}},
		{viewer, tokVera, []string{a1.ID}, []string{b1.ID}, []string{"teamA"}},
		{other, tokBob, []string{b1.ID}, []string{a1.ID}, []string{"teamB"}},
		{admin, tokRoot, []string{a1.ID, b1.ID}, nil, nil},
	} {
		code, body := f.do(t, call{http.MethodGet, "/v1/runs", nil}, c.tok, nil)
		var l struct{ Runs []runInfo }
		if code != http.StatusOK || json.Unmarshal([]byte(body), &l) != nil {
			t.Fatalf("GET /v1/runs as %s: %d %s", c.who, code, firstLine(body))
		}
		listed := map[string]bool{}
		for _, r := range l.Runs {
			listed[r.ID] = true
			if c.teams != nil && !slices.Contains(c.teams, r.Spec.Team) {
				t.Errorf("GET /v1/runs as %s lists run %s of team %s", c.who, r.ID, r.Spec.Team)
			}
		}
		for _, id := range c.see {
			if !listed[id] {
				t.Errorf("GET /v1/runs as %s does not list run %s", c.who, id)
			}
		}
		for _, id := range c.hide {
			if listed[id] {
				t.Errorf("GET /v1/runs as %s lists another team's run %s", c.who, id)
			}
		}
	}
	for _, path := range []string{"/v1/flaky?suite=nightly&team=teamA", "/v1/audit?team=teamA"} {
		for _, c := range callers {
			want := http.StatusOK
			if c.who == other {
				want = http.StatusNotFound
			}
			if code, body := f.do(t, call{http.MethodGet, path, nil}, c.tok, nil); code != want {
				t.Errorf("GET %s as %s: %d %s, want %d", path, c.who, code, firstLine(body), want)
			}
		}
	}
}

// checkTeamSubmissions: a viewer submits nothing, a web-viewer token is not the API's, a
// member's run is its own team's whatever the query says, and the admin submits.
func checkTeamSubmissions(t *testing.T, f *teamFleet, bundle []byte) {
	const q = "name=scratch&kind=command&skill=env-selector&case=selects-dev"
	if code, body := f.do(t, call{http.MethodPost, "/v1/runs?" + q, bundle}, tokVera, nil); code != http.StatusForbidden {
		t.Errorf("teamA's viewer submits: %d %s, want 403", code, firstLine(body))
	}
	for _, c := range []call{{http.MethodGet, "/v1/runs", nil}, {http.MethodPost, "/v1/runs?" + q, bundle}} {
		if code, body := f.do(t, c, tokWendy, nil); code != http.StatusUnauthorized {
			t.Errorf("%s %s with a --viewer-token-file token: %d %s, want 401 (the API does not take them)", c.method, c.path, code, firstLine(body))
		}
	}
	if r := f.submit(t, tokBob, q+"&team=teamA", bundle); r.Spec.Team != "teamB" {
		t.Errorf("team=teamA in teamB's submission put its run in team %q", r.Spec.Team)
	}
	if r := f.submit(t, tokRoot, q, bundle); r.Spec.Team != "ops" || r.SubmittedBy != "root" {
		t.Errorf("the admin's run: team %q by %q, want ops by root", r.Spec.Team, r.SubmittedBy)
	}
}

// resultInfo is the part of a line of GET /v1/runs/{id}/results these tests read.
type resultInfo struct {
	Skill      string `json:"skill"`
	Case       string `json:"case_name"`
	Verdict    string `json:"verdict"`
	ReusedFrom string `json:"reused_from"`
}

// checkTeamHistory: teamA's changed-only run a2 reuses only teamA's run a1, though teamB
// ran the same cells under the same suite name since (passing them, with the same bundle);
// teamA has no flaky cell, though teamB's alternating runs made selects-dev flaky for teamB;
// and a2's "what changed" compares it with a1, not with teamB's last run.
func checkTeamHistory(t *testing.T, f *teamFleet, a1, a2 runInfo, bRuns []runInfo, rep2 teamReport) {
	code, body := f.do(t, call{http.MethodGet, "/v1/runs/" + a2.ID + "/results", nil}, tokAlice, nil)
	if code != http.StatusOK {
		t.Fatalf("GET /v1/runs/%s/results: %d %s", a2.ID, code, body)
	}
	reused := 0
	for line := range strings.Lines(body) {
		var r resultInfo
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("a result line: %v\n%s", err, line)
		}
		if r.ReusedFrom != "" {
			reused++
			if r.ReusedFrom != a1.ID {
				t.Errorf("teamA's changed-only run reused %s/%s from run %s, want teamA's own %s", r.Skill, r.Case, r.ReusedFrom, a1.ID)
			}
		}
	}
	if reused != commandCases || rep2.Summary.Reused != commandCases {
		t.Errorf("teamA's changed-only run: %d results reused, report %+v; want all %d cells reused from %s", reused, rep2.Summary, commandCases, a1.ID)
	}

	// teamB's flaky cell is there to be seen (else teamA's empty list would prove nothing).
	flakyCells := func(tok string) []string {
		t.Helper()
		code, body := f.do(t, call{http.MethodGet, "/v1/flaky?suite=nightly", nil}, tok, nil)
		var l struct {
			Team  string
			Cells []struct{ Skill, Case string }
		}
		if code != http.StatusOK || json.Unmarshal([]byte(body), &l) != nil {
			t.Fatalf("GET /v1/flaky: %d %s", code, body)
		}
		out := []string{}
		for _, c := range l.Cells {
			out = append(out, c.Skill+"/"+c.Case)
		}
		return out
	}
	var bFlaky []string
	testutil.Eventually(t, 30*time.Second, 200*time.Millisecond, func() bool {
		bFlaky = flakyCells(tokBob)
		return slices.Contains(bFlaky, "env-selector/selects-dev")
	}, "teamB's alternating runs to make selects-dev flaky for teamB (its flaky cells: %v)", bFlaky)
	if got := flakyCells(tokAlice); len(got) != 0 {
		t.Errorf("teamA's flaky cells of nightly: %v, want none (only teamB's runs flip)", got)
	}

	ch := rep2.Changes
	if ch == nil || ch.Previous == nil {
		t.Fatalf("teamA's changed-only run has no \"what changed\" against a previous run: %+v", ch)
	}
	if *ch.Previous != a1.ID {
		t.Errorf("teamA's \"what changed\" compares with run %s, want teamA's %s (teamB's last was %s)", *ch.Previous, a1.ID, bRuns[len(bRuns)-1].ID)
	}
	if n := len(ch.NewlyFailing) + len(ch.Fixed) + len(ch.StillFailing) + len(ch.New) + len(ch.Removed) + len(ch.Flaky); n != 0 {
		t.Errorf("teamA's \"what changed\" lists %d changes or flaky cells, want none: %+v", n, ch)
	}
	for _, c := range rep2.Cases {
		if len(c.Flaky) > 0 && string(c.Flaky) != "null" {
			t.Errorf("teamA's case %s/%s is marked flaky: %s", c.Skill, c.Case, c.Flaky)
		}
	}
	// teamB's own report does see its flips: the window that labels teamA's cells is teamA's.
	if rep := f.report(t, bRuns[len(bRuns)-1].ID); rep.Changes == nil || len(rep.Changes.Flaky) == 0 {
		t.Errorf("teamB's last run's report names no flaky cell: %+v", rep.Changes)
	}
}

// browser is a logged-in visitor of the web viewer: a cookie jar, redirects not followed.
type browser struct {
	f      *teamFleet
	who    string
	client *http.Client
	hdr    map[string]string
}

// login logs in at the viewer's form with tok, as a browser does.
func (f *teamFleet) login(t *testing.T, who, tok string) *browser {
	t.Helper()
	b := f.browser(t, who, nil)
	code, body, loc := b.post(t, "/login", url.Values{"token": {tok}, "next": {"/"}})
	if code != http.StatusSeeOther || loc != "/" {
		t.Fatalf("%s logs in: %d to %q, want 303 to /\n%s", who, code, loc, firstLine(body))
	}
	return b
}

// browser is a visitor without a session yet, sending hdr with each request.
func (f *teamFleet) browser(t *testing.T, who string, hdr map[string]string) *browser {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &browser{f: f, who: who, hdr: hdr, client: &http.Client{Jar: jar, Timeout: time.Minute,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (b *browser) send(t *testing.T, req *http.Request) (code int, body, location string) {
	t.Helper()
	for k, v := range b.hdr {
		req.Header.Set(k, v)
	}
	resp, err := b.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s as %s: %v", req.Method, req.URL.Path, b.who, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(data), resp.Header.Get("Location")
}

// get fetches a page.
func (b *browser) get(t *testing.T, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, b.f.api+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	code, body, _ := b.send(t, req)
	return code, body
}

// post submits a form from a page of the viewer (same origin).
func (b *browser) post(t *testing.T, path string, form url.Values) (code int, body, location string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.f.api+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", b.f.api)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	return b.send(t, req)
}

var (
	// csrfField is the CSRF token of any form of a page (each carries the session's).
	csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)
	// cancelForm is a run page's cancel form, with its CSRF token.
	cancelForm = regexp.MustCompile(`<form method="post" action="(/runs/[^"]+/cancel)"><input type="hidden" name="csrf" value="([^"]+)">`)
)

// csrf is the CSRF token of the forms on page.
func csrf(t *testing.T, page string) string {
	t.Helper()
	m := csrfField.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no form with a CSRF token on the page:\n%s", page)
	}
	return m[1]
}

// checkViewerPages: every viewer page about teamA's runs, as teamB (404, read exactly as
// for a run that does not exist; the runs list does not show them), as teamA's viewer (pages
// 200, cancel 403) and as the admin and teamA (allowed).
func checkViewerPages(t *testing.T, f *teamFleet, a1, a2, b1 runInfo) {
	id, absent := a1.ID, absentID(a1.ID)
	visitors := []struct {
		who string
		b   *browser
		// sees: whose runs the runs list shows; cancel: what a cancel gets.
		sees   []runInfo
		hidden []runInfo
		cancel int
	}{
		{"teamA", f.login(t, "alice", tokAlice), []runInfo{a1, a2}, []runInfo{b1}, http.StatusSeeOther},
		{"teamB", f.login(t, "bob", tokBob), []runInfo{b1}, []runInfo{a1, a2}, http.StatusNotFound},
		{"teamA's web viewer", f.login(t, "wendy", tokWendy), []runInfo{a1, a2}, []runInfo{b1}, http.StatusForbidden},
		{"teamA's API viewer", f.login(t, "vera", tokVera), []runInfo{a1, a2}, []runInfo{b1}, http.StatusForbidden},
		{"the admin", f.login(t, "root", tokRoot), []runInfo{a1, a2, b1}, nil, http.StatusSeeOther},
	}
	pages := []struct {
		path string // {id} is a1's id
		ok   int    // what a visitor allowed gets
	}{
		{"/runs/{id}", http.StatusOK},
		{"/runs/{id}/cases?skill=env-selector&case=selects-dev", http.StatusOK},
		// A command case has no trajectory: the run is found, its trajectory not.
		{"/runs/{id}/trajectory?skill=env-selector&case=selects-dev&epoch=1", http.StatusNotFound},
		{"/runs/{id}/report.html", http.StatusOK},
		{"/compare?a={id}&b=" + a2.ID, http.StatusOK},
		{"/compare?a=" + a2.ID + "&b={id}", http.StatusOK},
	}
	for _, v := range visitors {
		code, list := v.b.get(t, "/")
		if code != http.StatusOK || !strings.Contains(list, "<h1>Runs</h1>") {
			t.Fatalf("the runs list as %s: %d\n%s", v.who, code, list)
		}
		for _, r := range v.sees {
			if !strings.Contains(list, r.ID) {
				t.Errorf("the runs list as %s does not show run %s of team %s", v.who, r.ID, r.Spec.Team)
			}
		}
		for _, r := range v.hidden {
			if strings.Contains(list, r.ID) {
				t.Errorf("the runs list as %s shows run %s of team %s", v.who, r.ID, r.Spec.Team)
			}
		}
		for _, p := range pages {
			want := p.ok
			if v.who == "teamB" {
				want = http.StatusNotFound
			}
			code, body := v.b.get(t, strings.ReplaceAll(p.path, "{id}", id))
			absentCode, absentBody := v.b.get(t, strings.ReplaceAll(p.path, "{id}", absent))
			if absentCode != http.StatusNotFound {
				t.Fatalf("GET %s of a run that does not exist, as %s: %d", p.path, v.who, absentCode)
			}
			switch isHidden := hidden(body, id, absentBody, absent); {
			case code != want:
				t.Errorf("GET %s as %s: %d, want %d\n%s", p.path, v.who, code, want, body)
			case v.who == "teamB" && !isHidden:
				t.Errorf("GET %s as teamB differs from the page of a run that does not exist:\n%s\n--- a run that does not exist:\n%s", p.path, body, absentBody)
			case v.who != "teamB" && isHidden:
				t.Errorf("GET %s as %s: the run was not found:\n%s", p.path, v.who, body)
			}
		}
		// teamA's history of a skill: teamB names it in vain, and its own history of the
		// suite shows none of teamA's runs; everyone else reads teamA's, without teamB's.
		teamAPage := "/skills/env-selector?suite=nightly&team=teamA"
		own, shown, notShown := teamAPage, []runInfo{a1, a2}, []runInfo{b1}
		if v.who == "teamB" {
			if code, body := v.b.get(t, teamAPage); code != http.StatusNotFound {
				t.Errorf("GET %s as teamB: %d, want 404\n%s", teamAPage, code, body)
			}
			own, shown, notShown = "/skills/env-selector?suite=nightly", []runInfo{b1}, []runInfo{a1, a2}
		}
		code, body := v.b.get(t, own)
		if code != http.StatusOK {
			t.Errorf("GET %s as %s: %d\n%s", own, v.who, code, body)
		}
		for _, r := range shown {
			if !strings.Contains(body, r.ID) {
				t.Errorf("GET %s as %s does not show run %s of team %s", own, v.who, r.ID, r.Spec.Team)
			}
		}
		for _, r := range notShown {
			if strings.Contains(body, r.ID) {
				t.Errorf("GET %s as %s shows run %s of team %s", own, v.who, r.ID, r.Spec.Team)
			}
		}

		// A cancel with the session's CSRF token, taken from the run page's form (teamB, who
		// cannot open the run, takes it from its runs list).
		page := list
		if c, p := v.b.get(t, "/runs/"+id); c == http.StatusOK {
			page = p
		}
		code, body, loc := v.b.post(t, "/runs/"+id+"/cancel", url.Values{"csrf": {csrf(t, page)}})
		if code != v.cancel || (code == http.StatusSeeOther && loc != "/runs/"+id) {
			t.Errorf("POST /runs/%s/cancel as %s: %d to %q, want %d\n%s", id, v.who, code, loc, v.cancel, body)
		}

		// Logging out ends the session.
		if code, _, _ := v.b.post(t, "/logout", url.Values{"csrf": {csrf(t, list)}}); code != http.StatusSeeOther {
			t.Errorf("%s logs out: %d, want 303", v.who, code)
		}
		if code, _ := v.b.get(t, "/runs/"+id); code != http.StatusSeeOther {
			t.Errorf("a run page after %s logged out: %d, want 303 to the login", v.who, code)
		}
	}
}

// checkViewerCancel: a run still going shows its cancel form to its team's member and to
// the admin, and each cancels with it; teamB's cancel is 404 and the viewer's 403, and leave
// the run going.
func checkViewerCancel(t *testing.T, f *teamFleet) {
	bundle := bundleOf(t, slowSuite(t))
	alice, root := f.login(t, "alice", tokAlice), f.login(t, "root", tokRoot)
	bob, wendy := f.login(t, "bob", tokBob), f.login(t, "wendy", tokWendy)
	for _, canceller := range []struct {
		who string
		b   *browser
	}{{"teamA", alice}, {"the admin", root}} {
		r := f.submit(t, tokAlice, "name=slow", bundle)
		path := "/runs/" + r.ID
		for _, refused := range []struct {
			who  string
			b    *browser
			want int
		}{{"teamB", bob, http.StatusNotFound}, {"teamA's web viewer", wendy, http.StatusForbidden}} {
			page := ""
			if refused.who == "teamA's web viewer" {
				code, p := refused.b.get(t, path)
				if code != http.StatusOK || cancelForm.MatchString(p) {
					t.Errorf("the live run's page as %s: %d, cancel form shown: %v", refused.who, code, cancelForm.MatchString(p))
				}
				page = p
			} else {
				_, page = refused.b.get(t, "/")
			}
			if code, body, _ := refused.b.post(t, path+"/cancel", url.Values{"csrf": {csrf(t, page)}}); code != refused.want {
				t.Errorf("POST %s/cancel as %s: %d, want %d\n%s", path, refused.who, code, refused.want, body)
			}
		}
		code, page := canceller.b.get(t, path)
		m := cancelForm.FindStringSubmatch(page)
		if code != http.StatusOK || m == nil || m[1] != path+"/cancel" {
			t.Fatalf("the live run's page as %s: %d, want a cancel form\n%s", canceller.who, code, page)
		}
		if code, body, loc := canceller.b.post(t, m[1], url.Values{"csrf": {m[2]}}); code != http.StatusSeeOther || loc != path {
			t.Errorf("%s cancels with the page's form: %d to %q, want 303 to %s\n%s", canceller.who, code, loc, path, body)
		}
		if st := f.waitState(t, r.ID); st != "RUN_STATE_CANCELLED" {
			t.Errorf("the run %s cancelled by %s ended %s", r.ID, canceller.who, st)
		}
	}
}

// checkProxy: requests from the trusted proxy's address name their user, team and role in
// headers, with no token: a member of teamA sees teamA's runs and not teamB's on the API and
// the viewer; a viewer's change is 403; a malformed role is 401; the same headers from an
// address the coordinator does not trust are ignored.
func checkProxy(t *testing.T, f *teamFleet, a1, b1 runInfo) {
	as := func(role string) map[string]string {
		return map[string]string{proxyUser: "carol", proxyTeam: "teamA", proxyRole: role}
	}
	member := as("member")
	code, body := f.do(t, call{http.MethodGet, "/v1/runs", nil}, "", member)
	if code != http.StatusOK || !strings.Contains(body, a1.ID) || strings.Contains(body, b1.ID) {
		t.Errorf("GET /v1/runs as the proxy's teamA member: %d; want teamA's run %s and not teamB's %s\n%s", code, a1.ID, b1.ID, firstLine(body))
	}
	for _, c := range []struct {
		what string
		c    call
		hdr  map[string]string
		want int
	}{
		{"a member reads teamA's run", call{http.MethodGet, "/v1/runs/" + a1.ID, nil}, member, http.StatusOK},
		{"a member reads teamB's run", call{http.MethodGet, "/v1/runs/" + b1.ID, nil}, member, http.StatusNotFound},
		{"a member cancels teamB's run", call{http.MethodDelete, "/v1/runs/" + b1.ID, nil}, member, http.StatusNotFound},
		{"a viewer cancels teamA's run", call{http.MethodDelete, "/v1/runs/" + a1.ID, nil}, as("viewer"), http.StatusForbidden},
		{"a member cancels teamA's (finished) run", call{http.MethodDelete, "/v1/runs/" + a1.ID, nil}, member, http.StatusOK},
		{"a malformed role", call{http.MethodGet, "/v1/runs", nil}, as("root"), http.StatusUnauthorized},
		{"a malformed team", call{http.MethodGet, "/v1/runs", nil}, map[string]string{proxyUser: "carol", proxyTeam: "team/A", proxyRole: "member"}, http.StatusUnauthorized},
	} {
		if code, body := f.do(t, c.c, "", c.hdr); code != c.want {
			t.Errorf("proxy, %s: %s %s: %d %s, want %d", c.what, c.c.method, c.c.path, code, firstLine(body), c.want)
		}
	}

	// The viewer: no login, the proxy's user's team's pages.
	carol := f.browser(t, "carol", member)
	code, list := carol.get(t, "/")
	if code != http.StatusOK || !strings.Contains(list, a1.ID) || strings.Contains(list, b1.ID) {
		t.Errorf("the runs list as the proxy's teamA member: %d; want teamA's run %s and not teamB's %s\n%s", code, a1.ID, b1.ID, list)
	}
	if code, body := carol.get(t, "/runs/"+b1.ID); code != http.StatusNotFound {
		t.Errorf("teamB's run page as the proxy's teamA member: %d, want 404\n%s", code, body)
	}
	viewer := f.browser(t, "carol the viewer", as("viewer"))
	code, page := viewer.get(t, "/runs/"+a1.ID)
	if code != http.StatusOK {
		t.Fatalf("teamA's run page as the proxy's viewer: %d\n%s", code, page)
	}
	if code, body, _ := viewer.post(t, "/runs/"+a1.ID+"/cancel", url.Values{"csrf": {csrf(t, page)}}); code != http.StatusForbidden {
		t.Errorf("the proxy's viewer cancels on the viewer: %d, want 403\n%s", code, body)
	}
	if code, body := f.browser(t, "a malformed role", as("root")).get(t, "/"); code != http.StatusUnauthorized {
		t.Errorf("the viewer with a malformed role header: %d, want 401\n%s", code, body)
	}

	// From 127.0.0.2, which the coordinator does not trust, the headers name nobody.
	dialer := &net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	untrusted := &teamFleet{fleet: f.fleet, client: &http.Client{Timeout: time.Minute, Transport: &http.Transport{DialContext: dialer.DialContext}}}
	admin := map[string]string{proxyUser: "mallory", proxyTeam: "teamB", proxyRole: "admin"}
	if code, body := untrusted.do(t, call{http.MethodGet, "/v1/runs", nil}, "", admin); code != http.StatusUnauthorized {
		t.Errorf("proxy headers from an untrusted address: %d %s, want 401", code, firstLine(body))
	}
}

// auditRecord is the part of an audit record these tests read.
type auditRecord struct {
	Actor, Team, Action, Object, Outcome string
}

// checkTeamAudit: teamA's audit log holds teamA's records only, its submission among
// them; the admin's holds both teams'.
func checkTeamAudit(t *testing.T, f *teamFleet, a1, b1 runInfo) {
	records := func(tok string) []auditRecord {
		t.Helper()
		code, body := f.do(t, call{http.MethodGet, "/v1/audit?limit=1000", nil}, tok, nil)
		var l struct{ Records []auditRecord }
		if code != http.StatusOK || json.Unmarshal([]byte(body), &l) != nil {
			t.Fatalf("GET /v1/audit: %d %s", code, firstLine(body))
		}
		return l.Records
	}
	has := func(recs []auditRecord, want auditRecord) bool {
		return slices.Contains(recs, want)
	}
	submitA := auditRecord{"alice", "teamA", "submit", "run/" + a1.ID, "ok"}
	submitB := auditRecord{"bob", "teamB", "submit", "run/" + b1.ID, "ok"}
	// The audit log is written in the background.
	var recs []auditRecord
	testutil.Eventually(t, 30*time.Second, 200*time.Millisecond, func() bool {
		recs = records(tokRoot)
		return has(recs, submitA) && has(recs, submitB)
	}, "the admin's audit log to hold both teams' submissions")
	teams := map[string]bool{}
	for _, r := range recs {
		teams[r.Team] = true
	}
	if !teams["teamA"] || !teams["teamB"] || !teams["ops"] {
		t.Errorf("the admin's audit log holds the teams %v, want teamA, teamB and ops", teams)
	}
	for _, c := range []struct{ who, tok string }{{"teamA", tokAlice}, {"teamA's viewer", tokVera}} {
		recs := records(c.tok)
		if !has(recs, submitA) {
			t.Errorf("teamA's audit log as %s lacks %+v", c.who, submitA)
		}
		for _, r := range recs {
			if r.Team != "teamA" {
				t.Errorf("teamA's audit log as %s holds a record of team %s: %+v", c.who, r.Team, r)
			}
		}
	}
	// Refused attempts are recorded too: teamA's viewer's cancel, in teamA's log.
	if recs := records(tokAlice); !slices.ContainsFunc(recs, func(r auditRecord) bool {
		return r.Actor == "vera" && r.Action == "cancel" && r.Outcome == "denied"
	}) {
		t.Errorf("teamA's audit log does not record its viewer's refused cancel")
	}
}
