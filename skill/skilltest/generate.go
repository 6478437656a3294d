// Package skilltest generates skills roots for benchmarks and tests.
package skilltest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
)

// SkillsPerGroup is how many skills GenerateRoot puts in each group directory, so that
// discovery walks a two-level tree as real monorepos have, not one flat directory.
const SkillsPerGroup = 100

// Name returns the name of the i-th generated skill.
func Name(i int) string { return fmt.Sprintf("skill-%05d", i) }

// Dir returns the directory of the i-th generated skill below root.
func Dir(root string, i int) string {
	return filepath.Join(root, fmt.Sprintf("group-%03d", i/SkillsPerGroup), Name(i))
}

// GenerateRoot writes n valid skills below dir: dir/group-NNN/skill-NNNNN/SKILL.md. Skill i
// has a SemVer metadata.version and requires 0-3 distinct lower-numbered skills, most with a
// minimum version it satisfies, so the graph is acyclic and resolves cleanly; every tenth
// skill has a test field and its cases file. The same seed gives the same tree.
func GenerateRoot(dir string, n int, seed int64) error {
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(seed)^0x9e3779b97f4a7c15))
	versions := make([]string, n)
	for i := range n {
		versions[i] = fmt.Sprintf("%d.%d.%d", 1+rng.IntN(3), rng.IntN(10), rng.IntN(20))
	}
	for i := range n {
		d := Dir(dir, i)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("generate skill %d: %w", i, err)
		}
		var reqs []int
		if i > 0 {
			for range rng.IntN(4) {
				j := rng.IntN(i)
				if !contains(reqs, j) {
					reqs = append(reqs, j)
				}
			}
		}
		hasTest := i%10 == 0
		if hasTest {
			if err := os.MkdirAll(filepath.Join(d, "test"), 0o755); err != nil {
				return fmt.Errorf("generate skill %d: %w", i, err)
			}
			cases := fmt.Sprintf("cases:\n  - name: smoke\n    input: \"Run %s on the sample input\"\n    assertions:\n      output_contains:\n        - \"done\"\n", Name(i))
			if err := os.WriteFile(filepath.Join(d, "test", "cases.yaml"), []byte(cases), 0o644); err != nil {
				return fmt.Errorf("generate skill %d: %w", i, err)
			}
		}
		content := skillMD(i, versions, reqs, hasTest, rng)
		if err := os.WriteFile(filepath.Join(d, "SKILL.md"), []byte(content), 0o644); err != nil {
			return fmt.Errorf("generate skill %d: %w", i, err)
		}
	}
	return nil
}

func contains(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func skillMD(i int, versions []string, reqs []int, hasTest bool, rng *rand.Rand) string {
	var b strings.Builder
	name := Name(i)
	b.WriteString("---\n")
	fmt.Fprintf(&b, "name: %s\n", name)
	fmt.Fprintf(&b, "description: Generated skill number %d for benchmarks. Use when the user asks for task %d.\n", i, i)
	b.WriteString("license: Apache-2.0\n")
	b.WriteString("metadata:\n  author: skilltest\n")
	fmt.Fprintf(&b, "  version: %q\n", versions[i])
	if len(reqs) > 0 {
		b.WriteString("requires:\n")
		for _, j := range reqs {
			fmt.Fprintf(&b, "  - skill: %s\n", Name(j))
			switch rng.IntN(3) {
			case 0: // any version
			case 1:
				fmt.Fprintf(&b, "    version: %q\n", versions[j])
			default:
				fmt.Fprintf(&b, "    version: \"1.0\"\n")
			}
		}
	}
	if hasTest {
		b.WriteString("test:\n  cases: test/cases.yaml\n  config:\n    timeout: 30\n    parallel: true\n")
	}
	b.WriteString("---\n\n")
	fmt.Fprintf(&b, "# %s\n\n", name)
	b.WriteString("## Steps\n\n")
	for k := range 12 {
		fmt.Fprintf(&b, "%d. Run `step-%d` with the input file and check that it prints `ok`.\n", k+1, k)
	}
	b.WriteString("\n## Gotchas\n\n- The input must be UTF-8; convert it first with `iconv`.\n")
	return b.String()
}
