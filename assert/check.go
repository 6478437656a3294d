package assert

import "regexp"

// Checker checks assertions as Compile does, for a reader that keeps only their sources: a
// plan ships a pattern's source and every worker compiles its own. It remembers what each
// pattern compiled to (its program's size, or its error) and never the program, so a pattern
// that many cases share is compiled once, and what the checker holds is the size of the
// sources. One per goroutine: it is not safe for concurrent use.
type Checker struct {
	patterns map[string]checkedPattern
}

type checkedPattern struct {
	insts int
	err   error
}

// maxCheckedPatterns bounds what a Checker remembers. Past it a pattern is compiled each time,
// as Compile does: a suite whose every case has its own pattern gains nothing from memory.
const maxCheckedPatterns = 4096

// NewChecker returns a Checker that remembers nothing yet.
func NewChecker() *Checker {
	return &Checker{patterns: make(map[string]checkedPattern)}
}

// Check is Compile, except that it leaves Regexp nil: the same checks, the same errors, and
// a pattern's verdict taken from memory when the checker has seen the pattern before.
func (c *Checker) Check(a *Assertion) error {
	err := compile(a, c.pattern)
	a.Regexp = nil
	return err
}

// pattern is compilePattern without the program, remembered.
func (c *Checker) pattern(p string) (*regexp.Regexp, int, error) {
	if seen, ok := c.patterns[p]; ok {
		return nil, seen.insts, seen.err
	}
	_, n, err := compilePattern(p)
	if len(c.patterns) < maxCheckedPatterns {
		c.patterns[p] = checkedPattern{insts: n, err: err}
	}
	return nil, n, err
}
