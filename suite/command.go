package suite

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/skillfleet/skillfleet/assert"
	"github.com/skillfleet/skillfleet/diag"
	"github.com/skillfleet/skillfleet/skill"
)

// Command cases live beside the skill, as seed 003 lays them out.
const (
	testConfigFile = "tests/test-config.json"
	commandCaseDir = "tests/cases"
	// maxCommandCases bounds the case files read from one skill.
	maxCommandCases = 10000
)

var testConfigKeys = map[string]bool{"version": true, "timeout": true, "env": true}

var commandCaseKeys = map[string]bool{
	"name": true, "description": true, "input": true, "expected": true,
	"runs": true, "confidence": true, "timeout": true,
	// runs: auto
	"max_runs": true, "delta": true, "alpha": true, "beta": true,
}

var commandInputKeys = map[string]bool{"command": true, "stdin": true, "files": true}

var expectedKeys = map[string]bool{
	"exit-code": true, "stdout-contains": true, "stderr-contains": true,
	"not-contains": true, "stdout-json": true,
	"file-exists": true, "file-not-exists": true, "file-contains": true, "file-matches": true, "file-json": true,
}

// commandCaseName is seed 003's rule for case names.
var commandCaseName = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$`)

// testConfig is tests/test-config.json.
type testConfig struct {
	timeout time.Duration
	env     map[string]string
}

// loadCommandCases reads tests/test-config.json and tests/cases/*.yaml of a skill.
func loadCommandCases(s *skill.Skill, sc *scratch) ([]*Case, diag.Diagnostics) {
	dir := filepath.Join(s.Dir, filepath.FromSlash(commandCaseDir))
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, diag.Diagnostics{{Rule: "cases.file", Severity: diag.SeverityError,
			Message: "cannot read " + commandCaseDir + ": " + err.Error(), File: dir}}
	}
	var diags diag.Diagnostics
	cfg, cfgDiags := loadTestConfig(s)
	diags = append(diags, cfgDiags...)

	var files []string
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || strings.HasPrefix(name, ".") {
			continue
		}
		if ext := filepath.Ext(name); ext == ".yaml" || ext == ".yml" {
			files = append(files, name)
		}
	}
	slices.Sort(files)
	if len(files) > maxCommandCases {
		diags = append(diags, diag.Diagnostic{Rule: "cases.file", Severity: diag.SeverityError,
			Message: "more than 10000 case files", File: dir})
		files = files[:maxCommandCases]
	}
	var out []*Case
	paths := newSkillPaths(s.Dir)
	for _, name := range files {
		rel := commandCaseDir + "/" + name
		path, err := paths.file(rel)
		if err != nil {
			diags = append(diags, diag.Diagnostic{Rule: "cases.file", Severity: diag.SeverityError,
				Message: err.Error(), File: filepath.Join(dir, name)})
			continue
		}
		data, err := readCapped(path, maxCaseFileBytes)
		if err != nil {
			diags = append(diags, diag.Diagnostic{Rule: "cases.file", Severity: diag.SeverityError,
				Message: err.Error(), File: path})
			continue
		}
		r := &reader{file: path, check: sc.check}
		if c := r.commandCase(s, data, cfg); c != nil {
			out = append(out, c)
		}
		diags = append(diags, r.diags...)
	}
	return out, diags
}

func loadTestConfig(s *skill.Skill) (testConfig, diag.Diagnostics) {
	cfg := testConfig{timeout: DefaultCommandTimeout}
	path := filepath.Join(s.Dir, filepath.FromSlash(testConfigFile))
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return cfg, nil
	}
	r := &reader{file: path}
	if _, err := skillFile(s.Dir, testConfigFile); err != nil {
		r.errorf(0, "testConfig.file", "%v", err)
		return cfg, r.diags
	}
	data, err := readCapped(path, maxCaseFileBytes)
	if err != nil {
		r.errorf(0, "testConfig.file", "%v", err)
		return cfg, r.diags
	}
	if !json.Valid(data) {
		var syn *json.SyntaxError
		err := json.Unmarshal(data, new(any))
		line := 0
		if errors.As(err, &syn) {
			line = 1 + bytes.Count(data[:min(int(syn.Offset), len(data))], []byte("\n"))
		}
		r.errorf(line, "testConfig.json", "invalid JSON: %v", err)
		return cfg, r.diags
	}
	// JSON is YAML, and the YAML parser keeps lines for diagnostics.
	root, ok := r.parseYAML(data)
	if !ok {
		return cfg, r.diags
	}
	pairs, ok := r.mapping(root, "test-config.json", "testConfig", testConfigKeys)
	if !ok {
		return cfg, r.diags
	}
	haveVersion := false
	for _, p := range pairs {
		switch p.key {
		case "version":
			haveVersion = true
			if v, ok := r.integer(p.val, "version", "testConfig.version"); ok && v != 1 {
				r.errorf(p.line, "testConfig.version", "unsupported test-config version %d (this runner reads version 1)", v)
			}
		case "timeout":
			if v, ok := r.number(p.val, "timeout", "testConfig.timeout"); ok {
				if !(v > 0 && v <= 24*3600) {
					r.errorf(p.line, "testConfig.timeout", "timeout must be a positive number of seconds, got %v", v)
				} else {
					cfg.timeout = time.Duration(v * float64(time.Second))
				}
			}
		case "env":
			cfg.env = r.env(p.val)
		}
	}
	if !haveVersion {
		r.errorf(root.Line, "testConfig.version", "test-config.json needs \"version\": 1")
	}
	return cfg, r.diags
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (r *reader) env(n *yaml.Node) map[string]string {
	pairs, ok := r.mapping(n, "env", "testConfig", nil)
	if !ok {
		return nil
	}
	env := make(map[string]string, len(pairs))
	for _, p := range pairs {
		if !envName.MatchString(p.key) {
			r.errorf(p.line, "testConfig.env", "%q is not a valid environment variable name", p.key)
			continue
		}
		if v, ok := r.str(p.val, "env value of "+p.key, "testConfig.env"); ok {
			env[p.key] = v
		}
	}
	return env
}

func (r *reader) commandCase(s *skill.Skill, data []byte, cfg testConfig) *Case {
	root, ok := r.parseYAML(data)
	if !ok {
		return nil
	}
	pairs, ok := r.mapping(root, "command case", "case", commandCaseKeys)
	if !ok {
		return nil
	}
	parallel := true
	if s.Test != nil {
		parallel = s.Test.Parallel
	}
	c := &Case{
		Skill: s, Kind: KindCommand, Runs: DefaultRuns, Confidence: DefaultConfidence,
		Timeout: cfg.timeout, Parallel: parallel, Env: cfg.env, File: r.file, Line: root.Line,
	}
	testDefaults(c, s.Test)
	var expected *yaml.Node
	expectedLine := 0
	has := map[string]bool{}
	for _, p := range pairs {
		has[p.key] = true
		switch p.key {
		case "name":
			if v, ok := r.str(p.val, "case name", "case.name"); ok {
				if !commandCaseName.MatchString(v) {
					r.errorf(p.line, "case.name", "case name %q must be 1-64 characters of [a-z0-9-], starting and ending with a letter or digit", v)
				}
				c.Name = v
			}
		case "description":
			c.Description, _ = r.str(p.val, "description", "case.type")
		case "input":
			has["command"] = r.commandInput(c, p.val)
		case "expected":
			expected, expectedLine = p.val, p.line
		default:
			r.caseExtension(c, p)
		}
	}
	if c.Name == "" && !has["name"] {
		r.errorf(root.Line, "case.name", "case has no name")
	}
	if !has["command"] {
		r.errorf(root.Line, "case.noInput", "case %q has no input.command", c.Name)
	}
	r.sequential(c, root.Line)
	if expected == nil {
		r.errorf(root.Line, "case.noAssertion", "case %q has no `expected` block (write `expected: {exit-code: 0}` to check only the exit code)", c.Name)
	} else {
		r.expected(c, expected, expectedLine)
	}
	if len(r.diags) > 0 {
		return nil
	}
	return c
}

// commandInput reads input: {command, stdin, files}; it reports whether a command key was there.
func (r *reader) commandInput(c *Case, n *yaml.Node) (hasCommand bool) {
	pairs, ok := r.mapping(n, "input", "case", commandInputKeys)
	if !ok {
		return true // the mapping error was reported; don't add "no command" to it
	}
	for _, p := range pairs {
		switch p.key {
		case "command":
			hasCommand = true
			v, ok := r.str(p.val, "input.command", "case.noInput")
			if ok && strings.TrimSpace(v) == "" {
				r.errorf(p.line, "case.noInput", "input.command is empty")
			}
			c.Command = v
		case "stdin":
			if v := r.deref(p.val); v != nil && v.Tag == "!!null" {
				continue
			}
			if v, ok := r.str(p.val, "input.stdin", "case.type"); ok {
				c.Stdin = &v
			}
		case "files":
			files, lines, _ := r.strList(p.val, "input.files", "case.files")
			for i, f := range files {
				if _, err := skillFile(c.Skill.Dir, f); err != nil {
					r.errorf(lines[i], "case.files", "fixture %v", err)
					continue
				}
				c.Files = append(c.Files, f)
			}
		}
	}
	return hasCommand
}

func (r *reader) expected(c *Case, n *yaml.Node, line int) {
	pairs, ok := r.mapping(n, "expected", "assertion", expectedKeys)
	if !ok {
		return
	}
	exit, exitLine := 0, line
	for _, p := range pairs {
		switch p.key {
		case "exit-code":
			if v, ok := r.integer(p.val, "exit-code", "assertion.type"); ok {
				if v < 0 || v > 255 {
					r.errorf(p.line, "assertion.invalid", "exit-code must be between 0 and 255, got %d", v)
				}
				exit, exitLine = v, p.line
			}
		case "stdout-contains", "stderr-contains", "not-contains":
			t := map[string]assert.Type{
				"stdout-contains": assert.StdoutContains,
				"stderr-contains": assert.StderrContains,
				"not-contains":    assert.NotContains,
			}[p.key]
			vals, lines, _ := r.strList(p.val, p.key, "assertion.type")
			for i, v := range vals {
				r.add(c, assert.Assertion{Type: t, Value: v}, lines[i])
			}
		case "stdout-json":
			r.nodes = 0
			v, ok := r.value(p.val, 0, "assertion.invalid")
			if !ok {
				continue
			}
			doc, size, err := canonicalJSON(v)
			if err != nil {
				r.errorf(p.line, "assertion.invalid", "stdout-json: %v", err)
				continue
			}
			if size > maxJSONBytes {
				r.errorf(p.line, ruleTooLarge, "stdout-json is %d bytes as JSON, more than %d; compare a smaller document", size, maxJSONBytes)
				continue
			}
			r.add(c, assert.Assertion{Type: assert.StdoutJSON, JSON: doc}, p.line)
		case "file-exists", "file-not-exists", "file-contains", "file-matches", "file-json":
			// The file kinds are written as in a prompt case, with seed 003's dashes.
			r.fileAssertions(c, assert.Type(strings.ReplaceAll(p.key, "-", "_")), p.key, p)
		}
	}
	// The exit code is always checked (default 0, seed 003), first so reports lead with it.
	c.Assertions = append([]Assertion{{Assertion: assert.Assertion{Type: assert.ExitCode, ExitCode: exit}, Line: exitLine}}, c.Assertions...)
}

// canonicalJSON turns YAML-decoded data into what encoding/json with UseNumber produces, so the
// expected document compares with parsed stdout the same way on every path.
// It also returns the document's size as JSON, for the cap.
func canonicalJSON(v any) (any, int, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, 0, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, 0, err
	}
	return out, len(b), nil
}
