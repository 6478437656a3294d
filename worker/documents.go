package worker

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/skillfleet/skillfleet/atif"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// ArtifactStore keeps documents too large for a result message, by the digest of their bytes,
// under the run whose job made them (so that they leave the fleet's storage with the run).
type ArtifactStore interface {
	PutArtifact(ctx context.Context, run string, data []byte) (digest string, err error)
}

// inlineDocumentBytes is the largest document a result carries itself; a larger one goes to the
// ArtifactStore, so a result stays small whatever the job did (a 50-turn trajectory with full
// tool outputs is a few hundred kilobytes even gzipped).
const inlineDocumentBytes = 64 << 10

// TrajectoryEncoder gzips agents' trajectories for their results. It reuses its compressors: a
// new gzip.Writer allocates about 800 KB and costs a quarter of a millisecond, more than the
// rest of what a job's agent loop costs skillfleet. The zero value is ready; it is safe for
// concurrent use.
type TrajectoryEncoder struct{ pool sync.Pool }

// plainDocumentBytes is the size up to which a document is stored as it is: compressing a few
// kilobytes costs more per job than the bytes saved are worth.
const plainDocumentBytes = 16 << 10

// Encode encodes t for a result, stamped with the job (its id becomes the session id): as
// JSON up to plainDocumentBytes, gzipped above.
func (e *TrajectoryEncoder) Encode(t *atif.Trajectory, job *pb.Job) *pb.StoredDocument {
	if t == nil {
		return nil
	}
	t.SessionID = job.GetId()
	var doc bytes.Buffer
	enc := json.NewEncoder(&doc)
	// Transcripts are full of <available_skills> and shell redirections: escaping them for
	// HTML would make the document larger and slower to write, for no reader's benefit.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(t); err != nil {
		return &pb.StoredDocument{Note: "the trajectory could not be encoded: " + err.Error()}
	}
	raw := bytes.TrimSuffix(doc.Bytes(), []byte("\n"))
	if len(raw) <= plainDocumentBytes {
		return &pb.StoredDocument{Data: raw, Size: int64(len(raw)), Encoding: "json"}
	}
	var b bytes.Buffer
	zw, _ := e.pool.Get().(*gzip.Writer)
	if zw == nil {
		zw, _ = gzip.NewWriterLevel(&b, gzip.BestSpeed)
	} else {
		zw.Reset(&b)
	}
	_, _ = zw.Write(raw)
	_ = zw.Close()
	e.pool.Put(zw)
	return &pb.StoredDocument{Data: b.Bytes(), Size: int64(b.Len()), Encoding: "gzip"}
}

// storeDocuments moves what a result carries beyond inlineDocumentBytes to the artifact store:
// the trajectory, and the output files' contents. What cannot be stored apart stays inline if
// the result still fits in a message, and is dropped with a note otherwise: the verdict never
// depends on either.
func (w *Worker) storeDocuments(ctx context.Context, res *pb.Result, log warner) {
	w.storeTrajectory(ctx, res, log)
	w.storeOutputs(ctx, res, log)
}

func (w *Worker) storeTrajectory(ctx context.Context, res *pb.Result, log warner) {
	d := res.GetTrajectory()
	if d == nil || len(d.GetData()) <= inlineDocumentBytes {
		return
	}
	if w.deps.Artifacts == nil {
		if len(d.Data) > w.cfg.MaxResultBytes/2 {
			res.Trajectory = &pb.StoredDocument{Size: d.Size, Encoding: d.Encoding,
				Note: fmt.Sprintf("the trajectory (%d bytes gzipped) is too large for a result and this worker has no artifact store", d.Size)}
		}
		return
	}
	digest, err := w.deps.Artifacts.PutArtifact(ctx, res.GetRunId(), d.Data)
	if err != nil {
		log.Warn("storing the trajectory apart failed", zap.Error(err), zap.Int64("bytes", d.Size))
		if len(d.Data) > w.cfg.MaxResultBytes/2 {
			res.Trajectory = &pb.StoredDocument{Size: d.Size, Encoding: d.Encoding,
				Note: "the trajectory could not be stored: " + err.Error()}
		}
		return
	}
	res.Trajectory = &pb.StoredDocument{Artifact: digest, Size: d.Size, Encoding: d.Encoding}
}

// storeOutputs moves the output files' contents apart when together they are over
// inlineDocumentBytes: the result then lists the files (path, size) without content, and
// outputs_stored holds them all. When that fails, the contents are dropped and the result
// says so in outputs_omitted; the list stays.
func (w *Worker) storeOutputs(ctx context.Context, res *pb.Result, log warner) {
	total := 0
	for _, f := range res.GetOutputs() {
		total += len(f.GetContent())
	}
	if total <= inlineDocumentBytes {
		return
	}
	raw, err := proto.Marshal(&pb.OutputFiles{Files: res.GetOutputs()})
	var b bytes.Buffer
	if err == nil {
		zw := gzip.NewWriter(&b)
		_, _ = zw.Write(raw)
		_ = zw.Close()
		var digest string
		if w.deps.Artifacts == nil {
			err = errors.New("this worker has no artifact store")
		} else if digest, err = w.deps.Artifacts.PutArtifact(ctx, res.GetRunId(), b.Bytes()); err == nil {
			res.OutputsStored = &pb.StoredDocument{Artifact: digest, Size: int64(b.Len()), Encoding: "gzip"}
		}
	}
	if err != nil {
		log.Warn("storing the output files apart failed; their contents are dropped", zap.Error(err), zap.Int("bytes", total))
		res.OutputsOmitted = append(res.OutputsOmitted, fmt.Sprintf("the contents of all %d files (%d bytes) left out: they could not be stored apart from the result: %v", len(res.GetOutputs()), total, err))
	}
	for _, f := range res.GetOutputs() {
		f.Content = nil
	}
}
