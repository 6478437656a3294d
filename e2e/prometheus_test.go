package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/internal/testutil"
)

const (
	alertsFile    = "../deploy/helm/skillfleet/files/alerts.yaml"
	dashboardFile = "../deploy/helm/skillfleet/files/dashboard.json"
)

// TestMonitoringOnPrometheus has a real Prometheus (Debian's package; .ci/run installs it)
// scrape a running coordinator and worker with the shipped alert rules loaded. Every rule must
// evaluate without error, every dashboard query must run, the panels a fleet without a model
// feeds must show data, and stopping the worker must raise SkillfleetNoWorkers.
func TestMonitoringOnPrometheus(t *testing.T) {
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatal("prometheus is not installed (apt-get install prometheus; .ci/run does it)")
	}
	f := startFleet(t, nil)
	dir := t.TempDir()
	rules, err := filepath.Abs(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	conf := writeFile(t, dir, "prometheus.yml", fmt.Sprintf(`global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: [%q]
scrape_configs:
  - job_name: coordinator
    static_configs: [{targets: [%q]}]
  - job_name: worker
    static_configs: [{targets: [%q]}]
`, rules, f.coordinatorHTTP, f.workerMetrics))
	addr := testutil.FreeAddr(t)
	prom := start(t, "prometheus", bin, nil, "--config.file="+conf, "--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
		"--web.listen-address="+addr)
	api := "http://" + addr
	waitHTTP(t, prom, api+"/-/ready")

	// Prometheus hands its first targets to the scrapers only after a few seconds; what
	// happens before their first scrape is seen by no rate() or increase().
	eventually(t, "Prometheus scrapes both daemons", func() (bool, string) {
		v, err := queryScalar(api, "sum(up)")
		return err == nil && v == 2, fmt.Sprintf("sum(up) = %v (%v)", v, err)
	})
	// Two runs: a labelled counter appears with its first increment, and increase() sees only
	// what a series gained after Prometheus first saw it.
	for i := range 2 {
		code, out, errOut := runCLI(t, 5*time.Minute, "submit", "--coordinator", f.api, "--token-file", f.tokenFile,
			"--follow", "--skill", "env-selector", "--case", "selects-dev", "--case", "select_dev", examples)
		if code != 1 || !strings.Contains(out, "2 cases: 1 passed, 0 failed, 1 errored") {
			t.Fatalf("submit exit %d, want 1 with 1 passed and 1 errored\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
		}
		// The second run must come after a scrape of the first, or increase() sees one sample;
		// and both daemons are scraped on their own schedules, so each must have been scraped
		// after the run (the worker's job durations feed a panel of their own).
		want := float64(2 * (i + 1))
		eventually(t, fmt.Sprintf("Prometheus has scraped run %d", i+1), func() (bool, string) {
			cases, err := queryScalar(api, "sum(skillfleet_coordinator_cases_total)")
			if err != nil || cases != want {
				return false, fmt.Sprintf("sum of cases = %v (%v), want %v", cases, err, want)
			}
			jobs, err := queryScalar(api, "sum(skillfleet_worker_job_duration_seconds_count)")
			return err == nil && jobs == want, fmt.Sprintf("jobs timed by the worker = %v (%v), want %v", jobs, err, want)
		})
	}

	// Every rule loads and evaluates cleanly.
	var rulesResp struct {
		Data struct {
			Groups []struct {
				Rules []struct {
					Name, Health, LastError string
				}
			}
		}
	}
	eventually(t, "every alert rule evaluates", func() (bool, string) {
		if err := getJSON(api+"/api/v1/rules", &rulesResp); err != nil {
			return false, err.Error()
		}
		var bad []string
		n := 0
		for _, g := range rulesResp.Data.Groups {
			for _, r := range g.Rules {
				n++
				if r.Health != "ok" {
					bad = append(bad, fmt.Sprintf("%s: %s %s", r.Name, r.Health, r.LastError))
				}
			}
		}
		return n == 11 && len(bad) == 0, fmt.Sprintf("%d rules; not ok: %v", n, bad)
	})
	if firing := activeAlerts(t, api); len(firing) != 0 {
		t.Errorf("alerts active on a healthy fleet: %v", firing)
	}

	// Every dashboard query runs; the panels this fleet feeds have data.
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	data, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatal(err)
	}
	// Panels fed by model traffic (agents, the judge) stay empty without a model.
	mustShow := map[string]bool{
		"Case pass rate": true, "Cases by verdict": true, "Active runs": true, "Run duration": true,
		"Jobs finished by verdict": true, "Slot utilisation": true, "Queue wait": true,
		"Job duration p95 by kind": true, "Jobs published": true, "Sandbox start p95 by path": true,
		"Containers": true, "Exec outcomes": true, "Suites: last pass rate": true,
	}
	grafana := strings.NewReplacer("$__range", "10m", "$__rate_interval", "1m")
	queried := 0
	for _, p := range dash.Panels {
		shown := false
		for _, tg := range p.Targets {
			if tg.Expr == "" {
				continue
			}
			queried++
			var res promResult
			if err := getJSON(api+"/api/v1/query?query="+url.QueryEscape(grafana.Replace(tg.Expr)), &res); err != nil || res.Status != "success" {
				t.Errorf("%s: %s: %v %s", p.Title, tg.Expr, err, res.Error)
				continue
			}
			shown = shown || res.hasNumber()
		}
		if mustShow[p.Title] && !shown {
			t.Errorf("panel %q shows no data after two runs", p.Title)
		}
		delete(mustShow, p.Title)
	}
	if len(mustShow) != 0 || queried < 30 {
		t.Errorf("%d queries ran; panels not found in the dashboard: %v", queried, mustShow)
	}
	if v, err := queryScalar(api, grafana.Replace(`sum(increase(skillfleet_coordinator_cases_total{verdict="passed"}[$__range])) / sum(increase(skillfleet_coordinator_cases_total[$__range]))`)); err != nil || v <= 0 || v >= 1 {
		t.Errorf("case pass rate = %v (%v), want strictly between 0 and 1: one case of two passed", v, err)
	}

	// No worker left: the alert that pages for it goes pending within seconds.
	if code := f.worker.stop(t, syscall.SIGTERM, time.Minute); code != 0 {
		t.Errorf("worker exit %d after SIGTERM", code)
	}
	eventually(t, "SkillfleetNoWorkers is raised", func() (bool, string) {
		a := activeAlerts(t, api)
		return strings.Contains(strings.Join(a, " "), "SkillfleetNoWorkers"), fmt.Sprintf("active: %v", a)
	})
}

type promResult struct {
	Status, Error string
	Data          struct {
		ResultType string
		Result     json.RawMessage
	}
}

// hasNumber reports whether a query result holds at least one finite sample.
func (r promResult) hasNumber() bool {
	var vec []struct{ Value [2]any }
	if r.Data.ResultType != "vector" || json.Unmarshal(r.Data.Result, &vec) != nil {
		return false
	}
	for _, s := range vec {
		if v, ok := s.Value[1].(string); ok && v != "NaN" && v != "+Inf" && v != "-Inf" {
			return true
		}
	}
	return false
}

func queryScalar(api, q string) (float64, error) {
	var res promResult
	if err := getJSON(api+"/api/v1/query?query="+url.QueryEscape(q), &res); err != nil {
		return 0, err
	}
	var vec []struct{ Value [2]any }
	if err := json.Unmarshal(res.Data.Result, &vec); err != nil || len(vec) != 1 {
		return 0, fmt.Errorf("%s: %s %s", q, res.Status, res.Data.Result)
	}
	s, _ := vec[0].Value[1].(string)
	return strconv.ParseFloat(s, 64)
}

func activeAlerts(t *testing.T, api string) []string {
	t.Helper()
	var res struct {
		Data struct {
			Alerts []struct {
				Labels map[string]string
				State  string
			}
		}
	}
	if err := getJSON(api+"/api/v1/alerts", &res); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range res.Data.Alerts {
		out = append(out, a.Labels["alertname"]+"("+a.State+")")
	}
	return out
}

func getJSON(u string, v any) error {
	resp, err := http.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(v)
}

// eventually polls cond for up to 30 s and fails t with cond's last word.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30 s: %s", what, why)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
