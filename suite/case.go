// Package suite turns a suite's test-case files into a plan of jobs.
//
// Four case formats are read: the RFC's prompt cases (the `test` frontmatter field naming a
// cases file), the agentskills.io evals (`evals/evals.json`, read as prompt cases), Claude
// Code's `claude plugin eval` cases (`evals/<case>/prompt.md` and its graders, of a skill or of
// the plugin that holds it, read as prompt cases) and seed 003's command cases (`tests/test-config.json` and `tests/cases/*.yaml`). Every
// problem becomes a diagnostic naming file, line and rule; a case with any error is left out of
// the plan, and the plan reports the errors, so nothing runs half-checked.
package suite

import (
	"time"

	"github.com/skillfleet/skillfleet/assert"
	"github.com/skillfleet/skillfleet/skill"
)

// Kind says how a case is executed.
type Kind string

// The case kinds.
const (
	// KindPrompt is an RFC prompt case: input → agent → output assertions.
	KindPrompt Kind = "prompt"
	// KindCommand is a seed-003 command case: a shell command in the sandbox.
	KindCommand Kind = "command"
)

// Defaults from the RFC (prompt cases) and seed 003 (command cases).
const (
	DefaultPromptTimeout  = 60 * time.Second
	DefaultCommandTimeout = 30 * time.Second
	DefaultRuns           = 1
	DefaultConfidence     = 1.0
	// MaxRuns bounds `runs` so a typo cannot plan a million jobs.
	MaxRuns = 1000
	// maxCaseFileBytes bounds a cases file; larger ones are refused with a diagnostic. YAML
	// parsing costs about 90 bytes of heap per byte of a dense flow list (1 MiB: 92 MB), so the
	// cap is what bounds the reader's memory; the largest case file in the corpus and examples
	// is 1.5 KB.
	maxCaseFileBytes = 1 << 20
)

// Assertion is a compiled assertion with the place it was written.
type Assertion struct {
	assert.Assertion
	Line int
	// Votes is the judge samples a semantic_match asks for (0: the judge's default).
	Votes int
}

// Case is one test case of one skill.
type Case struct {
	Skill       *skill.Skill
	Name        string
	Description string
	Kind        Kind
	// Input is the prompt of a prompt case.
	Input string
	// Reference is what a good answer looks like (an eval's expected_output): the judge is
	// shown it beside each semantic_match criterion. Empty for cases that give none.
	Reference string
	// Command and Stdin describe a command case; Stdin is nil when absent.
	Command string
	Stdin   *string
	// Files are paths relative to the skill directory: a command case's fixtures (its command
	// runs in the skill directory), or an eval's input files, which the worker copies into the
	// agent's work directory at the same relative path.
	Files []string
	Env   map[string]string

	Assertions []Assertion
	// Runs is the case's epochs: `runs`, or for `runs: auto` its MaxRuns.
	Runs       int
	Confidence float64
	Timeout    time.Duration
	Parallel   bool
	// Sequential is set by `runs: auto`: the case runs until Wald's sequential test of
	// "passes at least Confidence + Delta of the time" against "at most Confidence − Delta"
	// decides, with error rates Alpha (a false pass) and Beta (a false fail), at most
	// MaxRuns epochs (see verdict.Sequential).
	Sequential         bool
	MaxRuns            int
	Delta, Alpha, Beta float64
	// seqLine and seqKeyLine are where `runs: auto` and the last of its settings were
	// written, for the errors of sequential.
	seqLine, seqKeyLine int

	// DefaultBaseline is the arm the case's own format runs beside with_skill by default
	// (without_skill for a `claude plugin eval` case, which Claude Code also runs without the
	// plugin); "" for none. The run's --baseline decides the arms; Plan warns when it differs.
	DefaultBaseline Arm

	// File and Line locate the case for diagnostics and reports.
	File string
	Line int
}

// exactAssertions returns a in a slice with no room to spare: a plan keeps every case for as
// long as its run lasts, and a slice grown one assertion at a time holds up to twice its
// length.
func exactAssertions(a []Assertion) []Assertion {
	if cap(a) == len(a) {
		return a
	}
	return copyAssertions(a)
}

// copyAssertions returns a copy of a in a slice of its exact size, nil when a is empty.
func copyAssertions(a []Assertion) []Assertion {
	if len(a) == 0 {
		return nil
	}
	return append(make([]Assertion, 0, len(a)), a...)
}

// HasSemantic reports whether the case needs the judge.
func (c *Case) HasSemantic() bool {
	for _, a := range c.Assertions {
		if a.Type == assert.SemanticMatch {
			return true
		}
	}
	return false
}

// OutsideSkill reports whether the case is read from outside its skill's directory: from the
// evals/ of the plugin that holds the skill. A bundle of the skills' directories does not carry
// it, so a fleet that plans from the bundle would not run it.
func (c *Case) OutsideSkill() bool {
	return c.Skill != nil && c.File != "" && !skill.InDir(c.File, c.Skill.Dir)
}
