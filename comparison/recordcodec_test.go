package comparison

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/skillfleet/skillfleet/internal/testutil"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// codecGroups are the groups of the codec's tests: two arms, a case whose epochs ran on two
// models (a fleet mid-upgrade), a command case without agent, model or judge, and the values a
// worker may send that a comparison still reads (a verdict this version does not know,
// negative and huge numbers, an infinite cost, a multi-byte name).
func codecGroups() []RecordGroup {
	return []RecordGroup{
		{Skill: "deploy", Case: "checklist", Agent: "claude", Model: "m-1", JudgeModel: "j", JudgePrompt: "p/1", Digest: "sha256:aa", Epochs: []EpochRecord{
			{Epoch: 1, Verdict: pass, Tokens: 1200, Cost: 0.0123, DurationMS: 2500},
			{Epoch: 3, Verdict: fail, Tokens: 900, Cost: 0.5, DurationMS: 1800},
		}},
		{Skill: "deploy", Case: "checklist", Agent: "claude", Model: "m-2", JudgeModel: "j", JudgePrompt: "p/1", Digest: "sha256:aa", Epochs: []EpochRecord{
			{Epoch: 2, Verdict: errd, Tokens: 0, Cost: 0, DurationMS: 0},
		}},
		{Arm: "without_skill", Skill: "deploy", Case: "checklist", Agent: "claude", Model: "m-1", JudgeModel: "j", JudgePrompt: "p/1", Digest: "sha256:aa", Epochs: []EpochRecord{
			{Epoch: 1, Verdict: fail, Tokens: 1000, Cost: 0.01, DurationMS: 2000},
		}},
		{Skill: "lint-ü", Case: "runs", Digest: "sha256:bb", Epochs: []EpochRecord{
			{Epoch: 1, Verdict: pb.Verdict(42), Tokens: -5, Cost: math.Inf(1), DurationMS: math.MaxInt64},
			{Epoch: math.MaxInt32, Verdict: pb.Verdict_VERDICT_REUSED, Tokens: math.MinInt64, Cost: -1e-300, DurationMS: -1},
		}},
	}
}

// encodeGroups writes groups, announcing their arms in the order they first appear.
func encodeGroups(t testing.TB, groups []RecordGroup) []byte {
	t.Helper()
	var arms []RecordsArm
	for _, g := range groups {
		i := slices.IndexFunc(arms, func(a RecordsArm) bool { return a.Arm == g.Arm })
		if i < 0 {
			arms = append(arms, RecordsArm{Arm: g.Arm})
			i = len(arms) - 1
		}
		arms[i].Groups++
		arms[i].Records += len(g.Epochs)
	}
	var buf bytes.Buffer
	w, err := NewRecordsWriter(&buf, arms)
	if err != nil {
		t.Fatal(err)
	}
	for i := range groups {
		if err := w.Write(&groups[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// recordsOfGroups is what ReadRecords should give of groups' arm.
func recordsOfGroups(groups []RecordGroup, arm string) []Record {
	var out []Record
	for _, g := range groups {
		if armName(g.Arm) != armName(arm) {
			continue
		}
		key := &RecordKey{Skill: g.Skill, Case: g.Case, Agent: g.Agent, Model: g.Model, JudgeModel: g.JudgeModel, JudgePrompt: g.JudgePrompt, CaseDigest: g.Digest}
		for _, e := range g.Epochs {
			out = append(out, Record{RecordKey: key, Epoch: e.Epoch, Verdict: e.Verdict, Tokens: e.Tokens, Cost: e.Cost, DurationMS: e.DurationMS})
		}
	}
	return out
}

// TestRecordsRoundTrip: what is written reads back, arm by arm, value for value; and the
// encoding of version 1 stays what it is (the golden hex dump: a coordinator and a CLI of
// different versions must agree on it).
func TestRecordsRoundTrip(t *testing.T) {
	groups := codecGroups()
	data := encodeGroups(t, groups)
	testutil.Golden(t, filepath.Join("testdata", "records-v1.hex"), []byte(hex.Dump(data)))
	for _, arm := range []string{"", WithSkill, "without_skill", "old_skill"} {
		got, err := ReadRecords(bytes.NewReader(data), arm, ReadLimits{Size: int64(len(data))})
		if err != nil {
			t.Fatalf("arm %q: %v", arm, err)
		}
		if want := recordsOfGroups(groups, arm); !slices.EqualFunc(got, want, Same) {
			t.Errorf("arm %q: read\n%v\nwant\n%v", arm, got, want)
		}
	}
	// A stream read a byte at a time reads the same.
	got, err := ReadRecords(&oneByteReader{r: bytes.NewReader(data)}, "", ReadLimits{})
	if err != nil || len(got) != 5 {
		t.Errorf("read a byte at a time: %d records, %v", len(got), err)
	}
	// A group's records share its key, and keys share the strings they repeat.
	if len(got) > 2 && (got[0].RecordKey != got[1].RecordKey || unsafeStringData(got[0].Skill) != unsafeStringData(got[2].Skill)) {
		t.Error("the records of a group hold copies of its key, or keys copies of their strings")
	}
}

type oneByteReader struct{ r io.Reader }

func (o *oneByteReader) Read(p []byte) (int, error) { return o.r.Read(p[:min(1, len(p))]) }

func unsafeStringData(s string) *byte { return unsafe.StringData(s) }

// header builds the start of a stream by hand: magic, version, and the arms' counts.
func header(version uint64, arms ...RecordsArm) []byte {
	b := append([]byte("SFRC"), binary.AppendUvarint(nil, version)...)
	b = binary.AppendUvarint(b, uint64(len(arms)))
	for _, a := range arms {
		b = binary.AppendUvarint(b, uint64(len(a.Arm)))
		b = append(b, a.Arm...)
		b = binary.AppendUvarint(b, uint64(a.Groups))
		b = binary.AppendUvarint(b, uint64(a.Records))
	}
	return b
}

// withTrailer ends body with the end marker and its checksum.
func withTrailer(body []byte) []byte {
	out := append(slices.Clone(body), "SFRE"...)
	return binary.BigEndian.AppendUint32(out, crc32c(body))
}

// TestReadRecordsRefusesHostileStreams: a coordinator that lies, or a stream damaged on the
// way, gets an error that says what is wrong, before anything is allocated for what the
// stream only announces, and never a partial set of records.
func TestReadRecordsRefusesHostileStreams(t *testing.T) {
	good := encodeGroups(t, codecGroups())
	flipped := slices.Clone(good)
	flipped[len(flipped)-12] ^= 0x40 // the last group's duration: only the checksum notices
	oneGroup := append(header(1, RecordsArm{Groups: 1, Records: 1}), 0, 0, 1, 'x', 1, 1, 1, 1, 1, 1, 1, 2, 2, 0, 0, 0)
	tests := []struct {
		name string
		data []byte
		lim  ReadLimits
		want string
	}{
		{"empty", nil, ReadLimits{}, "cut short"},
		{"not records", []byte(`{"error":"not found"}`), ReadLimits{}, "wrong magic"},
		{"a later version", header(2), ReadLimits{}, "version 2, and this skillfleet reads version 1 only"},
		{"too many arms", header(1, make([]RecordsArm, 17)...), ReadLimits{}, "17 arms"},
		{"over the record limit", header(1, RecordsArm{Groups: 1, Records: 11}), ReadLimits{MaxRecords: 10}, "more than 10 records announced"},
		{"arms over the limit together", header(1, RecordsArm{Groups: 1, Records: 6}, RecordsArm{Arm: "a2", Groups: 1, Records: 6}), ReadLimits{MaxRecords: 10}, "more than 10 records announced"},
		{"a billion records in a small body", header(1, RecordsArm{Groups: 1, Records: 1e9}), ReadLimits{MaxRecords: 2e9, Size: 1 << 20}, "1000000000 records announced in 1048576 bytes"},
		{"more groups than records", header(1, RecordsArm{Groups: 3, Records: 2}), ReadLimits{}, "3 groups of 2 records"},
		{"a varint of eleven bytes", append([]byte("SFRC\x01"), bytes.Repeat([]byte{0xff}, 11)...), ReadLimits{}, "a bad arm count"},
		{"a huge string", append(header(1, RecordsArm{Groups: 1, Records: 1}), 0, 0, 0xff, 0xff, 0x7f), ReadLimits{}, "a string of 2097151 bytes, over the 65536"},
		{"strings over their limit", oneGroup, ReadLimits{MaxStringBytes: 16}, "more distinct strings than the limit"},
		{"a reference to a string not read", append(header(1, RecordsArm{Groups: 1, Records: 1}), 0, 5), ReadLimits{}, "a reference to string 5 of 0"},
		{"a group of an arm not announced", append(header(1, RecordsArm{Groups: 1, Records: 1}), 1), ReadLimits{}, "names arm 2 of 1"},
		{"a group without epochs", append(header(1, RecordsArm{Groups: 2, Records: 2}), 0, 0, 1, 'x', 1, 1, 1, 1, 1, 1, 0), ReadLimits{}, "has 0 epochs"},
		{"more epochs than announced", append(header(1, RecordsArm{Groups: 1, Records: 1}), 0, 0, 1, 'x', 1, 1, 1, 1, 1, 1, 2), ReadLimits{}, "has 2 epochs"},
		{"fewer epochs than announced", append(header(1, RecordsArm{Groups: 1, Records: 3}), 0, 0, 1, 'x', 1, 1, 1, 1, 1, 1, 2), ReadLimits{}, "has 2 epochs, and the records announced for arm \"\" leave room for 3 to 3"},
		{"an epoch out of range", append(header(1, RecordsArm{Groups: 1, Records: 1}), 0, 0, 1, 'x', 1, 1, 1, 1, 1, 1, 1, 0x80, 0x80, 0x80, 0x80, 0x20), ReadLimits{}, "epoch 4294967296 is out of range"},
		{"no end marker", withTrailer(oneGroup)[:len(oneGroup)+1], ReadLimits{}, "cut short"},
		{"a wrong end marker", append(slices.Clone(oneGroup), "SFRX\x00\x00\x00\x00"...), ReadLimits{}, "no end marker"},
		{"bytes changed", flipped, ReadLimits{}, "checksum mismatch"},
		{"bytes after the end", append(slices.Clone(good), 0), ReadLimits{}, "bytes after the end marker"},
		{"a failing connection", nil, ReadLimits{}, "reading: connection reset"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r io.Reader = bytes.NewReader(tt.data)
			if tt.name == "a failing connection" {
				r = io.MultiReader(bytes.NewReader(good[:40]), &failingReader{errors.New("connection reset")})
			}
			got, err := ReadRecords(r, "", tt.lim)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "records: ") {
				t.Fatalf("error %v, want one saying %q", err, tt.want)
			}
			if got != nil {
				t.Errorf("%d records given beside the error", len(got))
			}
		})
	}
	// Cut anywhere, the stream is refused, never read as a shorter run.
	for n := range len(good) {
		if _, err := ReadRecords(bytes.NewReader(good[:n]), "", ReadLimits{}); err == nil {
			t.Fatalf("the first %d of %d bytes read as a whole stream", n, len(good))
		}
	}
}

type failingReader struct{ err error }

func (f *failingReader) Read([]byte) (int, error) { return 0, f.err }

func crc32c(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// TestRecordsWriterRefuses: a writer never writes what a reader would refuse, nor a stream
// whose counts disagree with what it holds.
func TestRecordsWriterRefuses(t *testing.T) {
	one := []EpochRecord{{Epoch: 1, Verdict: pass}}
	tests := []struct {
		name   string
		arms   []RecordsArm
		groups []RecordGroup
		want   string
	}{
		{"an arm twice", []RecordsArm{{Groups: 1, Records: 1}, {Groups: 1, Records: 1}}, nil, "announced twice"},
		{"groups without records", []RecordsArm{{Groups: 1}}, nil, "1 groups of 0 records"},
		{"a group of an arm not announced", []RecordsArm{{Groups: 1, Records: 1}}, []RecordGroup{{Arm: "a2", Epochs: one}}, "not announced"},
		{"a group without epochs", []RecordsArm{{Groups: 1, Records: 1}}, []RecordGroup{{}}, "without epochs"},
		{"more than announced", []RecordsArm{{Groups: 1, Records: 1}}, []RecordGroup{{Epochs: one}, {Epochs: one}}, "more groups or records"},
		{"less than announced", []RecordsArm{{Groups: 2, Records: 2}}, []RecordGroup{{Epochs: one}}, "announced and not written"},
		{"a string too long", []RecordsArm{{Groups: 1, Records: 1}}, []RecordGroup{{Case: strings.Repeat("c", MaxRecordString+1), Epochs: one}}, "a string of 65537 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := NewRecordsWriter(io.Discard, tt.arms)
			for i := 0; err == nil && i < len(tt.groups); i++ {
				err = w.Write(&tt.groups[i])
			}
			if err == nil {
				err = w.Close()
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one saying %q", err, tt.want)
			}
		})
	}
}

// FuzzReadRecords: whatever the bytes, ReadRecords returns records or an error, within its
// limits, and what it reads is what a writer wrote.
func FuzzReadRecords(f *testing.F) {
	f.Add(encodeGroups(f, codecGroups()))
	f.Add(header(1, RecordsArm{Groups: 1, Records: 1}))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := ReadRecords(bytes.NewReader(data), "", ReadLimits{MaxRecords: 1000, MaxStringBytes: 1 << 16})
		if err != nil {
			return
		}
		if len(got) > 1000 {
			t.Fatalf("%d records read, over the limit of 1000", len(got))
		}
	})
}
