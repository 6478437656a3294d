package fleet

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/fleet/fleettest"
	"github.com/skillfleet/skillfleet/internal/authlimit"
	"github.com/skillfleet/skillfleet/internal/browsertest"
	"github.com/skillfleet/skillfleet/internal/testutil"
	"github.com/skillfleet/skillfleet/worker"
)

// attackPage is a page of another site that makes its visitor's browser knock on the
// coordinator at target: no-cors fetches of the API without a token, and login forms posted
// with a wrong token and with none, each n times. Nothing it sends can carry a token the
// browser holds, so none of it may cost the visitor's address a guess.
func attackPage(target string, n int) string {
	return fmt.Sprintf(`<!doctype html><title>cat pictures</title><body>
<script>
const target = %q, n = %d;
const tries = [];
for (let i = 0; i < n; i++) {
  tries.push(fetch(target + "/v1/runs", {mode: "no-cors", credentials: "include"}).catch(() => {}));
  tries.push(fetch(target + "/v1/runs/r-any/results", {mode: "no-cors"}).catch(() => {}));
  tries.push(fetch(target + "/login", {mode: "no-cors", method: "POST", credentials: "include",
    body: new URLSearchParams({token: "guess-" + i, next: "/"})}).catch(() => {}));
  tries.push(fetch(target + "/login", {mode: "no-cors", method: "POST",
    body: new URLSearchParams({token: "", next: "/"})}).catch(() => {}));
  // A real form, posted into a frame of its own, as a page without script would.
  const f = document.createElement("iframe");
  f.name = "f" + i;
  f.style.display = "none";
  document.body.appendChild(f);
  const form = document.createElement("form");
  form.method = "POST";
  form.action = target + "/login";
  form.target = f.name;
  const tok = document.createElement("input");
  tok.name = "token";
  tok.value = "form-guess-" + i;
  form.appendChild(tok);
  document.body.appendChild(form);
  form.submit();
}
Promise.all(tries).then(() => { const p = document.createElement("p"); p.id = "done"; p.textContent = "sent"; document.body.appendChild(p); });
</script>
</body>`, target, n)
}

// TestAnotherSitesPageCannotLockAVisitorOut: the review's lockout. Any web page could make its
// visitor's browser send the API requests without a token, and each counted as a wrong guess
// against the visitor's address (or its whole NAT): 25 of them locked the address out of the
// API and the viewer's login. A page of another origin (another port, and another loopback
// address, which is another site) fires 25 rounds of no-cors fetches and form posts at the
// coordinator; afterwards the same browser still logs in with the right token, and the API
// still answers the right token from that address.
func TestAnotherSitesPageCannotLockAVisitorOut(t *testing.T) {
	b := browsertest.Start(t)
	exec := &fleettest.Executor{}
	f, err := StartInProcess(context.Background(), InProcessConfig{
		DataDir: t.TempDir(), Workers: 1, Slots: 1, Queue: testQueue(), Executor: exec,
		Worker: worker.Config{RetryDelay: 50 * time.Millisecond, FetchWait: 100 * time.Millisecond, DrainGrace: time.Second},
		Log:    zaptest.NewLogger(t).Named(t.Name()),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close(context.Background()) })
	t.Cleanup(exec.ReleaseAll)
	// One budget of wrong tokens for the API and the login, of the coordinator's size; it
	// refills only hourly, so that the test's own pace cannot hide a spent budget.
	limits := authlimit.DefaultConfig()
	limits.Every = time.Hour
	guesses, err := authlimit.New(limits, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	const secret = "op-secret-0123456789"
	api := coordinator.APIConfig{Tokens: []coordinator.Token{{Name: "ops", Secret: secret}}, Guesses: guesses}
	h, err := CoordinatorHandler(f.Coordinator, api, WebConfig{}, Tenancy{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var fromElsewhere atomic.Int64
	coord := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Chromium says where a request comes from on every request to a loopback address
		// (Origin it leaves off a no-cors GET).
		if s := r.Header.Get("Sec-Fetch-Site"); s == "cross-site" || s == "same-site" {
			fromElsewhere.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(coord.Close)

	const rounds = 25
	for _, host := range []string{"127.0.0.1", "127.0.0.2"} {
		l, err := net.Listen("tcp", host+":0")
		if err != nil {
			t.Fatal(err)
		}
		page := attackPage(coord.URL, rounds)
		evil := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = io.WriteString(w, page)
		}))
		evil.Listener.Close()
		evil.Listener = l
		evil.Start()
		t.Cleanup(evil.Close)

		before := fromElsewhere.Load()
		p := b.Open(t, evil.URL+"/")
		if got := p.Text("#done"); got != "sent" {
			t.Fatalf("the page of %s did not send its requests: %q", evil.URL, got)
		}
		// The fetches are answered; the forms posted into frames may still be arriving.
		testutil.Eventually(t, 30*time.Second, 20*time.Millisecond, func() bool { return fromElsewhere.Load()-before >= 5*rounds },
			"the coordinator got %d of the %d requests of %s's page", fromElsewhere.Load()-before, 5*rounds, evil.URL)
	}

	login := b.Open(t, coord.URL+"/login")
	login.Fill("#token", secret)
	login.Submit("#token")
	if body := login.Text("body"); strings.Contains(body, "Too many wrong tokens") || !strings.Contains(body, "ops") {
		t.Fatalf("after another site's page knocked, the right token did not log in (%s):\n%s", login.URL(), body)
	}
	req, _ := http.NewRequest(http.MethodGet, coord.URL+"/v1/runs", nil)
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("after another site's page knocked, the API answered the right token from the same address %d: %s", resp.StatusCode, body)
	}
}
