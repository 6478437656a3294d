package textdist

import "testing"

func TestLevenshtein(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"output_contain", "output_contains", 1}, {"kitten", "sitting", 3},
		{"é", "e", 1}, {"stdout-contain", "stdout-contains", 1}, {string(make([]byte, 65)), "x", 1 << 30},
	} {
		if got := Levenshtein(tt.a, tt.b); got != tt.want {
			t.Errorf("Levenshtein(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
