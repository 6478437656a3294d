package skill_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/skillfleet/skillfleet/diag"
	"github.com/skillfleet/skillfleet/skill"
	"github.com/skillfleet/skillfleet/skill/skilltest"
)

// BenchmarkDiscoverManyPaths measures `validate` given 2,000 sibling skills one path each
// against the same skills given as their common root: the two should cost about the same.
func BenchmarkDiscoverManyPaths(b *testing.B) {
	const n = 2_000
	gen, root := b.TempDir(), b.TempDir()
	if err := skilltest.GenerateRoot(gen, n, 1); err != nil {
		b.Fatal(err)
	}
	// Flattened into one directory, as a repository's skills/ folder is: every skill is a
	// sibling of every other.
	dirs := make([]string, n)
	for i := range n {
		dirs[i] = filepath.Join(root, skilltest.Name(i))
		if err := os.Rename(skilltest.Dir(gen, i), dirs[i]); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("root", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			validateDeps(root)
		}
	})
	b.Run("paths", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			validatePaths(dirs)
		}
	})
}

// validatePaths is what validate does per path: the skill with its siblings, validated, its
// requires resolved.
func validatePaths(dirs []string) diag.Diagnostics {
	opts := skill.Options{}
	sib := skill.NewSiblings(opts)
	var out diag.Diagnostics
	for _, d := range dirs {
		s, ds, rds := sib.Load(d)
		out = append(out, ds...)
		out = append(out, skill.Validate(s, opts)...)
		out = append(out, rds...)
	}
	return out
}
