package browsertest

import (
	"bytes"
	"fmt"
	"html"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

// payload is what every hostile page below carries, as markup or as escaped text: the two
// usual ways in, a script element and an event handler attribute.
const payload = `<script>console.log("payload ran"); alert("xss")</script><img src="/nope" onerror="alert('img')">`

// testSite is a loopback server with the pages the tests drive.
func testSite(t *testing.T) *httptest.Server {
	t.Helper()
	page := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprintf(w, "<!doctype html><html><head><title>t</title></head><body>%s</body></html>", body)
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "session", Value: "s3cret", Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		page(`<h1 id="title">Home</h1>
<p><a href="/next">Next   page</a> <a href="/elsewhere">Elsewhere</a></p>
<details><summary>More</summary><p id="more">Folded text, and a hidden <a href="/hidden">Next page</a></p></details>
<form id="search" action="/search" method="get">
  <input id="q" name="q" value="old value" required>
  <button id="go" type="submit" name="button" value="go">Search</button>
</form>`)(w, r)
	})
	mux.HandleFunc("GET /next", page(`<h1 id="title">Second page</h1>`))
	mux.HandleFunc("GET /twice", page(`<a href="/next">Same</a> <a href="/next">Same</a>`))
	mux.HandleFunc("GET /covered", page(`<a href="/next">Under</a><div style="position:fixed;inset:0;background:#fff"></div>`))
	mux.HandleFunc("GET /search", func(w http.ResponseWriter, r *http.Request) {
		page(`<p id="result">You searched for: `+html.EscapeString(r.URL.Query().Get("q"))+`</p><p id="button">`+html.EscapeString(r.URL.Query().Get("button"))+`</p>`)(w, r)
	})
	mux.HandleFunc("GET /alert", page(`<p id="out">`+payload+`</p>`))
	mux.HandleFunc("GET /escaped", page(`<p id="out">`+html.EscapeString(payload)+`</p>`))
	mux.HandleFunc("GET /app", page(`<p id="out">`+html.EscapeString(payload)+`</p><p id="app"></p><script src="/app.js"></script>`))
	mux.HandleFunc("GET /app.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		fmt.Fprint(w, `document.getElementById("app").textContent = "app ran";`)
	})
	mux.HandleFunc("GET /csp", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'none'; base-uri 'none'")
		page(`<p id="out">`+payload+`</p>`)(w, r)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// spyTB records the failures of the checks under test instead of failing the test.
type spyTB struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (s *spyTB) Error(args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errors = append(s.errors, fmt.Sprint(args...))
}

func (s *spyTB) Errorf(format string, args ...any) { s.Error(fmt.Sprintf(format, args...)) }

func TestBrowser(t *testing.T) {
	srv := testSite(t)
	b := Start(t)

	t.Run("link", func(t *testing.T) {
		p := b.Open(t, srv.URL+"/")
		if got := p.Text("#title"); got != "Home" {
			t.Fatalf("title %q, want Home", got)
		}
		p.ClickLink("Next page") // the markup has three spaces: the rendered text has one; the folded link does not count
		if got, want := p.URL(), srv.URL+"/next"; got != want {
			t.Errorf("after ClickLink the URL is %q, want %q", got, want)
		}
		if got := p.Text("#title"); got != "Second page" {
			t.Errorf("after ClickLink the title is %q, want Second page", got)
		}
		p.AssertNoDialogs()
		p.AssertNoScripts() // what the driver evaluates is not the page's
	})

	t.Run("ClickLink refuses", func(t *testing.T) {
		for _, tc := range []struct{ path, text, want string }{
			{"/twice", "Same", `ClickLink("Same"): 2 rendered links have that text`},
			{"/covered", "Under", `ClickLink("Under"): the link is covered by a <div>`},
		} {
			spy := &stopTB{TB: t}
			done := make(chan struct{})
			go func() {
				defer close(done)
				b.Open(spy, srv.URL+tc.path).ClickLink(tc.text)
			}()
			<-done
			if !strings.Contains(spy.how, tc.want) {
				t.Errorf("%s: the test would %q, want it to fail with %q", tc.path, spy.how, tc.want)
			}
		}
	})

	t.Run("click", func(t *testing.T) {
		p := b.Open(t, srv.URL+"/")
		if n := p.Count("details[open]"); n != 0 {
			t.Fatalf("%d open details before the click, want 0", n)
		}
		p.Click("summary")
		if n := p.Count("details[open]"); n != 1 {
			t.Errorf("%d open details after the click, want 1", n)
		}
	})

	t.Run("form", func(t *testing.T) {
		p := b.Open(t, srv.URL+"/")
		const typed = `<b>bold</b> & "quoted" é`
		p.Fill("#q", typed) // replaces "old value"
		p.Submit("#go")
		if !strings.HasPrefix(p.URL(), srv.URL+"/search?q=") {
			t.Errorf("after Submit the URL is %q, want the search page", p.URL())
		}
		if got, want := p.Text("#result"), "You searched for: "+typed; got != want {
			t.Errorf("result %q, want %q", got, want)
		}
		if got := p.Text("#button"); got != "go" {
			t.Errorf("the submit button was sent as %q, want go (Submit on a button sends it as the submitter)", got)
		}
		p.AssertNoScripts()
	})

	t.Run("cookies", func(t *testing.T) {
		p := b.Open(t, srv.URL+"/")
		var found bool
		for _, c := range p.Cookies() {
			if c.Name != "session" {
				continue
			}
			found = true
			if c.Value != "s3cret" || !c.HTTPOnly || c.SameSite != "Strict" || c.Path != "/" {
				t.Errorf("session cookie %+v, want value s3cret, HttpOnly, SameSite Strict, path /", c)
			}
		}
		if !found {
			t.Errorf("no session cookie among %+v", p.Cookies())
		}
	})

	// The same payload three ways: run (the detectors must catch it, or a clean result below
	// would prove nothing), escaped as text, and blocked by a strict CSP.
	for _, tc := range []struct {
		path       string
		ran        bool
		wantCSP    []string // directives the policy must report
		wantInText bool     // the payload shows as text
	}{
		{path: "/alert", ran: true},
		{path: "/escaped", wantInText: true},
		{path: "/csp", wantCSP: []string{"script-src-elem", "script-src-attr"}},
	} {
		t.Run("payload "+tc.path, func(t *testing.T) {
			spy := &spyTB{TB: t}
			p := b.Open(spy, srv.URL+tc.path)
			p.AssertNoDialogs()
			p.AssertNoScripts()
			dialogs, scripts := p.Dialogs(), p.Scripts()
			if tc.ran {
				if len(dialogs) != 2 || dialogs[0].Message != "xss" || dialogs[1].Message != "img" || dialogs[0].Type != "alert" {
					t.Errorf("dialogs %+v, want alert(\"xss\") then alert('img')", dialogs)
				}
				if len(scripts) != 2 || scripts[0].URL != srv.URL+tc.path || scripts[1].URL != srv.URL+tc.path {
					t.Errorf("scripts %+v, want the script element and the handler, from %s", scripts, srv.URL+tc.path)
				}
				if len(spy.errors) != 2 || !strings.Contains(spy.errors[0], `alert("img")`) || !strings.Contains(spy.errors[1], "2 not allowed") {
					t.Errorf("AssertNoDialogs and AssertNoScripts reported %q, want a failure each, naming the alerts and the scripts", spy.errors)
				}
				if !hasMessage(p.Console(), "console", "payload ran") {
					t.Errorf("console %v, want the payload's console.log", p.Console())
				}
				// The dialogs were dismissed: the page goes on answering.
				if got := p.Text("#out"); got != "" {
					t.Errorf("text %q, want none (the payload is markup)", got)
				}
				return
			}
			if len(dialogs) != 0 || len(scripts) != 0 || len(spy.errors) != 0 {
				t.Errorf("dialogs %+v, scripts %+v, failures %q: want none", dialogs, scripts, spy.errors)
			}
			if hasMessage(p.Console(), "console", "payload ran") {
				t.Errorf("the payload logged to the console: %v", p.Console())
			}
			if got := p.Text("#out"); tc.wantInText && got != payload {
				t.Errorf("text %q, want the payload shown as text %q", got, payload)
			}
			var directives []string
			for _, v := range p.CSPViolations() {
				if v.ReportOnly {
					t.Errorf("CSP violation %v only reported, want it blocked", v)
				}
				directives = append(directives, v.Directive)
			}
			for _, d := range tc.wantCSP {
				if !slices.Contains(directives, d) {
					t.Errorf("CSP violations %v, want one of %s", p.CSPViolations(), d)
				}
			}
			if len(tc.wantCSP) == 0 && len(directives) != 0 {
				t.Errorf("CSP violations %v, want none", p.CSPViolations())
			}
			if len(tc.wantCSP) > 0 && !hasMessage(p.Console(), "security", "Content Security Policy") {
				t.Errorf("console %v, want the browser's CSP errors", p.Console())
			}
		})
	}

	t.Run("allowed script", func(t *testing.T) {
		p := b.Open(t, srv.URL+"/app")
		if got := p.Text("#app"); got != "app ran" {
			t.Errorf("text %q, want app ran (the page's own script)", got)
		}
		if s := p.Scripts(); len(s) != 1 || s[0].URL != srv.URL+"/app.js" {
			t.Errorf("scripts %+v, want app.js alone", s)
		}
		p.AssertNoScripts(srv.URL + "/app.js")
		p.AssertNoDialogs()
	})

	t.Run("file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "report.html")
		doc := `<!doctype html><meta charset="utf-8"><title>report</title><h1 id="title">Run report</h1><pre id="out">` + html.EscapeString(payload) + `</pre>`
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		p := b.Open(t, "file://"+path)
		if got := p.Text("#title"); got != "Run report" {
			t.Errorf("title %q, want Run report", got)
		}
		if got := p.Text("#out"); got != payload {
			t.Errorf("text %q, want %q", got, payload)
		}
		if got := p.HTML(); !strings.Contains(got, `<h1 id="title">Run report</h1>`) || !strings.Contains(got, "&lt;script&gt;") || strings.Contains(got, "<script>") {
			t.Errorf("HTML %q, want the document with the payload escaped", got)
		}
		if got := p.URL(); got != "file://"+path {
			t.Errorf("URL %q, want file://%s", got, path)
		}
		p.AssertNoDialogs()
	})

	t.Run("screenshot", func(t *testing.T) {
		p := b.Open(t, srv.URL+"/")
		file := p.Screenshot("home page")
		if base := filepath.Base(file); base != "TestBrowser_screenshot-home_page.png" {
			t.Errorf("screenshot file %s, want TestBrowser_screenshot-home_page.png", base)
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("the screenshot is not a PNG: %v", err)
		}
		if r := img.Bounds(); r.Dx() < 100 || r.Dy() < 100 {
			t.Errorf("screenshot %v, want at least 100×100", r)
		}
	})
}

// hasMessage reports whether a message from source contains text.
func hasMessage(ms []Message, source, text string) bool {
	for _, m := range ms {
		if m.Source == source && strings.Contains(m.Text, text) {
			return true
		}
	}
	return false
}

// TestStopLeavesNothing checks that a browser's cleanup kills every process of it and removes
// its profile.
func TestStopLeavesNothing(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	var pid int
	var profile string
	t.Run("browser", func(t *testing.T) {
		b := Start(t)
		b.Open(t, "about:blank") // a renderer, so that there are helpers to clean up
		pid, profile = b.pid(), b.profile
		if pid == 0 || len(profileUsers(profile)) < 2 {
			t.Fatalf("pid %d, processes using the profile %v: want the browser and its helpers", pid, profileUsers(profile))
		}
	})
	if profile == "" {
		t.Skip("no browser started")
	}
	if left := profileUsers(profile); len(left) > 0 {
		t.Errorf("processes %v still use %s", left, profile)
	}
	if _, err := os.Stat(profile); !os.IsNotExist(err) {
		t.Errorf("profile %s still there (%v)", profile, err)
	}
	if !isZombie(pid) {
		t.Errorf("browser process %d still runs", pid)
	}
}

func TestNamesDir(t *testing.T) {
	const dir = "/tmp/skillfleet-chromium-12"
	for _, tc := range []struct {
		cmdline string
		want    bool
	}{
		{"chromium\x00--user-data-dir=/tmp/skillfleet-chromium-12\x00about:blank\x00", true},
		{"chromium --type=renderer --user-data-dir=/tmp/skillfleet-chromium-12 --lang=en-US", true},
		{"chrome_crashpad_handler\x00--database=/tmp/skillfleet-chromium-12/chromium/Crash Reports\x00", true},
		{"chromium\x00--user-data-dir=/tmp/skillfleet-chromium-12", true},
		{"chromium\x00--user-data-dir=/tmp/skillfleet-chromium-123\x00", false},
		{"chromium\x00--user-data-dir=/tmp/skillfleet-chromium-123\x00/tmp/skillfleet-chromium-12\x00", true},
		{"bash\x00", false},
	} {
		if got := namesDir([]byte(tc.cmdline), dir); got != tc.want {
			t.Errorf("namesDir(%q) = %v, want %v", tc.cmdline, got, tc.want)
		}
	}
}

func TestFindBinary(t *testing.T) {
	t.Setenv(EnvBinary, "/nonexistent/chromium")
	if _, err := findBinary(); err == nil || !strings.Contains(err.Error(), EnvBinary) {
		t.Errorf("findBinary with %s=/nonexistent/chromium: %v, want an error naming the variable", EnvBinary, err)
	}
	t.Setenv(EnvBinary, "")
	t.Setenv("PATH", t.TempDir())
	if _, err := findBinary(); err == nil || !strings.Contains(err.Error(), "no browser found") {
		t.Errorf("findBinary with an empty PATH: %v, want no browser found", err)
	}
}

// stopTB records how a test would have stopped (Fatal or Skip) and stops the goroutine, as
// the real ones do.
type stopTB struct {
	testing.TB
	how string
}

func (s *stopTB) Fatalf(format string, args ...any) {
	s.how = "fatal: " + fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (s *stopTB) Fatal(args ...any) {
	s.how = "fatal: " + fmt.Sprint(args...)
	runtime.Goexit()
}

func (s *stopTB) Skipf(format string, args ...any) {
	s.how = "skip: " + fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// TestStartWithoutBrowser checks that a missing browser skips the test, unless the browser is
// required, when it fails it.
func TestStartWithoutBrowser(t *testing.T) {
	t.Setenv(EnvBinary, "/nonexistent/chromium")
	for _, tc := range []struct{ required, want string }{
		{"", "skip: "},
		{"required", "fatal: "},
	} {
		t.Setenv(EnvRequired, tc.required)
		spy := &stopTB{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			Start(spy)
		}()
		<-done
		if !strings.HasPrefix(spy.how, tc.want) || !strings.Contains(spy.how, "/nonexistent/chromium") {
			t.Errorf("%s=%q: the test would %q, want %q… naming the binary", EnvRequired, tc.required, spy.how, tc.want)
		}
	}
}

func TestFileName(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"TestWeb/run_page-verdicts", "TestWeb_run_page-verdicts"},
		{"a b/../c:d", "a_b_.._c_d"},
		{"é", "__"},
		{strings.Repeat("x", 200), strings.Repeat("x", 150)},
	} {
		if got := fileName(tc.in); got != tc.want {
			t.Errorf("fileName(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
