package queue_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/queue/queuetest"
)

// TestArtifacts stores a document of three chunks and an empty one, reads them back, and
// refuses what does not match its reference: a chunk replaced on the server, a size over the
// reader's limit, a malformed digest, a document never stored.
func TestArtifacts(t *testing.T) {
	srv, _, topo := queuetest.Start(t)
	ctx := testCtx(t)
	doc := make([]byte, 600<<10)
	if _, err := rand.Read(doc); err != nil {
		t.Fatal(err)
	}
	a, err := topo.PutArtifact(ctx, "run1", doc)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(a.Digest, "sha256:") || a.Size != int64(len(doc)) {
		t.Fatalf("reference %+v", a)
	}
	if again, err := topo.PutArtifact(ctx, "run1", doc); err != nil || again != a {
		t.Fatalf("storing it again: %+v, %v", again, err)
	}
	got, err := topo.GetArtifact(ctx, "run1", a, 1<<20)
	if err != nil || !bytes.Equal(got, doc) {
		t.Fatalf("read back %d bytes, %v", len(got), err)
	}
	empty, err := topo.PutArtifact(ctx, "run1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := topo.GetArtifact(ctx, "run1", empty, 1); err != nil || len(got) != 0 {
		t.Errorf("empty document: %q, %v", got, err)
	}

	if _, err := topo.GetArtifact(ctx, "run1", a, int64(len(doc))-1); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("over the limit: %v", err)
	}
	for _, bad := range []string{"md5:abc", "sha256:xyz", "sha256:" + strings.Repeat("0", 63)} {
		if _, err := topo.GetArtifact(ctx, "run1", queue.Artifact{Digest: bad, Size: 1}, 10); err == nil {
			t.Errorf("digest %q accepted", bad)
		}
	}
	missing := queue.Artifact{Digest: "sha256:" + strings.Repeat("ab", 32), Size: 3}
	if _, err := topo.GetArtifact(ctx, "run1", missing, 10); !errors.Is(err, queue.ErrArtifactNotFound) {
		t.Errorf("never stored: %v", err)
	}

	// Whoever can publish there cannot replace a stored chunk: the publish is refused and
	// the document reads as it was stored.
	js, err := queuetest.RawConn(t, srv).JetStream()
	if err != nil {
		t.Fatal(err)
	}
	subj := queue.ArtifactsSubjectPrefix + ".run.run1." + strings.TrimPrefix(a.Digest, "sha256:") + ".1"
	if _, err := js.Publish(subj, bytes.Repeat([]byte("x"), 256<<10)); err == nil {
		t.Error("a stored chunk was replaced")
	}
	if got, err := topo.GetArtifact(ctx, "run1", a, 1<<20); err != nil || !bytes.Equal(got, doc) {
		t.Errorf("after an attempt to replace a chunk: %d bytes, %v", len(got), err)
	}
	// A chunk stored by someone else with the same bytes (or by this writer past the
	// duplicates window) is the chunk: storing the document again succeeds.
	doc2 := make([]byte, 100)
	if _, err := rand.Read(doc2); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(doc2)
	if _, err := js.Publish(queue.ArtifactsSubjectPrefix+".run.run1."+hex.EncodeToString(sum[:])+".0", doc2); err != nil {
		t.Fatal(err)
	}
	if a2, err := topo.PutArtifact(ctx, "run1", doc2); err != nil {
		t.Errorf("storing a document whose chunk is already there: %v", err)
	} else if got, err := topo.GetArtifact(ctx, "run1", a2, 1<<10); err != nil || !bytes.Equal(got, doc2) {
		t.Errorf("read back: %v", err)
	}
	// A squatter's other bytes under a document's digest are never taken for it.
	doc3 := []byte("a document nobody stored yet")
	sum3 := sha256.Sum256(doc3)
	if _, err := js.Publish(queue.ArtifactsSubjectPrefix+".run.run1."+hex.EncodeToString(sum3[:])+".0", []byte("squatter")); err != nil {
		t.Fatal(err)
	}
	if _, err := topo.PutArtifact(ctx, "run1", doc3); err == nil {
		t.Error("a document was stored over a squatted chunk of other bytes")
	}
}
