package worker

import (
	"crypto/sha256"
	"encoding/hex"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// CellDigest is a cell's digest: its key (pb.Job.cell_key: the case, the skill's files and its
// requires closure, the arm, the agent's name, the limits) with the digest of the agent's
// configuration as the worker runs it (its model and endpoint or CLI, the judge, the sandbox
// image: see fleet.AgentDigests). Two cells with one digest ran the same thing; "" when either
// part is unknown, and such a cell is never reused.
//
// Its version says what the worker shows a job besides what the key covers: version 2's
// sandboxes hide the suite's test definitions (skillMounts), so a pass recorded by a worker
// whose agent could read its own test (version 1) is never reused.
func CellDigest(key, agentDigest string) string {
	if key == "" || agentDigest == "" {
		return ""
	}
	h := sha256.New()
	h.Write([]byte("cell-digest/2\x00" + key + "\x00" + agentDigest))
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// cellDigest is the digest of a job's cell on this worker.
func (w *Worker) cellDigest(job *pb.Job) string {
	return CellDigest(job.GetCellKey(), w.cfg.AgentDigests[job.GetAgent()])
}

// reusable reports whether a changed-only job may be reported reused rather than run: it was
// offered a reuse, and the cell digest this worker computes with its own configuration is the
// one the reused run recorded. A worker configured differently (another model, CLI image or
// judge) runs the job.
func reusable(job *pb.Job, digest string) bool {
	r := job.GetReuse()
	return r != nil && digest != "" && digest == r.GetCellDigest() && r.GetSourceRun() != ""
}

// reusedResult is the result of a job not run because a recent run passed its cell.
func reusedResult(job *pb.Job) *pb.Result {
	r := job.GetReuse()
	reason := "not run: run " + r.GetSourceRun() + " passed the same cell digest"
	if t := r.GetSourceFinishedAt(); t != nil {
		reason += " (finished " + t.AsTime().UTC().Format("2006-01-02 15:04 MST") + ")"
	}
	return &pb.Result{Verdict: pb.Verdict_VERDICT_REUSED, Kind: job.GetKind(), Reason: reason,
		ReusedFrom: r.GetSourceRun(), ReuseProof: r.GetProof()}
}
