package suite

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/skillfleet/skillfleet/assert"
	"github.com/skillfleet/skillfleet/diag"
	"github.com/skillfleet/skillfleet/skill"
)

// The agentskills.io guide to evaluating skills keeps a skill's test cases in evals/evals.json:
// {"skill_name", "evals": [{"id", "prompt", "expected_output", "files", "assertions"}]}. Each
// eval is read as a prompt case named EvalCasePrefix + its id.
const (
	// EvalsFile is where a skill's evals live, relative to the skill directory.
	EvalsFile = "evals/evals.json"
	// EvalCasePrefix starts the name of a case read from evals.json: eval 3 is case "eval-3".
	// The id, not the position, names the case, so reordering the file keeps its history.
	EvalCasePrefix = "eval-"
	// maxEvals bounds the evals of one file; the guide starts with two or three.
	maxEvals = 1000
	// maxEvalFiles bounds the input files of one eval.
	maxEvalFiles = 100
	// maxEvalNodes bounds the JSON values (objects, arrays, scalars) of one evals.json, so a
	// 1 MiB array of zeros cannot cost a node per two bytes.
	maxEvalNodes = 100000
)

// Rule ids of the evals.json reader.
const (
	ruleEvalsFile       = "evals.file"
	ruleEvalsJSON       = "evals.json"
	ruleEvalsType       = "evals.type"
	ruleEvalsTooLarge   = "evals.tooLarge"
	ruleEvalsSkillName  = "evals.skillName"
	ruleEvalsEmpty      = "evals.empty"
	ruleEvalsID         = "evals.id"
	ruleEvalsDupID      = "evals.duplicateId"
	ruleEvalsPrompt     = "evals.prompt"
	ruleEvalsFiles      = "evals.files"
	ruleEvalsAssertions = "evals.assertions"
	ruleEvalsNoCheck    = "evals.noAssertion"
	ruleEvalsUnknownKey = "evals.unknownKey"
)

// runSettingKeys are the keys that say how many epochs a case runs and how they decide it
// (`runs`, a number or "auto", and its settings), read alike in every format. In evals.json
// they are skillfleet's, beside the guide's: at the top of the file, the defaults of its
// evals (over the skill's test.config); on an eval, its own.
var runSettingKeys = []string{"runs", "confidence", "max_runs", "delta", "alpha", "beta"}

var evalRunKeys = keySet(runSettingKeys)

var evalsFileKeys = keySet(append([]string{"skill_name", "evals"}, runSettingKeys...))

// evalKeys are an eval's keys. Both assertions and expectations are in use: the guide writes
// assertions, skill-creator's schema expectations.
var evalKeys = keySet(append([]string{"id", "name", "prompt", "expected_output", "files", "assertions", "expectations"}, runSettingKeys...))

// evalID is what a string id may hold: it becomes part of a case name, which filters glob and
// reports print.
var evalID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// loadEvalCases reads evals/evals.json of a skill, if it has one.
func loadEvalCases(s *skill.Skill, sc *scratch) ([]*Case, diag.Diagnostics) {
	path := filepath.Join(s.Dir, filepath.FromSlash(EvalsFile))
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	r := &reader{file: path, check: sc.check}
	if _, err := skillFile(s.Dir, EvalsFile); err != nil {
		r.errorf(0, ruleEvalsFile, "%v", err)
		return nil, r.diags
	}
	data, err := readCapped(path, maxCaseFileBytes)
	if err != nil {
		r.errorf(0, ruleEvalsFile, "%v", err)
		return nil, r.diags
	}
	return r.evalCases(s, data), r.diags
}

// errorCount is the number of error diagnostics so far; warnings do not drop a case.
func (r *reader) errorCount() int {
	n := 0
	for _, d := range r.diags {
		if d.Severity == diag.SeverityError {
			n++
		}
	}
	return n
}

func (r *reader) warnf(line int, rule, format string, args ...any) {
	r.diags = append(r.diags, diag.Warning(rule, r.file, line, fmt.Sprintf(format, args...)))
}

// evalCases reads the cases of one evals.json. A problem with the file as a whole (not JSON,
// the wrong skill_name) plans none of them; a problem with one eval leaves out that eval.
func (r *reader) evalCases(s *skill.Skill, data []byte) []*Case {
	root, ok := r.parseJSON(data)
	if !ok {
		return nil
	}
	pairs, ok := r.mapping(root, "evals.json", "evals", nil)
	if !ok {
		return nil
	}
	var list *yaml.Node
	listLine, haveName := 0, false
	// def is what every eval starts from: the skill's test.config, then the file's own run
	// settings.
	def := &Case{Skill: s, Kind: KindPrompt, Runs: DefaultRuns, Confidence: DefaultConfidence, File: r.file}
	testDefaults(def, s.Test)
	for _, p := range pairs {
		if evalRunKeys[p.key] {
			r.caseExtension(def, p)
			continue
		}
		switch p.key {
		case "skill_name":
			haveName = true
			if v, ok := r.str(p.val, "skill_name", ruleEvalsType); ok && v != s.Name {
				r.errorf(p.line, ruleEvalsSkillName, "skill_name %q does not match the skill's name %q", v, s.Name)
			}
		case "evals":
			list, listLine = p.val, p.line
		default:
			r.unknownKey(p, "evals.json", evalsFileKeys)
		}
	}
	if !haveName {
		r.errorf(root.Line, ruleEvalsSkillName, "evals.json has no skill_name (it must be %q)", s.Name)
	}
	switch {
	case list == nil:
		r.errorf(root.Line, ruleEvalsEmpty, "evals.json has no `evals` list")
	case list.Kind != yaml.SequenceNode:
		r.errorf(listLine, ruleEvalsType, "`evals` must be a list, got %s", kindName(list))
	case len(list.Content) == 0:
		r.errorf(listLine, ruleEvalsEmpty, "`evals` is empty: write at least one eval or remove the file")
	case len(list.Content) > maxEvals:
		r.errorf(listLine, ruleEvalsTooLarge, "`evals` has %d evals, more than %d", len(list.Content), maxEvals)
	}
	if r.errorCount() == 0 {
		// The file's defaults must make a test that can run, checked once here rather than
		// on every eval that inherits them.
		probe := *def
		r.sequential(&probe, root.Line)
	}
	if r.errorCount() > 0 {
		return nil
	}
	// An eval's errors point at its own lines; what it inherits was checked above.
	def.seqLine, def.seqKeyLine = 0, 0
	timeout, parallel := DefaultPromptTimeout, true
	if s.Test != nil {
		parallel = s.Test.Parallel
		if s.Test.Timeout > 0 {
			timeout = s.Test.Timeout
		}
	}
	var out []*Case
	seen := make(map[string]int, len(list.Content))
	paths := newSkillPaths(s.Dir)
	for _, n := range list.Content {
		c := r.evalCase(def, n, paths)
		if c == nil {
			continue
		}
		if first, dup := seen[c.Name]; dup {
			r.errorf(c.Line, ruleEvalsDupID, "eval id gives the case name %q, which the eval on line %d already has", c.Name, first)
			continue
		}
		seen[c.Name] = c.Line
		c.Timeout, c.Parallel = timeout, parallel
		out = append(out, c)
	}
	return out
}

func (r *reader) unknownKey(p pair, what string, allowed map[string]bool) {
	// A warning, not an error: evals.json is a format other tools write too, and they add
	// fields of their own; a typo of a known field still shows.
	r.warnf(p.line, ruleEvalsUnknownKey, "%s has key %q, which skillfleet does not read%s", what, p.key, suggest(p.key, allowed))
}

// evalCase reads one eval as a case, starting from def (the file's and test.config's
// defaults).
func (r *reader) evalCase(def *Case, n *yaml.Node, paths *skillPaths) *Case {
	before := r.errorCount()
	pairs, ok := r.mapping(n, "eval", "evals", nil)
	if !ok {
		return nil
	}
	c := new(Case)
	*c = *def
	c.Line = n.Line
	var checks *yaml.Node
	checksKey, expectedLine := "", 0
	has := map[string]bool{}
	for _, p := range pairs {
		has[p.key] = true
		if evalRunKeys[p.key] {
			r.caseExtension(c, p)
			continue
		}
		switch p.key {
		case "id":
			c.Name = r.evalName(p.val)
		case "name":
			c.Description, _ = r.str(p.val, "name", ruleEvalsType)
		case "prompt":
			v, ok := r.str(p.val, "prompt", ruleEvalsPrompt)
			if ok && strings.TrimSpace(v) == "" {
				r.errorf(p.line, ruleEvalsPrompt, "eval has an empty prompt")
			}
			c.Input = v
		case "expected_output":
			c.Reference, _ = r.str(p.val, "expected_output", ruleEvalsType)
			expectedLine = p.line
		case "files":
			r.evalFiles(c, p.val, paths)
		case "assertions", "expectations":
			if checks != nil {
				r.errorf(p.line, ruleEvalsAssertions, "eval has both %q and %q: they are two names for one list, write one", checksKey, p.key)
				continue
			}
			checks, checksKey = p.val, p.key
		default:
			r.unknownKey(p, "eval", evalKeys)
		}
	}
	if !has["id"] {
		r.errorf(n.Line, ruleEvalsID, "eval has no id")
	}
	if !has["prompt"] {
		r.errorf(n.Line, ruleEvalsPrompt, "eval %s has no prompt", c.Name)
	}
	r.sequential(c, n.Line)
	if checks != nil {
		vals, lines, _ := r.strList(checks, checksKey, ruleEvalsType)
		for i, v := range vals {
			if strings.TrimSpace(v) == "" {
				r.errorf(lines[i], ruleEvalsAssertions, "%s item is empty", checksKey)
				continue
			}
			r.add(c, assert.Assertion{Type: assert.SemanticMatch, Value: v}, lines[i])
		}
	}
	// The guide writes evals before their assertions ("just the prompts and expected
	// outputs"): such an eval is judged against its expected output alone, never passed
	// without a check.
	if len(c.Assertions) == 0 && r.errorCount() == before {
		if strings.TrimSpace(c.Reference) == "" {
			r.errorf(n.Line, ruleEvalsNoCheck, "eval %s has neither assertions nor an expected_output to judge against", c.Name)
		} else {
			r.add(c, assert.Assertion{Type: assert.SemanticMatch, Value: c.Reference}, expectedLine)
		}
	}
	if r.errorCount() > before {
		return nil
	}
	return c
}

// evalName turns an eval's id (a non-negative integer, or a short string) into its case name.
func (r *reader) evalName(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!int" {
		v, err := strconv.ParseInt(n.Value, 10, 64)
		if err != nil || v < 0 {
			r.errorf(n.Line, ruleEvalsID, "id must be a non-negative integer or a string, got %s", n.Value)
			return ""
		}
		return EvalCasePrefix + strconv.FormatInt(v, 10)
	}
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!str" && n.Tag != "") {
		r.errorf(n.Line, ruleEvalsID, "id must be a non-negative integer or a string, got %s", kindName(n))
		return ""
	}
	v := n.Value
	if !evalID.MatchString(v) {
		r.errorf(n.Line, ruleEvalsID, "id %q must be 1-64 characters of letters, digits, '.', '_' and '-', starting with a letter or digit", v)
		return ""
	}
	return EvalCasePrefix + v
}

// evalFiles checks an eval's input files: regular files inside the skill directory.
func (r *reader) evalFiles(c *Case, n *yaml.Node, paths *skillPaths) {
	files, lines, _ := r.strList(n, "files", ruleEvalsType)
	if len(files) > maxEvalFiles {
		r.errorf(n.Line, ruleEvalsTooLarge, "eval has %d files, more than %d", len(files), maxEvalFiles)
		return
	}
	for i, f := range files {
		p, err := paths.file(f)
		if err != nil {
			r.errorf(lines[i], ruleEvalsFiles, "input file %v", err)
			continue
		}
		if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
			r.errorf(lines[i], ruleEvalsFiles, "input file %q is not a regular file", f)
			continue
		}
		c.Files = append(c.Files, filepath.ToSlash(filepath.Clean(filepath.FromSlash(f))))
	}
}

// parseJSON parses data into a yaml.Node tree, so the typed accessors of the case reader, and
// their messages, serve evals.json too. Each node carries the line its token is on (a JSON
// token never spans lines). Bad JSON is reported with the line of the offending byte.
func (r *reader) parseJSON(data []byte) (*yaml.Node, bool) {
	if !json.Valid(data) {
		err := json.Unmarshal(data, new(any))
		line := 0
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			line = lineOf(data, syn.Offset)
		}
		r.errorf(line, ruleEvalsJSON, "invalid JSON: %v", err)
		return nil, false
	}
	p := &jsonNodes{data: data, dec: json.NewDecoder(bytes.NewReader(data)), line: 1}
	p.dec.UseNumber()
	root, err := p.value(0)
	if err != nil {
		var tl *jsonLimitError
		if errors.As(err, &tl) {
			r.errorf(tl.line, ruleEvalsTooLarge, "%s", tl.msg)
		} else {
			r.errorf(p.line, ruleEvalsJSON, "invalid JSON: %v", err)
		}
		return nil, false
	}
	return root, true
}

// lineOf is the 1-based line of the byte at off.
func lineOf(data []byte, off int64) int {
	off = min(max(off, 0), int64(len(data)))
	return 1 + bytes.Count(data[:off], []byte("\n"))
}

// jsonNodes converts a JSON token stream into yaml.Nodes within the depth and node caps.
type jsonNodes struct {
	data  []byte
	dec   *json.Decoder
	off   int64 // the offset line counts up to; tokens come in order, so lines are counted once
	line  int
	nodes int
}

type jsonLimitError struct {
	line int
	msg  string
}

func (e *jsonLimitError) Error() string { return e.msg }

// next reads a token and the line it ends on.
func (p *jsonNodes) next() (json.Token, int, error) {
	tok, err := p.dec.Token()
	if err != nil {
		return nil, p.line, err
	}
	end := p.dec.InputOffset()
	p.line += bytes.Count(p.data[p.off:end], []byte("\n"))
	p.off = end
	p.nodes++
	if p.nodes > maxEvalNodes {
		return nil, p.line, &jsonLimitError{p.line, fmt.Sprintf("evals.json has more than %d JSON values", maxEvalNodes)}
	}
	return tok, p.line, nil
}

func (p *jsonNodes) value(depth int) (*yaml.Node, error) {
	tok, line, err := p.next()
	if err != nil {
		return nil, err
	}
	return p.node(tok, line, depth)
}

func (p *jsonNodes) node(tok json.Token, line, depth int) (*yaml.Node, error) {
	switch t := tok.(type) {
	case json.Delim:
		if depth > maxDepth {
			return nil, &jsonLimitError{line, fmt.Sprintf("nested more than %d levels deep", maxDepth)}
		}
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Line: line}
		if t == '{' {
			n.Kind, n.Tag = yaml.MappingNode, "!!map"
		}
		for p.dec.More() {
			if t == '{' {
				k, kl, err := p.next()
				if err != nil {
					return nil, err
				}
				key, _ := k.(string)
				n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key, Line: kl})
			}
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, v)
		}
		if _, _, err := p.next(); err != nil { // the closing delimiter
			return nil, err
		}
		return n, nil
	case string:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: t, Line: line}, nil
	case json.Number:
		tag := "!!float"
		if _, err := strconv.ParseInt(string(t), 10, 64); err == nil {
			tag = "!!int"
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: string(t), Line: line}, nil
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(t), Line: line}, nil
	case nil:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null", Line: line}, nil
	}
	return nil, fmt.Errorf("unexpected JSON token %v", tok)
}
