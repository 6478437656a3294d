package coordinator

import (
	"sync"

	"github.com/skillfleet/skillfleet/report"
)

// reportCache keeps the reports of recently finished runs, so a client fetching a report right
// after its run ends does not make the coordinator replay every result. It is bounded by the
// cases it holds, not by the number of runs: one nightly run can have 100,000 cases. An evicted
// report is rebuilt from the results stream on demand.
type reportCache struct {
	mu       sync.Mutex
	maxCases int
	cases    int
	order    []string
	byID     map[string]report.Report
}

func newReportCache(maxCases int) *reportCache {
	return &reportCache{maxCases: max(maxCases, 1), byID: make(map[string]report.Report)}
}

func (c *reportCache) get(id string) (report.Report, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.byID[id]
	return r, ok
}

// drop forgets a run's report.
func (c *reportCache) drop(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old, ok := c.byID[id]
	if !ok {
		return
	}
	c.cases -= len(old.Cases)
	delete(c.byID, id)
	for i, o := range c.order {
		if o == id {
			c.order = append(c.order[:i], c.order[i+1:]...)
			break
		}
	}
}

func (c *reportCache) put(id string, r report.Report) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.byID[id]; ok {
		c.cases -= len(old.Cases)
	} else {
		c.order = append(c.order, id)
	}
	c.byID[id] = r
	c.cases += len(r.Cases)
	for c.cases > c.maxCases && len(c.order) > 1 {
		oldest := c.order[0]
		c.order = c.order[1:]
		c.cases -= len(c.byID[oldest].Cases)
		delete(c.byID, oldest)
	}
}

// room is how many more cases the cache holds before it evicts.
func (c *reportCache) room() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.maxCases - c.cases
}
