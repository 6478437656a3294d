package coordinator

import (
	"testing"

	"github.com/skillfleet/skillfleet/report"
)

func TestReportCacheIsBoundedByCases(t *testing.T) {
	rep := func(n int) report.Report { return report.Report{Cases: make([]report.Case, n)} }
	c := newReportCache(100)
	c.put("a", rep(60))
	c.put("b", rep(30))
	if _, ok := c.get("a"); !ok {
		t.Fatal("a evicted while under the bound")
	}
	c.put("c", rep(30)) // 120 cases: the oldest goes
	if _, ok := c.get("a"); ok {
		t.Fatal("a kept beyond the bound")
	}
	if _, ok := c.get("c"); !ok || c.cases != 60 {
		t.Fatalf("c missing or count %d, want 60", c.cases)
	}
	c.put("huge", rep(500)) // a report over the bound alone is still kept (the newest)
	if _, ok := c.get("huge"); !ok || len(c.order) != 1 {
		t.Fatalf("huge report: kept=%v, %d entries", ok, len(c.order))
	}
	c.put("huge", rep(10)) // replacing updates the count
	if c.cases != 10 {
		t.Fatalf("cases after replace = %d, want 10", c.cases)
	}
}
