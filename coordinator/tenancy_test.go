package coordinator_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/fleet"
	"github.com/skillfleet/skillfleet/internal/tenant"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// The tokens of two teams, a viewer of the first, and an admin of a third.
const (
	tokA      = "team-a-member-token-0001"
	tokB      = "team-b-member-token-0002"
	tokViewer = "team-a-viewer-token-0003"
	tokAdmin  = "ops-admin-token-00000004"
)

func startTeams(t *testing.T) *apiFleet {
	t.Helper()
	return startAPI(t, func(cfg *fleet.InProcessConfig, api *coordinator.APIConfig) {
		cfg.History = fleet.HistoryConfig{Target: filepath.Join(t.TempDir(), "history.db")}
		api.Token = ""
		api.Tokens = []coordinator.Token{
			{Name: "alice", Secret: tokA, Team: "teamA"},
			{Name: "bob", Secret: tokB, Team: "teamB"},
			{Name: "vera", Secret: tokViewer, Team: "teamA", Role: tenant.Viewer},
			{Name: "root", Secret: tokAdmin, Team: "ops", Role: tenant.Admin},
			{Name: "harness", Secret: token, Team: "ops", Role: tenant.Admin}, // a.wait's
		}
	})
}

// TestTeamsOwnTheirRuns tries every run route of the API with the run's team's member, the
// other team's member (404: the run's existence is not disclosed), the team's viewer (reads,
// but 403 on a change) and an admin of another team (everything).
func TestTeamsOwnTheirRuns(t *testing.T) {
	a := startTeams(t)
	bundle := bundleOf(t, examples)
	runA := a.submitAs(t, tokA, "name=nightly&kind=command", bundle)
	if runA.GetSpec().GetTeam() != "teamA" || runA.GetSubmittedBy() != "alice" {
		t.Fatalf("run of team %q by %q, want teamA's by alice", runA.GetSpec().GetTeam(), runA.GetSubmittedBy())
	}
	runB := a.submitAs(t, tokB, "name=nightly&kind=command&team=teamA", bundle)
	if runB.GetSpec().GetTeam() != "teamB" {
		t.Fatalf("a team= in the query moved bob's run into team %q", runB.GetSpec().GetTeam())
	}
	a.wait(t, runA.GetId())
	a.wait(t, runB.GetId())
	// A viewer submits nothing.
	if resp, body := a.do(t, http.MethodPost, "/v1/runs?name=nightly", tokViewer, bundle); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a viewer's submission: %d %s, want 403", resp.StatusCode, body)
	}
	id := runA.GetId()
	reads := []string{
		"/v1/runs/" + id,
		"/v1/runs/" + id + "/events",
		"/v1/runs/" + id + "/report",
		"/v1/runs/" + id + "/report?format=junit",
		"/v1/runs/" + id + "/results",
		"/v1/runs/" + id + "/records",
		"/v1/runs/" + id + "/trajectory?skill=x&case=y",
	}
	for _, path := range reads {
		for _, c := range []struct {
			who, tok string
			want     int
		}{{"its member", tokA, http.StatusOK}, {"its viewer", tokViewer, http.StatusOK}, {"an admin", tokAdmin, http.StatusOK}, {"another team", tokB, http.StatusNotFound}} {
			resp, body := a.do(t, http.MethodGet, path, c.tok, nil)
			got := resp.StatusCode
			if strings.Contains(path, "/trajectory") && got == http.StatusNotFound && c.want == http.StatusOK {
				// No such case: the run was found, its case not. Another team gets the run's 404.
				if !strings.Contains(string(body), "no result") && !strings.Contains(string(body), "no job") {
					t.Errorf("%s GET %s: %s, want a missing case, not a missing run", c.who, path, body)
				}
				continue
			}
			if got != c.want {
				t.Errorf("%s GET %s: %d %s, want %d", c.who, path, got, body, c.want)
			}
			if c.want == http.StatusNotFound && strings.Contains(string(body), "nightly") {
				t.Errorf("%s GET %s: the 404 discloses the run: %s", c.who, path, body)
			}
		}
	}
	// The list holds only the caller's team's runs (an admin's: every team's).
	for _, c := range []struct {
		tok        string
		want, not_ []string
	}{
		{tokA, []string{runA.GetId()}, []string{runB.GetId()}},
		{tokViewer, []string{runA.GetId()}, []string{runB.GetId()}},
		{tokB, []string{runB.GetId()}, []string{runA.GetId()}},
		{tokAdmin, []string{runA.GetId(), runB.GetId()}, nil},
	} {
		_, body := a.do(t, http.MethodGet, "/v1/runs", c.tok, nil)
		for _, w := range c.want {
			if !strings.Contains(string(body), w) {
				t.Errorf("GET /v1/runs as %s lacks %s", c.tok, w)
			}
		}
		for _, n := range c.not_ {
			if strings.Contains(string(body), n) {
				t.Errorf("GET /v1/runs as %s shows another team's run %s", c.tok, n)
			}
		}
	}
	// Changes: the other team 404, the viewer 403, the member and the admin 200.
	for _, c := range []struct {
		tok  string
		want int
	}{{tokB, http.StatusNotFound}, {tokViewer, http.StatusForbidden}, {tokA, http.StatusOK}, {tokAdmin, http.StatusOK}} {
		if resp, body := a.do(t, http.MethodDelete, "/v1/runs/"+id, c.tok, nil); resp.StatusCode != c.want {
			t.Errorf("DELETE as %s: %d %s, want %d", c.tok, resp.StatusCode, body, c.want)
		}
	}
}

// TestTeamsOwnTheirSuitesAndSchedules: suite and schedule names live in the team's namespace;
// one team's push neither replaces nor reaches another's, nor may it remove another's
// schedule.
func TestTeamsOwnTheirSuitesAndSchedules(t *testing.T) {
	a := startTeams(t)
	bundleA := bundleOf(t, examples)
	bundleB := twoCaseSuite(t)
	push := func(tok string, b []byte) (int, coordinator.PushedSuite) {
		resp, body := a.do(t, http.MethodPut, "/v1/suites/nightly", tok, b)
		var ps coordinator.PushedSuite
		_ = json.Unmarshal(body, &ps)
		return resp.StatusCode, ps
	}
	codeA, psA := push(tokA, bundleA)
	codeB, psB := push(tokB, bundleB)
	if codeA != http.StatusOK || codeB != http.StatusOK || psA.Team != "teamA" || psB.Team != "teamB" || psA.BundleDigest == psB.BundleDigest {
		t.Fatalf("pushes: %d %+v; %d %+v", codeA, psA, codeB, psB)
	}
	if code, _ := push(tokViewer, bundleB); code != http.StatusForbidden {
		t.Errorf("a viewer's push: %d, want 403", code)
	}
	var list struct{ Suites []coordinator.PushedSuite }
	_, body := a.do(t, http.MethodGet, "/v1/suites", tokA, nil)
	if err := json.Unmarshal(body, &list); err != nil || len(list.Suites) != 1 || list.Suites[0].BundleDigest != psA.BundleDigest {
		t.Fatalf("teamA's suites after teamB pushed the same name: %s", body)
	}
	_, body = a.do(t, http.MethodGet, "/v1/suites", tokAdmin, nil)
	if err := json.Unmarshal(body, &list); err != nil || len(list.Suites) != 2 {
		t.Errorf("the admin's suites: %s, want both teams'", body)
	}

	sched := []byte(`{"suite":"nightly","cron":"@daily"}`)
	if resp, body := a.do(t, http.MethodPut, "/v1/schedules/nightly", tokA, sched); resp.StatusCode != http.StatusCreated {
		t.Fatalf("teamA's schedule: %d %s", resp.StatusCode, body)
	}
	for _, c := range []struct {
		method, path, tok string
		body              []byte
		want              int
	}{
		{http.MethodDelete, "/v1/schedules/nightly", tokB, nil, http.StatusNotFound},
		{http.MethodDelete, "/v1/schedules/nightly?team=teamA", tokB, nil, http.StatusNotFound},
		{http.MethodDelete, "/v1/schedules/nightly", tokViewer, nil, http.StatusForbidden},
		{http.MethodPut, "/v1/schedules/other", tokViewer, sched, http.StatusForbidden},
		{http.MethodPut, "/v1/suites/nightly?team=teamA", tokB, bundleB, http.StatusNotFound},
		{http.MethodGet, "/v1/flaky?suite=nightly&team=teamA", tokB, nil, http.StatusNotFound},
		{http.MethodGet, "/v1/audit?team=teamA", tokB, nil, http.StatusNotFound},
	} {
		if resp, body := a.do(t, c.method, c.path, c.tok, c.body); resp.StatusCode != c.want {
			t.Errorf("%s %s as %s: %d %s, want %d", c.method, c.path, c.tok, resp.StatusCode, body, c.want)
		}
	}
	var scheds struct{ Schedules []coordinator.Schedule }
	_, body = a.do(t, http.MethodGet, "/v1/schedules", tokB, nil)
	if err := json.Unmarshal(body, &scheds); err != nil || len(scheds.Schedules) != 0 {
		t.Errorf("teamB sees schedules: %s", body)
	}
	_, body = a.do(t, http.MethodGet, "/v1/schedules", tokA, nil)
	if err := json.Unmarshal(body, &scheds); err != nil || len(scheds.Schedules) != 1 || scheds.Schedules[0].Team != "teamA" {
		t.Errorf("teamA's schedule after teamB's attempts: %s", body)
	}
	// The admin removes it in the team it names.
	if resp, body := a.do(t, http.MethodDelete, "/v1/schedules/nightly?team=teamA", tokAdmin, nil); resp.StatusCode != http.StatusNoContent {
		t.Errorf("the admin's removal: %d %s", resp.StatusCode, body)
	}

	// The audit log says who did what: each team sees its own records, the admin every one.
	if err := a.fleet.Audit.Close(t.Context()); err != nil { // write what is queued
		t.Fatal(err)
	}
	var audit coordinator.AuditList
	_, body = a.do(t, http.MethodGet, "/v1/audit", tokA, nil)
	if err := json.Unmarshal(body, &audit); err != nil {
		t.Fatalf("audit: %v %s", err, body)
	}
	seen := map[string]bool{}
	for _, r := range audit.Records {
		if r.Team != "teamA" {
			t.Errorf("teamA reads another team's audit record %+v", r)
		}
		seen[r.Actor+" "+r.Action+" "+r.Outcome] = true
	}
	for _, want := range []string{"alice push ok", "alice schedule.add ok", "vera push denied", "vera schedule.remove denied", "root schedule.remove ok"} {
		if !seen[want] {
			t.Errorf("teamA's audit lacks %q: %s", want, body)
		}
	}
	_, body = a.do(t, http.MethodGet, "/v1/audit", tokAdmin, nil)
	if err := json.Unmarshal(body, &audit); err != nil || !strings.Contains(string(body), `"team":"teamB"`) || !strings.Contains(string(body), `"team":"teamA"`) {
		t.Errorf("the admin's audit: %s", body)
	}
}

// TestProxyHeadersNameTheCaller: behind an authenticating proxy (trusted: loopback here) the
// user, team and role come from its headers, with no token; a malformed header is refused, and
// a change another site's page could make through the proxy's cookie is refused.
func TestProxyHeadersNameTheCaller(t *testing.T) {
	a := startAPI(t, func(cfg *fleet.InProcessConfig, api *coordinator.APIConfig) {
		api.Tokens = []coordinator.Token{{Name: "bob", Secret: tokB, Team: "teamB"}}
		api.Proxy = &tenant.Proxy{Trusted: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("::1/128")},
			UserHeader: "X-Webauth-User", TeamHeader: "X-Webauth-Team", RoleHeader: "X-Webauth-Role"}
	})
	runB := a.submitAs(t, tokB, "name=nightly&kind=command", bundleOf(t, examples))
	send := func(method, path, role string, headers map[string]string, body []byte) (int, string) {
		req, err := http.NewRequest(method, a.srv.URL+path, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Webauth-User", "carol")
		req.Header.Set("X-Webauth-Team", "teamA")
		req.Header.Set("X-Webauth-Role", role)
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	tar := map[string]string{"Content-Type": "application/x-tar"}
	code, body := send(http.MethodPost, "/v1/runs?name=nightly&kind=command", "member", tar, bundleOf(t, examples))
	if code != http.StatusCreated || !strings.Contains(body, `"team":"teamA"`) || !strings.Contains(body, `"submitted_by":"carol"`) {
		t.Fatalf("carol's submission: %d %s", code, body)
	}
	own := &pb.RunStatus{}
	if err := protojson.Unmarshal([]byte(body), own); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, method, path, role string
		headers                  map[string]string
		want                     int
	}{
		{"another team's run", http.MethodGet, "/v1/runs/" + runB.GetId(), "member", nil, http.StatusNotFound},
		{"a viewer's cancel of another team's run", http.MethodDelete, "/v1/runs/" + runB.GetId(), "viewer", nil, http.StatusNotFound},
		{"a viewer's cancel of its team's run", http.MethodDelete, "/v1/runs/" + own.GetId(), "viewer", nil, http.StatusForbidden},
		{"a malformed role", http.MethodGet, "/v1/runs", "root", nil, http.StatusUnauthorized},
		{"another site's page", http.MethodPost, "/v1/runs?name=x", "member", map[string]string{"Origin": "https://evil.example", "Content-Type": "application/x-tar"}, http.StatusForbidden},
		{"a form's content type", http.MethodPost, "/v1/runs?name=x", "member", map[string]string{"Content-Type": "text/plain"}, http.StatusUnsupportedMediaType},
	} {
		if code, body := send(c.method, c.path, c.role, c.headers, nil); code != c.want {
			t.Errorf("%s: %d %s, want %d", c.name, code, body, c.want)
		}
	}
	code, body = send(http.MethodGet, "/v1/runs", "viewer", nil, nil)
	if code != http.StatusOK || strings.Contains(body, runB.GetId()) || !strings.Contains(body, "carol") {
		t.Errorf("carol's list: %d %s", code, body)
	}
	// A proxy that appends the identity headers to the client's passes the client's on: the
	// request is refused, whichever value comes first, with the bearer token it may also carry.
	for _, c := range []struct {
		name   string
		header string
		values []string
	}{
		{"the client's role first", "X-Webauth-Role", []string{"admin", "viewer"}},
		{"a comma-joined role", "X-Webauth-Role", []string{"admin, viewer"}},
		{"the client's team first", "X-Webauth-Team", []string{"teamB", "teamA"}},
		{"the client's user first", "X-Webauth-User", []string{"bob", "carol"}},
	} {
		req, _ := http.NewRequest(http.MethodGet, a.srv.URL+"/v1/runs", nil)
		req.Header.Set("X-Webauth-User", "carol")
		req.Header.Set("X-Webauth-Team", "teamA")
		req.Header.Set("X-Webauth-Role", "viewer")
		req.Header.Set("Authorization", "Bearer "+tokB)
		req.Header.Del(c.header)
		for _, v := range c.values {
			req.Header.Add(c.header, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(b), c.header) {
			t.Errorf("%s: %d %s, want 401 naming %s", c.name, resp.StatusCode, b, c.header)
		}
	}
}
