package comparison

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math"
	"math/bits"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// The records of a run in a compact, versioned encoding: what a coordinator stores beside a
// finished run's final report and serves on GET /v1/runs/{id}/records, so that comparing two
// runs of a million jobs reads tens of megabytes, not every result. Records are grouped per
// case and configuration (one group per case and agent, bar a run whose workers changed model
// midway): the strings once per group, then each epoch's numbers.
//
// Version 1; integers are varints (encoding/binary), the signed ones zig-zag:
//
//	"SFRC" uvarint(version)
//	uvarint(arms), each: string(arm) uvarint(groups) uvarint(records)
//	the groups, each: uvarint(arm index)
//	                  ref(skill) ref(case) ref(agent) ref(model) ref(judge model) ref(judge prompt) ref(case digest)
//	                  uvarint(epochs), each: varint(epoch) varint(verdict) varint(tokens)
//	                                         uvarint(cost's IEEE bits, bytes reversed) varint(duration ms)
//	"SFRE" CRC-32C (Castagnoli) of every byte before "SFRE", 4 bytes big-endian
//
// A string is uvarint(length) and its bytes; a ref is uvarint(0) and a string, which joins the
// table of strings, or uvarint(k) for the table's k-th string (from 1). The header's counts
// let a reader check that it got every record and allocate once; the trailer tells a stream
// cut short, or bytes changed, from a run with fewer records.

// RecordsVersion is the version of the encoding this package writes, the only one it reads.
const RecordsVersion = 1

// Limits on what the encoding holds: a writer refuses more, a reader stops with an error
// before it allocates for more.
const (
	// MaxRecordString bounds one string (a skill, case, agent, model or judge name, a digest).
	MaxRecordString = 64 << 10
	// maxRecordArms bounds the arms a run's records name.
	maxRecordArms = 16
	// DefaultMaxRecords is the most records ReadRecords reads of a run by default: ten runs
	// of a million jobs.
	DefaultMaxRecords = 10_000_000
	// DefaultMaxStringBytes bounds the distinct strings ReadRecords keeps by default (each
	// counted with 16 bytes more, the cost of holding it).
	DefaultMaxStringBytes = 512 << 20
)

var (
	recordsMagic   = [4]byte{'S', 'F', 'R', 'C'}
	recordsTrailer = [4]byte{'S', 'F', 'R', 'E'}
	castagnoli     = crc32.MakeTable(crc32.Castagnoli)
)

// RecordsArm is one arm's share of a run's records, as the header announces it.
type RecordsArm struct {
	// Arm is the arm as results carry it ("" for with_skill).
	Arm string
	// Groups and Records are how many groups and records of the arm follow.
	Groups, Records int
}

// RecordGroup is the records of one case in one arm and configuration.
type RecordGroup struct {
	// Arm is the arm as results carry it ("" for with_skill).
	Arm                string
	Skill, Case, Agent string
	// Model, JudgeModel, JudgePrompt and Digest are what the configuration check compares
	// (see Record).
	Model, JudgeModel, JudgePrompt, Digest string
	Epochs                                 []EpochRecord
}

// EpochRecord is what a comparison reads of one epoch's counted result.
type EpochRecord struct {
	Epoch      int32
	Verdict    pb.Verdict
	Tokens     int64
	Cost       float64
	DurationMS int64
}

// RecordsWriter writes a run's records in the encoding above: NewRecordsWriter announces them,
// Write adds the groups, Close checks that every announced record was written and ends the
// stream.
type RecordsWriter struct {
	dst   io.Writer
	bw    *bufio.Writer
	crc   hash.Hash32
	arms  map[string]int
	left  []RecordsArm
	table map[string]uint64
	buf   []byte
	err   error
}

// NewRecordsWriter writes the header of records of arms to w.
func NewRecordsWriter(w io.Writer, arms []RecordsArm) (*RecordsWriter, error) {
	if len(arms) > maxRecordArms {
		return nil, fmt.Errorf("records: %d arms, over the %d the encoding holds", len(arms), maxRecordArms)
	}
	crc := crc32.New(castagnoli)
	rw := &RecordsWriter{
		dst: w, crc: crc, bw: bufio.NewWriterSize(io.MultiWriter(w, crc), 64<<10),
		arms: make(map[string]int, len(arms)), left: make([]RecordsArm, len(arms)), table: map[string]uint64{},
	}
	rw.buf = append(rw.buf, recordsMagic[:]...)
	rw.buf = binary.AppendUvarint(rw.buf, RecordsVersion)
	rw.buf = binary.AppendUvarint(rw.buf, uint64(len(arms)))
	for i, a := range arms {
		if _, dup := rw.arms[a.Arm]; dup {
			return nil, fmt.Errorf("records: arm %q announced twice", a.Arm)
		}
		if a.Groups < 0 || a.Records < a.Groups || (a.Groups == 0) != (a.Records == 0) {
			return nil, fmt.Errorf("records: arm %q announced with %d groups of %d records", a.Arm, a.Groups, a.Records)
		}
		if err := rw.appendString(a.Arm); err != nil {
			return nil, err
		}
		rw.buf = binary.AppendUvarint(rw.buf, uint64(a.Groups))
		rw.buf = binary.AppendUvarint(rw.buf, uint64(a.Records))
		rw.arms[a.Arm], rw.left[i] = i, a
	}
	return rw, rw.flushBuf()
}

// Write adds one group; its arm must be announced, with room left for its epochs.
func (rw *RecordsWriter) Write(g *RecordGroup) error {
	if rw.err != nil {
		return rw.err
	}
	i, ok := rw.arms[g.Arm]
	switch {
	case !ok:
		return fmt.Errorf("records: a group of arm %q, which was not announced", g.Arm)
	case len(g.Epochs) == 0:
		return fmt.Errorf("records: a group of %s/%s without epochs", g.Skill, g.Case)
	case rw.left[i].Groups == 0 || len(g.Epochs) > rw.left[i].Records-(rw.left[i].Groups-1):
		return fmt.Errorf("records: more groups or records of arm %q than announced", g.Arm)
	}
	rw.left[i].Groups--
	rw.left[i].Records -= len(g.Epochs)
	rw.buf = binary.AppendUvarint(rw.buf, uint64(i))
	for _, s := range [...]string{g.Skill, g.Case, g.Agent, g.Model, g.JudgeModel, g.JudgePrompt, g.Digest} {
		if err := rw.appendRef(s); err != nil {
			rw.err = err
			return err
		}
	}
	rw.buf = binary.AppendUvarint(rw.buf, uint64(len(g.Epochs)))
	for _, e := range g.Epochs {
		rw.buf = binary.AppendVarint(rw.buf, int64(e.Epoch))
		rw.buf = binary.AppendVarint(rw.buf, int64(e.Verdict))
		rw.buf = binary.AppendVarint(rw.buf, e.Tokens)
		// Reversed, the bits of a round cost (0, 0.5) end in zeros and take a byte or two.
		rw.buf = binary.AppendUvarint(rw.buf, bits.ReverseBytes64(math.Float64bits(e.Cost)))
		rw.buf = binary.AppendVarint(rw.buf, e.DurationMS)
	}
	return rw.flushBuf()
}

// Close checks that every announced group was written and writes the trailer. It does not
// close the underlying writer.
func (rw *RecordsWriter) Close() error {
	if rw.err != nil {
		return rw.err
	}
	for _, a := range rw.left {
		if a.Groups != 0 || a.Records != 0 {
			rw.err = fmt.Errorf("records: %d groups (%d records) of arm %q announced and not written", a.Groups, a.Records, a.Arm)
			return rw.err
		}
	}
	if err := rw.bw.Flush(); err != nil {
		rw.err = err
		return err
	}
	var tr [8]byte
	copy(tr[:], recordsTrailer[:])
	binary.BigEndian.PutUint32(tr[4:], rw.crc.Sum32())
	_, err := rw.dst.Write(tr[:])
	rw.err = errors.New("records: writer closed")
	return err
}

func (rw *RecordsWriter) appendString(s string) error {
	if len(s) > MaxRecordString {
		return fmt.Errorf("records: a string of %d bytes, over the %d the encoding holds", len(s), MaxRecordString)
	}
	rw.buf = binary.AppendUvarint(rw.buf, uint64(len(s)))
	rw.buf = append(rw.buf, s...)
	return nil
}

func (rw *RecordsWriter) appendRef(s string) error {
	if k, ok := rw.table[s]; ok {
		rw.buf = binary.AppendUvarint(rw.buf, k)
		return nil
	}
	rw.buf = append(rw.buf, 0)
	if err := rw.appendString(s); err != nil {
		return err
	}
	rw.table[s] = uint64(len(rw.table) + 1)
	return nil
}

func (rw *RecordsWriter) flushBuf() error {
	_, err := rw.bw.Write(rw.buf)
	rw.buf = rw.buf[:0]
	if err != nil {
		rw.err = err
	}
	return err
}

// ReadLimits bound what ReadRecords reads of an untrusted stream; zero fields take the
// defaults.
type ReadLimits struct {
	// MaxRecords bounds the records of every arm together (DefaultMaxRecords).
	MaxRecords int
	// MaxStringBytes bounds the distinct strings kept, each counted with 16 bytes more
	// (DefaultMaxStringBytes).
	MaxStringBytes int
	// Size is the stream's length when known (an HTTP answer's Content-Length), else 0: a
	// header announcing more records than Size bytes can hold is refused before anything is
	// allocated for them.
	Size int64
}

// minEpochBytes is the least an epoch takes: five varints of a byte.
const minEpochBytes = 5

// preallocRecords bounds what ReadRecords allocates ahead on the header's word alone, when
// the stream's size is unknown.
const preallocRecords = 1 << 20

// ReadRecords reads a run's records in the encoding above and returns those of arm
// ("with_skill", "without_skill", "old_skill", "a2"; "" is with_skill), strings shared between
// records. Nothing is trusted: counts are checked against lim before anything is allocated for
// them, and a stream cut short, with bytes changed or with bytes after its end is an error
// saying so.
func ReadRecords(r io.Reader, arm string, lim ReadLimits) ([]Record, error) {
	if lim.MaxRecords <= 0 {
		lim.MaxRecords = DefaultMaxRecords
	}
	if lim.MaxStringBytes <= 0 {
		lim.MaxStringBytes = DefaultMaxStringBytes
	}
	d := &recordsDecoder{r: r, buf: make([]byte, 64<<10), crc: crc32.New(castagnoli), room: lim.MaxStringBytes}
	out, err := d.read(armName(arm), lim)
	if err != nil {
		return nil, fmt.Errorf("records: %w", err)
	}
	return out, nil
}

// armName is an arm as a comparison names it: "" is with_skill.
func armName(a string) string {
	if a == "" {
		return WithSkill
	}
	return a
}

func (d *recordsDecoder) read(arm string, lim ReadLimits) ([]Record, error) {
	var magic [4]byte
	if err := d.full(magic[:]); err != nil {
		return nil, err
	}
	if magic != recordsMagic {
		return nil, errors.New("not a stream of records (wrong magic)")
	}
	v, err := d.uvarint("version")
	if err != nil {
		return nil, err
	}
	if v != RecordsVersion {
		return nil, fmt.Errorf("version %d, and this skillfleet reads version %d only: upgrade it", v, RecordsVersion)
	}
	n, err := d.uvarint("arm count")
	if err != nil {
		return nil, err
	}
	if n > maxRecordArms {
		return nil, fmt.Errorf("%d arms, over the %d the encoding holds", n, maxRecordArms)
	}
	left := make([]RecordsArm, n)
	want := make([]bool, n)
	total, wanted, groups := 0, 0, 0
	for i := range left {
		if left[i].Arm, err = d.string("arm"); err != nil {
			return nil, err
		}
		g, err := d.uvarint("group count")
		if err != nil {
			return nil, err
		}
		records, err := d.uvarint("record count")
		if err != nil {
			return nil, err
		}
		if records > uint64(lim.MaxRecords-total) {
			return nil, fmt.Errorf("more than %d records announced, over the limit", lim.MaxRecords)
		}
		if g > records || (g == 0) != (records == 0) {
			return nil, fmt.Errorf("arm %q announced with %d groups of %d records", left[i].Arm, g, records)
		}
		left[i].Groups, left[i].Records = int(g), int(records)
		total += int(records)
		groups += int(g)
		if armName(left[i].Arm) == arm {
			want[i] = true
			wanted += int(records)
		}
	}
	if lim.Size > 0 && int64(total) > lim.Size/minEpochBytes {
		return nil, fmt.Errorf("%d records announced in %d bytes, which cannot hold them", total, lim.Size)
	}
	prealloc := wanted
	if lim.Size <= 0 {
		prealloc = min(wanted, preallocRecords)
	}
	out := make([]Record, 0, prealloc)
	var strs [7]string
	for read := 1; read <= groups; read++ {
		i, err := d.uvarint("arm index")
		if err != nil {
			return nil, err
		}
		if i >= n {
			return nil, fmt.Errorf("group %d names arm %d of %d", read, i+1, n)
		}
		a := &left[i]
		if a.Groups == 0 {
			return nil, fmt.Errorf("more groups of arm %q than announced", a.Arm)
		}
		for k := range strs {
			if strs[k], err = d.ref(); err != nil {
				return nil, err
			}
		}
		epochs, err := d.uvarint("epoch count")
		if err != nil {
			return nil, err
		}
		a.Groups--
		// Every group left needs an epoch; the last takes what is left.
		lo, hi := uint64(1), uint64(a.Records-a.Groups)
		if a.Groups == 0 {
			lo = hi
		}
		if epochs < lo || epochs > hi {
			return nil, fmt.Errorf("group %d (%s/%s) has %d epochs, and the records announced for arm %q leave room for %d to %d", read, strs[0], strs[1], epochs, a.Arm, lo, hi)
		}
		a.Records -= int(epochs)
		var key *RecordKey
		if want[i] {
			key = &RecordKey{Skill: strs[0], Case: strs[1], Agent: strs[2], Model: strs[3], JudgeModel: strs[4], JudgePrompt: strs[5], CaseDigest: strs[6]}
		}
		for range epochs {
			e, err := d.epoch()
			if err != nil {
				return nil, fmt.Errorf("group %d (%s/%s): %w", read, strs[0], strs[1], err)
			}
			if key != nil {
				out = append(out, Record{RecordKey: key, Epoch: e.Epoch, Verdict: e.Verdict, Tokens: e.Tokens, Cost: e.Cost, DurationMS: e.DurationMS})
			}
		}
	}
	sum := d.sum()
	var tr [8]byte
	if err := d.full(tr[:]); err != nil {
		return nil, err
	}
	if [4]byte(tr[:4]) != recordsTrailer {
		return nil, errors.New("no end marker after the announced records")
	}
	if binary.BigEndian.Uint32(tr[4:]) != sum {
		return nil, errors.New("checksum mismatch: the records were changed or corrupted on the way")
	}
	return out, d.atEnd()
}

// errCut is the stream ending where more was announced.
var errCut = errors.New("cut short: the stream ended before the announced records did")

// recordsDecoder reads an untrusted stream through its own buffer, keeping the checksum of
// what it consumed.
type recordsDecoder struct {
	r        io.Reader
	buf      []byte
	pos, end int
	// summed is how much of buf[:pos] the checksum has taken.
	summed int
	crc    hash.Hash32
	// err is what ended the stream (io.EOF at its end); readErr the error ReadByte last gave.
	err, readErr error
	table        []string
	// room is what is left of ReadLimits.MaxStringBytes.
	room int
}

// maxEmptyReads bounds the reads in a row that return nothing and no error.
const maxEmptyReads = 100

// more makes sure the buffer holds a byte not yet consumed, reading when it is empty; false at
// the end of the stream or on an error (d.err).
func (d *recordsDecoder) more() bool {
	if d.pos < d.end {
		return true
	}
	if d.err != nil {
		return false
	}
	d.crc.Write(d.buf[d.summed:d.pos])
	d.pos, d.summed, d.end = 0, 0, 0
	for range maxEmptyReads {
		n, err := d.r.Read(d.buf)
		d.end = n
		if err != nil {
			d.err = err
		}
		if n > 0 {
			return true
		}
		if err != nil {
			return false
		}
	}
	d.err = io.ErrNoProgress
	return false
}

// ended words why the stream gave no more.
func (d *recordsDecoder) ended() error {
	if errors.Is(d.err, io.EOF) {
		return errCut
	}
	return fmt.Errorf("reading: %w", d.err)
}

// ReadByte is io.ByteReader for binary.ReadUvarint.
func (d *recordsDecoder) ReadByte() (byte, error) {
	if !d.more() {
		d.readErr = d.ended()
		return 0, d.readErr
	}
	b := d.buf[d.pos]
	d.pos++
	return b, nil
}

func (d *recordsDecoder) full(p []byte) error {
	for len(p) > 0 {
		if !d.more() {
			return d.ended()
		}
		n := copy(p, d.buf[d.pos:d.end])
		d.pos += n
		p = p[n:]
	}
	return nil
}

func (d *recordsDecoder) uvarint(what string) (uint64, error) {
	d.readErr = nil
	v, err := binary.ReadUvarint(d)
	if err != nil && d.readErr == nil {
		// Not the stream's end: more than ten bytes, or more than 64 bits.
		return 0, fmt.Errorf("a bad %s: %w", what, err)
	}
	if err != nil {
		return 0, d.readErr
	}
	return v, nil
}

func (d *recordsDecoder) varint(what string) (int64, error) {
	u, err := d.uvarint(what)
	// The zig-zag decoding of binary.Varint.
	x := int64(u >> 1)
	if u&1 != 0 {
		x = ^x
	}
	return x, err
}

func (d *recordsDecoder) int32(what string) (int32, error) {
	v, err := d.varint(what)
	if err == nil && (v < math.MinInt32 || v > math.MaxInt32) {
		return 0, fmt.Errorf("%s %d is out of range", what, v)
	}
	return int32(v), err
}

func (d *recordsDecoder) epoch() (EpochRecord, error) {
	var e EpochRecord
	var err error
	if e.Epoch, err = d.int32("epoch"); err != nil {
		return e, err
	}
	v, err := d.int32("verdict")
	if err != nil {
		return e, err
	}
	e.Verdict = pb.Verdict(v)
	if e.Tokens, err = d.varint("token count"); err != nil {
		return e, err
	}
	c, err := d.uvarint("cost")
	if err != nil {
		return e, err
	}
	e.Cost = math.Float64frombits(bits.ReverseBytes64(c))
	e.DurationMS, err = d.varint("duration")
	return e, err
}

func (d *recordsDecoder) string(what string) (string, error) {
	n, err := d.uvarint(what + " length")
	if err != nil {
		return "", err
	}
	if n > MaxRecordString {
		return "", fmt.Errorf("a %s of %d bytes, over the %d the encoding holds", what, n, MaxRecordString)
	}
	if int(n)+16 > d.room {
		return "", errors.New("more distinct strings than the limit on their bytes allows")
	}
	d.room -= int(n) + 16
	b := make([]byte, n)
	if err := d.full(b); err != nil {
		return "", err
	}
	return string(b), nil
}

func (d *recordsDecoder) ref() (string, error) {
	k, err := d.uvarint("string reference")
	if err != nil {
		return "", err
	}
	if k == 0 {
		s, err := d.string("string")
		if err != nil {
			return "", err
		}
		d.table = append(d.table, s)
		return s, nil
	}
	if k > uint64(len(d.table)) {
		return "", fmt.Errorf("a reference to string %d of %d", k, len(d.table))
	}
	return d.table[k-1], nil
}

// sum is the checksum of everything consumed so far.
func (d *recordsDecoder) sum() uint32 {
	d.crc.Write(d.buf[d.summed:d.pos])
	d.summed = d.pos
	return d.crc.Sum32()
}

// atEnd fails unless the stream ends with what was consumed.
func (d *recordsDecoder) atEnd() error {
	if d.more() {
		return errors.New("bytes after the end marker")
	}
	if !errors.Is(d.err, io.EOF) {
		return fmt.Errorf("reading: %w", d.err)
	}
	return nil
}
