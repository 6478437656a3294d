package yamlstrict

import (
	"fmt"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// casesFile is a cases file of n prompt cases shaped as suitetest.Generate writes them.
func casesFile(n int) []byte {
	var b strings.Builder
	b.WriteString("cases:\n")
	for c := range n {
		fmt.Fprintf(&b, "  - name: case_%04d\n    description: synthetic case %d\n    input: \"Say READY for case %d of skill-00001\"\n", c, c, c)
		if c%3 == 0 {
			b.WriteString("    runs: 3\n    confidence: 0.6\n")
		}
		b.WriteString("    assertions:\n      output_contains: [\"READY\"]\n      output_not_contains: [\"error\"]\n      output_matches: [\"(?i)\\\\bready\\\\b\"]\n")
	}
	return []byte(b.String())
}

// BenchmarkParseCasesFile reads a cases file of 100 prompt cases (37 KB): with a Reader, as a
// suite's loader does, afresh, and with yaml.v3 alone.
func BenchmarkParseCasesFile(b *testing.B) {
	text := casesFile(100)
	b.Run("reader", func(b *testing.B) {
		r := NewReader()
		b.SetBytes(int64(len(text)))
		b.ReportAllocs()
		for b.Loop() {
			if root, problems := r.Parse(text, Options{}); root == nil || len(problems) > 0 {
				b.Fatal(problems)
			}
		}
	})
	b.Run("parse", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		b.ReportAllocs()
		for b.Loop() {
			if root, problems := Parse(text, Options{}); root == nil || len(problems) > 0 {
				b.Fatal(problems)
			}
		}
	})
	b.Run("yaml.v3", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		b.ReportAllocs()
		for b.Loop() {
			var doc yaml.Node
			if err := yaml.Unmarshal(text, &doc); err != nil {
				b.Fatal(err)
			}
		}
	})
}
