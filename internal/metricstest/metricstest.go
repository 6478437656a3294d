// Package metricstest checks PromQL written for skillfleet (the Grafana dashboard, the alert
// rules) against the metrics the code registers: every series it reads must exist, with every
// label it selects or sums by. Metrics is a prometheus.Registerer that records what is
// registered; the tests that use it register the parts themselves, so this package wires
// nothing and imports none of them.
package metricstest

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics maps every registered metric name to its label names.
type Metrics map[string][]string

// Register records what c describes. A gathered registry would not do: a vector shows no
// series until it has one.
func (m Metrics) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc, 64)
	go func() { c.Describe(ch); close(ch) }()
	for desc := range ch {
		name, labels := parseDesc(desc.String())
		m[name] = append(labels, m[name]...)
	}
	return nil
}

// MustRegister implements prometheus.Registerer.
func (m Metrics) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		_ = m.Register(c)
	}
}

// Unregister implements prometheus.Registerer.
func (m Metrics) Unregister(prometheus.Collector) bool { return true }

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

// Series maps a queried series name to the metric that exports it and the labels it has
// (histograms export _bucket, _sum and _count series; only _bucket has le).
func (m Metrics) Series(name string) (metric string, labels []string, ok bool) {
	if l, ok := m[name]; ok {
		return name, l, true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, found := strings.CutSuffix(name, suffix); found {
			if l, ok := m[base]; ok {
				if suffix == "_bucket" {
					l = append(slices.Clone(l), "le")
				}
				return base, l, true
			}
		}
	}
	return "", nil, false
}

var (
	metricRef = regexp.MustCompile(`skillfleet_[a-z0-9_]+`)
	selector  = regexp.MustCompile(`(skillfleet_[a-z0-9_]+)\{([^}]*)\}`)
	matcher   = regexp.MustCompile(`(\w+)\s*(?:=~|!~|!=|=)`)
	byClause  = regexp.MustCompile(`(?:by|without) \(([^)]*)\)`)
)

// scrapeLabels are on every series without the code registering them: Prometheus adds them.
var scrapeLabels = []string{"job", "instance"}

// Check reports (as test errors naming where) every series expr reads that is not exported,
// and every label it selects or aggregates by that the series does not have. It returns the
// metrics expr reads.
func (m Metrics) Check(t *testing.T, where, expr string) []string {
	t.Helper()
	names := metricRef.FindAllString(expr, -1)
	if len(names) == 0 {
		t.Errorf("%s: %q reads no skillfleet metric", where, expr)
	}
	var used []string
	for _, n := range names {
		metric, _, ok := m.Series(n)
		if !ok {
			t.Errorf("%s: %s is not exported by skillfleet", where, n)
			continue
		}
		used = append(used, metric)
	}
	has := func(n, label string) bool {
		_, labels, ok := m.Series(n)
		return ok && (slices.Contains(labels, label) || slices.Contains(scrapeLabels, label))
	}
	for _, s := range selector.FindAllStringSubmatch(expr, -1) {
		for _, l := range matcher.FindAllStringSubmatch(s[2], -1) {
			if !has(s[1], l[1]) {
				t.Errorf("%s: %s has no label %q", where, s[1], l[1])
			}
		}
	}
	for _, by := range byClause.FindAllStringSubmatch(expr, -1) {
		for _, l := range strings.Split(by[1], ",") {
			for _, n := range names {
				if l = strings.TrimSpace(l); !has(n, l) {
					t.Errorf("%s: aggregates %s by %q, a label it does not have", where, n, l)
				}
			}
		}
	}
	return used
}
