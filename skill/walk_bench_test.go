package skill

import (
	"os"
	"testing"

	"github.com/skillfleet/skillfleet/skill/skilltest"
)

// BenchmarkWalk10k measures the directory walk alone, without parsing.
func BenchmarkWalk10k(b *testing.B) {
	root := b.TempDir()
	if err := skilltest.GenerateRoot(root, 10_000, 1); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		w := &walker{root: root, readDir: os.ReadDir, visited: map[string]bool{}, seenSkills: map[string]bool{}}
		w.run()
		if len(w.files) != 10_000 {
			b.Fatalf("found %d skills", len(w.files))
		}
	}
}
