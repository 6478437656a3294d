package text

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestPluralAndCount(t *testing.T) {
	tests := []struct {
		n           int
		word, count string
	}{
		{0, "skills", "0 skills"},
		{1, "skill", "1 skill"},
		{2, "skills", "2 skills"},
		{-1, "skills", "-1 skills"},
	}
	for _, tt := range tests {
		if got := Plural(tt.n, "skill", "skills"); got != tt.word {
			t.Errorf("Plural(%d) = %q, want %q", tt.n, got, tt.word)
		}
		if got := Count(tt.n, "skill", "skills"); got != tt.count {
			t.Errorf("Count(%d) = %q, want %q", tt.n, got, tt.count)
		}
	}
}

func TestClips(t *testing.T) {
	tests := []struct {
		name string
		fn   func(string, int) string
		s    string
		n    int
		want string
	}{
		{"bytes: fits", ClipBytes, "abc", 3, "abc"},
		{"bytes: cut", ClipBytes, "abcd", 3, "abc…"},
		{"bytes: not inside a rune", ClipBytes, "aé", 2, "a…"},
		{"bytes: zero", ClipBytes, "ab", 0, "…"},
		{"runes: fits in bytes", ClipRunes, "abc", 3, "abc"},
		{"runes: fits in runes", ClipRunes, "ééé", 3, "ééé"},
		{"runes: cut", ClipRunes, "éééé", 3, "ééé…"},
		{"tail: fits", Tail, "abc", 3, "abc"},
		{"tail: cut", Tail, "abcd", 3, "…bcd"},
		{"tail: not inside a rune", Tail, "aéb", 2, "…b"},
		{"escaped: fits", ClipEscaped, "a\nb", 4, `a\nb`},
		{"escaped: escapes count", ClipEscaped, "a\nbc", 4, `a\n…`},
		{"escaped: invalid bytes", ClipEscaped, "\xff", 4, `\xff`},
		{"escaped: cut before a wide escape", ClipEscaped, "ab\x00", 4, "ab…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.fn(tt.s, tt.n); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestHeadTail(t *testing.T) {
	marker := func(n int) string { return fmt.Sprintf("[%d]", n) }
	tests := []struct {
		name  string
		s     string
		limit int
		want  string
		cut   bool
	}{
		{"fits", "abcdef", 6, "abcdef", false},
		{"cut in the middle", "abcdefgh", 4, "ab[4]gh", true},
		{"not inside a rune", "ééé", 4, "é[2]é", true},
		{"runes wider than half", "日日", 4, "[6]", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, cut := HeadTail(tt.s, tt.limit, marker)
			if got != tt.want || cut != tt.cut {
				t.Errorf("got %q, %v; want %q, %v", got, cut, tt.want, tt.cut)
			}
		})
	}
}

func TestExcerpt(t *testing.T) {
	long := strings.Repeat("a", 50)
	tests := []struct {
		name       string
		s          string
		start, end int
		want       string
	}{
		{"whole", "hello world", 6, 11, "hello world"},
		{"start of a long text", long, 0, 0, strings.Repeat("a", 17) + "…"},
		{"match in the middle", long + "M" + long, 50, 51, "…" + strings.Repeat("a", 8) + "M" + strings.Repeat("a", 8) + "…"},
		{"long match cut inside", strings.Repeat("m", 50), 0, 50, strings.Repeat("m", 10) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Excerpt(tt.s, tt.start, tt.end, 20, 10)
			if got != tt.want {
				t.Errorf("Excerpt = %q, want %q", got, tt.want)
			}
			if !utf8.ValidString(got) || utf8.RuneCountInString(got) > 20 {
				t.Errorf("%q is invalid UTF-8 or longer than 20 runes", got)
			}
		})
	}
}

func TestRuneAround(t *testing.T) {
	s := "a\xe2\x82\xacb\x91\xe2\x82c" // a € b <stray continuation> <truncated sequence> c
	tests := []struct{ i, start, end int }{
		{0, 0, 0}, {1, 1, 1}, {2, 1, 4}, {3, 1, 4}, {4, 4, 4}, {5, 5, 5}, {6, 6, 6}, {7, 7, 7}, {8, 8, 8}, {9, 9, 9}, {100, 9, 9},
	}
	for _, tt := range tests {
		if s0, e0 := runeAround(s, tt.i); s0 != tt.start || e0 != tt.end {
			t.Errorf("runeAround(%d) = %d,%d want %d,%d", tt.i, s0, e0, tt.start, tt.end)
		}
	}
}

func TestInts(t *testing.T) {
	for _, tt := range []struct {
		in   []int
		want string
	}{
		{nil, ""},
		{[]int{20}, "20"},
		{[]int{5, 10, 15, 20}, "5, 10, 15, 20"},
		{[]int{-1, 0}, "-1, 0"},
	} {
		if got := Ints(tt.in); got != tt.want {
			t.Errorf("Ints(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
