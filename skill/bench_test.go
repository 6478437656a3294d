package skill_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/skillfleet/skillfleet/diag"
	"github.com/skillfleet/skillfleet/skill"
	"github.com/skillfleet/skillfleet/skill/skilltest"
)

// BenchmarkValidateDeps10k measures what `skillfleet validate ROOT` does on a root of 10,000
// skills with dependency edges: discover and parse, validate each, resolve requires.
func BenchmarkValidateDeps10k(b *testing.B) {
	root := b.TempDir()
	if err := skilltest.GenerateRoot(root, 10_000, 1); err != nil {
		b.Fatal(err)
	}
	if ds := validateDeps(root); ds.HasErrors() || len(ds) > 0 {
		b.Fatalf("generated root is not clean: %d diagnostics, first %v", len(ds), ds[0])
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		validateDeps(root)
	}
}

func validateDeps(root string) diag.Diagnostics {
	opts := skill.Options{}
	cat, ds := skill.Discover([]string{root}, opts)
	for _, s := range cat.All() {
		ds = append(ds, skill.Validate(s, opts)...)
	}
	_, rds := skill.Resolve(cat, opts)
	return append(ds, rds...)
}

// BenchmarkDiscover10k measures discovery alone: walking the tree and parsing every file.
func BenchmarkDiscover10k(b *testing.B) {
	root := b.TempDir()
	if err := skilltest.GenerateRoot(root, 10_000, 1); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		skill.Discover([]string{root}, skill.Options{})
	}
}

// BenchmarkLintCorpus measures what `skillfleet lint --rules=opt-in ROOT...` does on real
// skills: discover and parse, then lint each with every rule. The roots are the directories
// listed in SKILLFLEET_LINT_BENCH (separated by the OS path-list separator), such as the
// snapshots of docs/lint-precision.md; without it the benchmark skips, since no corpus of that
// size belongs in this repository.
func BenchmarkLintCorpus(b *testing.B) {
	env := os.Getenv("SKILLFLEET_LINT_BENCH")
	if env == "" {
		b.Skip("SKILLFLEET_LINT_BENCH names no corpus roots")
	}
	roots := filepath.SplitList(env)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		cat, _ := skill.Discover(roots, skill.Options{})
		n = len(cat.All())
		for _, s := range cat.All() {
			skill.Lint(s, skill.OptInRules()...)
		}
	}
	b.ReportMetric(float64(n), "skills")
}
