package skill

import (
	"time"

	"github.com/skillfleet/skillfleet/diag"
)

// Skill is one parsed SKILL.md. Parse fills what it can, so a Skill may be partial when its file
// has errors; Validate reports what is wrong with it.
type Skill struct {
	// Name is the name field NFKC-normalised and trimmed, as the reference validator compares it.
	Name string
	// Description is the description field with surrounding whitespace trimmed.
	Description   string
	License       string
	Compatibility string
	AllowedTools  string
	// Metadata holds every metadata entry whose value is a scalar, as written (an unquoted
	// `version: 1.0` is kept as "1.0" and reported by Validate as metadata.valueType).
	Metadata map[string]string
	// Version is metadata.version as written ("" if absent).
	Version  string
	Requires []Requirement
	// Test is nil when the skill has no test field.
	Test *TestConfig
	// Body is the Markdown after the closing --- line, as written.
	Body string
	// BodyLine is the 1-based line on which the body starts.
	BodyLine int
	// Dir is the skill directory and File the path of its SKILL.md, both as discovered
	// (relative paths stay relative, so diagnostics read the way the user typed them).
	Dir  string
	File string
	// Lines maps field paths to the 1-based line of their key: every top-level key ("name",
	// "test", ...), "metadata.<key>" for each metadata entry, "test.cases", "test.config",
	// "test.config.timeout" and "test.config.parallel".
	Lines map[string]int

	// What decoding learned that Validate reports: type errors found while decoding, the
	// top-level keys in order, and whether the frontmatter could be decoded at all.
	decodeDiags diag.Diagnostics
	badType     map[string]bool
	keys        []string
	parsed      bool // made by Parse or ParseFile (not built by hand)
	decoded     bool // and its frontmatter was decoded

	// The Claude Code extensions lint reads: disable-model-invocation: true (only the user
	// invokes the skill, so its description needs no trigger clause) and when_to_use (a
	// trigger clause kept apart from the description).
	modelInvocationOff bool
	whenToUse          string
}

// Requirement is one entry of the RFC's requires list: a minimum version of another skill.
type Requirement struct {
	Skill   string // the required skill's name, NFKC-normalised and trimmed
	Version string // minimum version as written; "" accepts any version
	Line    int    // line of the entry
}

// TestConfig is the RFC's test field.
type TestConfig struct {
	Cases    string        // path of the cases file, relative to the skill directory
	Timeout  time.Duration // per case; DefaultTestTimeout unless configured
	Parallel bool          // whether cases may run concurrently; true unless configured
	Line     int           // line of `test:`
	// Sequential (test.config.runs: auto) makes `runs: auto` the default of the skill's
	// cases, with MaxRuns, Delta, Alpha and Beta (0: the suite's defaults); Confidence (0:
	// unset) is their default confidence. A case's own runs and confidence override them.
	Sequential         bool
	Confidence         float64
	MaxRuns            int
	Delta, Alpha, Beta float64
}

// MaxTestRuns bounds test.config.max_runs, as the planner bounds a case's runs.
const MaxTestRuns = 1000

// DefaultTestTimeout is the RFC's default per-case timeout.
const DefaultTestTimeout = 60 * time.Second

// MaxTestTimeout bounds test.config.timeout so that a typo cannot park a sandbox for days.
const MaxTestTimeout = 24 * time.Hour

// Options tunes validation and resolution.
type Options struct {
	// Strict reproduces the reference validator (skills-ref): every top-level field outside the
	// specification's six, the RFC's requires and test included, is an error.
	Strict bool
	// Force downgrades requires.missing to a warning (the RFC's escape hatch for development).
	Force bool
	// MaxDepth limits how deep Discover descends below each root; 0 means no limit, 1 means
	// only the root's direct subdirectories are candidate skills.
	MaxDepth int
}

// Line returns the line of a field path from Lines, or 0 when the field is absent.
func (s *Skill) Line(field string) int {
	if s == nil || s.Lines == nil {
		return 0
	}
	return s.Lines[field]
}

// Has reports whether the frontmatter has the top-level field.
func (s *Skill) Has(field string) bool {
	_, ok := s.Lines[field]
	return ok
}
