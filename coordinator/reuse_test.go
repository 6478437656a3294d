package coordinator_test

import (
	"bytes"
	"context"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/skillfleet/skillfleet/coordinator"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/queue/queuetest"
)

const reuseSkill = "---\nname: s\ndescription: A fixture skill. Use when testing changed-only runs.\ntest:\n  cases: cases.yaml\n---\n\nBody.\n"

// fakeReuse offers run r-old for every cell of suite "nightly" looked up over a window of more
// than 47 hours, and records its lookups.
type fakeReuse struct {
	mu      sync.Mutex
	queries []map[string]int
}

func (f *fakeReuse) Reusable(_ context.Context, team, suite string, since time.Time, exclude string, epochs map[string]int) (map[string]coordinator.Reused, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queries = append(f.queries, epochs)
	out := map[string]coordinator.Reused{}
	for k := range epochs {
		// Only the run's own team's history is asked: a run of the API's "default" token.
		if team == "default" && suite == "nightly" && exclude != "" && time.Since(since) > 47*time.Hour {
			out[k] = coordinator.Reused{Run: "r-old", CellDigest: "sha256:old-" + k, FinishedAt: time.Now().Add(-time.Hour)}
		}
	}
	return out, nil
}

// TestChangedOnlyOffersAndChecksReuse: a changed-only run's jobs carry their cell key and the
// reuse found for it; a reused result that echoes the offer counts as reused, one the
// coordinator did not offer (another run, another digest, no proof) counts as errored, and a
// plain run offers nothing.
func TestChangedOnlyOffersAndChecksReuse(t *testing.T) {
	_, _, topo := queuetest.StartConfig(t, queue.DefaultConfig(), queue.EmbeddedConfig{})
	reuse := &fakeReuse{}
	c, err := coordinator.New(coordinator.Config{DataDir: t.TempDir(), Agents: []string{"fixture-agent"}, StatusEvery: 50 * time.Millisecond},
		coordinator.Deps{Queue: topo, Runs: topo.Runs(), Bundles: topo, Reuse: reuse})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close(ctx) }()
	cases := "cases:\n"
	for _, n := range []string{"honest", "other-run", "other-digest", "no-proof"} {
		cases += "  - {name: " + n + ", input: hi, runs: 2, assertions: {output_contains: [x]}}\n"
	}
	tree := bundleOf(t, writeFiles(t, map[string]string{"s/SKILL.md": reuseSkill, "s/cases.yaml": cases}))

	st, err := c.Submit(ctx, bytes.NewReader(tree), &pb.RunSpec{Name: "nightly", ChangedOnly: true, ReuseWithinMs: (48 * time.Hour).Milliseconds()})
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{}
	for range 8 {
		job, msg := fetchJob(t, topo)
		if err := msg.AckSync(ctx); err != nil {
			t.Fatal(err)
		}
		r := job.GetReuse()
		if job.GetCellKey() == "" || r == nil || r.GetSourceRun() != "r-old" || r.GetCellDigest() != "sha256:old-"+job.GetCellKey() || len(r.GetProof()) == 0 {
			t.Fatalf("job %s/%s#%d: cell key %q, reuse %v; want the fake's offer with a proof", job.GetSkill(), job.GetCaseName(), job.GetEpoch(), job.GetCellKey(), r)
		}
		if prev, ok := keys[job.GetCaseName()]; ok && prev != job.GetCellKey() {
			t.Fatalf("the epochs of %s have two cell keys", job.GetCaseName())
		}
		keys[job.GetCaseName()] = job.GetCellKey()
		res := &pb.Result{JobId: job.GetId(), RunId: job.GetRunId(), Skill: job.GetSkill(), CaseName: job.GetCaseName(), Epoch: job.GetEpoch(),
			Kind: job.GetKind(), Agent: job.GetAgent(), Attempt: 1, Secret: job.GetSecret(), Verdict: pb.Verdict_VERDICT_REUSED,
			ReusedFrom: r.GetSourceRun(), CellDigest: r.GetCellDigest(), ReuseProof: r.GetProof()}
		switch job.GetCaseName() {
		case "other-run":
			res.ReusedFrom = "r-forged"
		case "other-digest":
			res.CellDigest = "sha256:forged"
		case "no-proof":
			res.ReuseProof = nil
		}
		data, err := proto.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		if err := topo.PublishResult(ctx, job.GetRunId(), job.GetResultKey(), job.GetId(), 1, data); err != nil {
			t.Fatal(err)
		}
	}
	if len(keys) != 4 {
		t.Fatalf("%d distinct cells, want 4", len(keys))
	}
	eventually(t, "the changed-only run to complete", func() bool {
		s, err := c.Status(ctx, st.GetId())
		return err == nil && s.GetState() == pb.RunState_RUN_STATE_COMPLETED
	})
	rep, err := c.Report(ctx, st.GetId())
	if err != nil {
		t.Fatal(err)
	}
	for _, cs := range rep.Cases {
		want := "errored"
		if cs.Case == "honest" {
			want = "reused"
		}
		if cs.Status != want {
			t.Errorf("case %s: %s (%s), want %s", cs.Case, cs.Status, cs.Reason, want)
		}
	}
	if rep.Summary.Reused != 1 || rep.Summary.Passed != 0 {
		t.Errorf("summary %+v: want 1 reused and no pass", rep.Summary)
	}
	// The results the viewer shows say what the report says: an unproven reuse is errored.
	shown := map[string]int{}
	if err := c.AcceptedResults(ctx, st.GetId(), func(res *pb.Result) error {
		want := pb.Verdict_VERDICT_ERRORED
		if res.GetCaseName() == "honest" {
			want = pb.Verdict_VERDICT_REUSED
		}
		if res.GetVerdict() != want || len(res.GetReuseProof()) > 0 {
			t.Errorf("shown result of %s#%d: %s, proof %x; want %s without the proof", res.GetCaseName(), res.GetEpoch(), res.GetVerdict(), res.GetReuseProof(), want)
		}
		shown[res.GetCaseName()]++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(shown) != 4 || shown["honest"] != 2 {
		t.Errorf("results shown per case %v, want 2 of each of 4", shown)
	}

	plain, err := c.Submit(ctx, bytes.NewReader(tree), &pb.RunSpec{Name: "nightly"})
	if err != nil {
		t.Fatal(err)
	}
	job, msg := fetchJob(t, topo)
	_ = msg.AckSync(ctx)
	if job.GetRunId() != plain.GetId() || job.GetReuse() != nil || job.GetCellKey() != keys[job.GetCaseName()] {
		t.Errorf("a plain run's job: reuse %v, cell key %q (want none, and the changed-only run's key %q)", job.GetReuse(), job.GetCellKey(), keys[job.GetCaseName()])
	}
	reuse.mu.Lock()
	defer reuse.mu.Unlock()
	if len(reuse.queries) != 1 || len(reuse.queries[0]) != 4 || reuse.queries[0][keys["honest"]] != 2 {
		t.Errorf("lookups %v: want one, of the 4 cells with 2 epochs each", reuse.queries)
	}
}

// TestCellKeyCoversWhatTheSandboxHolds: a changed file a case can reach re-runs it (issue 25).
// Skill s requires helper, whose script its cases run; sibling other is in the catalog only.
// A change to helper's script changes the key of both of s's cases; a change to other's
// SKILL.md (which a prompt job's agent may read to activate other) changes the prompt case's
// key, not the command case's, whose sandbox does not hold it; a change to other's script
// changes neither, since no sandbox of s's jobs holds it (worker skillMounts, tested there).
// A changed test definition (the cases file test.cases names, a command case's file) changes
// the keys of both, as before the sandboxes hid them (issue 31): they are still in the
// bundle, and in the closure digest, as s's files.
func TestCellKeyCoversWhatTheSandboxHolds(t *testing.T) {
	c, topo := newCoordinator(t, coordinator.Config{Agents: []string{"fixture-agent"}})
	ctx := context.Background()
	base := map[string]string{
		"s/SKILL.md":                 "---\nname: s\ndescription: A fixture skill. Use when testing cell keys.\nrequires:\n  - skill: helper\ntest:\n  cases: cases.yaml\n---\n\nBody.\n",
		"s/cases.yaml":               "cases:\n  - {name: prompt, input: hi, assertions: {output_contains: [x]}}\n",
		"s/tests/cases/command.yaml": "name: command\ninput:\n  command: sh ../helper/run.sh\nexpected:\n  exit-code: 0\n",
		"helper/SKILL.md":            "---\nname: helper\ndescription: A shared helper. Use when s needs it.\n---\n\nBody.\n",
		"helper/run.sh":              "echo one\n",
		"other/SKILL.md":             "---\nname: other\ndescription: A sibling. Use when asked about others.\n---\n\nBody.\n",
		"other/scripts/other.sh":     "echo one\n",
	}
	keysOf := func(edit map[string]string) map[string]string {
		t.Helper()
		files := maps.Clone(base)
		maps.Copy(files, edit)
		st, err := c.Submit(ctx, bytes.NewReader(bundleOf(t, writeFiles(t, files))), &pb.RunSpec{Name: "nightly"})
		if err != nil {
			t.Fatal(err)
		}
		keys := map[string]string{}
		for range 2 {
			job, msg := fetchJob(t, topo)
			_ = msg.AckSync(ctx)
			if job.GetRunId() != st.GetId() {
				t.Fatalf("job of run %s, want %s", job.GetRunId(), st.GetId())
			}
			keys[job.GetCaseName()] = job.GetCellKey()
		}
		if _, err := c.Cancel(ctx, st.GetId()); err != nil {
			t.Fatal(err)
		}
		return keys
	}
	was := keysOf(nil)
	for _, tt := range []struct {
		edit    string
		changed []string // the cases whose key changes
	}{
		{"helper/run.sh", []string{"command", "prompt"}},
		{"other/SKILL.md", []string{"prompt"}},
		{"other/scripts/other.sh", nil},
		{"s/cases.yaml", []string{"command", "prompt"}},
		{"s/tests/cases/command.yaml", []string{"command", "prompt"}},
	} {
		now := keysOf(map[string]string{tt.edit: base[tt.edit] + "# changed\n"})
		var changed []string
		for _, n := range []string{"command", "prompt"} {
			if now[n] == "" || was[n] == "" {
				t.Fatalf("editing %s: no key for case %s (%v, %v)", tt.edit, n, was, now)
			}
			if now[n] != was[n] {
				changed = append(changed, n)
			}
		}
		if !slices.Equal(changed, tt.changed) {
			t.Errorf("editing %s changed the cell keys of %v, want %v", tt.edit, changed, tt.changed)
		}
	}
}
