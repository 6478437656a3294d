package assert

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Type names an assertion kind. The values are the RFC keys for prompt cases and the seed-003
// keys, with dashes turned into underscores, for command cases.
type Type string

// The assertion types. SemanticMatch is represented here and evaluated by the judge.
const (
	OutputContains    Type = "output_contains"
	OutputNotContains Type = "output_not_contains"
	OutputMatches     Type = "output_matches"
	SemanticMatch     Type = "semantic_match"
	ExitCode          Type = "exit_code"
	StdoutContains    Type = "stdout_contains"
	StderrContains    Type = "stderr_contains"
	NotContains       Type = "not_contains"
	StdoutJSON        Type = "stdout_json"
	// The trajectory types decide what a prompt case's agent did rather than what it answered;
	// they are evaluated against Observation.Trajectory.
	SkillActivated    Type = "skill_activated"
	SkillNotActivated Type = "skill_not_activated"
	ToolCalled        Type = "tool_called"
	ToolNotCalled     Type = "tool_not_called"
	ToolOrder         Type = "tool_order"
	MaxTurns          Type = "max_turns"
	MaxToolCalls      Type = "max_tool_calls"
	MaxTokens         Type = "max_tokens"
	// The file types decide what a job left in its directory (a prompt case's work directory,
	// a command case's directory); they are evaluated against Observation.Files.
	FileExists    Type = "file_exists"
	FileNotExists Type = "file_not_exists"
	FileContains  Type = "file_contains"
	FileMatches   Type = "file_matches"
	FileJSON      Type = "file_json"
)

// Types lists every known type, in the order above.
func Types() []Type {
	return []Type{OutputContains, OutputNotContains, OutputMatches, SemanticMatch, ExitCode,
		StdoutContains, StderrContains, NotContains, StdoutJSON,
		SkillActivated, SkillNotActivated, ToolCalled, ToolNotCalled, ToolOrder,
		MaxTurns, MaxToolCalls, MaxTokens,
		FileExists, FileNotExists, FileContains, FileMatches, FileJSON}
}

// Valid reports whether t is a known type.
func (t Type) Valid() bool { return t.Form() != 0 }

// caseInsensitive reports whether a substring type ignores case: the RFC's prompt-case types do,
// seed 003's command-case types do not (see the package documentation).
func (t Type) caseInsensitive() bool {
	return t == OutputContains || t == OutputNotContains
}

// Assertion is one compiled check. Only the fields that belong to Type are used:
// Value for the substring types, output_matches (the RE2 source), semantic_match (the
// criterion) and the skill and tool name types; Regexp for output_matches; ExitCode for
// exit_code; JSON for stdout_json; Value, ArgsMatch, Min and Max for tool_called; Names for
// tool_order; Max for max_turns, max_tool_calls and max_tokens; Path for the file types, with
// Value (file_contains's text, file_matches's pattern) or JSON (file_json).
type Assertion struct {
	Type Type
	// Value is the substring, the regular expression source, the judge criterion, or the skill
	// or tool name.
	Value string
	// Path is the file a file assertion checks, relative to the job's directory; Compile
	// cleans it.
	Path string
	// Regexp is output_matches compiled from Value, or tool_called's compiled from ArgsMatch, by
	// Compile. When set, it is what is matched.
	Regexp *regexp.Regexp
	// ArgsMatch is tool_called's RE2 pattern on a call's JSON arguments; "" counts every call.
	ArgsMatch string
	// Min is the fewest matching calls tool_called accepts. New sets it to 1, the default a
	// case file gets when it says nothing.
	Min int
	// Max is the most matching calls tool_called accepts when MaxSet, and the N of max_turns,
	// max_tool_calls and max_tokens (which need no MaxSet).
	Max    int64
	MaxSet bool
	// insts is the size of Regexp's program, set by Compile; 0 means unknown. It sits beside
	// MaxSet, in the word the bool pads to: a plan holds one Assertion per assertion of each
	// of its cases.
	insts int32
	// Names are tool_order's tool names, in the order their first calls must come.
	Names []string
	// ExitCode is the expected exit status, 0 to 255.
	ExitCode int
	// JSON is the expected stdout_json document as encoding/json decodes it (map[string]any,
	// []any, json.Number or float64, string, bool, nil). Compile also accepts what a YAML decoder
	// yields (Go integers and floats, map[any]any with string keys) and rewrites it in place into
	// the canonical form, with json.Number for every number.
	JSON any
}

// ErrInvalid is wrapped by every error Compile returns and by Evaluate for an assertion that
// does not compile.
var ErrInvalid = errors.New("invalid assertion")

// ErrNeedsJudge is what Evaluate returns for semantic_match: the judge decides it, not this
// package.
var ErrNeedsJudge = errors.New("semantic_match is evaluated by the judge")

// compileError is a plain message that matches ErrInvalid (and the cause, if any) with
// errors.Is, without repeating "invalid assertion" in the text: the caller's diagnostic already
// names the rule.
type compileError struct {
	msg   string
	cause error
}

func (e *compileError) Error() string { return e.msg }

func (e *compileError) Unwrap() []error {
	if e.cause == nil {
		return []error{ErrInvalid}
	}
	return []error{ErrInvalid, e.cause}
}

// invalid makes an ErrInvalid error with a plain message; the caller adds the type, file and line.
func invalid(format string, args ...any) error {
	return &compileError{msg: fmt.Sprintf(format, args...)}
}

// Compile checks a and fills in what evaluation needs: it compiles Regexp for output_matches,
// file_matches and tool_called (RE2), rewrites JSON for stdout_json and file_json into its
// canonical form, and cleans a file assertion's Path (an absolute path or one that leaves its
// directory is an error wrapping ErrPath). Empty
// substrings, patterns, criteria and names are errors, as are text that is not valid UTF-8,
// exit codes outside 0..255, a missing (null) or non-JSON expected document, and counts that
// are negative or cannot be met. Errors wrap ErrInvalid and do not name the type, file or line:
// the caller adds them.
func Compile(a *Assertion) error { return compile(a, compilePattern) }

// patternCompiler compiles an RE2 pattern within the caps (compilePattern), or answers what it
// compiled to before (Checker).
type patternCompiler func(pattern string) (*regexp.Regexp, int, error)

func compile(a *Assertion, compilePattern patternCompiler) error {
	switch a.Type {
	case OutputContains, OutputNotContains, StdoutContains, StderrContains, NotContains:
		if a.Value == "" {
			return invalid("the substring is empty")
		}
		if len(a.Value) > MaxSubstringBytes {
			return tooLarge(fmt.Sprintf("the substring is %d bytes, more than %d", len(a.Value), MaxSubstringBytes))
		}
		if !utf8.ValidString(a.Value) {
			return invalid("the substring %q is not valid UTF-8", a.Value)
		}
	case OutputMatches:
		re, n, err := compilePattern(a.Value)
		if err != nil {
			return err
		}
		a.Regexp, a.insts = re, int32(n)
	case SkillActivated, SkillNotActivated, ToolNotCalled:
		return checkName(a.Value)
	case ToolCalled:
		return compileToolCalled(a, compilePattern)
	case ToolOrder:
		return checkOrder(a.Names)
	case MaxTurns, MaxToolCalls, MaxTokens:
		return checkLimit(a.Type, a.Max)
	case FileExists, FileNotExists, FileContains, FileMatches, FileJSON:
		return compileFile(a, compilePattern)
	case SemanticMatch:
		if strings.TrimSpace(a.Value) == "" {
			return invalid("the criterion is empty")
		}
		if !utf8.ValidString(a.Value) {
			return invalid("the criterion is not valid UTF-8")
		}
	case ExitCode:
		if a.ExitCode < 0 || a.ExitCode > 255 {
			return invalid("exit code %d is outside 0..255 and can never be observed", a.ExitCode)
		}
	case StdoutJSON:
		doc, err := canonicalJSON(a.JSON)
		if err != nil {
			return err
		}
		a.JSON = doc
	case "":
		return invalid("the assertion has no type")
	default:
		return invalid("unknown assertion type %q", string(a.Type))
	}
	return nil
}

// compilePattern compiles an RE2 pattern within MaxPatternBytes and MaxPatternInsts, returning
// its program size.
func compilePattern(pattern string) (*regexp.Regexp, int, error) {
	if pattern == "" {
		return nil, 0, invalid("the pattern is empty")
	}
	if len(pattern) > MaxPatternBytes {
		return nil, 0, tooLarge(fmt.Sprintf("the pattern is %d bytes, more than %d", len(pattern), MaxPatternBytes))
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		// regexp's own message already says "error parsing regexp: ...".
		return nil, 0, &compileError{msg: err.Error(), cause: err}
	}
	// Repetition multiplies: "x{1000}" is 7 bytes and 1,000 instructions.
	n := instsBound(pattern)
	if n > MaxPatternInsts {
		var err error
		if n, err = patternInsts(pattern); err != nil || n > MaxPatternInsts {
			return nil, 0, tooLarge(fmt.Sprintf("the pattern compiles to %d instructions, more than %d: matching it would cost the worker too much time", n, MaxPatternInsts))
		}
	}
	return re, n, nil
}
