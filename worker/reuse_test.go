package worker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sync/atomic"
	"testing"
	"time"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// countingExec counts the jobs it runs and passes them.
type countingExec struct{ runs atomic.Int32 }

func (e *countingExec) Execute(context.Context, *pb.Job, string) (*pb.Result, error) {
	e.runs.Add(1)
	return &pb.Result{Verdict: pb.Verdict_VERDICT_PASSED, Assertions: []*pb.AssertionResult{{Type: "exit_code", Passed: true}}}, nil
}

// TestReuse: a changed-only job is reported reused, without running, only when the cell
// digest the worker computes from the job's key and its own agent configuration equals the
// offered one; every other job runs, and every result carries the cell key and digest.
func TestReuse(t *testing.T) {
	digest, bundle := testBundle(t)
	const key = "sha256:key"
	mine := CellDigest(key, "agent-config-a")
	offer := func(d string) *pb.Reuse {
		return &pb.Reuse{SourceRun: "r-last-night", CellDigest: d, Proof: []byte("proof")}
	}
	tests := []struct {
		name    string
		agents  map[string]string
		key     string
		reuse   *pb.Reuse
		verdict pb.Verdict
		digest  string
	}{
		{"same digest: reused", map[string]string{"": "agent-config-a"}, key, offer(mine), pb.Verdict_VERDICT_REUSED, mine},
		{"another agent configuration: runs", map[string]string{"": "agent-config-b"}, key, offer(mine), pb.Verdict_VERDICT_PASSED, CellDigest(key, "agent-config-b")},
		{"no offer: runs", map[string]string{"": "agent-config-a"}, key, nil, pb.Verdict_VERDICT_PASSED, mine},
		{"no digest for the agent: runs", nil, key, offer(mine), pb.Verdict_VERDICT_PASSED, ""},
		{"no cell key (an older coordinator): runs", map[string]string{"": "agent-config-a"}, "", offer(mine), pb.Verdict_VERDICT_PASSED, ""},
		{"an offer naming no run: runs", map[string]string{"": "agent-config-a"}, key, &pb.Reuse{CellDigest: mine}, pb.Verdict_VERDICT_PASSED, mine},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exec, results := &countingExec{}, &fakeResults{}
			w, err := New(Config{ID: "w1", CacheDir: t.TempDir(), MaxAttempts: 3, RetryDelay: time.Millisecond, AgentDigests: tt.agents}, Deps{
				Lanes: []Lane{newFakeLane("ondemand")}, Results: results, Bundles: bundles{bundle}, Executor: exec,
			})
			if err != nil {
				t.Fatal(err)
			}
			m := newFakeMsg(t, &pb.Job{Id: "j1", RunId: "r1", Skill: "cmd-00000", CaseName: "case-00000", BundleDigest: digest,
				TimeoutMs: 1000, Secret: []byte("s"), CellKey: tt.key, Reuse: tt.reuse})
			w.handle(context.Background(), m)
			w.settling.Wait()
			if len(results.published) != 1 {
				t.Fatalf("published %d results", len(results.published))
			}
			res := results.published[0]
			if res.GetVerdict() != tt.verdict || res.GetCellDigest() != tt.digest || res.GetCellKey() != tt.key {
				t.Errorf("result %v digest %q key %q; want %v %q %q", res.GetVerdict(), res.GetCellDigest(), res.GetCellKey(), tt.verdict, tt.digest, tt.key)
			}
			ran := exec.runs.Load() == 1
			if reused := tt.verdict == pb.Verdict_VERDICT_REUSED; ran == reused {
				t.Errorf("ran %v for a result %v", ran, res.GetVerdict())
			}
			if tt.verdict == pb.Verdict_VERDICT_REUSED && (res.GetReusedFrom() != "r-last-night" || string(res.GetReuseProof()) != "proof" || len(res.GetAssertions()) != 0) {
				t.Errorf("reused result from %q proof %q with %d assertions; want the offer's run and proof, no assertion", res.GetReusedFrom(), res.GetReuseProof(), len(res.GetAssertions()))
			}
		})
	}
}

// TestCellDigest: the digest changes with either part and is empty without one.
func TestCellDigest(t *testing.T) {
	a := CellDigest("k1", "agent-1")
	for _, other := range []string{CellDigest("k2", "agent-1"), CellDigest("k1", "agent-2"), CellDigest("k1agent", "-1")} {
		if other == a {
			t.Errorf("digest collision: %s", a)
		}
	}
	if CellDigest("", "agent") != "" || CellDigest("k", "") != "" {
		t.Error("a digest without a key or an agent digest")
	}
}

// TestCellDigestLeavesVisibleTestsBehind: a cell's digest is not the one a worker whose
// sandboxes showed the suite's test definitions recorded (cell-digest/1), so a pass an agent
// may have earned by reading its test is never reused (issue 31).
func TestCellDigestLeavesVisibleTestsBehind(t *testing.T) {
	const key, agent = "sha256:key", "agent-config-a"
	old := sha256.Sum256([]byte("cell-digest/1\x00" + key + "\x00" + agent))
	if got := CellDigest(key, agent); got == "sha256:"+hex.EncodeToString(old[:]) || got == "" {
		t.Errorf("cell digest %q: a pass recorded while the tests were visible would be reused", got)
	}
}
