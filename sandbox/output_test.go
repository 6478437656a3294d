package sandbox

import (
	"bytes"
	"testing"
)

func TestCappedBuffer(t *testing.T) {
	cases := []struct {
		name      string
		limit     int64
		writes    []string
		want      string
		truncated bool
	}{
		{"under the cap", 10, []string{"abc", "def"}, "abcdef", false},
		{"exactly the cap", 6, []string{"abc", "def"}, "abcdef", false},
		{"cut inside a write", 4, []string{"abc", "def"}, "abcd\n" + TruncationMarker(4), true},
		{"cut at a newline", 4, []string{"abc\n", "def"}, "abc\n" + TruncationMarker(4), true},
		{"writes after the cap are dropped", 2, []string{"ab", "c", "d"}, "ab\n" + TruncationMarker(2), true},
		{"empty", 2, nil, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newCappedBuffer(tc.limit)
			total := 0
			for _, w := range tc.writes {
				n, err := b.Write([]byte(w))
				if err != nil || n != len(w) {
					t.Fatalf("Write(%q) = %d, %v; want %d, nil (the stream must keep draining)", w, n, err, len(w))
				}
				total += n
			}
			got, truncated := b.bytes()
			if !bytes.Equal(got, []byte(tc.want)) || truncated != tc.truncated {
				t.Errorf("bytes = %q, %v; want %q, %v", got, truncated, tc.want, tc.truncated)
			}
			if b.total != int64(total) {
				t.Errorf("total = %d; want %d", b.total, total)
			}
		})
	}
	if got := TruncationMarker(1048576); got != "[skillfleet: output truncated at 1048576 bytes]\n" {
		t.Errorf("marker = %q", got)
	}
}
