package assert

import (
	"fmt"
	"strings"
	"testing"
)

// mib builds about 1 MiB of output from a repeated line.
func mib(line string) string {
	return strings.Repeat(line, (1<<20)/len(line)+1)[:1<<20]
}

func BenchmarkContains1MiB(b *testing.B) {
	cases := []struct {
		name string
		a    Assertion
		out  string
	}{
		// The needle is absent, so the whole output is searched.
		{"ascii/output_contains", Assertion{Type: OutputContains, Value: "not-there"},
			mib("INFO 2026-01-27 selected environment DEV in region eu-west-1\n")},
		{"ascii/not_contains", Assertion{Type: NotContains, Value: "Traceback"},
			mib("INFO 2026-01-27 selected environment DEV in region eu-west-1\n")},
		{"mixed/output_contains", Assertion{Type: OutputContains, Value: "not-there"},
			mib("Die Straße führt nach Zürich — ΟΔΟΣ — 東京 — café\n")},
		{"nonascii/output_contains", Assertion{Type: OutputContains, Value: "не-там"},
			mib("Выбрана среда разработки ДЕВ в регионе Европа-Запад\n")},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			obs := Observation{Output: c.out, Stdout: c.out, Stderr: c.out}
			b.SetBytes(int64(len(c.out)))
			b.ReportAllocs()
			for b.Loop() {
				if r, _ := Evaluate(c.a, obs); r.Passed == (c.a.Type == OutputContains) {
					b.Fatal(r.Message)
				}
			}
		})
	}
}

// BenchmarkEvaluateAll1MiB is a prompt case with five substring assertions: the output is
// prepared once for all of them.
func BenchmarkEvaluateAll1MiB(b *testing.B) {
	out := mib("Die Straße führt nach Zürich — ΟΔΟΣ — 東京 — café\n")
	as := []Assertion{
		{Type: OutputContains, Value: "STRASSE"}, {Type: OutputContains, Value: "zürich"},
		{Type: OutputNotContains, Value: "PROD"}, {Type: OutputNotContains, Value: "error"},
		{Type: OutputContains, Value: "東京"},
	}
	b.SetBytes(int64(len(out)))
	b.ReportAllocs()
	for b.Loop() {
		if rs, _ := EvaluateAll(as, Observation{Output: out}); !AllPassed(rs) {
			b.Fatal(rs)
		}
	}
}

// jsonDoc builds a JSON document of about size bytes: an object with an array of records.
func jsonDoc(size int) string {
	var sb strings.Builder
	sb.WriteString(`{"ok":true,"items":[`)
	for i := 0; sb.Len() < size-200; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"id":%d,"name":"item-%d","price":%d.5,"tags":["a","b"],"meta":{"x":null,"y":false}}`, i, i, i)
	}
	sb.WriteString(`],"total":12345678901234567890}`)
	return sb.String()
}

func BenchmarkJSONMatch100KiB(b *testing.B) {
	stdout := jsonDoc(100 << 10)
	full, err := DecodeJSON([]byte(stdout))
	if err != nil {
		b.Fatal(err)
	}
	cases := []struct {
		name string
		exp  any
	}{
		// Every key and element of the document is compared.
		{"whole-document", full},
		// A small expectation: the cost is decoding stdout.
		{"two-keys", map[string]any{"ok": true, "total": 12345678901234567890.0}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			a := Assertion{Type: StdoutJSON, JSON: c.exp}
			if err := Compile(&a); err != nil {
				b.Fatal(err)
			}
			obs := Observation{Stdout: stdout}
			b.SetBytes(int64(len(stdout)))
			b.ReportAllocs()
			for b.Loop() {
				if r, _ := Evaluate(a, obs); !r.Passed && c.name == "whole-document" {
					b.Fatal(r.Message)
				}
			}
		})
	}
}

// BenchmarkOutputMatches1MiB measures patterns people write on output they do not match, the
// whole output scanned: the cost of feeding the engine rune by rune so it can be stopped.
func BenchmarkOutputMatches1MiB(b *testing.B) {
	out := mib("INFO 2026-01-27 selected environment DEV in region eu-west-1\n")
	for _, p := range []string{`\bPROD\b`, `(?m)^\s*1\.`, `(?i)traceback|panic:`, `\d{4}-\d{2}-\d{2}T`} {
		a := Assertion{Type: OutputMatches, Value: p}
		if err := Compile(&a); err != nil {
			b.Fatal(err)
		}
		b.Run(p, func(b *testing.B) {
			b.SetBytes(int64(len(out)))
			for b.Loop() {
				if r, _ := Evaluate(a, Observation{Output: out}); r.Passed || r.Errored {
					b.Fatal(r.Message)
				}
			}
		})
	}
}
