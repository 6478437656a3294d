package cli

import (
	"context"
	"fmt"

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
		runs[r.GetSkill()+"/"+r.GetCaseName()]++
		return nil
	}); err != nil {
		return 0, fmt.Errorf("workspace: %w", err)
	}
	w, err := workspace.New(dir, runs)
	if err != nil {
		return 0, err
	}
	n := 0
	err = src(ctx, id, func(r *pb.Result) error {
		j, err := workspace.FromResult(r)
		if err != nil {
			return err
		}
		n++
		return w.Add(j)
	})
	return n, err
}
