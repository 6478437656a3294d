package worker

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/skillfleet/skillfleet/atif"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// countingArtifacts is an ArtifactStore that keeps what it is given, or fails.
type countingArtifacts struct {
	puts [][]byte
	err  error
}

func (a *countingArtifacts) PutArtifact(_ context.Context, _ string, data []byte) (string, error) {
	if a.err != nil {
		return "", a.err
	}
	a.puts = append(a.puts, data)
	return fmt.Sprintf("sha256:%064d", len(a.puts)), nil
}

// noisyTrajectory is a trajectory whose tool outputs do not compress: turns × 16 KiB.
func noisyTrajectory(t *testing.T, turns int) *atif.Trajectory {
	t.Helper()
	tr := &atif.Trajectory{SchemaVersion: atif.SchemaVersion, Agent: atif.Agent{Name: "a", Version: "1"}}
	tr.Add(atif.SourceUser, "go")
	for i := range turns {
		noise := make([]byte, 12<<10)
		if _, err := rand.Read(noise); err != nil {
			t.Fatal(err)
		}
		s := tr.Add(atif.SourceAgent, "")
		id := fmt.Sprintf("c%d", i)
		s.ToolCalls = []atif.ToolCall{{ToolCallID: id, FunctionName: "bash", Arguments: atif.Arguments(`{"command":"cat blob"}`)}}
		s.Observation = &atif.Observation{Results: []atif.Result{{SourceCallID: id, Content: fmt.Sprintf("%x", noise)}}}
	}
	tr.Finish()
	return tr
}

func TestTrajectoryDocumentRoundTrip(t *testing.T) {
	var enc TrajectoryEncoder
	tr := noisyTrajectory(t, 1)
	d := enc.Encode(tr, &pb.Job{Id: "job-7"})
	zr, err := gzip.NewReader(bytes.NewReader(d.GetData()))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	var back atif.Trajectory
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if back.SessionID != "job-7" || len(back.Steps) != 2 || back.Validate() != nil || d.GetEncoding() != "gzip" || d.GetSize() != int64(len(d.GetData())) {
		t.Errorf("round trip: session %q, %d steps, validate %v, %+v", back.SessionID, len(back.Steps), back.Validate(), d)
	}
	// The compressor is reused: a second document is as readable as the first.
	if again := enc.Encode(noisyTrajectory(t, 2), &pb.Job{Id: "job-8"}); again.GetSize() <= d.GetSize() {
		t.Errorf("second document %d bytes after %d", again.GetSize(), d.GetSize())
	} else if zr, err := gzip.NewReader(bytes.NewReader(again.GetData())); err != nil {
		t.Error(err)
	} else if raw, err := io.ReadAll(zr); err != nil || !json.Valid(raw) {
		t.Errorf("second document unreadable: %v", err)
	}
	// A small trajectory is stored as it is: compressing it costs more than it saves.
	tiny := &atif.Trajectory{SchemaVersion: atif.SchemaVersion, Agent: atif.Agent{Name: "a", Version: "1"}}
	tiny.Add(atif.SourceUser, "hi")
	if d := enc.Encode(tiny, &pb.Job{Id: "job-9"}); d.GetEncoding() != "json" || !json.Valid(d.GetData()) || !bytes.Contains(d.GetData(), []byte(`"session_id":"job-9"`)) {
		t.Errorf("small document: %s %q", d.GetEncoding(), d.GetData())
	}
	if enc.Encode(nil, &pb.Job{}) != nil {
		t.Error("a run without a trajectory got a document")
	}
}

// TestStoreDocuments: a 50-turn trajectory leaves the result for the artifact store, so the
// result stays far under the message limit; a small one stays inline; when the store fails,
// a document that would crowd the message is dropped with a note, never the result.
func TestStoreDocuments(t *testing.T) {
	var enc TrajectoryEncoder
	big := enc.Encode(noisyTrajectory(t, 50), &pb.Job{Id: "j"})
	small := enc.Encode(noisyTrajectory(t, 1), &pb.Job{Id: "j"})
	if big.GetSize() <= inlineDocumentBytes || small.GetSize() > inlineDocumentBytes {
		t.Fatalf("fixtures: big %d, small %d bytes", big.GetSize(), small.GetSize())
	}
	log := zap.NewNop()
	tests := []struct {
		name     string
		doc      *pb.StoredDocument
		store    *countingArtifacts
		max      int
		inline   bool
		artifact bool
		note     string
	}{
		{"large goes apart", big, &countingArtifacts{}, 1 << 20, false, true, ""},
		{"small stays inline", small, &countingArtifacts{}, 1 << 20, true, false, ""},
		{"store fails, result has room", big, &countingArtifacts{err: errors.New("down")}, 8 << 20, true, false, ""},
		{"store fails, no room", big, &countingArtifacts{err: errors.New("down")}, 1 << 20, false, false, "could not be stored: down"},
		{"no store, no room", big, nil, 1 << 20, false, false, "no artifact store"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := &Worker{cfg: Config{MaxResultBytes: tc.max}}
			if tc.store != nil {
				w.deps.Artifacts = tc.store
			}
			res := &pb.Result{JobId: "j", Verdict: pb.Verdict_VERDICT_PASSED, Trajectory: tc.doc}
			w.storeDocuments(context.Background(), res, log)
			d := res.GetTrajectory()
			if got := len(d.GetData()) > 0; got != tc.inline {
				t.Errorf("inline %v, want %v", got, tc.inline)
			}
			if got := d.GetArtifact() != ""; got != tc.artifact {
				t.Errorf("artifact %q, want one: %v", d.GetArtifact(), tc.artifact)
			}
			if tc.artifact && (len(tc.store.puts) != 1 || !bytes.Equal(tc.store.puts[0], tc.doc.GetData()) || d.GetSize() != tc.doc.GetSize()) {
				t.Errorf("stored %d documents; size %d", len(tc.store.puts), d.GetSize())
			}
			if !strings.Contains(d.GetNote(), tc.note) || (tc.note == "" && d.GetNote() != "") {
				t.Errorf("note %q, want %q", d.GetNote(), tc.note)
			}
			if res.GetVerdict() != pb.Verdict_VERDICT_PASSED {
				t.Errorf("the verdict changed: %v", res.GetVerdict())
			}
			if data, err := w.encodeResult(res); err != nil || len(data) > tc.max/2+4096 {
				t.Errorf("encoded result %d bytes (%v) for a %d-byte limit", len(data), err, tc.max)
			}
		})
	}
}

// TestStoreOutputs: output files over the inline budget leave the result for the artifact
// store, listed without content; when the store fails their contents are dropped and the
// result says so; small ones stay inline. The verdict never changes.
func TestStoreOutputs(t *testing.T) {
	files := func(n, size int) []*pb.OutputFile {
		var out []*pb.OutputFile
		for i := range n {
			out = append(out, &pb.OutputFile{Path: fmt.Sprintf("f%d.txt", i), Size: int64(size), Content: bytes.Repeat([]byte{'a' + byte(i)}, size)})
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		files   []*pb.OutputFile
		store   *countingArtifacts
		apart   bool
		content bool
		omitted string
	}{
		{"small stay inline", files(2, 1000), &countingArtifacts{}, false, true, ""},
		{"large go apart", files(3, 40<<10), &countingArtifacts{}, true, false, ""},
		{"store down", files(3, 40<<10), &countingArtifacts{err: errors.New("down")}, false, false, "could not be stored apart from the result: down"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &Worker{cfg: Config{MaxResultBytes: 1 << 20}, deps: Deps{Artifacts: tc.store}}
			res := &pb.Result{Verdict: pb.Verdict_VERDICT_FAILED, Outputs: tc.files}
			w.storeDocuments(context.Background(), res, zap.NewNop())
			if got := res.GetOutputsStored().GetArtifact() != ""; got != tc.apart {
				t.Errorf("stored apart %v, want %v", got, tc.apart)
			}
			if len(res.GetOutputs()) != len(tc.files) || (len(res.GetOutputs()[0].GetContent()) > 0) != tc.content {
				t.Errorf("%d files listed, content kept %v; want %d, %v", len(res.GetOutputs()), len(res.GetOutputs()[0].GetContent()) > 0, len(tc.files), tc.content)
			}
			if tc.apart {
				zr, err := gzip.NewReader(bytes.NewReader(tc.store.puts[0]))
				if err != nil {
					t.Fatal(err)
				}
				raw, _ := io.ReadAll(zr)
				var back pb.OutputFiles
				if err := proto.Unmarshal(raw, &back); err != nil || len(back.GetFiles()) != 3 || len(back.GetFiles()[2].GetContent()) != 40<<10 {
					t.Errorf("stored document: %d files, %v", len(back.GetFiles()), err)
				}
			}
			if got := strings.Join(res.GetOutputsOmitted(), "\n"); !strings.Contains(got, tc.omitted) || (tc.omitted == "" && got != "") {
				t.Errorf("omitted %q, want %q", got, tc.omitted)
			}
			if res.GetVerdict() != pb.Verdict_VERDICT_FAILED {
				t.Errorf("verdict changed: %v", res.GetVerdict())
			}
		})
	}
}
