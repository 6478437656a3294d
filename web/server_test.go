package web

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/skillfleet/skillfleet/history"
	"github.com/skillfleet/skillfleet/internal/authlimit"
	"github.com/skillfleet/skillfleet/internal/testutil"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/report"
)

// hostileCaseHref is the case page of hostileRun's failing prompt case.
func hostileCaseHref(id string) string {
	return "/runs/" + id + "/cases?" + url.Values{"skill": {"deploy-checklist"}, "case": {"case " + xssScript + xssImg}, "agent": {"builtin"}}.Encode()
}

// withHostile is a viewer over one finished hostile run "r1" and one running run "r2".
func withHostile(t testing.TB) (*Server, *fakeSource) {
	t.Helper()
	src := newFake()
	st, rep, res := hostileRun(t, "r1")
	src.add(st, rep, res)
	st2, rep2, res2 := bigRun("r2", 20, pb.RunState_RUN_STATE_RUNNING, true, "going")
	src.add(st2, rep2, res2)
	s := testServer(t, src, func(d *Deps) {
		d.History = fakeHistory{runs: []history.SkillRun{
			{RunID: "r1", Lane: "scheduled", State: "completed", CreatedAt: t0, Passed: 1, Failed: 3},
			{RunID: "r0", Lane: "scheduled", State: "completed", CreatedAt: t0.Add(-24 * time.Hour), Passed: 4},
			{RunID: "r-1", Lane: "scheduled", State: "cancelled", CreatedAt: t0.Add(-48 * time.Hour), Skipped: 4},
		}}
		d.Flaky = fakeFlaky{cells: []report.FlakyCell{{Skill: "deploy-checklist", Case: xssScript, Agent: "builtin", Evidence: "flips " + xssImg}}}
	})
	return s, src
}

func TestSecurityHeadersOnEveryResponse(t *testing.T) {
	s, _ := withHostile(t)
	op := login(t, s, operatorToken)
	for _, tc := range []struct {
		method, target string
		cookie         *http.Cookie
		form           url.Values
	}{
		{"GET", "/", op, nil},
		{"GET", "/", nil, nil},
		{"GET", "/runs/r1", op, nil},
		{"GET", "/runs/nope", op, nil},
		{"GET", hostileCaseHref("r1"), op, nil},
		{"GET", "/runs/r1/trajectory?skill=deploy-checklist&case=x&epoch=1", op, nil},
		{"GET", "/skills/deploy-checklist?suite=s", op, nil},
		{"GET", "/compare?run=r1", op, nil},
		{"GET", "/login", nil, nil},
		{"POST", "/login", nil, url.Values{"token": {"wrong"}}},
		{"GET", "/assets/style.css", nil, nil},
		{"GET", "/assets/nope.js", nil, nil},
		{"GET", "/no/such/page", op, nil},
		{"POST", "/runs/r2/cancel", op, url.Values{}},
	} {
		t.Run(tc.method+" "+tc.target, func(t *testing.T) {
			w := do(s, tc.method, tc.target, tc.form, tc.cookie)
			h := w.Header()
			if got := h.Get("Content-Security-Policy"); got != CSP {
				t.Errorf("Content-Security-Policy %q (status %d)", got, w.Code)
			}
			if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") != "no-referrer" || h.Get("X-Frame-Options") != "DENY" {
				t.Errorf("headers %v", h)
			}
		})
	}
}

func TestHostileContentRendersAsText(t *testing.T) {
	s, _ := withHostile(t)
	op := login(t, s, operatorToken)
	for _, tc := range []struct {
		name, target string
		// want is text the page must show literally.
		want []string
	}{
		{"runs list", "/", []string{"nightly " + xssScript}},
		{"run", "/runs/r1", []string{"case " + xssScript + xssImg, "output_contains failed: " + xssScript, "nightly " + xssScript}},
		{"failing prompt case", hostileCaseHref("r1"), []string{
			"I ran " + xssScript + " and " + xssImg + " and " + xssURL, // the output
			"The output never says " + xssScript,                       // the judge's reasoning
			"Deploy it " + xssScript,                                   // the user message
			"# Deploy checklist " + xssScript,                          // a tool output
			"Done. See " + xssURL,                                      // the agent's answer
			"report-" + xssImg + ".html",                               // an output file's name
			"<html><script>alert(4)</script></html>",                   // its content
			"activated skill deploy-checklist",
		}},
		{"errored command case", "/runs/r1/cases?skill=deploy-checklist&case=usage-error", []string{"docker: " + xssScript, "sandbox failed to start"}},
		{"settled before its last epoch", "/runs/r1/cases?skill=logging&case=logline-shape", []string{"4/5 passed", "4 of 5: the others could not change the verdict"}},
		{"run page says so too", "/runs/r1", []string{"4/5 (4 of 5 run)", "passed undecided 64.0%–95.0%", "17/20 (20 of ≤ 20 run, auto)"}},
		{"undecided runs: auto case", "/runs/r1/cases?skill=logging&case=borderline", []string{"undecided: it reached max_runs (20) without deciding"}},
		{"transcript without trajectory", "/runs/r1/cases?skill=logging&case=flaps&agent=builtin", []string{xssImg, "echo " + xssScript}},
		{"skill", "/skills/deploy-checklist?suite=" + url.QueryEscape("nightly "+xssScript), []string{xssScript + " [builtin]", "flips " + xssImg}},
		{"not found names the run as text", "/runs/" + url.PathEscape(xssScript), []string{xssScript}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := do(s, "GET", tc.target, nil, op)
			if tc.name != "not found names the run as text" && w.Code != http.StatusOK {
				t.Fatalf("status %d\n%s", w.Code, w.Body)
			}
			doc := parseHTML(t, w.Body.Bytes())
			checkInert(t, doc, true)
			text := textOf(doc)
			for _, want := range tc.want {
				if !strings.Contains(text, want) {
					t.Errorf("the page does not show %q as text", want)
				}
			}
		})
	}
}

func TestLoginSetsASafeCookie(t *testing.T) {
	src := newFake()
	for _, tc := range []struct {
		name       string
		tls        bool
		secure     bool
		wantSecure bool
	}{
		{"plain HTTP", false, false, false},
		{"over TLS", true, false, true},
		{"behind a TLS proxy", false, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(Config{Operators: []Token{{Name: "ops", Secret: operatorToken}}, SecureCookies: tc.secure}, Deps{Source: src})
			if err != nil {
				t.Fatal(err)
			}
			r := httptest.NewRequest("POST", "/login", strings.NewReader(url.Values{"token": {operatorToken}, "next": {"/runs/x?a=1"}}.Encode()))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			if tc.tls {
				r.TLS = &tls.ConnectionState{}
			}
			w := httptest.NewRecorder()
			s.ServeHTTP(w, r)
			if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/runs/x?a=1" {
				t.Fatalf("login: %d to %q", w.Code, w.Header().Get("Location"))
			}
			cs := w.Result().Cookies()
			if len(cs) != 1 {
				t.Fatalf("cookies %v", cs)
			}
			c := cs[0]
			if c.Name != sessionCookie || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.Secure != tc.wantSecure || c.MaxAge != 12*3600 || len(c.Value) < 40 {
				t.Errorf("cookie %+v", c)
			}
		})
	}
}

func TestLogin(t *testing.T) {
	s, _ := withHostile(t)
	// Without a session a page sends the browser to the login form, with the way back.
	w := do(s, "GET", "/runs/r1?status=failed", nil, nil)
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/login?next="+url.QueryEscape("/runs/r1?status=failed") {
		t.Fatalf("anonymous GET: %d to %q", w.Code, w.Header().Get("Location"))
	}
	w = do(s, "GET", "/login?next="+url.QueryEscape("/runs/r1"), nil, nil)
	if doc := parseHTML(t, w.Body.Bytes()); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `name="next" value="/runs/r1"`) {
		t.Errorf("login form: %d %s", w.Code, textOf(doc))
	}
	for _, tc := range []struct {
		name, token, next string
		hdr               []string
		code              int
		location          string
	}{
		{"wrong token", "nope", "/", nil, http.StatusUnauthorized, ""},
		{"empty token", "", "/", nil, http.StatusUnauthorized, ""},
		{"operator", operatorToken, "/runs/r1", nil, http.StatusSeeOther, "/runs/r1"},
		{"viewer", viewerToken, "/", nil, http.StatusSeeOther, "/"},
		{"no open redirect: scheme-relative", operatorToken, "//evil.example/", nil, http.StatusSeeOther, "/"},
		{"no open redirect: absolute", operatorToken, "https://evil.example/", nil, http.StatusSeeOther, "/"},
		{"no open redirect: backslash", operatorToken, "/\\evil.example", nil, http.StatusSeeOther, "/"},
		// Browsers drop the tab: /\t/evil.example would be //evil.example.
		{"no open redirect: tab", operatorToken, "/\t/evil.example", nil, http.StatusSeeOther, "/"},
		{"no open redirect: newline", operatorToken, "/\n/evil.example", nil, http.StatusSeeOther, "/"},
		{"no open redirect: inner backslash", operatorToken, "/x/..\\evil.example", nil, http.StatusSeeOther, "/"},
		{"a local path with a query is kept", operatorToken, "/runs?suite=a%2Fb", nil, http.StatusSeeOther, "/runs?suite=a%2Fb"},
		{"another site's form", operatorToken, "/", []string{"Origin", "https://evil.example"}, http.StatusForbidden, ""},
		{"another site, no Origin", operatorToken, "/", []string{"Sec-Fetch-Site", "cross-site"}, http.StatusForbidden, ""},
		{"this site's form", operatorToken, "/", []string{"Origin", "http://example.com"}, http.StatusSeeOther, "/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := do(s, "POST", "/login", url.Values{"token": {tc.token}, "next": {tc.next}}, nil, tc.hdr...)
			if w.Code != tc.code || w.Header().Get("Location") != tc.location {
				t.Errorf("%d to %q, want %d to %q", w.Code, w.Header().Get("Location"), tc.code, tc.location)
			}
			if got := len(w.Result().Cookies()) > 0; got != (tc.code == http.StatusSeeOther) {
				t.Errorf("cookie set: %v", got)
			}
		})
	}
}

// TestLoginThrottled: an address that guessed wrong too often is refused, the right token
// included, until its budget refills; other addresses log in meanwhile.
func TestLoginThrottled(t *testing.T) {
	now := t0
	clock := func() time.Time { return now }
	guesses, err := authlimit.New(authlimit.Config{Burst: 3, Every: 10 * time.Second}, clock, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Operators: []Token{{Name: "ops", Secret: operatorToken}}, Now: clock, Guesses: guesses}, Deps{Source: newFake()})
	if err != nil {
		t.Fatal(err)
	}
	const guesser, other = "198.51.100.9:5000", "198.51.100.10:5000"
	for _, tc := range []struct {
		name     string
		advance  time.Duration
		token    string
		from     string
		code     int
		retry    string
		loggedIn bool
	}{
		{name: "wrong 1", token: "guess-1", from: guesser, code: http.StatusUnauthorized},
		{name: "wrong 2", token: "guess-2", from: guesser, code: http.StatusUnauthorized},
		{name: "wrong 3", token: "guess-3", from: guesser, code: http.StatusUnauthorized},
		{name: "the right token, unread", token: operatorToken, from: guesser, code: http.StatusTooManyRequests, retry: "10"},
		{name: "another address logs in", token: operatorToken, from: other, code: http.StatusSeeOther, loggedIn: true},
		{name: "still refused partway", advance: 5 * time.Second, token: operatorToken, from: guesser, code: http.StatusTooManyRequests, retry: "5"},
		{name: "one attempt back", advance: 5 * time.Second, token: operatorToken, from: guesser, code: http.StatusSeeOther, loggedIn: true},
	} {
		now = now.Add(tc.advance)
		w := do(s, "POST", "/login", url.Values{"token": {tc.token}, "next": {"/"}}, nil, "RemoteAddr", tc.from)
		if w.Code != tc.code || w.Header().Get("Retry-After") != tc.retry {
			t.Fatalf("%s: %d, Retry-After %q; want %d, %q", tc.name, w.Code, w.Header().Get("Retry-After"), tc.code, tc.retry)
		}
		if got := len(w.Result().Cookies()) > 0; got != tc.loggedIn {
			t.Fatalf("%s: session cookie set: %v", tc.name, got)
		}
		if tc.code == http.StatusTooManyRequests && !strings.Contains(w.Body.String(), "Too many wrong tokens") {
			t.Errorf("%s: the page does not say why: %s", tc.name, textOf(parseHTML(t, w.Body.Bytes())))
		}
	}
}

// TestOnlyAPresentedTokenCostsAGuess: another site's page can make a visitor's browser post
// the login form and load a login link, with a wrong token or none; none of it may spend the
// visitor's budget. Only a wrong token the visitor's own page sent counts.
func TestOnlyAPresentedTokenCostsAGuess(t *testing.T) {
	guesses, err := authlimit.New(authlimit.Config{Burst: 2, Every: time.Hour}, func() time.Time { return t0 }, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, link := range []bool{false, true} {
		s, err := New(Config{Operators: []Token{{Name: "ops", Secret: operatorToken}}, Now: func() time.Time { return t0 }, Guesses: guesses, LinkLogin: link}, Deps{Source: newFake()})
		if err != nil {
			t.Fatal(err)
		}
		const from = "198.51.100.20:5000"
		for _, tc := range []struct {
			name, method, target, token string
			hdr                         []string
			code                        int
		}{
			{"a form of another site", "POST", "/login", "guess", []string{"Origin", "https://evil.example"}, http.StatusForbidden},
			{"a form of another port", "POST", "/login", "guess", []string{"Origin", "http://example.com:8081"}, http.StatusForbidden},
			{"another site, no Origin", "POST", "/login", "guess", []string{"Sec-Fetch-Site", "cross-site"}, http.StatusForbidden},
			{"an opaque origin", "POST", "/login", "guess", []string{"Origin", "null"}, http.StatusForbidden},
			{"an empty token", "POST", "/login", "", nil, http.StatusUnauthorized},
			{"an empty token from another site", "POST", "/login", "", []string{"Sec-Fetch-Site", "cross-site"}, http.StatusForbidden},
		} {
			for range 5 {
				w := do(s, tc.method, tc.target, url.Values{"token": {tc.token}, "next": {"/"}}, nil, append([]string{"RemoteAddr", from}, tc.hdr...)...)
				if w.Code != tc.code {
					t.Fatalf("%s: %d, want %d", tc.name, w.Code, tc.code)
				}
			}
		}
		if link {
			for _, tc := range []struct {
				name, target string
				hdr          []string
				code         int
			}{
				{"a link loaded as another site's image", "/?token=guess", []string{"Sec-Fetch-Site", "cross-site", "Sec-Fetch-Dest", "image"}, http.StatusForbidden},
				{"a link loaded in another site's frame", "/?token=guess", []string{"Sec-Fetch-Site", "same-site", "Sec-Fetch-Dest", "iframe"}, http.StatusForbidden},
				{"a link without its token", "/?token=", nil, http.StatusUnauthorized},
			} {
				for range 5 {
					if w := do(s, "GET", tc.target, nil, nil, append([]string{"RemoteAddr", from}, tc.hdr...)...); w.Code != tc.code {
						t.Fatalf("%s: %d, want %d", tc.name, w.Code, tc.code)
					}
				}
			}
		}
		if w := do(s, "POST", "/login", url.Values{"token": {operatorToken}, "next": {"/"}}, nil, "RemoteAddr", from); w.Code != http.StatusSeeOther {
			t.Fatalf("link login %v: after forged and empty attempts, the right token: %d, want 303\n%s", link, w.Code, textOf(parseHTML(t, w.Body.Bytes())))
		}
	}
	// A wrong token of the visitor's own page does count: two spend the budget.
	s, err := New(Config{Operators: []Token{{Name: "ops", Secret: operatorToken}}, Now: func() time.Time { return t0 }, Guesses: guesses}, Deps{Source: newFake()})
	if err != nil {
		t.Fatal(err)
	}
	const guesser = "198.51.100.21:5000"
	for _, tok := range []string{"guess-1", "guess-2"} {
		if w := do(s, "POST", "/login", url.Values{"token": {tok}}, nil, "RemoteAddr", guesser, "Origin", "http://example.com"); w.Code != http.StatusUnauthorized {
			t.Fatalf("wrong token %s: %d, want 401", tok, w.Code)
		}
	}
	if w := do(s, "POST", "/login", url.Values{"token": {operatorToken}}, nil, "RemoteAddr", guesser); w.Code != http.StatusTooManyRequests {
		t.Fatalf("after two wrong tokens: %d, want 429", w.Code)
	}
}

func TestLogoutAndExpiry(t *testing.T) {
	src := newFake()
	now := t0
	s, err := New(Config{Operators: []Token{{Name: "ops", Secret: operatorToken}}, SessionTTL: time.Hour, Now: func() time.Time { return now }}, Deps{Source: src})
	if err != nil {
		t.Fatal(err)
	}
	c := login(t, s, operatorToken)
	w := do(s, "GET", "/", nil, c)
	if w.Code != http.StatusOK {
		t.Fatalf("logged in: %d", w.Code)
	}
	token := csrfOf(t, w.Body.Bytes())
	if w := do(s, "POST", "/logout", url.Values{}, c); w.Code != http.StatusForbidden {
		t.Errorf("logout without the CSRF token: %d", w.Code)
	}
	if w := do(s, "POST", "/logout", url.Values{"csrf": {token}}, c); w.Code != http.StatusSeeOther {
		t.Errorf("logout: %d", w.Code)
	}
	if w := do(s, "GET", "/", nil, c); w.Code != http.StatusSeeOther {
		t.Errorf("the session outlived its logout: %d", w.Code)
	}
	c = login(t, s, operatorToken)
	now = now.Add(time.Hour)
	if w := do(s, "GET", "/", nil, c); w.Code != http.StatusSeeOther {
		t.Errorf("the session outlived its hour: %d", w.Code)
	}
}

func TestCancel(t *testing.T) {
	s, src := withHostile(t)
	op, viewer := login(t, s, operatorToken), login(t, s, viewerToken)
	page := do(s, "GET", "/runs/r2", nil, op)
	if !strings.Contains(page.Body.String(), `action="/runs/r2/cancel"`) {
		t.Fatalf("no cancel form for an operator on a running run:\n%s", page.Body)
	}
	opCSRF := csrfOf(t, page.Body.Bytes())
	vpage := do(s, "GET", "/runs/r2", nil, viewer)
	if strings.Contains(vpage.Body.String(), `/cancel"`) {
		t.Error("a viewer is shown the cancel form")
	}
	viewerCSRF := csrfOf(t, vpage.Body.Bytes()) // the logout form's
	// No GET cancels anything, whatever it asks.
	for _, target := range []string{"/runs/r2/cancel", "/runs/r2?cancel=1", "/runs/r2/cancel?csrf=" + opCSRF} {
		do(s, "GET", target, nil, op)
		do(s, "HEAD", target, nil, op)
	}
	if got := src.cancels(); len(got) != 0 {
		t.Fatalf("a GET cancelled %v", got)
	}
	for _, tc := range []struct {
		name   string
		cookie *http.Cookie
		csrf   string
		hdr    []string
		code   int
	}{
		{"no session", nil, opCSRF, nil, http.StatusUnauthorized},
		{"a viewer", viewer, viewerCSRF, nil, http.StatusForbidden},
		{"no CSRF token", op, "", nil, http.StatusForbidden},
		{"another session's CSRF token", op, viewerCSRF, nil, http.StatusForbidden},
		{"another site's form", op, opCSRF, []string{"Origin", "https://evil.example"}, http.StatusForbidden},
		{"an opaque origin", op, opCSRF, []string{"Origin", "null"}, http.StatusForbidden},
		{"an opaque origin of another site", op, opCSRF, []string{"Origin", "null", "Sec-Fetch-Site", "cross-site"}, http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			form := url.Values{}
			if tc.csrf != "" {
				form.Set("csrf", tc.csrf)
			}
			w := do(s, "POST", "/runs/r2/cancel", form, tc.cookie, tc.hdr...)
			if w.Code != tc.code {
				t.Errorf("status %d, want %d", w.Code, tc.code)
			}
			if got := src.cancels(); len(got) != 0 {
				t.Errorf("cancelled: %v", got)
			}
		})
	}
	w := do(s, "POST", "/runs/r2/cancel", url.Values{"csrf": {opCSRF}}, op, "Origin", "http://example.com")
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/runs/r2" {
		t.Fatalf("operator's cancel: %d to %q\n%s", w.Code, w.Header().Get("Location"), w.Body)
	}
	if got := src.cancels(); len(got) != 1 || got[0] != "r2" {
		t.Errorf("cancelled %v, want [r2]", got)
	}
	if w := do(s, "POST", "/runs/nope/cancel", url.Values{"csrf": {opCSRF}}, op); w.Code != http.StatusNotFound {
		t.Errorf("cancelling an unknown run: %d", w.Code)
	}
}

func TestAnonymousLoopbackOnly(t *testing.T) {
	src := newFake()
	st, rep, res := bigRun("r1", 3, pb.RunState_RUN_STATE_RUNNING, false, "")
	src.add(st, rep, res)
	s, err := New(Config{}, Deps{Source: src})
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{"evil.example", "evil.example:8080", "10.0.0.1:8080"} {
		if w := do(s, "GET", "/", nil, nil, "Host", host); w.Code != http.StatusForbidden {
			t.Errorf("Host %s: %d, want 403", host, w.Code)
		}
	}
	w := do(s, "GET", "/runs/r1", nil, nil, "Host", "127.0.0.1:8080")
	if w.Code != http.StatusOK {
		t.Fatalf("loopback: %d", w.Code)
	}
	if strings.Contains(w.Body.String(), "Log out") {
		t.Error("a token-less viewer offers a logout")
	}
	var c *http.Cookie
	for _, x := range w.Result().Cookies() {
		c = x
	}
	if c == nil || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode {
		t.Fatalf("the anonymous session's cookie: %+v", c)
	}
	token := csrfOf(t, w.Body.Bytes())
	if w := do(s, "POST", "/runs/r1/cancel", url.Values{}, c, "Host", "localhost:8080"); w.Code != http.StatusForbidden {
		t.Errorf("anonymous cancel without the CSRF token: %d", w.Code)
	}
	if w := do(s, "POST", "/runs/r1/cancel", url.Values{"csrf": {token}}, c, "Host", "evil.example"); w.Code != http.StatusForbidden {
		t.Errorf("anonymous cancel for a foreign Host: %d", w.Code)
	}
	if len(src.cancels()) != 0 {
		t.Fatal("cancelled without the token")
	}
	if w := do(s, "POST", "/runs/r1/cancel", url.Values{"csrf": {token}}, c, "Host", "[::1]:8080"); w.Code != http.StatusSeeOther || len(src.cancels()) != 1 {
		t.Errorf("anonymous cancel on loopback: %d, %v", w.Code, src.cancels())
	}
}

func TestNewRefuses(t *testing.T) {
	src := newFake()
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"viewer tokens alone", Config{Viewers: []Token{{Name: "v", Secret: "x"}}}},
		{"a token in both lists", Config{Operators: []Token{{Name: "o", Secret: "x"}}, Viewers: []Token{{Name: "v", Secret: "x"}}}},
		{"an empty token", Config{Operators: []Token{{Name: "o", Secret: ""}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(tc.cfg, Deps{Source: src}); err == nil {
				t.Error("accepted")
			}
		})
	}
	if _, err := New(Config{}, Deps{}); err == nil {
		t.Error("no source accepted")
	}
}

// rowsOf returns the data-case of the cases table's rows.
func rowsOf(t *testing.T, body []byte) []string {
	t.Helper()
	var out []string
	for _, tr := range elements(parseHTML(t, body), "tr") {
		if c, ok := attr(tr, "data-case"); ok {
			out = append(out, c)
		}
	}
	return out
}

func TestRunPagePaginatesTenThousandCases(t *testing.T) {
	src := newFake()
	st, rep, _ := bigRun("big", 10_000, pb.RunState_RUN_STATE_COMPLETED, false, "")
	src.add(st, rep, nil)
	s := testServer(t, src)
	op := login(t, s, operatorToken)
	for _, tc := range []struct {
		name, query     string
		rows            int
		first, last     string
		pagerText, next string
	}{
		{"first page", "", 200, "case-00000", "case-00199", "1–200 of 10000 cases · page 1 of 50", "/runs/big?page=2"},
		{"a middle page", "?page=7", 200, "case-01200", "case-01399", "page 7 of 50", "/runs/big?page=8"},
		{"past the end is the last page", "?page=99", 200, "case-09800", "case-09999", "page 50 of 50", ""},
		{"failing only", "?status=failed", 200, "case-00000", "case-01990", "1–200 of 1000 cases · page 1 of 5", "/runs/big?page=2&status=failed"},
		{"failing, by skill", "?status=failing&skill=skill-010", 100, "case-00010", "case-09910", "100 cases", ""},
		{"passing, by skill", "?status=passed&skill=skill-011", 100, "case-00011", "case-09911", "100 cases", ""},
		{"failing of a skill that passes", "?status=failing&skill=skill-011", 0, "", "", "0 cases", ""},
		{"a skill", "?skill=skill-007&page=1", 100, "case-00007", "case-09907", "100 cases", ""},
		{"nothing matches", "?agent=nobody", 0, "", "", "0 cases", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := do(s, "GET", "/runs/big"+tc.query, nil, op)
			if w.Code != http.StatusOK {
				t.Fatalf("status %d", w.Code)
			}
			rows := rowsOf(t, w.Body.Bytes())
			if len(rows) != tc.rows {
				t.Fatalf("%d rows, want %d", len(rows), tc.rows)
			}
			if tc.rows > 0 && (rows[0] != tc.first || rows[len(rows)-1] != tc.last) {
				t.Errorf("rows %s…%s, want %s…%s", rows[0], rows[len(rows)-1], tc.first, tc.last)
			}
			doc := parseHTML(t, w.Body.Bytes())
			if !strings.Contains(textOf(doc), tc.pagerText) {
				t.Errorf("the pager does not say %q", tc.pagerText)
			}
			var next string
			for _, a := range elements(doc, "a") {
				if rel, _ := attr(a, "rel"); rel == "next" {
					next, _ = attr(a, "href")
				}
			}
			if next != tc.next {
				t.Errorf("next page %q, want %q", next, tc.next)
			}
		})
	}
}

func TestRunsList(t *testing.T) {
	src := newFake()
	for i := range 60 {
		state := pb.RunState_RUN_STATE_COMPLETED
		if i == 59 {
			state = pb.RunState_RUN_STATE_RUNNING
		}
		st, rep, _ := bigRun(fmt.Sprintf("r%02d", i), 1, state, false, "")
		st.Spec.Name = []string{"alpha", "beta"}[i%2]
		if i%3 == 0 {
			st.Spec.Priority = pb.Priority_PRIORITY_ON_DEMAND
		}
		src.add(st, rep, nil)
	}
	s := testServer(t, src)
	op := login(t, s, operatorToken)
	runIDs := func(body []byte) []string {
		var out []string
		for _, a := range elements(parseHTML(t, body), "a") {
			if h, _ := attr(a, "href"); strings.HasPrefix(h, "/runs/") {
				out = append(out, strings.TrimPrefix(h, "/runs/"))
			}
		}
		return out
	}
	for _, tc := range []struct {
		query string
		n     int
		first string
		live  bool
	}{
		{"", 50, "r59", true},
		{"?page=2", 10, "r09", false},
		{"?suite=alpha", 30, "r58", false},
		{"?lane=ondemand", 20, "r57", false},
		{"?lane=scheduled&suite=beta", 20, "r59", true},
		{"?state=running", 1, "r59", true},
		{"?state=cancelled", 0, "", false},
	} {
		t.Run(tc.query, func(t *testing.T) {
			w := do(s, "GET", "/"+tc.query, nil, op)
			ids := runIDs(w.Body.Bytes())
			if w.Code != http.StatusOK || len(ids) != tc.n || (tc.n > 0 && ids[0] != tc.first) {
				t.Errorf("status %d, %d runs from %v, want %d from %s", w.Code, len(ids), ids, tc.n, tc.first)
			}
			if got := strings.Contains(w.Body.String(), `data-live="1"`); got != tc.live {
				t.Errorf("live %v, want %v", got, tc.live)
			}
		})
	}
}

func TestSkillPage(t *testing.T) {
	s, _ := withHostile(t)
	op := login(t, s, operatorToken)
	w := do(s, "GET", "/skills/deploy-checklist?suite=nightly", nil, op)
	doc := parseHTML(t, w.Body.Bytes())
	text := textOf(doc)
	if w.Code != http.StatusOK || len(elements(doc, "rect")) != 3 {
		t.Fatalf("status %d, %d bars\n%s", w.Code, len(elements(doc, "rect")), text)
	}
	for _, want := range []string{"62.5% of 8 decided jobs passed over the last 3 runs", "25.0%", "100.0%", "r-1"} {
		if !strings.Contains(text, want) {
			t.Errorf("the skill page does not say %q:\n%s", want, text)
		}
	}
	// No suite: pick one; no history: say so.
	w = do(s, "GET", "/skills/deploy-checklist", nil, op)
	if !strings.Contains(textOf(parseHTML(t, w.Body.Bytes())), "Pick the suite") || !strings.Contains(w.Body.String(), `<option value="nightly `) {
		t.Errorf("without a suite:\n%s", w.Body)
	}
	src := newFake()
	bare := testServer(t, src)
	w = do(bare, "GET", "/skills/x?suite=s", nil, login(t, bare, operatorToken))
	if !strings.Contains(w.Body.String(), "keeps no history") {
		t.Errorf("without history:\n%s", w.Body)
	}
}

func TestPagesGolden(t *testing.T) {
	s, _ := withHostile(t)
	op := login(t, s, operatorToken)
	for _, tc := range []struct{ name, target string }{
		{"run", "/runs/r1"},
		{"case", hostileCaseHref("r1")},
		{"runs", "/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := do(s, "GET", tc.target, nil, op)
			if w.Code != http.StatusOK {
				t.Fatalf("status %d", w.Code)
			}
			testutil.Golden(t, filepath.Join("testdata", tc.name+".html"), w.Body.Bytes())
		})
	}
}

func TestTrajectoryDownload(t *testing.T) {
	s, _ := withHostile(t)
	op := login(t, s, operatorToken)
	page := do(s, "GET", hostileCaseHref("r1"), nil, op)
	m := regexp.MustCompile(`href="(/runs/r1/trajectory\?[^"]+)"`).FindStringSubmatch(page.Body.String())
	if m == nil {
		t.Fatal("the case page links no trajectory")
	}
	w := do(s, "GET", html.UnescapeString(m[1]), nil, op)
	if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "application/json" || !strings.HasPrefix(w.Header().Get("Content-Disposition"), "attachment") ||
		w.Body.String() != string(trajectoryJSON(t)) {
		t.Errorf("download: %d %v\n%.200s", w.Code, w.Header(), w.Body)
	}
	if w := do(s, "GET", "/runs/r1/trajectory?skill=deploy-checklist&case=usage-error&epoch=1", nil, op); w.Code != http.StatusNotFound {
		t.Errorf("a command case's trajectory: %d", w.Code)
	}
}
