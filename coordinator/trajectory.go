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

// Trajectory returns the ATIF document of one job of a run, from the result its report counts
// (of the first epoch with one, unless q names an epoch). Results without the job's secret are
// ignored, as the report ignores them, so a forged result cannot supply a trajectory either.
func (c *Coordinator) Trajectory(ctx context.Context, id string, q TrajectoryQuery) ([]byte, error) {
	d, err := PickTrajectory(func(fn func(*pb.Result) error) error { return c.CaseResults(ctx, id, q.Skill, q.Case, fn) }, id, q)
	if err != nil {
		return nil, err
	}
	return c.Document(ctx, id, d)
}

// PickTrajectory chooses, among the accepted results of run id that each gives, the job q
// asks for (the first epoch with a result, unless q names one) and returns its trajectory
// document, as stored: ErrAmbiguous, ErrNoResult or ErrNoTrajectory when there is none to
// give. The coordinator and a local history choose alike.
func PickTrajectory(each func(fn func(*pb.Result) error) error, id string, q TrajectoryQuery) (*pb.StoredDocument, error) {
	var best *pb.Result
	var agents []string
	err := each(func(res *pb.Result) error {
		if res.GetSkill() != q.Skill || res.GetCaseName() != q.Case {
			return nil
		}
		if !slices.Contains(agents, res.GetAgent()) {
			agents = append(agents, res.GetAgent())
		}
		if (q.Agent != "" && res.GetAgent() != q.Agent) || (q.Epoch > 0 && int(res.GetEpoch()) != q.Epoch) {
			return nil
		}
		if best == nil || res.GetEpoch() < best.GetEpoch() {
			best = res
		}
		return nil
	})
	switch {
	case err != nil:
		return nil, err
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
	return d, nil
}

// Document returns a stored document of run's bytes, decoded: read from the artifacts stream
// when it is not inline, and decompressed; at most maxTrajectoryBytes either way. A nil or
// empty document gives nil.
func (c *Coordinator) Document(ctx context.Context, run string, d *pb.StoredDocument) ([]byte, error) {
	data := d.GetData()
	if d.GetArtifact() != "" {
		var err error
		if data, err = c.queue.GetArtifact(ctx, run, queue.Artifact{Digest: d.GetArtifact(), Size: d.GetSize()}, maxTrajectoryBytes); err != nil {
			return nil, err
		}
	}
	switch {
	case len(data) == 0:
		return nil, nil
	case d.GetEncoding() == "json":
		return data, nil
	case d.GetEncoding() != "gzip":
		return nil, fmt.Errorf("document: unknown encoding %q", d.GetEncoding())
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("document: %w", err)
	}
	out, err := io.ReadAll(io.LimitReader(zr, maxTrajectoryBytes+1))
	if err != nil {
		return nil, fmt.Errorf("document: %w", err)
	}
	if len(out) > maxTrajectoryBytes {
		return nil, fmt.Errorf("document: over %d bytes once decompressed", maxTrajectoryBytes)
	}
	return out, nil
}

// ResolveDocuments brings a result's documents back into it, decoded: the trajectory as its
// JSON (Encoding "json"), from the artifacts stream when stored apart, and the output files'
// contents. What cannot be
// read is said in the document's note or in outputs_omitted; it never fails the result.
func (c *Coordinator) ResolveDocuments(ctx context.Context, res *pb.Result) {
	if d := res.GetTrajectory(); len(d.GetData()) > 0 || d.GetArtifact() != "" {
		raw, err := c.Document(ctx, res.GetRunId(), d)
		if err != nil {
			res.Trajectory = &pb.StoredDocument{Size: d.GetSize(), Note: "the trajectory could not be read: " + err.Error()}
		} else {
			res.Trajectory = &pb.StoredDocument{Data: raw, Size: int64(len(raw)), Encoding: "json", Note: d.GetNote()}
		}
	}
	d := res.GetOutputsStored()
	if d == nil {
		return
	}
	raw, err := c.Document(ctx, res.GetRunId(), d)
	files := &pb.OutputFiles{}
	if err == nil {
		err = proto.Unmarshal(raw, files)
	}
	if err != nil {
		res.OutputsOmitted = append(res.OutputsOmitted, "the output files stored apart could not be read: "+err.Error())
		return
	}
	res.Outputs, res.OutputsStored = files.GetFiles(), nil
}
