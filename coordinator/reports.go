package coordinator

import (
	"sync"

	"github.com/skillfleet/skillfleet/report"
)

// reportCache keeps the reports of the most recently finished runs, so a client fetching a
// report right after its run ends does not make the coordinator replay every result.
type reportCache struct {
	mu    sync.Mutex
	max   int
	order []string
	byID  map[string]report.Report
}

func newReportCache(n int) *reportCache {
	return &reportCache{max: max(n, 1), byID: make(map[string]report.Report)}
}

func (c *reportCache) get(id string) (report.Report, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.byID[id]
	return r, ok
}

func (c *reportCache) put(id string, r report.Report) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byID[id]; !ok {
		c.order = append(c.order, id)
	}
	c.byID[id] = r
	for len(c.order) > c.max {
		delete(c.byID, c.order[0])
		c.order = c.order[1:]
	}
}
