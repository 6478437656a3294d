package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/skillfleet/skillfleet/coordinator"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/workspace"
)

// resultSource replays the results a run's report counts, documents inline: the in-process
// coordinator's or a remote one's through its API.
type resultSource func(ctx context.Context, id string, fn func(*pb.Result) error) error

// localResults is the in-process coordinator's resultSource.
func localResults(c *coordinator.Coordinator) resultSource {
	return func(ctx context.Context, id string, fn func(*pb.Result) error) error {
		return c.AcceptedResults(ctx, id, func(r *pb.Result) error {
			c.ResolveDocuments(ctx, r)
			return fn(r)
		})
	}
}

// exportWorkspace writes run id into the workspace at dir (see package workspace) and returns
// how many job directories it wrote. Results are read twice: once to learn which cases have
// several, once to write them.
func exportWorkspace(ctx context.Context, src resultSource, id, dir string) (int, error) {
	runs := map[string]int{}
	if err := src(ctx, id, func(r *pb.Result) error {
		runs[workspace.RunsKey(r)]++
		return nil
	}); err != nil {
		return 0, fmt.Errorf("workspace: %w", err)
	}
	w, err := workspace.New(dir, runs)
	if err != nil {
		return 0, err
	}
	n := 0
	// What each skill's benchmark.json needs, without the documents, per configuration (arm).
	perSkill := map[string]map[string][]*pb.Result{}
	err = src(ctx, id, func(r *pb.Result) error {
		j, err := workspace.FromResult(r)
		if err != nil {
			return err
		}
		n++
		if perSkill[r.GetSkill()] == nil {
			perSkill[r.GetSkill()] = map[string][]*pb.Result{}
		}
		conf := workspace.ArmOf(r)
		perSkill[r.GetSkill()][conf] = append(perSkill[r.GetSkill()][conf], &pb.Result{
			Skill: r.GetSkill(), CaseName: r.GetCaseName(), Epoch: r.GetEpoch(), Verdict: r.GetVerdict(), Reason: r.GetReason(),
			Assertions: r.GetAssertions(), Timings: r.GetTimings(), Usage: r.GetUsage(), Model: r.GetModel(),
			Transcript: &pb.Transcript{ToolCalls: make([]*pb.ToolCall, len(r.GetTranscript().GetToolCalls()))},
		})
		return w.Add(j)
	})
	if err != nil {
		return n, err
	}
	now := time.Now()
	for skill, confs := range perSkill {
		if err := w.WriteBenchmark(workspace.BenchmarkOf(skill, confs, now)); err != nil {
			return n, err
		}
	}
	return n, nil
}
