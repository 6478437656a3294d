package report

import (
	"strings"
	"testing"
)

func TestStripEscapes(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain", "hello", "hello"},
		{"SGR colour", "\x1b[31mred\x1b[0m text", "red text"},
		{"CSI with params", "a\x1b[1;32;48;5;200mb\x1b[2Kc\x1b[?25ld", "abcd"},
		{"cursor movement", "line\x1b[1A\x1b[2Jover", "lineover"},
		{"OSC 8 hyperlink, ST", "\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\", "click"},
		{"OSC 52 clipboard, BEL", "x\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07y", "xy"},
		{"OSC title", "\x1b]0;pwned\x07ok", "ok"},
		{"DCS string", "a\x1bPq#0;2;0;0;0\x1b\\b", "ab"},
		{"APC string", "a\x1b_secret\x1b\\b", "ab"},
		{"C1 CSI", "a\u009b31mb", "ab"},
		{"C1 OSC with C1 ST", "a\u009d0;title\u009cb", "ab"},
		{"two-byte escapes", "a\x1b7b\x1b8c\x1bcd", "abcd"},
		{"charset designation", "a\x1b(Bb", "ab"},
		{"ESC at the end", "abc\x1b", "abc"},
		{"unterminated CSI", "abc\x1b[12;", "abc"},
		{"unterminated OSC swallows the rest", "abc\x1b]0;title", "abc"},
		{"CSI broken by a newline", "a\x1b[12\nb", "a\nb"},
		{"non-ASCII kept", "héllo ✓ 日本", "héllo ✓ 日本"},
	}
	for _, tt := range tests {
		if got := stripEscapes(tt.in); got != tt.want {
			t.Errorf("%s: stripEscapes(%q) = %q, want %q", tt.name, tt.in, got, tt.want)
		}
	}
}

func TestCleanXML(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"markup left for encoding/xml", "]]> <x> & \"'", "]]> <x> & \"'"},
		{"NUL", "a\x00b", "a\uFFFDb"},
		{"C0 controls but tab, LF, CR", "\x01\x08\t\n\r\x0b\x0c\x1f", "\uFFFD\uFFFD\t\n\r\uFFFD\uFFFD\uFFFD"},
		{"ANSI removed whole", "\x1b[31mred\x1b[0m", "red"},
		{"U+FFFE and U+FFFF", "a\uFFFEb\uFFFFc", "a\uFFFDb\uFFFDc"},
		{"invalid UTF-8", "a\xffb\xc3", "a\uFFFDb\uFFFD"},
		{"C1 kept (legal in XML 1.0)", "a\u0085b", "a\u0085b"},
		{"astral kept", "🙂", "🙂"},
	}
	for _, tt := range tests {
		if got := cleanXML(tt.in); got != tt.want {
			t.Errorf("%s: cleanXML(%q) = %q, want %q", tt.name, tt.in, got, tt.want)
		}
	}
}

func TestCleanTerminal(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"line endings", "a\r\nb\rc\n", "a\nb\nc\n"},
		{"bell and backspace", "a\x07b\x08c", "a\uFFFDb\uFFFDc"},
		{"DEL and C1", "a\x7fb\u0085c", "a\uFFFDb\uFFFDc"},
		{"bidi override", "user\u202Egnp.exe", "user\uFFFDgnp.exe"},
		{"isolates", "a\u2066b\u2069c", "a\uFFFDb\uFFFDc"},
		{"tab kept", "a\tb", "a\tb"},
	}
	for _, tt := range tests {
		if got := cleanTerminal(tt.in); got != tt.want {
			t.Errorf("%s: cleanTerminal(%q) = %q, want %q", tt.name, tt.in, got, tt.want)
		}
	}
}

func TestExcerpt(t *testing.T) {
	if got, cut := excerpt("short", 10); got != "short" || cut {
		t.Errorf("excerpt(short) = %q, %v", got, cut)
	}
	s := strings.Repeat("日", 1000) // 3 bytes a rune: cuts must not split one
	got, cut := excerpt(s, 100)
	if !cut || !strings.HasPrefix(got, "日") || !strings.HasSuffix(got, "日") || strings.ContainsRune(got, '\uFFFD') {
		t.Errorf("excerpt cut a rune or kept no head/tail: %q", got)
	}
	if !strings.Contains(got, "bytes omitted") || len(got) > 100+40 {
		t.Errorf("excerpt = %d bytes %q", len(got), got)
	}
}
