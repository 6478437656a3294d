package grafana_test

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/moby/moby/client"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/agent"
	"github.com/skillfleet/skillfleet/judge"
	"github.com/skillfleet/skillfleet/local"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/sandbox"
)

// described records what collectors describe: every metric name with its label names. A
// gathered registry would not do: a vector shows no series until it has one.
type described map[string][]string

func (d described) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc, 64)
	go func() { c.Describe(ch); close(ch) }()
	for desc := range ch {
		name, labels := parseDesc(desc.String())
		d[name] = append(labels, d[name]...)
	}
	return nil
}

func (d described) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		_ = d.Register(c)
	}
}

func (d described) Unregister(prometheus.Collector) bool { return true }

var (
	descName   = regexp.MustCompile(`fqName: "([^"]+)"`)
	descConst  = regexp.MustCompile(`constLabels: \{([^}]*)\}`)
	descVar    = regexp.MustCompile(`variableLabels: \{([^}]*)\}`)
	constLabel = regexp.MustCompile(`(\w+)=`)
)

func parseDesc(s string) (string, []string) {
	var labels []string
	if m := descConst.FindStringSubmatch(s); m != nil {
		for _, l := range constLabel.FindAllStringSubmatch(m[1], -1) {
			labels = append(labels, l[1])
		}
	}
	if m := descVar.FindStringSubmatch(s); m != nil && m[1] != "" {
		for _, l := range strings.Split(m[1], ",") {
			labels = append(labels, strings.TrimSuffix(strings.TrimPrefix(l, "c("), ")"))
		}
	}
	return descName.FindStringSubmatch(s)[1], labels
}

type noop struct{}

func (noop) Execute(context.Context, *pb.Job, string) (*pb.Result, error) {
	return &pb.Result{Verdict: pb.Verdict_VERDICT_PASSED}, nil
}

// exported builds the coordinator, a worker, a sandbox runner, a model client and a judge the
// way the daemons do and returns what they register.
func exported(t *testing.T) described {
	t.Helper()
	reg := described{}
	ctx := context.Background()
	f, err := local.Start(ctx, local.Config{DataDir: t.TempDir(), Workers: 1, Slots: 1, Executor: noop{}, Log: zap.NewNop(), Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close(ctx) })
	docker, err := client.New(client.FromEnv) // never called: New only registers metrics
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = docker.Close() })
	if _, err := sandbox.New(sandbox.Config{WorkerID: "dashboard-test"}, docker, zap.NewNop(), reg); err != nil {
		t.Fatal(err)
	}
	c, err := agent.NewClient(agent.Endpoint{Name: "e", BaseURL: "http://127.0.0.1:1", Model: "m"}, agent.ClientDeps{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := judge.New(judge.Config{}, judge.Deps{Client: c, Registry: reg}); err != nil {
		t.Fatal(err)
	}
	return reg
}

type dashboard struct {
	UID    string  `json:"uid"`
	Panels []panel `json:"panels"`
}

type panel struct {
	ID      int    `json:"id"`
	Type    string `json:"type"`
	Title   string `json:"title"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

var (
	metricRef = regexp.MustCompile(`skillfleet_[a-z0-9_]+`)
	selector  = regexp.MustCompile(`(skillfleet_[a-z0-9_]+)\{([^}]*)\}`)
	matcher   = regexp.MustCompile(`(\w+)\s*(?:=~|!~|!=|=)`)
	byClause  = regexp.MustCompile(`by \(([^)]*)\)`)
)

// Labels every series has without the code registering them: Prometheus adds job and instance.
var scrapeLabels = []string{"job", "instance"}

// Exported metrics the dashboard deliberately leaves off.
var leftOff = map[string]string{
	"skillfleet_coordinator_swept_total": "retention housekeeping, not a health signal",
}

func TestDashboardQueriesMatchExportedMetrics(t *testing.T) {
	data, err := os.ReadFile("skillfleet.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("skillfleet.json: %v", err)
	}
	metrics := exported(t)
	// series maps a queried series name to the metric that exports it (histograms export
	// _bucket, _sum and _count series; only _bucket has the le label).
	series := func(name string) (metric string, labels []string, ok bool) {
		if l, ok := metrics[name]; ok {
			return name, l, true
		}
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base, found := strings.CutSuffix(name, suffix); found {
				if l, ok := metrics[base]; ok {
					if suffix == "_bucket" {
						l = append(slices.Clone(l), "le")
					}
					return base, l, true
				}
			}
		}
		return "", nil, false
	}
	used := map[string]bool{}
	ids := map[int]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			names := metricRef.FindAllString(tg.Expr, -1)
			if len(names) == 0 {
				t.Errorf("panel %q: query %q reads no skillfleet metric", p.Title, tg.Expr)
			}
			for _, n := range names {
				m, _, ok := series(n)
				if !ok {
					t.Errorf("panel %q: %s is not exported by skillfleet", p.Title, n)
					continue
				}
				used[m] = true
			}
			has := func(n, label string) bool {
				_, labels, ok := series(n)
				return ok && (slices.Contains(labels, label) || slices.Contains(scrapeLabels, label))
			}
			for _, s := range selector.FindAllStringSubmatch(tg.Expr, -1) {
				for _, m := range matcher.FindAllStringSubmatch(s[2], -1) {
					if !has(s[1], m[1]) {
						t.Errorf("panel %q: %s has no label %q", p.Title, s[1], m[1])
					}
				}
			}
			for _, by := range byClause.FindAllStringSubmatch(tg.Expr, -1) {
				for _, l := range strings.Split(by[1], ",") {
					for _, n := range names {
						if l = strings.TrimSpace(l); !has(n, l) {
							t.Errorf("panel %q: sums %s by %q, a label it does not have", p.Title, n, l)
						}
					}
				}
			}
		}
	}
	for name := range metrics {
		if !strings.HasPrefix(name, "skillfleet_") {
			continue
		}
		if _, skip := leftOff[name]; !used[name] && !skip {
			t.Errorf("%s is exported but not on the dashboard (add a panel, or list it in leftOff with the reason)", name)
		}
	}
	if d.UID == "" {
		t.Error("the dashboard has no uid; provisioning needs a stable one")
	}
}
