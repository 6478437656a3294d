package coordinator_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/skillfleet/skillfleet/atif"
	"github.com/skillfleet/skillfleet/coordinator"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/queue"
)

// gzipped is the gzip of a trajectory whose user step says input.
func gzipped(t *testing.T, input string) []byte {
	t.Helper()
	tr := atif.Trajectory{SchemaVersion: atif.SchemaVersion, Agent: atif.Agent{Name: "a", Version: "1"}}
	tr.Add(atif.SourceUser, input)
	raw, err := json.Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, _ = zw.Write(raw)
	_ = zw.Close()
	return b.Bytes()
}

// publishWith publishes a failed result for job carrying doc as its trajectory.
func publishWith(t *testing.T, topo *queue.Topology, job *pb.Job, attempt int, secret []byte, doc *pb.StoredDocument) {
	t.Helper()
	data, err := proto.Marshal(&pb.Result{
		JobId: job.GetId(), RunId: job.GetRunId(), Skill: job.GetSkill(), CaseName: job.GetCaseName(),
		Epoch: job.GetEpoch(), Kind: job.GetKind(), Agent: job.GetAgent(), Attempt: int32(attempt),
		Verdict: pb.Verdict_VERDICT_FAILED, Secret: secret, Trajectory: doc,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := topo.PublishResult(context.Background(), job.GetRunId(), job.GetResultKey(), job.GetId(), attempt, data); err != nil {
		t.Fatal(err)
	}
}

// TestTrajectory: a job's trajectory is served from its accepted result, inline or from the
// artifacts stream; a forged result's is not; the API answers 404 for a case without one.
func TestTrajectory(t *testing.T) {
	c, topo := newCoordinator(t, coordinator.Config{Agents: []string{"fixture-agent"}, StatusEvery: 50 * time.Millisecond})
	ctx := context.Background()
	st, err := c.Submit(ctx, bytes.NewReader(bundleOf(t, writeFiles(t, map[string]string{
		"s/SKILL.md":   okSkill,
		"s/cases.yaml": "cases:\n  - {name: a, input: hi, assertions: {output_contains: [x]}}\n  - {name: b, input: hi, assertions: {output_contains: [x]}}\n",
	}))), &pb.RunSpec{})
	if err != nil {
		t.Fatal(err)
	}
	first, _ := fetchJob(t, topo)
	second, _ := fetchJob(t, topo)
	// A forgery for the first job, first: without the secret, its trajectory must not be served.
	publishWith(t, topo, first, 2, []byte("forged"), &pb.StoredDocument{Data: gzipped(t, "forged"), Encoding: "gzip"})
	publishWith(t, topo, first, 1, first.GetSecret(), &pb.StoredDocument{Data: gzipped(t, "inline"), Encoding: "gzip"})
	apart := gzipped(t, "apart")
	ref, err := topo.PutArtifact(ctx, st.GetId(), apart)
	if err != nil {
		t.Fatal(err)
	}
	publishWith(t, topo, second, 1, second.GetSecret(), &pb.StoredDocument{Artifact: ref.Digest, Size: ref.Size, Encoding: "gzip"})
	eventually(t, "the run to complete", func() bool {
		s, err := c.Status(ctx, st.GetId())
		return err == nil && s.GetState() == pb.RunState_RUN_STATE_COMPLETED
	})

	srv := httptest.NewServer(c.Handler(coordinator.APIConfig{Token: token}))
	defer srv.Close()
	client := coordinator.NewClient(srv.URL, token, nil)
	for name, want := range map[string]string{first.GetCaseName(): "inline", second.GetCaseName(): "apart"} {
		var b bytes.Buffer
		if err := client.Trajectory(ctx, st.GetId(), coordinator.TrajectoryQuery{Skill: "s", Case: name}, &b); err != nil {
			t.Fatalf("case %s: %v", name, err)
		}
		var got atif.Trajectory
		if err := json.Unmarshal(b.Bytes(), &got); err != nil || len(got.Steps) != 1 || got.Steps[0].Message != want {
			t.Errorf("case %s: %s (%v), want the %q trajectory", name, b.String(), err, want)
		}
	}
	// The export stream: each counted result once, the forgery left out, documents inline.
	var got []*pb.Result
	if err := client.Results(ctx, st.GetId(), func(r *pb.Result) error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d results exported, want 2", len(got))
	}
	for _, r := range got {
		if d := r.GetTrajectory(); d.GetArtifact() != "" || len(d.GetData()) == 0 || len(r.GetSecret()) > 0 {
			t.Errorf("result %s: trajectory %+v not inline, or the secret leaked", r.GetCaseName(), d)
		}
		// Decoded, whether it was inline or stored apart.
		want := map[string]string{first.GetCaseName(): "inline", second.GetCaseName(): "apart"}[r.GetCaseName()]
		var got atif.Trajectory
		if d := r.GetTrajectory(); d.GetEncoding() != "json" || json.Unmarshal(d.GetData(), &got) != nil || len(got.Steps) != 1 || got.Steps[0].Message != want {
			t.Errorf("result %s: trajectory %s %q, want the %q one decoded", r.GetCaseName(), d.GetEncoding(), d.GetData(), want)
		}
	}
	for _, q := range []coordinator.TrajectoryQuery{{Skill: "s", Case: "nope"}, {Skill: "s", Case: "a", Epoch: 2}} {
		err := client.Trajectory(ctx, st.GetId(), q, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), "no result") {
			t.Errorf("%+v: %v, want no result", q, err)
		}
	}
	if _, err := c.Trajectory(ctx, "r-nope", coordinator.TrajectoryQuery{Skill: "s", Case: "a"}); !errors.Is(err, coordinator.ErrNotFound) {
		t.Errorf("unknown run: %v", err)
	}
}
