package assert

import (
	"bytes"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// TestPrepareMatchesReference checks the fast paths of prepare against the segment-by-segment
// reference for every assigned code point (and the C0/C1 controls), alone and in the contexts
// where folding interacts with normalisation: before combining marks, after a letter, after an
// uppercase ASCII letter.
func TestPrepareMatchesReference(t *testing.T) {
	if testing.Short() {
		t.Skip("walks every code point")
	}
	// Folding is where the fast path does its own work; without it, the fast path is norm's
	// QuickSpan contract (FuzzContains checks both).
	same := func(s string) bool {
		return bytes.Equal(newPreparer(true).prepare(s).text, referencePrepare(s, true))
	}
	// Batches keep the walk to a few seconds; a failing batch is searched for its culprit.
	var batch []string
	check := func() {
		if same(strings.Join(batch, " ")) {
			batch = batch[:0]
			return
		}
		for _, s := range batch {
			if !same(s) {
				t.Fatalf("prepare(%+q) = %+q, want %+q", s, newPreparer(true).prepare(s).text, referencePrepare(s, true))
			}
		}
		t.Fatalf("a batch differs but none of its parts: %+q", batch)
	}
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if !utf8.ValidRune(r) || !(unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z) || unicode.IsControl(r)) {
			continue
		}
		rs := string(r)
		batch = append(batch, rs, rs+"\u0301", rs+"\u0323\u0301", "J"+rs, "a"+rs+"\u030c", rs+"\u0345")
		if len(batch) >= 600 {
			check()
		}
	}
	check()
}

func TestPrepareUnicodeCorners(t *testing.T) {
	tests := []struct {
		in   string
		fold bool
		want string
	}{
		{"J\u030c", true, "\u01f0"},       // j + caron composes once folded
		{"J\u030c", false, "J\u030c"},     // no uppercase J with caron
		{"\u0390", true, "\u0390"},        // ΐ folds to ι + U+0308 + U+0301, NFC recomposes
		{"\u0130", true, "i\u0307"},       // İ
		{"\u1e9e", true, "ss"},            // ẞ
		{"\u212a", false, "K"},            // Kelvin sign is K in NFC
		{"\u1100\u1161\u11a8", true, "각"}, // jamo compose
		{"e\u0301", false, "\u00e9"},
		{"a\xffb", true, "a\ufffdb"},
		{"\u03a3\u0391\u03a3", true, "σασ"},
		{"\u1fbc", true, "αι"}, // ᾼ full-folds to two letters
	}
	for _, tt := range tests {
		if got := string(newPreparer(tt.fold).prepare(tt.in).text); got != tt.want {
			t.Errorf("prepare(%+q, fold=%v) = %+q, want %+q", tt.in, tt.fold, got, tt.want)
		}
		if got := string(referencePrepare(tt.in, tt.fold)); got != tt.want {
			t.Errorf("referencePrepare(%+q, fold=%v) = %+q, want %+q", tt.in, tt.fold, got, tt.want)
		}
	}
}
