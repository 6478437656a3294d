package fleet

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/fleet/fleettest"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/worker"
)

// TestCoordinatorServesTheViewer: one address serves the API (bearer tokens only) and the web
// viewer (a login; viewer tokens read, never write) over a real coordinator with a history.
func TestCoordinatorServesTheViewer(t *testing.T) {
	exec := &fleettest.Executor{Failing: "usage-error"}
	f, err := StartInProcess(context.Background(), InProcessConfig{
		DataDir: t.TempDir(), Workers: 2, Slots: 2, Queue: testQueue(), Executor: exec,
		Worker:  worker.Config{RetryDelay: 50 * time.Millisecond, FetchWait: 100 * time.Millisecond, DrainGrace: time.Second},
		History: HistoryConfig{Target: filepath.Join(t.TempDir(), "history.db")},
		Log:     zaptest.NewLogger(t).Named(t.Name()),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close(context.Background()) })
	t.Cleanup(exec.ReleaseAll)
	api := coordinator.APIConfig{Tokens: []coordinator.Token{{Name: "ops", Secret: "op-secret-0123456789"}}}
	h, err := CoordinatorHandler(f.Coordinator, api, WebConfig{ViewerTokens: []coordinator.Token{{Name: "reader", Secret: "view-secret-0123456789"}}},
		Tenancy{History: f.History, Policy: &ReportPolicy{History: f.History}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	st := submit(t, f.Coordinator, &pb.RunSpec{Name: "nightly"})
	if final := wait(t, f.Coordinator, st.GetId()); final.GetState() != pb.RunState_RUN_STATE_COMPLETED {
		t.Fatalf("run ended %v", final.GetState())
	}

	get := func(c *http.Client, path, bearer string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	plain := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	// The API keeps its routes and its tokens; a viewer token is not one of them.
	if code, body := get(plain, "/healthz", ""); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	if code, _ := get(plain, "/v1/runs", "op-secret-0123456789"); code != http.StatusOK {
		t.Errorf("/v1/runs with the API token: %d", code)
	}
	if code, _ := get(plain, "/v1/runs", "view-secret-0123456789"); code != http.StatusUnauthorized {
		t.Errorf("/v1/runs with a viewer token: %d, want 401", code)
	}
	if code, _ := get(plain, "/v1/nope", "op-secret-0123456789"); code != http.StatusNotFound {
		t.Errorf("an unknown API route: %d, want the API's 404", code)
	}
	// The viewer wants a login, even for a bearer token.
	if code, _ := get(plain, "/", "op-secret-0123456789"); code != http.StatusSeeOther {
		t.Errorf("/ without a session: %d, want a redirect to the login", code)
	}
	for _, tc := range []struct{ token, who string }{{"op-secret-0123456789", "ops (member, team default)"}, {"view-secret-0123456789", "reader (viewer, team default)"}} {
		jar, _ := cookiejar.New(nil)
		browser := &http.Client{Jar: jar}
		resp, err := browser.PostForm(srv.URL+"/login", url.Values{"token": {tc.token}, "next": {"/runs/" + st.GetId()}})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		page := string(b)
		if resp.StatusCode != http.StatusOK || !strings.Contains(page, tc.who) || !strings.Contains(page, "usage-error") || resp.Header.Get("Content-Security-Policy") == "" {
			t.Errorf("the run page for %s: %d\n%s", tc.who, resp.StatusCode, page)
		}
		// The history behind the skill page.
		code, skillPage := get(browser, "/skills/deploy-checklist?suite=nightly", "")
		if code != http.StatusOK || !strings.Contains(skillPage, st.GetId()) || strings.Contains(skillPage, "keeps no history") {
			t.Errorf("the skill page: %d\n%s", code, skillPage)
		}
	}
}
