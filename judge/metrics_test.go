package judge

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/skillfleet/skillfleet/agent"
	"github.com/skillfleet/skillfleet/agent/agenttest"
)

// TestMetricsCountVerdictsSamplesAndSplits runs evaluations one after another on one judge
// and checks the counters after each.
func TestMetricsCountVerdictsSamplesAndSplits(t *testing.T) {
	type counts struct {
		passedModel, passedCache, failedModel, errored    float64
		samplesPassed, samplesFailed, noAnswer, offSchema float64
		split                                             float64
	}
	steps := []struct {
		name    string
		replies []agenttest.Reply
		output  string
		votes   int
		want    counts
	}{
		{"a pass", []agenttest.Reply{verdictReply(true, "ok")}, "out-1", 1,
			counts{passedModel: 1, samplesPassed: 1}},
		{"the same again, from the cache", nil, "out-1", 1,
			counts{passedModel: 1, passedCache: 1, samplesPassed: 1}},
		{"an answer outside the schema", []agenttest.Reply{agenttest.Text("yes", 1, 1)}, "out-2", 1,
			counts{passedModel: 1, passedCache: 1, errored: 1, samplesPassed: 1, offSchema: 1}},
		{"three votes, split 2 to 1", []agenttest.Reply{verdictReply(false, "no"), verdictReply(true, "a"), verdictReply(true, "b")}, "out-3", 3,
			counts{passedModel: 2, passedCache: 1, errored: 1, samplesPassed: 3, samplesFailed: 1, offSchema: 1, split: 1}},
		{"three votes, unanimous after two", []agenttest.Reply{verdictReply(false, "no"), verdictReply(false, "no")}, "out-4", 3,
			counts{passedModel: 2, passedCache: 1, failedModel: 1, errored: 1, samplesPassed: 3, samplesFailed: 3, offSchema: 1, split: 1}},
		{"the endpoint fails", []agenttest.Reply{agenttest.Fail(http.StatusBadRequest)}, "out-5", 1,
			counts{passedModel: 2, passedCache: 1, failedModel: 1, errored: 2, samplesPassed: 3, samplesFailed: 3, noAnswer: 1, offSchema: 1, split: 1}},
	}
	var script []agenttest.Reply
	for _, s := range steps {
		script = append(script, s.replies...)
	}
	srv := agenttest.NewScript(t, script...)
	c, err := agent.NewClient(agent.Endpoint{Name: "judge", BaseURL: srv.BaseURL(), Model: "m", MaxRetries: -1},
		agent.ClientDeps{Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	j, err := New(Config{}, Deps{Client: c, Cache: NewLRU(10), Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range steps {
		if _, _, err := j.Evaluate(context.Background(), criterion, "in", s.output, s.votes); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		got := counts{
			passedModel:   testutil.ToFloat64(j.m.evaluations.WithLabelValues("passed", "model")),
			passedCache:   testutil.ToFloat64(j.m.evaluations.WithLabelValues("passed", "cache")),
			failedModel:   testutil.ToFloat64(j.m.evaluations.WithLabelValues("failed", "model")),
			errored:       testutil.ToFloat64(j.m.evaluations.WithLabelValues("errored", "model")),
			samplesPassed: testutil.ToFloat64(j.m.samples.WithLabelValues("passed")),
			samplesFailed: testutil.ToFloat64(j.m.samples.WithLabelValues("failed")),
			noAnswer:      testutil.ToFloat64(j.m.samples.WithLabelValues("no_answer")),
			offSchema:     testutil.ToFloat64(j.m.samples.WithLabelValues("off_schema")),
			split:         testutil.ToFloat64(j.m.split),
		}
		if got != s.want {
			t.Errorf("after %s:\n got %+v\nwant %+v", s.name, got, s.want)
		}
	}
	if n, err := testutil.GatherAndCount(reg, "skillfleet_judge_evaluations_total", "skillfleet_judge_samples_total"); err != nil || n != 10 {
		t.Errorf("registered series: %d (%v), want all 10 from the start", n, err)
	}
	if _, err := New(Config{}, Deps{Client: c, Registry: reg}); err == nil {
		t.Error("a second judge registered the same metrics on the same registry")
	}
	if _, err := New(Config{}, Deps{}); err == nil {
		t.Error("New without a client succeeded")
	}
}
