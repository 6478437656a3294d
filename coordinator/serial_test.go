package coordinator_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/skillfleet/skillfleet/coordinator"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/queue/queuetest"
)

const serialSkill = `---
name: s
description: A serial fixture skill. Use when testing one-at-a-time dispatch.
metadata:
  version: "1.0.0"
test:
  cases: cases.yaml
  config:
    parallel: false
---

Body.
`

// TestSerialJobRetriedAfterAFailedPublish: the result of a serial skill's job frees its next
// job, and the stream refuses that job's publish (as it does while a stream leader is lost).
// The run loop retries it, so the run completes instead of stalling until its deadline.
func TestSerialJobRetriedAfterAFailedPublish(t *testing.T) {
	qcfg := queue.DefaultConfig()
	qcfg.JobsMaxMsgs = 1 // one queued job fills the stream
	_, _, topo := queuetest.StartConfig(t, qcfg, queue.EmbeddedConfig{})
	core, logs := observer.New(zap.DebugLevel)
	defer func() {
		if t.Failed() {
			for _, e := range logs.All() {
				t.Log(e.Message, e.ContextMap())
			}
		}
	}()
	c, err := coordinator.New(coordinator.Config{DataDir: t.TempDir(), Agents: []string{"fixture-agent"}, StatusEvery: 50 * time.Millisecond},
		coordinator.Deps{Queue: topo, Runs: topo.Runs(), Bundles: topo, Log: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close(ctx) }()
	st, err := c.Submit(ctx, bytes.NewReader(bundleOf(t, writeFiles(t, map[string]string{
		"s/SKILL.md":   serialSkill,
		"s/cases.yaml": "cases:\n  - {name: a, input: hi, assertions: {output_contains: [x]}}\n  - {name: b, input: hi, assertions: {output_contains: [x]}}\n",
	}))), &pb.RunSpec{})
	if err != nil {
		t.Fatal(err)
	}

	first, msg := fetchJob(t, topo)
	if err := msg.AckSync(ctx); err != nil {
		t.Fatal(err)
	}
	// Fill the stream with a job of another lane nobody takes, then free the serial skill's
	// second job: its publish is refused.
	if err := topo.PublishJob(ctx, queue.LaneScheduled, "filler", "f1", []byte("filler")); err != nil {
		t.Fatal(err)
	}
	publishResult(t, topo, first, 1, pb.Verdict_VERDICT_FAILED, first.GetSecret())
	eventually(t, "the refused publish of the second job", func() bool {
		return logs.FilterMessageSnippet("publishing").Len() > 0
	})
	if ds, err := topo.LaneConsumers()[1].Fetch(1, 5*time.Second); err != nil || len(ds) != 1 {
		t.Fatalf("taking the filler job: %d jobs, %v", len(ds), err)
	} else if err := ds[0].AckSync(ctx); err != nil {
		t.Fatal(err)
	}

	second, msg := fetchJob(t, topo)
	if second.GetCaseName() == first.GetCaseName() {
		t.Fatalf("case %s delivered twice", second.GetCaseName())
	}
	if err := msg.AckSync(ctx); err != nil {
		t.Fatal(err)
	}
	publishResult(t, topo, second, 1, pb.Verdict_VERDICT_FAILED, second.GetSecret())
	eventually(t, "the run to complete", func() bool {
		s, err := c.Status(ctx, st.GetId())
		return err == nil && s.GetState() == pb.RunState_RUN_STATE_COMPLETED && s.GetCases().GetFailed() == 2
	})
}
