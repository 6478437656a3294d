// Package suitetest generates synthetic suites for benchmarks and load tests.
package suitetest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Generate writes skills skills under dir, each with casesPerSkill prompt cases (every third
// with runs: 3) and, for every tenth skill, one command case. Skill i requires skill i-1, so
// the dependency graph is a long chain as well as a wide root.
func Generate(dir string, skills, casesPerSkill int) error {
	for i := range skills {
		name := fmt.Sprintf("skill-%05d", i)
		sd := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Join(sd, "test"), 0o755); err != nil {
			return err
		}
		var fm strings.Builder
		fmt.Fprintf(&fm, "---\nname: %s\ndescription: Synthetic skill %d for planning benchmarks. Use when measuring skillfleet.\nmetadata:\n  version: \"1.%d.0\"\n", name, i, i%7)
		if i > 0 {
			fmt.Fprintf(&fm, "requires:\n  - skill: skill-%05d\n    version: \"1.0.0\"\n", i-1)
		}
		fm.WriteString("test:\n  cases: test/cases.yaml\n  config:\n    timeout: 30\n---\n\n# Synthetic\n\nAnswer with the word READY.\n")
		if err := os.WriteFile(filepath.Join(sd, "SKILL.md"), []byte(fm.String()), 0o644); err != nil {
			return err
		}
		var cs strings.Builder
		cs.WriteString("cases:\n")
		for c := range casesPerSkill {
			fmt.Fprintf(&cs, "  - name: case_%04d\n    description: synthetic case %d\n    input: \"Say READY for case %d of %s\"\n", c, c, c, name)
			if c%3 == 0 {
				cs.WriteString("    runs: 3\n    confidence: 0.6\n")
			}
			cs.WriteString("    assertions:\n      output_contains: [\"READY\"]\n      output_not_contains: [\"error\"]\n      output_matches: [\"(?i)\\\\bready\\\\b\"]\n")
		}
		if err := os.WriteFile(filepath.Join(sd, "test", "cases.yaml"), []byte(cs.String()), 0o644); err != nil {
			return err
		}
		if i%10 == 0 {
			if err := os.MkdirAll(filepath.Join(sd, "tests", "cases"), 0o755); err != nil {
				return err
			}
			cmd := "name: echo\ninput:\n  command: \"echo READY\"\nexpected:\n  stdout-contains: [READY]\n"
			if err := os.WriteFile(filepath.Join(sd, "tests", "cases", "echo.yaml"), []byte(cmd), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// GenerateCommands writes skills skills under dir, each with casesPerSkill command cases of
// one epoch that run command, so skills × casesPerSkill is exactly the number of jobs.
func GenerateCommands(dir string, skills, casesPerSkill int, command string) error {
	return GenerateCommandEpochs(dir, skills, casesPerSkill, 1, command)
}

// GenerateCommandEpochs is GenerateCommands with runs epochs per case, so skills ×
// casesPerSkill × runs is the number of jobs: many jobs from few files, which a bundle's
// entry limit requires of a large dispatch.
func GenerateCommandEpochs(dir string, skills, casesPerSkill, runs int, command string) error {
	for i := range skills {
		name := fmt.Sprintf("cmd-%05d", i)
		cases := filepath.Join(dir, name, "tests", "cases")
		if err := os.MkdirAll(cases, 0o755); err != nil {
			return err
		}
		md := fmt.Sprintf("---\nname: %s\ndescription: Synthetic command-case skill %d. Use when measuring skillfleet dispatch.\nmetadata:\n  version: \"1.0.0\"\n---\n\n# Synthetic\n\nRun the command.\n", name, i)
		if err := os.WriteFile(filepath.Join(dir, name, "SKILL.md"), []byte(md), 0o644); err != nil {
			return err
		}
		for c := range casesPerSkill {
			body := fmt.Sprintf("name: case-%05d\ninput:\n  command: %q\nexpected:\n  exit-code: 0\n", c, command)
			if runs > 1 {
				body += fmt.Sprintf("runs: %d\n", runs)
			}
			if err := os.WriteFile(filepath.Join(cases, fmt.Sprintf("%05d.yaml", c)), []byte(body), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// GeneratePrompts writes skills skills under dir, each with one cases file of casesPerSkill
// single-epoch prompt cases, so skills × casesPerSkill is exactly the number of jobs (per
// agent) while the bundle stays a few files per skill.
func GeneratePrompts(dir string, skills, casesPerSkill int) error {
	for i := range skills {
		name := fmt.Sprintf("prompt-%05d", i)
		sd := filepath.Join(dir, name)
		if err := os.MkdirAll(sd, 0o755); err != nil {
			return err
		}
		md := fmt.Sprintf("---\nname: %s\ndescription: Synthetic prompt-case skill %d. Use when measuring skillfleet dispatch.\nmetadata:\n  version: \"1.0.0\"\ntest:\n  cases: cases.yaml\n---\n\n# Synthetic\n\nAnswer READY.\n", name, i)
		if err := os.WriteFile(filepath.Join(sd, "SKILL.md"), []byte(md), 0o644); err != nil {
			return err
		}
		var cs strings.Builder
		cs.WriteString("cases:\n")
		for c := range casesPerSkill {
			fmt.Fprintf(&cs, "  - name: case_%05d\n    input: \"Say READY (%d)\"\n    assertions:\n      output_contains: [READY]\n", c, c)
		}
		if err := os.WriteFile(filepath.Join(sd, "cases.yaml"), []byte(cs.String()), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// GenerateRuns writes skills skills under dir, each with one cases file of casesPerSkill
// prompt cases of runs epochs: skills × casesPerSkill × runs jobs (per agent) from a bundle
// of a few files per skill, the shape of a job-count bomb.
func GenerateRuns(dir string, skills, casesPerSkill, runs int) error {
	for i := range skills {
		name := fmt.Sprintf("runs-%05d", i)
		sd := filepath.Join(dir, name)
		if err := os.MkdirAll(sd, 0o755); err != nil {
			return err
		}
		md := fmt.Sprintf("---\nname: %s\ndescription: Synthetic many-epoch skill %d. Use when measuring skillfleet admission.\nmetadata:\n  version: \"1.0.0\"\ntest:\n  cases: cases.yaml\n---\n\n# Synthetic\n\nAnswer READY.\n", name, i)
		if err := os.WriteFile(filepath.Join(sd, "SKILL.md"), []byte(md), 0o644); err != nil {
			return err
		}
		var cs strings.Builder
		cs.WriteString("cases:\n")
		for c := range casesPerSkill {
			fmt.Fprintf(&cs, "  - name: case_%05d\n    input: \"Say READY (%d)\"\n    runs: %d\n    assertions:\n      output_contains: [READY]\n", c, c, runs)
		}
		if err := os.WriteFile(filepath.Join(sd, "cases.yaml"), []byte(cs.String()), 0o644); err != nil {
			return err
		}
	}
	return nil
}
