package monitoring_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

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

// Exported metrics the dashboard deliberately leaves off.
var leftOff = map[string]string{
	"skillfleet_coordinator_swept_total": "retention housekeeping, not a health signal",
}

func TestDashboardQueriesMatchExportedMetrics(t *testing.T) {
	data, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	metrics := exported(t)
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
			for _, m := range metrics.Check(t, "panel "+p.Title, tg.Expr) {
				used[m] = true
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

// What the Helm chart ships; the chart can read only files inside it.
const (
	dashboardFile = "../helm/skillfleet/files/dashboard.json"
	alertsFile    = "../helm/skillfleet/files/alerts.yaml"
)
