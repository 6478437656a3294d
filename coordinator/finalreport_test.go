package coordinator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/fleet"
	"github.com/skillfleet/skillfleet/internal/testutil"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/queue/queuetest"
)

// TestFinishedReportNeverChanges: a finished, failed run's report (its JSON, its counts) is
// the same after a flood into the results stream and after the stream lost the run's results,
// read by a coordinator that never held it in memory; and while the flood keeps the stream
// nearly full, a new run is refused with 507 and a sentence (issue 25: the flood evicted the
// run's results, and its rebuilt report counted the failure as pending).
func TestFinishedReportNeverChanges(t *testing.T) {
	qcfg := queue.DefaultConfig()
	qcfg.ResultsMaxBytes = 256 << 10
	e, _, topo := queuetest.StartConfig(t, qcfg, queue.EmbeddedConfig{})
	ctx := context.Background()
	newC := func() *coordinator.Coordinator { return startOn(t, topo, coordinator.Config{}) }
	c := newC()
	tree := twoCaseSuite(t)
	st, err := c.Submit(ctx, bytes.NewReader(tree), &pb.RunSpec{})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []pb.Verdict{pb.Verdict_VERDICT_FAILED, pb.Verdict_VERDICT_PASSED} {
		job := takeJob(t, topo)
		publishResult(t, topo, job, 1, v, job.GetSecret())
	}
	eventually(t, "the run to finish", func() bool {
		s, err := c.Status(ctx, st.GetId())
		return err == nil && s.GetState() == pb.RunState_RUN_STATE_COMPLETED
	})
	snapshot := func(c *coordinator.Coordinator) (string, string) {
		t.Helper()
		rep, err := c.Report(ctx, st.GetId())
		if err != nil {
			t.Fatal(err)
		}
		data, err := json.Marshal(rep)
		if err != nil {
			t.Fatal(err)
		}
		s, err := c.Status(ctx, st.GetId())
		if err != nil {
			t.Fatal(err)
		}
		return string(data), fmt.Sprint(s.GetCases())
	}
	wantReport, wantCounts := snapshot(c)
	if !strings.Contains(wantReport, `"failed":1`) || strings.Contains(wantReport, "pending") {
		t.Fatalf("the finished run's report %s: want one failure and nothing pending", wantReport)
	}

	// A worker's credentials: results of the run itself and of another, until refused.
	junk := bytes.Repeat([]byte("x"), 8<<10)
	n := 0
	flood := func(runs ...string) {
		t.Helper()
		for i := 0; ; i++ {
			if i > 100 {
				t.Fatal("100 results of 8 KB stored in a stream of 256 KB: nothing refused")
			}
			n++
			if err := topo.PublishResult(ctx, runs[i%len(runs)], "", fmt.Sprintf("junk%d", n), 1, append(junk, byte(n))); err != nil {
				return
			}
		}
	}
	flood(st.GetId(), "flood")
	if gotReport, gotCounts := snapshot(newC()); gotReport != wantReport || gotCounts != wantCounts {
		t.Errorf("after the flood the report is\n%s (%s)\nwant\n%s (%s)", gotReport, gotCounts, wantReport, wantCounts)
	}
	// The run's results gone, as they go at ResultsMaxAge: the stored report stands.
	if err := topo.PurgeRunResults(ctx, st.GetId()); err != nil {
		t.Fatal(err)
	}
	if gotReport, gotCounts := snapshot(newC()); gotReport != wantReport || gotCounts != wantCounts {
		t.Errorf("after the results expired the report is\n%s (%s)\nwant\n%s (%s)", gotReport, gotCounts, wantReport, wantCounts)
	}

	// A stream kept nearly full: a new run is refused, through the API with 507.
	flood("flood")
	var full *coordinator.CapacityError
	if _, err := c.Submit(ctx, bytes.NewReader(tree), &pb.RunSpec{}); !errors.As(err, &full) || !strings.Contains(err.Error(), "of the results stream") {
		t.Fatalf("Submit while the results stream is nearly full: %v, want a CapacityError", err)
	}
	srv := httptest.NewServer(c.Handler(coordinator.APIConfig{}))
	t.Cleanup(srv.Close)
	resp, err := http.Post(srv.URL+"/v1/runs", "application/x-tar", bytes.NewReader(tree))
	if err != nil {
		t.Fatal(err)
	}
	var body struct{ Error string }
	_ = json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusInsufficientStorage || !strings.Contains(body.Error, "no new run is admitted") {
		t.Errorf("POST /v1/runs while the results stream is nearly full: %d %q, want 507 with the reason", resp.StatusCode, body.Error)
	}
	// Room again: runs are admitted.
	queuetest.PurgeSubject(t, e, queue.ResultsStream, "")
	if _, err := c.Submit(ctx, bytes.NewReader(tree), &pb.RunSpec{}); err != nil {
		t.Fatalf("Submit once the results stream has room: %v", err)
	}
}

// TestReportIsFinalOnceStatusIs: the moment a run's status says it finished, its report is the
// final one, with the "what changed" section the history adds. Before, the status turned
// final while the report was still being annotated, and a reader polling the status got the
// live report, without what changed or the quarantine marks, 8 times in 10.
func TestReportIsFinalOnceStatusIs(t *testing.T) {
	a := startAPI(t, func(cfg *fleet.InProcessConfig, _ *coordinator.APIConfig) {
		cfg.History = fleet.HistoryConfig{Target: filepath.Join(t.TempDir(), "history.db")}
	})
	bundle := bundleOf(t, examples)
	for i := range 5 {
		st := a.submit(t, "name=nightly&kind=command&skill=env-selector", bundle)
		var final *pb.RunStatus
		testutil.Eventually(t, 30*time.Second, time.Millisecond, func() bool {
			_, body := a.do(t, http.MethodGet, "/v1/runs/"+st.GetId(), token, nil)
			got := &pb.RunStatus{}
			if protojson.Unmarshal(body, got) != nil {
				return false
			}
			final = got
			return got.GetState() == pb.RunState_RUN_STATE_COMPLETED
		}, "run completed")
		_, body := a.do(t, http.MethodGet, "/v1/runs/"+final.GetId()+"/report", token, nil)
		var rep struct {
			Changes *json.RawMessage `json:"changes"`
		}
		if err := json.Unmarshal(body, &rep); err != nil || rep.Changes == nil {
			t.Fatalf("run %d: the report read as soon as the run completed has no what-changed section: %s", i+1, body)
		}
	}
}
