package worker

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"

	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/atif"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// ArtifactStore keeps documents too large for a result message, by the digest of their bytes.
type ArtifactStore interface {
	PutArtifact(ctx context.Context, data []byte) (digest string, err error)
}

// inlineDocumentBytes is the largest document a result carries itself; a larger one goes to the
// ArtifactStore, so a result stays small whatever the job did (a 50-turn trajectory with full
// tool outputs is a few hundred kilobytes even gzipped).
const inlineDocumentBytes = 64 << 10

// trajectoryDocument encodes an agent's ATIF trajectory for its result, gzipped, stamped with
// the job.
func trajectoryDocument(t *atif.Trajectory, job *pb.Job) *pb.StoredDocument {
	if t == nil {
		return nil
	}
	t.SessionID = job.GetId()
	raw, err := json.Marshal(t)
	if err != nil {
		return &pb.StoredDocument{Note: "the trajectory could not be encoded: " + err.Error()}
	}
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, _ = zw.Write(raw)
	_ = zw.Close()
	return &pb.StoredDocument{Data: b.Bytes(), Size: int64(b.Len()), Encoding: "gzip"}
}

// storeDocuments moves a result's documents over inlineDocumentBytes to the artifact store. A
// document that cannot be stored apart stays inline if the result still fits in a message, and
// is dropped with a note otherwise: the verdict never depends on it.
func (w *Worker) storeDocuments(ctx context.Context, res *pb.Result, log *zap.Logger) {
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
	digest, err := w.deps.Artifacts.PutArtifact(ctx, d.Data)
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
