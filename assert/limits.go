package assert

import (
	"context"
	"errors"
	"io"
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

// Caps on what an assertion may ask. Assertions are evaluated in the worker process, outside
// the sandbox, so a pattern's cost is the worker's CPU: Go's RE2 matching costs time in
// proportion to the output's length times the pattern's compiled size (the number of
// regexp/syntax instructions), and a 160 KB pattern on 64 KiB of output ran 92 s. The caps
// keep the worst case near a second on 64 KiB (BenchmarkOutputMatchesWorstCase) and leave room
// for any pattern a person writes: the corpus's are under 20 bytes.
const (
	// MaxPatternBytes bounds an output_matches pattern's source.
	MaxPatternBytes = 1024
	// MaxPatternInsts bounds an output_matches pattern's compiled program.
	MaxPatternInsts = 1000
	// MaxSubstringBytes bounds a *_contains substring.
	MaxSubstringBytes = 16 << 10
)

// ErrTooLarge is wrapped, with ErrInvalid, by Compile's errors for an assertion beyond a cap.
var ErrTooLarge = errors.New("assertion too large")

// tooLarge makes an ErrInvalid and ErrTooLarge error with a plain message.
func tooLarge(msg string) error { return &compileError{msg: msg, cause: ErrTooLarge} }

// patternInsts is the size of pattern's compiled program, as regexp compiles it.
func patternInsts(pattern string) (int, error) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return 0, err
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return 0, err
	}
	return len(prog.Inst), nil
}

// instsBound is an upper bound of pattern's compiled size that costs no second parse (plans
// compile 100,000 patterns): only counted repetition ({n,m}) multiplies, and without it a
// pattern compiles to at most 1.5 instructions per byte (a capture group, "()", is 2 bytes and
// 3 instructions; TestInstsBound), so twice the length plus a few is safe. With a brace it
// returns more than MaxPatternInsts, to have the program counted.
func instsBound(pattern string) int {
	if strings.Contains(pattern, "{") {
		return MaxPatternInsts + 1
	}
	return 2*len(pattern) + 8
}

// ErrDeadline is the cause of an assertion errored because the job's time ran out before it
// was decided.
var ErrDeadline = errors.New("the job's time ran out before the assertion was decided")

// deadlineReader feeds a string to the regexp engine rune by rune and ends it early (io.EOF)
// once ctx is done, which is the only way to stop Go's regexp mid-match. cut records that it
// did, so the caller reports the match as undecided instead of trusting it.
type deadlineReader struct {
	ctx   context.Context
	s     *strings.Reader
	reads int
	cut   bool
}

// deadlineCheckEvery is how many runes pass between two looks at ctx: a look costs about as
// much as a few hundred matching steps of a small pattern.
const deadlineCheckEvery = 1024

func (d *deadlineReader) ReadRune() (rune, int, error) {
	d.reads++
	if d.reads%deadlineCheckEvery == 0 && d.ctx.Err() != nil {
		d.cut = true
	}
	if d.cut {
		return utf8.RuneError, 0, io.EOF
	}
	return d.s.ReadRune()
}

// MaxNameBytes bounds a skill or tool name in a trajectory assertion: the specification caps
// skill names at 64 characters and model APIs cap tool names near that, so a longer name is a
// mistake, not a name.
const MaxNameBytes = 256
