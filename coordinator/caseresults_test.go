package coordinator_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/skillfleet/skillfleet/coordinator"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/queue/queuetest"
)

// publishAs publishes job's result as a worker that lies about it: it names identity's case
// and epoch instead of the job's, and files it under key.
func publishAs(t *testing.T, topo *queue.Topology, job *pb.Job, key string, identity *pb.Job, v pb.Verdict) {
	t.Helper()
	data, err := proto.Marshal(&pb.Result{
		JobId: job.GetId(), RunId: job.GetRunId(), Skill: identity.GetSkill(), CaseName: identity.GetCaseName(),
		Epoch: identity.GetEpoch(), Kind: identity.GetKind(), Attempt: 1, Verdict: v, Secret: job.GetSecret(),
		Output: "by " + job.GetCaseName(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := topo.PublishResult(context.Background(), job.GetRunId(), key, job.GetId(), 1, data); err != nil {
		t.Fatal(err)
	}
}

// caseView reads one case's counted results as "case/epoch:output", sorted.
func caseView(t *testing.T, c *coordinator.Coordinator, id, caseName string) []string {
	t.Helper()
	var out []string
	if err := c.CaseResults(context.Background(), id, "s", caseName, func(r *pb.Result) error {
		out = append(out, fmt.Sprintf("%s/%d:%s", r.GetCaseName(), r.GetEpoch(), r.GetOutput()))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// TestCaseResultsFileByJob: every view of a result files it where the report does, under its
// job's identity. A worker with case b's job names case a's identity and files the result
// under a's subject; another publishes on the subject of workers older than result keys. Case
// a's page shows a's own epochs only; b's shows both of its own, under b's identity; the whole
// run's results agree; and so do they after a restart, once the run has finished.
func TestCaseResultsFileByJob(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	ctx := context.Background()
	// Every epoch runs: the first failure settles each case, and the test is of where the
	// later results are filed.
	cfg := coordinator.Config{DataDir: t.TempDir(), Agents: []string{"fixture-agent"}, KeepAllEpochs: true}
	newC := func() *coordinator.Coordinator { return startOn(t, topo, cfg) }
	c := newC()
	st, err := c.Submit(ctx, strings.NewReader(string(bundleOf(t, writeFiles(t, map[string]string{
		"s/SKILL.md": okSkill,
		"s/cases.yaml": "cases:\n" +
			"  - {name: a, input: hi, runs: 2, assertions: {output_contains: [x]}}\n" +
			"  - {name: b, input: hi, runs: 2, assertions: {output_contains: [x]}}\n",
	})))), &pb.RunSpec{})
	if err != nil {
		t.Fatal(err)
	}
	jobs := map[string]*pb.Job{}
	for range 4 {
		j := takeJob(t, topo)
		jobs[fmt.Sprintf("%s%d", j.GetCaseName(), j.GetEpoch())] = j
	}
	a1, a2, b1, b2 := jobs["a1"], jobs["a2"], jobs["b1"], jobs["b2"]
	if a1.GetResultKey() == "" || a1.GetResultKey() != a2.GetResultKey() || a1.GetResultKey() == b1.GetResultKey() {
		t.Fatalf("result keys a %q %q, b %q: want one per case", a1.GetResultKey(), a2.GetResultKey(), b1.GetResultKey())
	}
	publishAs(t, topo, a1, a1.GetResultKey(), a1, pb.Verdict_VERDICT_FAILED)
	// b1's worker claims to be a2, on a's subject: the report counts it as b1 (failed), and
	// a2's own result, later, still counts for a2.
	publishAs(t, topo, b1, a1.GetResultKey(), a2, pb.Verdict_VERDICT_FAILED)
	publishAs(t, topo, a2, a2.GetResultKey(), a2, pb.Verdict_VERDICT_FAILED)
	// An older worker: no result key.
	publishAs(t, topo, b2, "", b2, pb.Verdict_VERDICT_FAILED)
	eventually(t, "the run to finish", func() bool {
		s, err := c.Status(ctx, st.GetId())
		return err == nil && s.GetState() == pb.RunState_RUN_STATE_COMPLETED
	})
	want := map[string][]string{"a": {"a/1:by a", "a/2:by a"}, "b": {"b/1:by b", "b/2:by b"}}
	check := func(c *coordinator.Coordinator, when string) {
		t.Helper()
		for name, w := range want {
			if got := caseView(t, c, st.GetId(), name); !slices.Equal(got, w) {
				t.Errorf("%s: case %s shows %v, want %v", when, name, got, w)
			}
		}
		var all []string
		if err := c.AcceptedResults(ctx, st.GetId(), func(r *pb.Result) error {
			all = append(all, fmt.Sprintf("%s/%d:%s", r.GetCaseName(), r.GetEpoch(), r.GetOutput()))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		slices.Sort(all)
		if w := append(slices.Clone(want["a"]), want["b"]...); !slices.Equal(all, w) {
			t.Errorf("%s: the run's results %v, want %v", when, all, w)
		}
		rep, err := c.Report(ctx, st.GetId())
		if err != nil {
			t.Fatal(err)
		}
		for _, cs := range rep.Cases {
			if cs.Epochs != 2 || cs.FailedEpochs != 2 {
				t.Errorf("%s: report case %s: %d epochs, %d failed; want 2 and 2", when, cs.Case, cs.Epochs, cs.FailedEpochs)
			}
		}
	}
	check(c, "live")
	if s, _ := c.Status(ctx, st.GetId()); len(s.GetMisfiled()) != 2 {
		t.Errorf("status keeps %d misfiled results, want 2 (the liar's and the older worker's)", len(s.GetMisfiled()))
	}
	_ = c.Close(ctx)
	check(newC(), "after a restart")

	// The API: ?case= reads one case; ?documents=false and a bad case are answered.
	c2 := newC()
	srv := httptest.NewServer(c2.Handler(coordinator.APIConfig{Token: token}))
	t.Cleanup(srv.Close)
	client := coordinator.NewClient(srv.URL, token, nil)
	var got []string
	if err := client.ResultsOf(ctx, st.GetId(), coordinator.ResultsQuery{Skill: "s", Case: "b"}, func(r *pb.Result) error {
		got = append(got, fmt.Sprintf("%s/%d:%s", r.GetCaseName(), r.GetEpoch(), r.GetOutput()))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if !slices.Equal(got, want["b"]) {
		t.Errorf("GET results?case=s/b: %v, want %v", got, want["b"])
	}
	for _, q := range []string{"case=s", "case=s/a&case=s/b", "documents=maybe"} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/runs/"+st.GetId()+"/results?"+q, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("results?%s: %d, want 400", q, resp.StatusCode)
		}
	}
}
