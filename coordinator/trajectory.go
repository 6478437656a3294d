package coordinator

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"google.golang.org/protobuf/proto"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/queue"
)

// maxTrajectoryBytes bounds a trajectory as stored (gzipped) and once decompressed: the API
// never reads more, whatever a worker wrote.
const maxTrajectoryBytes = 64 << 20

// TrajectoryQuery picks one job of a run: a case, the agent it ran against ("" when it ran
// against one agent only) and its epoch (0: the first one that has a result).
type TrajectoryQuery struct {
	Skill, Case, Agent string
	Epoch              int
}

// Trajectory's errors besides ErrNotFound (no such run).
var (
	// ErrNoTrajectory is returned for a job whose result carries no trajectory: a command
	// case, or a result from a worker older than trajectories.
	ErrNoTrajectory = errors.New("no trajectory")
	// ErrNoResult is returned when the run has no accepted result for the case asked for.
	ErrNoResult = errors.New("no result")
	// ErrAmbiguous is returned when the query fits jobs of several agents.
	ErrAmbiguous = errors.New("ambiguous")
)

// Trajectory returns the ATIF document of one job of a run, from its accepted result: the
// latest attempt of the epoch asked for. Results without the job's secret are ignored, as the
// report ignores them, so a forged result cannot supply a trajectory either.
func (c *Coordinator) Trajectory(ctx context.Context, id string, q TrajectoryQuery) ([]byte, error) {
	st, err := c.load(ctx, id)
	if err != nil {
		return nil, err
	}
	key := st.GetJobKey()
	results, n, stop, err := c.follow(ctx, id)
	if err != nil {
		return nil, err
	}
	defer stop()
	var best *pb.Result
	var agents []string
	for range n {
		var m queue.ResultMsg
		select {
		case got, ok := <-results:
			if !ok {
				return nil, fmt.Errorf("results of run %s ended early", id)
			}
			m = got
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		res := &pb.Result{}
		if proto.Unmarshal(m.Data, res) != nil || res.GetSkill() != q.Skill || res.GetCaseName() != q.Case {
			continue
		}
		if len(key) > 0 && !validSecret(key, res.GetJobId(), res.GetSecret()) {
			continue
		}
		if !slices.Contains(agents, res.GetAgent()) {
			agents = append(agents, res.GetAgent())
		}
		if (q.Agent != "" && res.GetAgent() != q.Agent) || (q.Epoch > 0 && int(res.GetEpoch()) != q.Epoch) {
			continue
		}
		if best == nil || res.GetEpoch() < best.GetEpoch() ||
			(res.GetEpoch() == best.GetEpoch() && res.GetAttempt() > best.GetAttempt()) {
			best = res
		}
	}
	switch {
	case q.Agent == "" && len(agents) > 1:
		return nil, fmt.Errorf("%w: case %s/%s ran against several agents; name one: %v", ErrAmbiguous, q.Skill, q.Case, agents)
	case best == nil:
		return nil, fmt.Errorf("%w for case %s/%s (agent %q, epoch %d) in run %s", ErrNoResult, q.Skill, q.Case, q.Agent, q.Epoch, id)
	}
	d := best.GetTrajectory()
	if d == nil || (len(d.GetData()) == 0 && d.GetArtifact() == "") {
		why := "a command case, or a worker older than trajectories"
		if d.GetNote() != "" {
			why = d.GetNote()
		}
		return nil, fmt.Errorf("%w for case %s/%s epoch %d: %s", ErrNoTrajectory, q.Skill, q.Case, best.GetEpoch(), why)
	}
	data := d.GetData()
	if d.GetArtifact() != "" {
		if data, err = c.queue.GetArtifact(ctx, queue.Artifact{Digest: d.GetArtifact(), Size: d.GetSize()}, maxTrajectoryBytes); err != nil {
			return nil, err
		}
	}
	if d.GetEncoding() != "gzip" {
		return nil, fmt.Errorf("trajectory of case %s/%s: unknown encoding %q", q.Skill, q.Case, d.GetEncoding())
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("trajectory of case %s/%s: %w", q.Skill, q.Case, err)
	}
	out, err := io.ReadAll(io.LimitReader(zr, maxTrajectoryBytes+1))
	if err != nil {
		return nil, fmt.Errorf("trajectory of case %s/%s: %w", q.Skill, q.Case, err)
	}
	if len(out) > maxTrajectoryBytes {
		return nil, fmt.Errorf("trajectory of case %s/%s is over %d bytes", q.Skill, q.Case, maxTrajectoryBytes)
	}
	return out, nil
}
