package coordinator_test

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/skillfleet/skillfleet/comparison"
	"github.com/skillfleet/skillfleet/coordinator"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/queue/queuetest"
)

// recordsSuite: p settles after four passes (its fifth epoch is curtailed), f after two
// failures (its other epochs withdrawn), e runs two epochs whatever the first says.
const recordsSuite = "cases:\n" +
	"  - {name: p, input: hi, runs: 5, confidence: 0.8, assertions: {output_contains: [x]}}\n" +
	"  - {name: f, input: hi, runs: 5, confidence: 0.8, assertions: {output_contains: [x]}}\n" +
	"  - {name: e, input: hi, runs: 2, confidence: 0.5, assertions: {output_contains: [x]}}\n"

// takeJobs takes the jobs queued, by "agent:case/epoch[/arm]": at least want of them (waiting
// up to 20 s), then whatever else comes within a moment.
func takeJobs(t *testing.T, topo *queue.Topology, want int) map[string]taken {
	t.Helper()
	out := takeKeyed(t, topo, want, func(j *pb.Job) string {
		k := fmt.Sprintf("%s:%s/%d", j.GetAgent(), j.GetCaseName(), j.GetEpoch())
		if j.GetArm() != "" {
			k += "/" + j.GetArm()
		}
		return k
	})
	if len(out) < want {
		t.Fatalf("%d jobs queued, want %d: %v", len(out), want, keys(out))
	}
	return out
}

// answerAs publishes a result of job tj with verdict v and the numbers a comparison reads,
// naming as its identity the job `as` (a worker lying about which job it ran), and acks tj.
func answerAs(t *testing.T, topo *queue.Topology, tj taken, as *pb.Job, v pb.Verdict, model string, n int64) {
	t.Helper()
	a := &pb.AssertionResult{Type: "output_contains", Passed: v == pb.Verdict_VERDICT_PASSED}
	data, err := proto.Marshal(&pb.Result{
		JobId: tj.GetId(), RunId: tj.GetRunId(), Skill: as.GetSkill(), CaseName: as.GetCaseName(), Arm: as.GetArm(),
		Epoch: as.GetEpoch(), Kind: as.GetKind(), Agent: as.GetAgent(), Attempt: 1, Verdict: v, Secret: tj.GetSecret(),
		Assertions: []*pb.AssertionResult{a}, Model: model, JudgeModel: "judge-j", JudgePrompt: "prompt/1", CaseDigest: tj.GetCaseDigest(),
		Usage:   &pb.Usage{PromptTokens: 100 * n, CompletionTokens: n, Cost: float64(n) / 1000},
		Timings: &pb.Timings{TotalMs: 10 * n},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := topo.PublishResult(context.Background(), tj.GetRunId(), tj.GetResultKey(), tj.GetId(), 1, data); err != nil {
		t.Fatal(err)
	}
	if err := tj.d.Ack(); err != nil {
		t.Fatal(err)
	}
}

// streamRecords reads run id's counted results of arm from the results stream, as compare read
// them before runs kept records.
func streamRecords(t *testing.T, c *coordinator.Coordinator, id, arm string) []comparison.Record {
	t.Helper()
	var rs comparison.Records
	if err := c.AcceptedResults(context.Background(), id, func(r *pb.Result) error {
		if cmp.Or(r.GetArm(), comparison.WithSkill) == arm {
			rs.Add(r)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return sortedRecords(rs.List())
}

func sortedRecords(rs []comparison.Record) []comparison.Record {
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(a, b comparison.Record) int {
		return cmp.Or(cmp.Compare(a.Skill, b.Skill), cmp.Compare(a.Case, b.Case), cmp.Compare(a.Agent, b.Agent), cmp.Compare(a.Epoch, b.Epoch))
	})
	return rs
}

// renderings are a comparison's text and JSON.
func renderings(t *testing.T, a, b comparison.Side) string {
	t.Helper()
	rep, err := comparison.Compare(a, b, comparison.Options{Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := rep.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteJSON(&out); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// TestRecordsAreTheCountedResults: a finished run's stored records are what the results
// stream gives a comparison, record for record and arm by arm, and two runs compare the same
// through either. The runs have two agents, a case whose fifth epoch was curtailed, a case
// settled with epochs withdrawn (one answered skipped by its worker, one run anyway, one never
// answered), an errored epoch, an epoch on another model (a fleet mid-upgrade), a worker that
// names another job's identity, and a second run with a baseline arm. The route answers a run
// still going, one without records and an unknown one as the other run routes do (another
// team's: TestTeamsOwnTheirRuns); a coordinator restarted mid-run keeps the records of what it
// replays, and the records outlive a restart.
func TestRecordsAreTheCountedResults(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	ctx := context.Background()
	cfg := coordinator.Config{DataDir: t.TempDir(), Agents: []string{"agent-a", "agent-b"}}
	c := startOn(t, topo, cfg)
	srv := httptest.NewServer(c.Handler(coordinator.APIConfig{Token: token}))
	t.Cleanup(srv.Close)
	client := coordinator.NewClient(srv.URL, token, nil)
	bundle := bundleOf(t, writeFiles(t, map[string]string{"s/SKILL.md": okSkill, "s/cases.yaml": recordsSuite}))

	st1, err := c.Submit(ctx, bytes.NewReader(bundle), &pb.RunSpec{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Records(ctx, st1.GetId(), "", comparison.ReadLimits{}); !isAPIError(err, http.StatusConflict, "has not finished") {
		t.Errorf("the records of a run still going: %v, want 409 saying it has not finished", err)
	}
	first := takeJobs(t, topo, 18) // p/1-4, f/1-4 and e/1 of each agent
	for _, agent := range []string{"agent-a", "agent-b"} {
		job := func(k string) taken { return first[agent+":"+k] }
		for e := 1; e <= 4; e++ {
			model := "model-1"
			if agent == "agent-b" && e == 3 {
				model = "model-2"
			}
			answerAs(t, topo, job(fmt.Sprintf("p/%d", e)), job(fmt.Sprintf("p/%d", e)).Job, pb.Verdict_VERDICT_PASSED, model, int64(e))
		}
		answerAs(t, topo, job("f/1"), job("f/1").Job, pb.Verdict_VERDICT_FAILED, "model-1", 5)
		answerAs(t, topo, job("f/2"), job("f/2").Job, pb.Verdict_VERDICT_FAILED, "model-1", 6)
		answerAs(t, topo, job("e/1"), job("e/1").Job, pb.Verdict_VERDICT_ERRORED, "model-1", 7)
		// f settled on its second failure: f/3 and f/4 are withdrawn (and f/5, if its release
		// after f/1 came first). f/3's worker says it stopped; f/4's had finished and says
		// failed, which counts.
		answerAs(t, topo, job("f/3"), job("f/3").Job, pb.Verdict_VERDICT_SKIPPED, "model-1", 0)
		answerAs(t, topo, job("f/4"), job("f/4").Job, pb.Verdict_VERDICT_FAILED, "model-1", 9)
	}
	// A coordinator restarted mid-run keeps the records of the results it replays.
	eventually(t, "the first results to be counted", func() bool {
		s, err := c.Status(ctx, st1.GetId())
		return err == nil && s.GetDoneJobs() == 16 // f/3's skip is not an epoch
	})
	_ = c.Close(ctx)
	c = startOn(t, topo, cfg)
	srv = httptest.NewServer(c.Handler(coordinator.APIConfig{Token: token}))
	t.Cleanup(srv.Close)
	client = coordinator.NewClient(srv.URL, token, nil)
	// e/1 errored: e/2 is released. A worker with agent-a's e/2 names e/1: counted, and filed,
	// as e/2.
	next := takeJobs(t, topo, 2)
	for _, agent := range []string{"agent-a", "agent-b"} {
		e2, as := next[agent+":e/2"], next[agent+":e/2"].Job
		if e2.Job == nil {
			t.Fatalf("e/2 of %s not released: %v", agent, keys(next))
		}
		if agent == "agent-a" {
			as = first[agent+":e/1"].Job
		}
		answerAs(t, topo, e2, as, pb.Verdict_VERDICT_PASSED, "model-1", 8)
	}
	done := func(id string) *pb.RunStatus {
		var st *pb.RunStatus
		eventually(t, "run "+id+" to complete", func() bool {
			st, err = c.Status(ctx, id)
			return err == nil && st.GetState() == pb.RunState_RUN_STATE_COMPLETED
		})
		return st
	}
	fin1 := done(st1.GetId())
	if !fin1.GetRecordsStored() || fin1.GetWithdrawnJobs() == 0 {
		t.Fatalf("finished: records stored %v, %d withdrawn; want stored, some withdrawn", fin1.GetRecordsStored(), fin1.GetWithdrawnJobs())
	}

	// The second run has a baseline arm: every epoch of both arms.
	st2, err := c.Submit(ctx, bytes.NewReader(bundle), &pb.RunSpec{Baseline: "without_skill"})
	if err != nil {
		t.Fatal(err)
	}
	second := takeJobs(t, topo, 48)
	for k, tj := range second {
		v := pb.Verdict_VERDICT_PASSED
		switch {
		case strings.Contains(k, ":f/") && tj.GetEpoch()%2 == 0, strings.Contains(k, ":p/5"):
			v = pb.Verdict_VERDICT_FAILED
		case strings.HasSuffix(k, ":e/1"):
			v = pb.Verdict_VERDICT_ERRORED
		}
		model := "model-1"
		if k == "agent-b:p/3" {
			model = "model-2" // as in the first run, which the check would otherwise refuse
		}
		answerAs(t, topo, tj, tj.Job, v, model, int64(len(k)))
	}
	done(st2.GetId())

	check := func(c *coordinator.Coordinator, client *coordinator.Client, when string) {
		t.Helper()
		sides := map[string][2]comparison.Side{}
		for _, id := range []string{st1.GetId(), st2.GetId()} {
			for _, arm := range []string{comparison.WithSkill, "without_skill"} {
				stored, err := client.Records(ctx, id, arm, comparison.ReadLimits{})
				if err != nil {
					t.Fatalf("%s: records of %s: %v", when, id, err)
				}
				stream := streamRecords(t, c, id, arm)
				if got := sortedRecords(stored); !slices.EqualFunc(got, stream, comparison.Same) {
					t.Errorf("%s: run %s, arm %s: the stored records\n%v\nare not the results stream's\n%v", when, id, arm, got, stream)
				}
				if arm == comparison.WithSkill {
					s := sides[id]
					s[0] = comparison.Side{Label: "run " + id, Run: id, Results: stored}
					s[1] = comparison.Side{Label: "run " + id, Run: id, Results: stream}
					sides[id] = s
				}
			}
		}
		a, b := sides[st1.GetId()], sides[st2.GetId()]
		if viaRecords, viaStream := renderings(t, a[0], b[0]), renderings(t, a[1], b[1]); viaRecords != viaStream {
			t.Errorf("%s: the comparison through the records\n%s\nis not the one through the results\n%s", when, viaRecords, viaStream)
		}
	}
	check(c, client, "live")
	// What the records hold of run 1: p's four epochs of each agent (agent-b's on two models),
	// f's three counted, e's two with e/2 filed as itself.
	rs := sortedRecords(streamRecords(t, c, st1.GetId(), comparison.WithSkill))
	var got []string
	for _, r := range rs {
		got = append(got, fmt.Sprintf("%s:%s/%d %s %s %d", r.Agent, r.Case, r.Epoch, r.Verdict.String()[8:], r.Model, r.Tokens))
	}
	want := []string{
		"agent-a:e/1 ERRORED model-1 707", "agent-a:e/2 PASSED model-1 808", "agent-b:e/1 ERRORED model-1 707", "agent-b:e/2 PASSED model-1 808",
		"agent-a:f/1 FAILED model-1 505", "agent-a:f/2 FAILED model-1 606", "agent-a:f/4 FAILED model-1 909",
		"agent-b:f/1 FAILED model-1 505", "agent-b:f/2 FAILED model-1 606", "agent-b:f/4 FAILED model-1 909",
		"agent-a:p/1 PASSED model-1 101", "agent-a:p/2 PASSED model-1 202", "agent-a:p/3 PASSED model-1 303", "agent-a:p/4 PASSED model-1 404",
		"agent-b:p/1 PASSED model-1 101", "agent-b:p/2 PASSED model-1 202", "agent-b:p/3 PASSED model-2 303", "agent-b:p/4 PASSED model-1 404",
	}
	if !slices.Equal(got, want) {
		t.Errorf("run 1's records:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// Another coordinator serves them as stored.
	_ = c.Close(ctx)
	c2 := startOn(t, topo, cfg)
	srv2 := httptest.NewServer(c2.Handler(coordinator.APIConfig{Token: token}))
	t.Cleanup(srv2.Close)
	client2 := coordinator.NewClient(srv2.URL, token, nil)
	check(c2, client2, "after a restart")

	// A run whose records are gone answers 404 saying so; an unknown run, the run's 404.
	if err := topo.DeleteRecords(ctx, st1.GetId()); err != nil {
		t.Fatal(err)
	}
	if _, err := client2.Records(ctx, st1.GetId(), "", comparison.ReadLimits{}); !isAPIError(err, http.StatusNotFound, "no stored records") {
		t.Errorf("the records of a run without them: %v, want 404 saying it has none", err)
	}
	if _, err := client2.Records(ctx, "r-nope", "", comparison.ReadLimits{}); !isAPIError(err, http.StatusNotFound, "run not found") {
		t.Errorf("the records of an unknown run: %v, want 404", err)
	}
}

func isAPIError(err error, status int, says string) bool {
	var ae *coordinator.APIError
	return errors.As(err, &ae) && ae.Status == status && strings.Contains(ae.Message, says)
}
