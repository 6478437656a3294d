package assert

import (
	"bytes"
	"sort"
	"unicode/utf8"

	"github.com/skillfleet/skillfleet/internal/text"
	"golang.org/x/text/cases"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"
)

// prepared is text made ready for substring search: NFC, optionally full-case-folded, invalid
// UTF-8 replaced by U+FFFD, with a map from positions in the prepared text back to the original.
type prepared struct {
	orig string
	text []byte
	// spans are the regions whose length changed, in order. Between spans the prepared text is
	// a byte-for-byte image of the original (ASCII, or non-ASCII that neither normalisation nor
	// folding resized), so the map is an offset shift.
	spans []span
}

// span says that prepared text[t0:t1] came from original[o0:o1].
type span struct{ t0, t1, o0, o1 int }

// preparer holds the scratch buffers and the folding transformer for one evaluation; it is not
// shared between goroutines.
type preparer struct {
	fold   bool
	caser  cases.Caser
	src    []byte // the chunk being folded, as bytes for Span
	nfc    []byte
	folded []byte
	one    [64]byte // the folding of one rune (at most 3 runes of 4 bytes)
}

func newPreparer(fold bool) *preparer {
	p := &preparer{fold: fold}
	if fold {
		p.caser = cases.Fold()
	}
	return p
}

// prepare transforms s into NFC, case-folded when p folds, then NFC again (folding can undo
// normalisation: ΐ folds to ι + U+0308 + U+0301).
//
// Most text is already NFC, so the work goes by chunks that norm's quick check passes: in them
// normalisation changes nothing and only folding is left, one rune at a time where it changes
// something. Whatever the quick check does not pass, and a chunk whose folding is not NFC, goes
// one normalisation segment (a starter and its combining marks) at a time through NFC, folding
// and NFC. Invalid UTF-8 bytes become U+FFFD, one each, and bound the chunks.
func (p *preparer) prepare(s string) prepared {
	out := prepared{orig: s, text: make([]byte, 0, len(s)+len(s)/16+8)}
	text := out.text
	bad := -1 // the next invalid byte at or after i, or len(s)
	for i := 0; i < len(s); {
		if bad < i {
			bad = nextInvalid(s, i)
		}
		if i == bad {
			out.spans = append(out.spans, span{t0: len(text), t1: len(text) + 3, o0: i, o1: i + 1})
			text = append(text, "\uFFFD"...)
			i++
			continue
		}
		if q := norm.NFC.QuickSpanString(s[i:bad]); q > 0 {
			t0, n := len(text), len(out.spans)
			if !p.fold {
				text = append(text, s[i:i+q]...)
			} else {
				var check bool
				text, check = p.foldChunk(text, s[i:i+q], s[i+q:], i, &out.spans)
				if check && norm.NFC.QuickSpan(text[t0:]) != len(text)-t0 {
					// Folding left text that NFC changes: redo the chunk a segment at a time.
					text, out.spans = text[:t0], out.spans[:n]
					text = p.segments(text, s, i, i+q, &out.spans)
				}
			}
			i += q
			continue
		}
		n := norm.NFC.NextBoundaryInString(s[i:bad], true)
		if n <= 0 { // cannot happen at EOF, but never loop forever
			_, n = utf8.DecodeRuneInString(s[i:])
		}
		text = p.segments(text, s, i, i+n, &out.spans)
		i += n
	}
	out.text = text
	return out
}

// nextInvalid finds the first byte at or after i that does not start a valid UTF-8 sequence.
func nextInvalid(s string, i int) int {
	for i < len(s) {
		if s[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return len(s)
}

// foldChunk appends the folding of chunk, which is NFC and valid UTF-8 and starts at byte base
// of the original, recording the runes whose length folding changes. after is the original
// text that follows the chunk. It reports whether the folded chunk may not be NFC any more:
// some folded rune is not NFC on its own or could compose or reorder with its neighbours
// (ǰ folds to j + U+030C, which NFC composes again).
func (p *preparer) foldChunk(text []byte, chunk, after string, base int, spans *[]span) ([]byte, bool) {
	check := false
	for k := 0; k < len(chunk); {
		// ASCII: lowercase in place, a run at a time. This cannot undo NFC: inside a chunk
		// that passed the quick check, what follows a letter composes with nothing before it
		// (NFC_QC=Yes), and what follows the chunk (Hangul jamo, Indic vowel signs) composes
		// with no ASCII letter.
		e := k
		for e < len(chunk) && chunk[e] < utf8.RuneSelf {
			e++
		}
		if e > k {
			t0 := len(text)
			text = append(text, chunk[k:e]...)
			for j := t0; j < len(text); j++ {
				if c := text[j]; 'A' <= c && c <= 'Z' {
					text[j] = c + 'a' - 'A'
				}
			}
			k = e
			continue
		}
		for e < len(chunk) && chunk[e] >= utf8.RuneSelf {
			e++
		}
		var unsafe bool
		text, unsafe = p.foldRun(text, chunk[k:e], chunk[e:], after, base+k, spans)
		check = check || unsafe
		k = e
	}
	return text, check
}

// inert reports whether the rune at the start of next (or, when next is empty, of after) is a
// starter that nothing before it can compose with.
func inert(next, after string) bool {
	if next == "" {
		next = after
	}
	return next == "" || norm.NFC.PropertiesString(next).BoundaryBefore()
}

// foldRun folds a run of non-ASCII runes that starts at byte base of the original; next and
// after are what follows it in the chunk and after the chunk. It reports whether a folded rune
// may interact with its neighbours under NFC.
func (p *preparer) foldRun(text []byte, run, next, after string, base int, spans *[]span) ([]byte, bool) {
	p.src = append(p.src[:0], run...)
	src := p.src
	check := false
	for k := 0; k < len(src); {
		// Copy what folding leaves alone (lowercase, uncased scripts) in one go.
		n, _ := p.caser.Span(src[k:], true)
		text = append(text, src[k:k+n]...)
		if k += n; k == len(src) {
			break
		}
		_, size := utf8.DecodeRune(src[k:])
		p.caser.Reset()
		nDst, _, err := p.caser.Transform(p.one[:], src[k:k+size], true)
		out := p.one[:nDst]
		if err != nil { // cannot happen for one valid rune; keep it unfolded rather than lose it
			out = src[k : k+size]
		}
		t0 := len(text)
		text = append(text, out...)
		if len(out) != size {
			*spans = append(*spans, span{t0: t0, t1: len(text), o0: base + k, o1: base + k + size})
		}
		// The folding is safe in place when it is NFC itself, nothing before it composes with
		// it, and it composes with nothing after it (or what follows is an inert starter).
		if !check {
			rest := next
			if k+size < len(run) {
				rest = run[k+size:]
			}
			last, _ := utf8.DecodeLastRune(out)
			check = norm.NFC.QuickSpan(out) != len(out) || !norm.NFC.Properties(out).BoundaryBefore() ||
				!(norm.NFC.PropertiesString(string(last)).BoundaryAfter() || inert(rest, after))
		}
		k += size
	}
	return text, check
}

// segments appends s[from:to], valid UTF-8, one normalisation segment at a time.
func (p *preparer) segments(text []byte, s string, from, to int, spans *[]span) []byte {
	for i := from; i < to; {
		n := norm.NFC.NextBoundaryInString(s[i:to], true)
		if n <= 0 {
			_, n = utf8.DecodeRuneInString(s[i:])
		}
		t0 := len(text)
		text = p.segment(text, s[i:i+n])
		if len(text)-t0 != n {
			*spans = append(*spans, span{t0: t0, t1: len(text), o0: i, o1: i + n})
		}
		i += n
	}
	return text
}

// segment appends the prepared form of one normalisation segment to text, with norm's Append so
// that segments that compose with what precedes them (Hangul jamo, Indic two-part vowels) do.
func (p *preparer) segment(text []byte, seg string) []byte {
	if !p.fold {
		return norm.NFC.AppendString(text, seg)
	}
	p.nfc = norm.NFC.AppendString(p.nfc[:0], seg)
	p.caser.Reset()
	folded, _, err := transform.Append(p.caser, p.folded[:0], p.nfc)
	if err != nil {
		// Folding valid UTF-8 does not fail; keep the unfolded text rather than lose it.
		folded = append(p.folded[:0], p.nfc...)
	}
	p.folded = folded
	return norm.NFC.Append(text, folded...)
}

// origStart maps a position in the prepared text where a match starts to the original.
func (t *prepared) origStart(pos int) int { return text.RuneStart(t.orig, t.origPos(pos, false)) }

// origEnd maps a position in the prepared text where a match ends to the original.
func (t *prepared) origEnd(pos int) int { return text.RuneEnd(t.orig, t.origPos(pos, true)) }

func (t *prepared) origPos(pos int, end bool) int {
	k := sort.Search(len(t.spans), func(k int) bool { return t.spans[k].t0 > pos }) - 1
	if k < 0 {
		return pos
	}
	sp := t.spans[k]
	switch {
	case pos == sp.t0:
		return sp.o0
	case pos < sp.t1 && end:
		return sp.o1
	case pos < sp.t1:
		return sp.o0
	default:
		return sp.o1 + (pos - sp.t1)
	}
}

// find looks for needle (already prepared) in t. A match may not end inside a combining
// sequence: when the rune after it has a non-zero canonical combining class, the match is part of
// a different character ("e" in "e"+U+0301) and the search goes on. It returns the byte range in
// the original text.
func (t *prepared) find(needle []byte) (start, end int, ok bool) {
	for from := 0; from <= len(t.text); {
		k := bytes.Index(t.text[from:], needle)
		if k < 0 {
			return 0, 0, false
		}
		ts, te := from+k, from+k+len(needle)
		if te == len(t.text) || norm.NFC.Properties(t.text[te:]).CCC() == 0 {
			return t.origStart(ts), t.origEnd(te), true
		}
		_, size := utf8.DecodeRune(t.text[ts:])
		from = ts + max(size, 1)
	}
	return 0, 0, false
}
