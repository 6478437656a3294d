package suite

import (
	"errors"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/skillfleet/skillfleet/assert"
	"github.com/skillfleet/skillfleet/diag"
	"github.com/skillfleet/skillfleet/skill"
)

var casesFileKeys = map[string]bool{"cases": true}

var promptCaseKeys = map[string]bool{
	"name": true, "description": true, "input": true, "assertions": true,
	// seed 004 and per-case extensions
	"runs": true, "confidence": true, "timeout": true,
}

var promptAssertionKeys = map[string]bool{
	string(assert.OutputContains): true, string(assert.OutputNotContains): true,
	string(assert.OutputMatches): true, string(assert.SemanticMatch): true,
}

var semanticKeys = map[string]bool{"criterion": true, "votes": true}

// loadPromptCases reads the RFC cases file a skill's `test` field names.
func loadPromptCases(s *skill.Skill) ([]*Case, diag.Diagnostics) {
	if s.Test == nil {
		return nil, nil
	}
	line := s.Lines["test.cases"]
	if line == 0 {
		line = s.Test.Line
	}
	path, err := skillFile(s.Dir, s.Test.Cases)
	if err != nil {
		return nil, diag.Diagnostics{{Rule: "test.cases", Severity: diag.SeverityError,
			Message: "cases file: " + err.Error(), File: s.File, Line: line}}
	}
	data, err := readCapped(path, maxCaseFileBytes)
	if err != nil {
		return nil, diag.Diagnostics{{Rule: "test.cases", Severity: diag.SeverityError,
			Message: "cases file " + s.Test.Cases + ": " + err.Error(), File: s.File, Line: line}}
	}
	r := &reader{file: path}
	cases := r.promptCases(s, data)
	return cases, r.diags
}

func (r *reader) promptCases(s *skill.Skill, data []byte) []*Case {
	root, ok := r.parseYAML(data)
	if !ok {
		return nil
	}
	top, ok := r.mapping(root, "cases file", "cases", casesFileKeys)
	if !ok {
		return nil
	}
	var list *yaml.Node
	for _, p := range top {
		list = r.deref(p.val)
	}
	if list == nil {
		r.errorf(root.Line, "cases.empty", "cases file has no `cases:` list")
		return nil
	}
	if list.Kind != yaml.SequenceNode {
		r.errorf(list.Line, "cases.type", "`cases` must be a list, got %s", kindName(list))
		return nil
	}
	if len(list.Content) == 0 {
		r.errorf(list.Line, "cases.empty", "`cases` is empty: a skill that declares tests needs at least one case")
		return nil
	}
	timeout := DefaultPromptTimeout
	if s.Test.Timeout > 0 {
		timeout = s.Test.Timeout
	}
	var out []*Case
	for _, n := range list.Content {
		if c := r.promptCase(s, n, timeout); c != nil {
			out = append(out, c)
		}
	}
	return out
}

func (r *reader) promptCase(s *skill.Skill, n *yaml.Node, timeout time.Duration) *Case {
	n = r.deref(n)
	if n == nil {
		return nil
	}
	before := len(r.diags)
	pairs, ok := r.mapping(n, "case", "case", promptCaseKeys)
	if !ok {
		return nil
	}
	c := &Case{
		Skill: s, Kind: KindPrompt, Runs: DefaultRuns, Confidence: DefaultConfidence,
		Timeout: timeout, Parallel: s.Test.Parallel, File: r.file, Line: n.Line,
	}
	var assertions *yaml.Node
	has := map[string]bool{}
	for _, p := range pairs {
		has[p.key] = true
		switch p.key {
		case "name":
			c.Name, _ = r.str(p.val, "case name", "case.name")
		case "description":
			c.Description, _ = r.str(p.val, "description", "case.type")
		case "input":
			v, ok := r.str(p.val, "input", "case.noInput")
			if ok && strings.TrimSpace(v) == "" {
				r.errorf(p.line, "case.noInput", "case %q has an empty input", c.Name)
			}
			c.Input = v
		case "assertions":
			assertions = p.val
		default:
			r.caseExtension(c, p)
		}
	}
	// A key that is present but of the wrong type was reported already.
	if c.Name == "" && !has["name"] {
		r.errorf(n.Line, "case.name", "case has no name")
	}
	if !has["input"] {
		r.errorf(n.Line, "case.noInput", "case %q has no input", c.Name)
	}
	if assertions == nil {
		r.errorf(n.Line, "case.noAssertion", "case %q has no assertions", c.Name)
	} else {
		r.promptAssertions(c, assertions)
	}
	if len(r.diags) > before {
		return nil
	}
	return c
}

// caseExtension reads runs, confidence and timeout, shared by both case kinds.
func (r *reader) caseExtension(c *Case, p pair) {
	switch p.key {
	case "runs":
		if v, ok := r.integer(p.val, "runs", "case.runs"); ok {
			if v < 1 || v > MaxRuns {
				r.errorf(p.line, "case.runs", "runs must be between 1 and %d, got %d", MaxRuns, v)
			}
			c.Runs = v
		}
	case "confidence":
		if v, ok := r.number(p.val, "confidence", "case.confidence"); ok {
			if !(v > 0 && v <= 1) {
				r.errorf(p.line, "case.confidence", "confidence must be in (0, 1], got %v", v)
			}
			c.Confidence = v
		}
	case "timeout":
		if v, ok := r.number(p.val, "timeout", "case.timeout"); ok {
			if !(v > 0 && v <= 24*3600) {
				r.errorf(p.line, "case.timeout", "timeout must be a positive number of seconds (at most a day), got %v", v)
			}
			c.Timeout = time.Duration(v * float64(time.Second))
		}
	}
}

func (r *reader) promptAssertions(c *Case, n *yaml.Node) {
	pairs, ok := r.mapping(n, "assertions", "assertion", promptAssertionKeys)
	if !ok {
		return
	}
	for _, p := range pairs {
		t := assert.Type(p.key)
		if t == assert.SemanticMatch {
			r.semantic(c, p)
			continue
		}
		vals, lines, _ := r.strList(p.val, p.key, "assertion.type")
		for i, v := range vals {
			r.add(c, assert.Assertion{Type: t, Value: v}, lines[i])
		}
	}
	if n := r.deref(n); n != nil && len(n.Content) == 0 {
		r.errorf(n.Line, "case.noAssertion", "case %q has an empty assertions block", c.Name)
	}
}

func (r *reader) semantic(c *Case, p pair) {
	pairs, ok := r.mapping(p.val, "semantic_match", "assertion", semanticKeys)
	if !ok {
		return
	}
	votes, haveCriterion := 0, false
	for _, q := range pairs {
		if q.key == "votes" {
			if v, ok := r.integer(q.val, "votes", "case.votes"); ok {
				if v < 1 || v > 9 || v%2 == 0 {
					r.errorf(q.line, "case.votes", "votes must be an odd number from 1 to 9, got %d", v)
				}
				votes = v
			}
		}
	}
	for _, q := range pairs {
		if q.key != "criterion" {
			continue
		}
		haveCriterion = true
		v, _ := r.str(q.val, "criterion", "case.criterion")
		if r.add(c, assert.Assertion{Type: assert.SemanticMatch, Value: v}, q.line) {
			c.Assertions[len(c.Assertions)-1].Votes = votes
		}
	}
	if !haveCriterion {
		r.errorf(p.line, "case.criterion", "semantic_match needs a criterion")
	}
}

// add compiles an assertion and keeps it, or reports why it cannot be used.
func (r *reader) add(c *Case, a assert.Assertion, line int) bool {
	if err := assert.Compile(&a); err != nil {
		rule := "assertion.invalid"
		switch {
		case errors.Is(err, assert.ErrTooLarge):
			rule = ruleTooLarge
		case a.Type == assert.OutputMatches:
			rule = "case.regex"
		case a.Type == assert.SemanticMatch:
			rule = "case.criterion"
		}
		r.errorf(line, rule, "%s: %v", a.Type, err)
		return false
	}
	// Compiling proved the pattern; the plan ships its source and workers compile it again.
	// Keeping a compiled RE2 program per case would cost kilobytes each across 100,000 cases.
	a.Regexp = nil
	c.Assertions = append(c.Assertions, Assertion{Assertion: a, Line: line})
	return true
}
