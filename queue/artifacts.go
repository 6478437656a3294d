package queue

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Artifacts are documents too large for a result message (a long job's trajectory, say), kept
// beside the results for as long: the worker stores one in chunks on ArtifactsStream and puts
// its Artifact reference in the result. A chunk's subject names the document's SHA-256, so a
// reader checks what it reassembles against the reference, and a worker cannot overwrite
// another's document with other content. Workers only publish there, as they publish results.
const (
	// ArtifactsStream holds artifact chunks until ResultsMaxAge.
	ArtifactsStream = "SKILLFLEET_ARTIFACTS"
	// ArtifactsSubjectPrefix is the first two tokens of every chunk's subject:
	// skillfleet.artifacts.run.<run>.<sha256 hex>.<chunk index> (from workers older than
	// that, skillfleet.artifacts.<sha256 hex>.<chunk index>).
	ArtifactsSubjectPrefix = "skillfleet.artifacts"
	// artifactChunk is the bytes of one chunk, well under any server's max payload.
	artifactChunk = 256 << 10
)

// Artifact names a stored document.
type Artifact struct {
	// Digest is "sha256:" and the hex SHA-256 of the document.
	Digest string
	// Size is the document's length in bytes.
	Size int64
}

// ErrArtifactNotFound is returned for an artifact that was never stored or has expired.
var ErrArtifactNotFound = errors.New("queue: artifact not found")

func artifactsStreamConfig(cfg Config) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        ArtifactsStream,
		Description: "skillfleet artifacts too large for a result: chunks keyed by content digest",
		Subjects:    []string{ArtifactsSubjectPrefix + ".>"},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    cfg.Replicas,
		MaxAge:      cfg.ResultsMaxAge,
		Duplicates:  cfg.ResultsDuplicates,
		// A chunk's subject names the digest of its document: the first copy stays, and a
		// publish to a subject that holds one is refused, so nobody with publish rights can
		// replace (or evict) a stored chunk. A full stream refuses new artifacts rather than
		// dropping old ones that finished runs still point to.
		Discard:              jetstream.DiscardNew,
		DiscardNewPerSubject: true,
		MaxBytes:             limit(cfg.ArtifactsMaxBytes),
		MaxMsgsPerSubject:    1,
		AllowDirect:          true,
	}
}

// artifactSubject is where chunk of the document with hexDigest is stored for run: under the
// run, so that a finished run's documents leave the stream with its results (PurgeRunArtifacts)
// and no run's eviction removes a document another run stored with the same bytes. An empty
// run is the subject of workers older than it, skillfleet.artifacts.<hex>.<chunk>; "run" is a
// token of its own so that no run id can read as a digest.
func artifactSubject(run, hexDigest string, chunk int) string {
	if run == "" {
		return ArtifactsSubjectPrefix + "." + hexDigest + "." + strconv.Itoa(chunk)
	}
	return ArtifactsSubjectPrefix + ".run." + run + "." + hexDigest + "." + strconv.Itoa(chunk)
}

// PutArtifact stores data as one of run's documents and returns its reference. Storing the
// same bytes again for the run is cheap: each chunk is deduplicated by its subject's message id.
func (t *Topology) PutArtifact(ctx context.Context, run string, data []byte) (Artifact, error) {
	if err := ValidateRunID(run); err != nil {
		return Artifact{}, err
	}
	sum := sha256.Sum256(data)
	h := hex.EncodeToString(sum[:])
	for i := 0; i == 0 || i*artifactChunk < len(data); i++ {
		chunk := data[i*artifactChunk : min((i+1)*artifactChunk, len(data))]
		subj := artifactSubject(run, h, i)
		m := &nats.Msg{Subject: subj, Data: chunk, Header: nats.Header{
			jetstream.MsgIDHeader:          {subj},
			jetstream.ExpectedStreamHeader: {ArtifactsStream},
		}}
		if err := publishIdempotent(ctx, t.js, m); err != nil {
			if !strings.Contains(err.Error(), "maximum messages per subject exceeded") || !t.chunkStored(ctx, subj, chunk) {
				return Artifact{}, fmt.Errorf("queue: store artifact sha256:%s chunk %d: %w", h, i, err)
			}
			// Stored before, past the duplicates window: the same bytes are there.
		}
	}
	return Artifact{Digest: "sha256:" + h, Size: int64(len(data))}, nil
}

// GetArtifact reads a document of run, refusing one over maxBytes or whose bytes do not match
// its digest: stored under the run, or, by a worker older than that, under its digest alone.
func (t *Topology) GetArtifact(ctx context.Context, run string, a Artifact, maxBytes int64) ([]byte, error) {
	if err := ValidateRunID(run); err != nil {
		return nil, err
	}
	data, err := t.getArtifact(ctx, run, a, maxBytes)
	if errors.Is(err, ErrArtifactNotFound) {
		data, err = t.getArtifact(ctx, "", a, maxBytes)
	}
	return data, err
}

// PurgeRunArtifacts removes the documents run stored apart (those stored under it).
func (t *Topology) PurgeRunArtifacts(ctx context.Context, run string) error {
	if err := ValidateRunID(run); err != nil {
		return err
	}
	if t.artifacts == nil {
		return nil
	}
	if err := t.artifacts.Purge(ctx, jetstream.WithPurgeSubject(ArtifactsSubjectPrefix+".run."+run+".>")); err != nil {
		return fmt.Errorf("queue: purge the documents of run %s: %w", run, err)
	}
	return nil
}

func (t *Topology) getArtifact(ctx context.Context, run string, a Artifact, maxBytes int64) ([]byte, error) {
	h, ok := strings.CutPrefix(a.Digest, "sha256:")
	if b, err := hex.DecodeString(h); !ok || err != nil || len(b) != sha256.Size {
		return nil, fmt.Errorf("queue: artifact digest %q is not sha256:<64 hex digits>", a.Digest)
	}
	if a.Size < 0 || a.Size > maxBytes {
		return nil, fmt.Errorf("queue: artifact %s is %d bytes, more than the %d allowed", a.Digest, a.Size, maxBytes)
	}
	if t.artifacts == nil {
		return nil, fmt.Errorf("%w: %s (stream %s missing)", ErrArtifactNotFound, a.Digest, ArtifactsStream)
	}
	var buf bytes.Buffer
	for i := 0; i == 0 || int64(i)*artifactChunk < a.Size; i++ {
		m, err := t.artifacts.GetLastMsgForSubject(ctx, artifactSubject(run, h, i))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil, fmt.Errorf("%w: %s chunk %d", ErrArtifactNotFound, a.Digest, i)
		}
		if err != nil {
			return nil, fmt.Errorf("queue: read artifact %s chunk %d: %w", a.Digest, i, err)
		}
		buf.Write(m.Data)
		if int64(buf.Len()) > a.Size {
			break
		}
	}
	sum := sha256.Sum256(buf.Bytes())
	if int64(buf.Len()) != a.Size || hex.EncodeToString(sum[:]) != h {
		return nil, fmt.Errorf("queue: artifact %s: the stored bytes (%d) do not match its digest and size (%d)", a.Digest, buf.Len(), a.Size)
	}
	return buf.Bytes(), nil
}

// chunkStored says the chunk on subj holds exactly chunk.
func (t *Topology) chunkStored(ctx context.Context, subj string, chunk []byte) bool {
	if t.artifacts == nil {
		return false
	}
	m, err := t.artifacts.GetLastMsgForSubject(ctx, subj)
	return err == nil && bytes.Equal(m.Data, chunk)
}
