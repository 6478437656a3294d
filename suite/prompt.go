package suite

import (
	"cmp"
	"errors"
	"fmt"
	"regexp/syntax"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/skillfleet/skillfleet/assert"
	"github.com/skillfleet/skillfleet/diag"
	"github.com/skillfleet/skillfleet/skill"
	"github.com/skillfleet/skillfleet/stats"
)

var casesFileKeys = map[string]bool{"cases": true}

var promptCaseKeys = map[string]bool{
	"name": true, "description": true, "input": true, "assertions": true,
	// seed 004 and per-case extensions
	"runs": true, "confidence": true, "timeout": true,
	// runs: auto
	"max_runs": true, "delta": true, "alpha": true, "beta": true,
}

// promptAssertionKeys are the kinds assert says a prompt case may use.
var promptAssertionKeys = keySet(assert.PromptTypes())

// callKeys are the keys of a tool_called mapping item.
var callKeys = keySet(assert.CallKeys())

func keySet[S ~string](keys []S) map[string]bool {
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[string(k)] = true
	}
	return m
}

var semanticKeys = map[string]bool{"criterion": true, "votes": true}

// loadPromptCases reads the RFC cases file a skill's `test` field names.
func loadPromptCases(s *skill.Skill, sc *scratch) ([]*Case, diag.Diagnostics) {
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
	// The cases are read out of the file and its tree (into strings of their own) before the
	// next file is read, so the memory of both is reused.
	data, err := readCappedInto(sc.file[:0], path, maxCaseFileBytes)
	if err != nil {
		return nil, diag.Diagnostics{{Rule: "test.cases", Severity: diag.SeverityError,
			Message: "cases file " + s.Test.Cases + ": " + err.Error(), File: s.File, Line: line}}
	}
	r := &reader{file: path, check: sc.check, trees: sc.trees}
	cases := r.promptCases(s, data)
	sc.file = data[:0]
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
	defer func(mark int) { r.pairs = r.pairs[:mark] }(len(r.pairs)) // the case's entries are read by its end
	pairs, ok := r.mapping(n, "case", "case", promptCaseKeys)
	if !ok {
		return nil
	}
	c := &Case{
		Skill: s, Kind: KindPrompt, Runs: DefaultRuns, Confidence: DefaultConfidence,
		Timeout: timeout, Parallel: s.Test.Parallel, File: r.file, Line: n.Line,
	}
	testDefaults(c, s.Test)
	var assertions *yaml.Node
	hasName, hasInput := false, false
	for _, p := range pairs {
		switch p.key {
		case "name":
			hasName = true
			c.Name, _ = r.str(p.val, "case name", "case.name")
		case "description":
			c.Description, _ = r.str(p.val, "description", "case.type")
		case "input":
			hasInput = true
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
	if c.Name == "" && !hasName {
		r.errorf(n.Line, "case.name", "case has no name")
	}
	if !hasInput {
		r.errorf(n.Line, "case.noInput", "case %q has no input", c.Name)
	}
	r.sequential(c, n.Line)
	if assertions == nil {
		r.errorf(n.Line, "case.noAssertion", "case %q has no assertions", c.Name)
	} else {
		// Read into the reader's buffer, then copied into a slice of the case's own: growing
		// each case's slice from nothing made three times its size in garbage.
		c.Assertions = r.assertions[:0]
		r.promptAssertions(c, assertions)
		r.assertions = c.Assertions[:0]
		c.Assertions = copyAssertions(c.Assertions)
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
		if v := r.deref(p.val); v != nil && v.Kind == yaml.ScalarNode && v.Tag == "!!str" && v.Value == "auto" {
			c.Sequential, c.seqLine = true, p.line
			return
		}
		if v, ok := r.integer(p.val, "runs", "case.runs"); ok {
			c.Sequential = false // a fixed runs overrides test.config.runs: auto
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
	case "max_runs":
		if v, ok := r.integer(p.val, "max_runs", "case.runs"); ok {
			if v < 1 || v > MaxRuns {
				r.errorf(p.line, "case.runs", "max_runs must be between 1 and %d, got %d", MaxRuns, v)
			}
			c.MaxRuns, c.seqKeyLine = v, p.line
		}
	case "delta", "alpha", "beta":
		if v, ok := r.number(p.val, p.key, "case.runs"); ok {
			switch p.key {
			case "delta":
				c.Delta = v
			case "alpha":
				c.Alpha = v
			default:
				c.Beta = v
			}
			c.seqKeyLine = p.line
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

// promptAssertions decodes a case's assertions mapping by each kind's form (assert.Type.Form):
// a new kind written in an existing form needs no change here.
func (r *reader) promptAssertions(c *Case, n *yaml.Node) {
	pairs, ok := r.mapping(n, "assertions", "assertion", promptAssertionKeys)
	if !ok {
		return
	}
	for _, p := range pairs {
		t := assert.Type(p.key)
		switch t.Form() {
		case assert.FormCriterion:
			r.semantic(c, p)
		case assert.FormText:
			r.eachStr(p.val, p.key, "assertion.type", func(v string, line int) {
				a := assert.New(t)
				a.Value = v
				r.add(c, a, line)
			})
		case assert.FormCount:
			if v, ok := r.integer(p.val, p.key, "assertion.type"); ok {
				a := assert.New(t)
				a.Max = int64(v)
				r.add(c, a, p.line)
			}
		case assert.FormNames:
			if vals, _, ok := r.strList(p.val, p.key, "assertion.type"); ok {
				a := assert.New(t)
				a.Names = vals
				r.add(c, a, p.line)
			}
		case assert.FormCalls:
			r.calls(c, t, p)
		case assert.FormPaths, assert.FormFile:
			r.fileAssertions(c, t, p.key, p)
		default:
			// A prompt kind in a form this reader does not know: a change to assert that
			// forgot the reader. Refuse it rather than plan an assertion nobody decoded.
			r.errorf(p.line, "assertion.type", "%s cannot be written in a prompt case", p.key)
		}
	}
	if n := r.deref(n); n != nil && len(n.Content) == 0 {
		r.errorf(n.Line, "case.noAssertion", "case %q has an empty assertions block", c.Name)
	}
}

// calls reads a FormCalls value: a name, or a list whose items are names or mappings
// {name, args_match, min, max}; each item is one assertion.
func (r *reader) calls(c *Case, t assert.Type, p pair) {
	n := r.deref(p.val)
	if n == nil {
		return
	}
	items := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		items = n.Content
	}
	for _, item := range items {
		item = r.deref(item)
		if item == nil {
			continue
		}
		a := assert.New(t)
		switch item.Kind {
		case yaml.ScalarNode:
			v, ok := r.str(item, p.key+" item", "assertion.type")
			if !ok {
				continue
			}
			a.Value = v
		case yaml.MappingNode:
			if !r.call(&a, p.key, item) {
				continue
			}
		default:
			r.errorf(item.Line, "assertion.type", "%s item must be a tool name or a mapping of %s, got %s",
				p.key, strings.Join(assert.CallKeys(), ", "), kindName(item))
			continue
		}
		r.add(c, a, item.Line)
	}
}

// call reads one {name, args_match, min, max} mapping into a.
func (r *reader) call(a *assert.Assertion, what string, n *yaml.Node) bool {
	pairs, ok := r.mapping(n, what+" item", "assertion", callKeys)
	if !ok {
		return false
	}
	before, named, minSet := len(r.diags), false, false
	for _, q := range pairs {
		switch q.key {
		case assert.CallName:
			a.Value, named = r.str(q.val, what+" name", "assertion.type")
		case assert.CallArgsMatch:
			a.ArgsMatch, _ = r.str(q.val, what+" args_match", "assertion.type")
		case assert.CallMin:
			a.Min, minSet = r.integer(q.val, what+" min", "assertion.type")
		case assert.CallMax:
			var v int
			v, a.MaxSet = r.integer(q.val, what+" max", "assertion.type")
			a.Max = int64(v)
		}
	}
	if !minSet && a.MaxSet && a.Max == 0 {
		a.Min = 0 // `max: 0` alone means "never called like this", not "min 1 > max 0"
	}
	if !named && len(r.diags) == before {
		r.errorf(n.Line, "assertion.invalid", "%s item has no `%s`", what, assert.CallName)
	}
	return len(r.diags) == before
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
	if r.check == nil {
		r.check = assert.NewChecker()
	}
	if err := r.check.Check(&a); err != nil {
		rule := "assertion.invalid"
		var se *syntax.Error
		switch {
		case errors.Is(err, assert.ErrTooLarge):
			rule = ruleTooLarge
		case errors.Is(err, assert.ErrPath):
			rule = "assertion.path"
		case a.Type == assert.OutputMatches, a.Type == assert.FileMatches, errors.As(err, &se):
			rule = "case.regex"
		case a.Type == assert.SemanticMatch:
			rule = "case.criterion"
		}
		r.errorf(line, rule, "%s: %v", a.Type, err)
		return false
	}
	// Check proved the pattern and kept no program: the plan ships its source and workers
	// compile it again. A compiled RE2 program per case would cost kilobytes each across
	// 100,000 cases.
	c.Assertions = append(c.Assertions, Assertion{Assertion: a, Line: line})
	return true
}

// checkSkillNames checks the skills named by skill_activated and skill_not_activated against
// the case's skill and its requires closure. Those are in the bundle of every run that holds
// the case, so the check gives the same answer when a laptop plans the roots and when the
// coordinator plans a submitted bundle of a few selected skills; a check against the whole
// roots would pass here and refuse the run there. A skill_activated of another name can never
// pass (or passes only when the agent happens to be shown more than the closure): an error, and
// the case is left out of the plan. A skill_not_activated of another name is a warning: an agent
// may still be shown that skill when the whole roots are submitted, and a check that cannot
// fail does no harm.
func checkSkillNames(g *skill.Graph, cases []*Case) ([]*Case, diag.Diagnostics) {
	var diags diag.Diagnostics
	kept := cases[:0]
	for _, c := range cases {
		bad := false
		var names map[string]bool // the closure's names, built on the first skill assertion
		for _, a := range c.Assertions {
			if a.Type != assert.SkillActivated && a.Type != assert.SkillNotActivated {
				continue
			}
			if names == nil {
				names = map[string]bool{}
				for _, s := range g.Closure(c.Skill.Name) {
					names[s.Name] = true
				}
				// A skill always reaches its own cases, even one Resolve left out of the graph.
				names[c.Skill.Name] = true
			}
			if names[a.Value] {
				continue
			}
			d := diag.Diagnostic{Rule: "case.unknownSkill", Severity: diag.SeverityError, File: c.File, Line: a.Line,
				Message: fmt.Sprintf("%s: %q is neither skill %s nor one it requires%s", a.Type, a.Value, c.Skill.Name, suggest(a.Value, names))}
			if a.Type == assert.SkillNotActivated {
				d.Severity = diag.SeverityWarning
			} else {
				bad = true
			}
			diags = append(diags, d)
		}
		if !bad {
			kept = append(kept, c)
		}
	}
	return kept, diags
}

// DefaultMaxRuns bounds the epochs of a `runs: auto` case that sets no max_runs.
const DefaultMaxRuns = 20

// sequential completes and checks a case's `runs: auto` settings once all its keys are read:
// the defaults of what it did not set, a zone and error rates the test can work with, and
// Runs set to MaxRuns (the epochs planned). max_runs, delta, alpha or beta without `runs:
// auto` are an error: they would silently do nothing.
func (r *reader) sequential(c *Case, line int) {
	if !c.Sequential {
		if c.seqKeyLine > 0 {
			r.errorf(c.seqKeyLine, "case.runs", "max_runs, delta, alpha and beta apply to `runs: auto` only")
		}
		return
	}
	if c.MaxRuns == 0 {
		c.MaxRuns = DefaultMaxRuns
	}
	if c.Delta == 0 {
		c.Delta = stats.DefaultSPRTDelta
	}
	if c.Alpha == 0 {
		c.Alpha = stats.DefaultSPRTAlpha
	}
	if c.Beta == 0 {
		c.Beta = stats.DefaultSPRTBeta
	}
	if _, err := stats.NewSPRT(c.Confidence, c.Delta, c.Alpha, c.Beta); err != nil {
		r.errorf(cmp.Or(c.seqLine, line), "case.runs", "runs: auto: %v", err)
	}
	c.Runs = c.MaxRuns
}

// testDefaults gives a case the defaults of its skill's test.config (runs: auto and its
// settings, confidence), before its own keys are read.
func testDefaults(c *Case, tc *skill.TestConfig) {
	if tc == nil {
		return
	}
	if tc.Confidence > 0 {
		c.Confidence = tc.Confidence
	}
	if tc.Sequential {
		c.Sequential = true
		c.MaxRuns, c.Delta, c.Alpha, c.Beta = tc.MaxRuns, tc.Delta, tc.Alpha, tc.Beta
	}
}
