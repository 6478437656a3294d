package suite

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/skillfleet/skillfleet/assert"
	"github.com/skillfleet/skillfleet/diag"
	"github.com/skillfleet/skillfleet/skill"
)

// `claude plugin eval` (Claude Code 2.1.269 and later) keeps each case in a directory of its
// own under evals/: prompt.md (the prompt, with optional frontmatter), case.yaml (optional), and
// graders/*.md (each a YAML frontmatter naming the grader's type, and a body). Each such
// directory of a skill is read as a prompt case named after the directory. Every grader is
// mapped onto an existing assertion, or refused with a diagnostic that says why: a grader that
// cannot be decided as Claude Code decides it is never run with other semantics.
const (
	// PluginEvalRuns is the runs a plugin-eval case gets when it says nothing: Claude Code runs
	// each case three times by default.
	PluginEvalRuns = 3
	// PluginEvalVotes is the judge samples of an llm or baseline grader: Claude Code takes the
	// majority of three votes.
	PluginEvalVotes = 3

	pluginEvalPrompt  = "prompt.md"
	pluginEvalCase    = "case.yaml"
	pluginEvalGraders = "graders"
	// maxPluginEvalCases bounds the case directories of one evals/ directory.
	maxPluginEvalCases = maxEvals
	// maxGraders bounds the graders of one case; Claude Code's suites have a handful.
	maxGraders = 100
	// maxGraderBytes bounds a grader file; a rubric is a few paragraphs.
	maxGraderBytes = 64 << 10
	// maxReferenceBytes bounds a baseline grader's reference transcript: every job of the case
	// carries it to the judge.
	maxReferenceBytes = 64 << 10
	// maxPluginEvalTimeout is Claude Code's own cap on timeout_seconds.
	maxPluginEvalTimeout = 3600
)

// Rule ids of the plugin-eval reader.
const (
	rulePEFile        = "plugineval.file"
	rulePEName        = "plugineval.name"
	rulePEPrompt      = "plugineval.prompt"
	rulePENoGrader    = "plugineval.noGrader"
	rulePETooLarge    = "plugineval.tooLarge"
	rulePEType        = "plugineval.type"
	rulePEGrader      = "plugineval.grader"
	rulePEUnmapped    = "plugineval.unmapped"
	rulePEUnscored    = "plugineval.unscored"
	rulePEUnread      = "plugineval.unread"
	rulePEUnsupported = "plugineval.unsupported"
	rulePEReference   = "plugineval.reference"
	rulePEDuplicate   = "plugineval.duplicateSetting"
)

// The grader kinds of `claude plugin eval`.
const (
	graderRegex      = "regex"
	graderToolUsed   = "tool_used"
	graderToolOrder  = "tool_order"
	graderFileExists = "file_exists"
	graderLLM        = "llm"
	graderBaseline   = "baseline"
)

// graderCommonKeys are the keys every grader kind may have.
var graderCommonKeys = []string{"type", "weight", "scored", "arm", "name", "description"}

// graderKeys are the keys of each grader kind, beside graderCommonKeys.
var graderKeys = map[string][]string{
	graderRegex:      {"pattern", "flags", "match", "target"},
	graderToolUsed:   {"tool", "input_match", "min", "max"},
	graderToolOrder:  {"before", "after"},
	graderFileExists: {"path", "exists"},
	graderLLM:        {"focus", "criteria"},
	graderBaseline:   {"baseline_file", "criteria", "focus"},
}

// baselineCriterion is a baseline grader's criterion when its body gives none.
const baselineCriterion = "The output is at least as good as the reference transcript: it reaches the same outcome, as correctly and as completely."

// loadPluginEvalCases reads the `claude plugin eval` cases of a skill: every directory under
// evals/ that holds a prompt.md, a case.yaml or a graders/ directory.
func loadPluginEvalCases(s *skill.Skill, sc *scratch) ([]*Case, diag.Diagnostics) {
	return loadPluginEvalCasesAt(s, s.Dir, sc)
}

// loadPluginEvalCasesAt reads the cases under base/evals as cases of s: base is the skill
// directory, or the root of the plugin that holds s (see pluginRoots), where Claude Code keeps
// a plugin's suite. Every path a case names is resolved inside base.
func loadPluginEvalCasesAt(s *skill.Skill, base string, sc *scratch) ([]*Case, diag.Diagnostics) {
	dir := filepath.Join(base, "evals")
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	r := &reader{file: dir, check: sc.check}
	if err != nil {
		r.errorf(0, rulePEFile, "%v", err)
		return nil, r.diags
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() && isPluginEvalCase(filepath.Join(dir, e.Name())) {
			names = append(names, e.Name())
		}
	}
	if len(names) > maxPluginEvalCases {
		r.errorf(0, rulePETooLarge, "evals/ has %d case directories, more than %d", len(names), maxPluginEvalCases)
		return nil, r.diags
	}
	timeout, parallel := DefaultPromptTimeout, true
	if s.Test != nil {
		parallel = s.Test.Parallel
		if s.Test.Timeout > 0 {
			timeout = s.Test.Timeout
		}
	}
	paths := newSkillPaths(base)
	var out []*Case
	for _, name := range names {
		c := r.pluginEvalCase(s, paths, name, timeout)
		if c == nil {
			continue
		}
		c.Parallel = parallel
		out = append(out, c)
	}
	return out, r.diags
}

// isPluginEvalCase reports whether dir looks like a `claude plugin eval` case. Other
// directories under evals/ (evals.json's input files) are not cases.
func isPluginEvalCase(dir string) bool {
	for _, f := range []string{pluginEvalPrompt, pluginEvalCase, pluginEvalGraders} {
		if _, err := os.Lstat(filepath.Join(dir, f)); err == nil {
			return true
		}
	}
	return false
}

// readPE reads a file of the case inside the skill directory within limit bytes, reporting a
// problem on the file itself. rel is slash-separated, relative to the skill directory.
func (r *reader) readPE(paths *skillPaths, rel string, limit int64) ([]byte, bool) {
	r.file = filepath.Join(paths.dir, filepath.FromSlash(rel))
	p, err := paths.file(rel)
	if err != nil {
		r.errorf(0, rulePEFile, "%v", err)
		return nil, false
	}
	data, err := readCapped(p, limit)
	if err != nil {
		rule := rulePEFile
		if strings.Contains(err.Error(), "limit") {
			rule = rulePETooLarge
		}
		r.errorf(0, rule, "%v", err)
		return nil, false
	}
	return data, true
}

// pluginEvalCase reads one case directory, evals/<name>. It returns nil when the case has an
// error: every problem is a diagnostic, and a case half read is not run.
func (r *reader) pluginEvalCase(s *skill.Skill, paths *skillPaths, name string, timeout time.Duration) *Case {
	before := r.errorCount()
	rel := "evals/" + name
	promptRel := rel + "/" + pluginEvalPrompt
	c := &Case{
		Skill: s, Name: name, Kind: KindPrompt, Runs: PluginEvalRuns, Confidence: DefaultConfidence,
		Timeout: timeout, File: filepath.Join(paths.dir, filepath.FromSlash(promptRel)), Line: 1,
		DefaultBaseline: ArmWithoutSkill,
	}
	if s.Test != nil && s.Test.Sequential {
		// test.config's runs: auto is the default of all of the skill's cases, these too; its
		// confidence comes with it (Claude Code's 1.0 leaves a sequential test no zone).
		testDefaults(c, s.Test)
	}
	set := caseSettings{}
	if _, err := os.Lstat(filepath.Join(paths.dir, filepath.FromSlash(promptRel))); err != nil {
		r.file = filepath.Join(paths.dir, filepath.FromSlash(rel))
		r.errorf(0, rulePEPrompt, "case %s has no %s: the prompt of a case is read from its prompt.md", name, pluginEvalPrompt)
	} else if data, ok := r.readPE(paths, promptRel, maxCaseFileBytes); ok {
		r.promptFile(c, data, &set)
	}
	if !evalID.MatchString(name) {
		r.file = c.File
		r.errorf(0, rulePEName, "case directory %q must be 1-64 characters of letters, digits, '.', '_' and '-', starting with a letter or digit", name)
	}
	var graders []graderSource
	caseRel := rel + "/" + pluginEvalCase
	if _, err := os.Lstat(filepath.Join(paths.dir, filepath.FromSlash(caseRel))); err == nil {
		if data, ok := r.readPE(paths, caseRel, maxCaseFileBytes); ok {
			graders = append(graders, r.caseFile(c, data, &set)...)
		}
	}
	graders = append(graders, r.graderFiles(s, paths, rel)...)
	if len(graders) > maxGraders {
		r.file = c.File
		r.errorf(0, rulePETooLarge, "case %s has %d graders, more than %d", name, len(graders), maxGraders)
		return nil
	}
	set.apply(r, c)
	g := graderCounts{}
	for _, src := range graders {
		r.file = src.file
		r.grader(c, paths, rel, src, &g)
	}
	if g.baseline > 1 || (g.baseline == 1 && g.llm > 0) {
		r.file = g.baselineFile
		// The reference is the case's: the judge is shown it beside every criterion of the case.
		r.errorf(g.baselineLine, rulePEReference, "case %s has a baseline grader and %d other judged grader(s): the judge would be shown the reference transcript for each of them, which changes what they judge; put the baseline grader in a case of its own", name, g.baseline-1+g.llm)
	}
	if r.errorCount() > before {
		return nil
	}
	if len(c.Assertions) == 0 {
		r.file = c.File
		if len(graders) == 0 {
			r.errorf(0, rulePENoGrader, "case %s has no grader: write graders/<name>.md or a graders: list in case.yaml", name)
		} else {
			r.errorf(0, rulePENoGrader, "case %s has no scored grader, so nothing would decide its verdict", name)
		}
		return nil
	}
	return c
}

// caseSettings are the run settings prompt.md's frontmatter or case.yaml may set, each once:
// Claude Code's runs (here also "auto"), timeout_seconds and max_turns, and skillfleet's
// confidence and the settings of `runs: auto` (max_runs, delta, alpha, beta), which Claude
// Code does not read.
type caseSettings struct {
	// at is where each setting was written.
	at map[string]settingAt
	// run holds runs and the settings that decide a case over its epochs, as a cases file's
	// case would (caseExtension).
	run      Case
	timeout  float64
	maxTurns int
}

// settingAt locates a setting.
type settingAt struct {
	file string
	line int
}

// pluginSettingKeys are the keys setting reads.
var pluginSettingKeys = keySet(append([]string{"timeout_seconds", "max_turns"}, runSettingKeys...))

// setting reads one run setting into set, refusing it when the other file set it already.
func (r *reader) setting(set *caseSettings, p pair) bool {
	if !pluginSettingKeys[p.key] {
		return false
	}
	if prev, dup := set.at[p.key]; dup {
		r.errorf(p.line, rulePEDuplicate, "%s is set in both prompt.md and case.yaml (%s:%d); set it once", p.key, filepath.Base(prev.file), prev.line)
		return true
	}
	if set.at == nil {
		set.at = map[string]settingAt{}
	}
	set.at[p.key] = settingAt{r.file, p.line}
	switch p.key {
	case "timeout_seconds":
		if v, ok := r.number(p.val, "timeout_seconds", "case.timeout"); ok {
			if !(v > 0 && v <= maxPluginEvalTimeout) {
				r.errorf(p.line, "case.timeout", "timeout_seconds must be a positive number of seconds, at most %d, got %v", maxPluginEvalTimeout, v)
			}
			set.timeout = v
		}
	case "max_turns":
		if v, ok := r.integer(p.val, "max_turns", "case.maxTurns"); ok {
			if v < 1 {
				r.errorf(p.line, "case.maxTurns", "max_turns must be at least 1, got %d", v)
			}
			set.maxTurns = v
		}
	default:
		r.caseExtension(&set.run, p)
	}
	return true
}

// apply puts the settings into c. max_turns stops Claude Code's run; here the agent's own limit
// stops it, so the case also asserts max_turns: a run that took more turns than the case allows
// fails rather than passes on work Claude Code would have cut off.
func (set *caseSettings) apply(r *reader, c *Case) {
	has := func(k string) bool { _, ok := set.at[k]; return ok }
	if has("runs") {
		c.Runs, c.Sequential = set.run.Runs, set.run.Sequential
		if !c.Sequential {
			// A fixed runs is Claude Code's: every run must pass (its --threshold 1.0), whatever
			// confidence test.config's runs: auto brought, unless the case says otherwise.
			c.Confidence = DefaultConfidence
		}
	}
	if has("confidence") {
		c.Confidence = set.run.Confidence
	}
	// The settings of runs: auto, and where the first of them was written: without runs:
	// auto they are an error there.
	var first settingAt
	for _, k := range []string{"max_runs", "delta", "alpha", "beta"} {
		at, ok := set.at[k]
		if !ok {
			continue
		}
		switch k {
		case "max_runs":
			c.MaxRuns = set.run.MaxRuns
		case "delta":
			c.Delta = set.run.Delta
		case "alpha":
			c.Alpha = set.run.Alpha
		default:
			c.Beta = set.run.Beta
		}
		if first.line == 0 {
			first = at
		}
	}
	file := c.File
	switch {
	case !c.Sequential && first.line > 0:
		file, c.seqKeyLine = first.file, first.line
	case c.Sequential && has("runs"):
		file, c.seqLine = set.at["runs"].file, set.at["runs"].line
	}
	r.file = file
	r.sequential(c, c.Line)
	if has("timeout_seconds") {
		c.Timeout = time.Duration(set.timeout * float64(time.Second))
	}
	if at, ok := set.at["max_turns"]; ok && set.maxTurns > 0 {
		r.file = at.file
		a := assert.New(assert.MaxTurns)
		a.Max = int64(set.maxTurns)
		r.add(c, a, at.line)
	}
}

// unreadKeys are the prompt.md and case.yaml keys that are read but have no effect here, with
// the reason the warning gives.
var unreadKeys = map[string]string{
	"allowed_tools":  "the tools are the agent's (skillfleet.yaml)",
	"model":          "the model is the agent's (skillfleet.yaml, --agent)",
	"env":            "a prompt case's environment is the agent's",
	"tags":           "tags are not a filter here; select cases with --case",
	"schema_version": "",
	"description":    "",
	"name":           "",
}

// unsupportedKeys change what a run does and cannot be honoured: the case is refused.
var unsupportedKeys = map[string]string{
	"context":   "the case's setup (scaffold_script) is not run by skillfleet; its graders would judge a workspace Claude Code never graded",
	"execution": "write the prompt in prompt.md",
	"setup":     "the case's setup is not run by skillfleet",
}

// promptFile reads prompt.md: optional frontmatter, then the prompt.
func (r *reader) promptFile(c *Case, data []byte, set *caseSettings) {
	fm, body, bodyLine, ok := r.frontmatter(data, false)
	if !ok {
		return
	}
	if fm != nil {
		if pairs, ok := r.mapping(fm, "prompt.md frontmatter", "plugineval", nil); ok {
			for _, p := range pairs {
				r.caseKey(c, p, "prompt.md")
				r.setting(set, p)
			}
		}
	}
	c.Input = strings.TrimSpace(body)
	if c.Input == "" {
		r.errorf(bodyLine, rulePEPrompt, "prompt.md has an empty prompt")
	}
}

// caseKey warns of, or refuses, a key of prompt.md or case.yaml that is not a run setting.
func (r *reader) caseKey(c *Case, p pair, what string) {
	if pluginSettingKeys[p.key] {
		return
	}
	switch p.key {
	case "graders":
		return
	case "description":
		c.Description, _ = r.str(p.val, "description", rulePEGrader)
		return
	case "name":
		if v, ok := r.str(p.val, "name", rulePEName); ok && v != c.Name {
			r.errorf(p.line, rulePEName, "name %q differs from the case directory %q, which names the case", v, c.Name)
		}
		return
	}
	if why, ok := unsupportedKeys[p.key]; ok {
		r.errorf(p.line, rulePEUnsupported, "%s key %q is not supported: %s", what, p.key, why)
		return
	}
	if why, ok := unreadKeys[p.key]; ok {
		if why != "" {
			r.warnf(p.line, rulePEUnread, "%s key %q is not used: %s", what, p.key, why)
		}
		return
	}
	r.warnf(p.line, rulePEUnread, "%s has key %q, which skillfleet does not read", what, p.key)
}

// graderSource is one grader as written: its frontmatter mapping and body.
type graderSource struct {
	file     string
	node     *yaml.Node
	body     string
	bodyLine int
}

// caseFile reads case.yaml and returns the graders of its graders: list.
func (r *reader) caseFile(c *Case, data []byte, set *caseSettings) []graderSource {
	root, ok := r.parseYAML(data)
	if !ok {
		return nil
	}
	pairs, ok := r.mapping(root, "case.yaml", "plugineval", nil)
	if !ok {
		return nil
	}
	var out []graderSource
	for _, p := range pairs {
		r.caseKey(c, p, "case.yaml")
		if r.setting(set, p) || p.key != "graders" {
			continue
		}
		list := r.deref(p.val)
		if list == nil {
			continue
		}
		if list.Kind != yaml.SequenceNode {
			r.errorf(p.line, rulePEType, "graders must be a list of grader mappings, got %s", kindName(list))
			continue
		}
		for _, g := range list.Content {
			out = append(out, graderSource{file: r.file, node: g})
		}
	}
	return out
}

// graderFiles reads graders/*.md of a case, in name order.
func (r *reader) graderFiles(s *skill.Skill, paths *skillPaths, rel string) []graderSource {
	dirRel := rel + "/" + pluginEvalGraders
	entries, err := os.ReadDir(filepath.Join(paths.dir, filepath.FromSlash(dirRel)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		r.file = filepath.Join(paths.dir, filepath.FromSlash(dirRel))
		r.errorf(0, rulePEFile, "%v", err)
		return nil
	}
	if len(entries) > maxGraders {
		r.file = filepath.Join(paths.dir, filepath.FromSlash(dirRel))
		r.errorf(0, rulePETooLarge, "%s has %d entries, more than %d graders", dirRel, len(entries), maxGraders)
		return nil
	}
	var out []graderSource
	for _, e := range entries {
		fileRel := dirRel + "/" + e.Name()
		if !strings.HasSuffix(e.Name(), ".md") {
			r.file = filepath.Join(paths.dir, filepath.FromSlash(fileRel))
			r.warnf(0, rulePEUnread, "%s is not a grader (graders are .md files) and is not read", e.Name())
			continue
		}
		data, ok := r.readPE(paths, fileRel, maxGraderBytes)
		if !ok {
			continue
		}
		fm, body, bodyLine, ok := r.frontmatter(data, true)
		if !ok {
			continue
		}
		out = append(out, graderSource{file: r.file, node: fm, body: body, bodyLine: bodyLine})
	}
	return out
}

// frontmatter splits a Markdown file into its YAML frontmatter (between "---" lines, nil when
// absent) and its body, with the body's first line. Nodes carry the file's own line numbers.
func (r *reader) frontmatter(data []byte, required bool) (*yaml.Node, string, int, bool) {
	lines := strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n")
	if strings.TrimRight(lines[0], " \t") != "---" {
		if required {
			r.errorf(1, rulePEGrader, "a grader file starts with YAML frontmatter between --- lines naming its type")
			return nil, "", 0, false
		}
		return nil, strings.Join(lines, "\n"), 1, true
	}
	end := 0
	for i := 1; i < len(lines); i++ {
		if strings.TrimRight(lines[i], " \t") == "---" {
			end = i
			break
		}
	}
	if end == 0 {
		r.errorf(1, rulePEGrader, "the frontmatter opened on line 1 is never closed with a --- line")
		return nil, "", 0, false
	}
	fm := strings.Join(lines[1:end], "\n")
	body, bodyLine := strings.Join(lines[end+1:], "\n"), end+2
	if strings.TrimSpace(fm) == "" {
		if required {
			r.errorf(1, rulePEGrader, "the grader's frontmatter is empty: it needs at least `type`")
			return nil, "", 0, false
		}
		return nil, body, bodyLine, true
	}
	// One leading newline stands for the opening --- line, so node lines are the file's.
	root, ok := r.parseYAML([]byte("\n" + fm + "\n"))
	if !ok {
		return nil, "", 0, false
	}
	return root, body, bodyLine, true
}

// graderCounts counts the judged graders of a case, to keep the reference to one.
type graderCounts struct {
	llm, baseline int
	baselineFile  string
	baselineLine  int
}

// grader maps one grader onto an assertion of c, or reports why it cannot be.
func (r *reader) grader(c *Case, paths *skillPaths, caseRel string, src graderSource, g *graderCounts) {
	n := r.deref(src.node)
	if n == nil {
		return
	}
	if n.Kind != yaml.MappingNode {
		r.errorf(n.Line, rulePEType, "a grader must be a mapping with a `type`, got %s", kindName(n))
		return
	}
	pairs, ok := r.mapping(n, "grader", "plugineval", nil)
	if !ok {
		return
	}
	f := map[string]pair{}
	for _, p := range pairs {
		f[p.key] = p
	}
	tp, ok := f["type"]
	if !ok {
		r.errorf(n.Line, rulePEType, "the grader has no `type` (one of %s)", strings.Join(graderTypes(), ", "))
		return
	}
	kind, ok := r.str(tp.val, "type", rulePEType)
	if !ok {
		return
	}
	own, known := graderKeys[kind]
	if !known {
		r.errorf(tp.line, rulePEType, "unknown grader type %q (want one of %s)", kind, strings.Join(graderTypes(), ", "))
		return
	}
	allowed := map[string]bool{}
	for _, k := range append(slices.Clone(graderCommonKeys), own...) {
		allowed[k] = true
	}
	before := r.errorCount()
	for _, p := range pairs {
		if !allowed[p.key] {
			// A key not understood may change what the grader checks: refused, never ignored.
			r.errorf(p.line, rulePEGrader, "%s grader has unknown key %q%s", kind, p.key, suggest(p.key, allowed))
		}
	}
	if !r.scored(kind, f) || r.errorCount() > before {
		return
	}
	body := strings.TrimSpace(src.body)
	switch kind {
	case graderRegex:
		r.regexGrader(c, f, body, src.bodyLine, tp.line)
	case graderToolUsed:
		r.toolUsedGrader(c, f, tp.line)
	case graderToolOrder:
		r.toolOrderGrader(c, f, tp.line)
	case graderFileExists:
		r.fileExistsGrader(c, f, tp.line)
	case graderLLM:
		g.llm++
		r.judgedGrader(c, kind, f, body, src.bodyLine, tp.line, "")
	case graderBaseline:
		g.baseline++
		if g.baseline == 1 {
			g.baselineFile, g.baselineLine = r.file, tp.line
		}
		r.baselineGrader(c, paths, caseRel, f, body, src.bodyLine, tp.line)
	}
}

func graderTypes() []string {
	return []string{graderRegex, graderToolUsed, graderToolOrder, graderFileExists, graderLLM, graderBaseline}
}

// scored reads weight, scored and arm. Claude Code's case passes when the weighted share of its
// scored graders that pass reaches --threshold, 1.0 by default: every scored grader must pass,
// whatever its weight, which is this fleet's verdict. An unscored grader (scored: false, or
// weight 0) never decides Claude Code's verdict; skillfleet has no assertion that is reported
// without deciding, so it is not run, with a warning. It reports whether to map the grader.
func (r *reader) scored(kind string, f map[string]pair) bool {
	ok := true
	if p, has := f["weight"]; has {
		if v, good := r.number(p.val, "weight", rulePEGrader); good {
			switch {
			case v < 0:
				r.errorf(p.line, rulePEGrader, "weight must not be negative, got %v", v)
				ok = false
			case v == 0:
				r.warnf(p.line, rulePEUnscored, "%s grader has weight 0, so it never decides Claude Code's score; skillfleet has no unscored assertions, so it is not run", kind)
				ok = false
			}
		}
	}
	if p, has := f["scored"]; has {
		if n := r.deref(p.val); n != nil {
			switch {
			case n.Kind != yaml.ScalarNode || n.Tag != "!!bool":
				r.errorf(p.line, rulePEGrader, "scored must be true or false, got %s", kindName(n))
				ok = false
			case n.Value == "false":
				r.warnf(p.line, rulePEUnscored, "%s grader is scored: false, so it never decides Claude Code's score; skillfleet has no unscored assertions, so it is not run", kind)
				ok = false
			}
		}
	}
	if p, has := f["arm"]; has {
		if v, good := r.str(p.val, "arm", rulePEGrader); good {
			switch v {
			case "both":
			case "with-only", "with_only":
				// Claude Code leaves such a grader out of the no-plugin arm's score; this
				// fleet decides every arm on every assertion of the case.
				r.errorf(p.line, rulePEUnmapped, "arm %q has no mapping: skillfleet decides the without_skill arm on the same assertions as the with_skill arm; remove the arm or the grader", v)
				ok = false
			default:
				r.errorf(p.line, rulePEGrader, "arm must be both or with-only, got %q", v)
				ok = false
			}
		} else {
			ok = false
		}
	}
	return ok
}

// jsPattern turns a JavaScript pattern and flags into RE2 source, refusing what RE2 lacks.
func (r *reader) jsPattern(pattern, flags string, line int, what string) (string, bool) {
	for _, bad := range []string{"(?=", "(?!", "(?<=", "(?<!"} {
		if strings.Contains(pattern, bad) {
			r.errorf(line, rulePEUnmapped, "%s: the JavaScript lookaround %q has no RE2 equivalent; rewrite the pattern without it", what, bad+"…)")
			return "", false
		}
	}
	for i := 1; i <= 9; i++ {
		if strings.Contains(pattern, `\`+string(rune('0'+i))) {
			r.errorf(line, rulePEUnmapped, "%s: the backreference \\%d has no RE2 equivalent; rewrite the pattern without it", what, i)
			return "", false
		}
	}
	prefix := ""
	for _, f := range flags {
		switch f {
		case 'i', 'm', 's':
			if !strings.ContainsRune(prefix, f) {
				prefix += string(f)
			}
		case 'g', 'u', 'd':
			// g and d do not change whether a pattern is found; RE2 is always Unicode-aware.
		default:
			r.errorf(line, rulePEUnmapped, "%s: the regex flag %q has no RE2 equivalent (i, m, s, g, u and d are read)", what, string(f))
			return "", false
		}
	}
	if prefix != "" {
		return "(?" + prefix + ")" + pattern, true
	}
	return pattern, true
}

func (r *reader) optStr(f map[string]pair, key, what string) (string, int, bool) {
	p, has := f[key]
	if !has {
		return "", 0, false
	}
	v, ok := r.str(p.val, what+" "+key, rulePEGrader)
	return v, p.line, ok
}

// regexGrader maps regex: on the reply to output_matches, on a file to file_matches.
func (r *reader) regexGrader(c *Case, f map[string]pair, body string, bodyLine, line int) {
	pattern, pline, has := r.optStr(f, "pattern", "regex")
	switch {
	case has && body != "":
		r.errorf(pline, rulePEGrader, "regex grader has both a pattern key and a body; write the pattern once")
		return
	case !has && body == "":
		if _, present := f["pattern"]; !present {
			r.errorf(line, rulePEGrader, "regex grader has no pattern (a pattern key, or the body)")
		}
		return
	case !has:
		pattern, pline = body, bodyLine
	}
	flags, _, _ := r.optStr(f, "flags", "regex")
	if m, mline, ok := r.optStr(f, "match", "regex"); ok && m != "" && m != "contains" {
		r.errorf(mline, rulePEUnmapped, "regex match %q has no mapping: only `contains` maps (onto output_matches or file_matches); skillfleet has no negated or counted regex assertion", m)
		return
	}
	source, path, tline, ok := r.regexTarget(f, line)
	if !ok {
		return
	}
	re, ok := r.jsPattern(pattern, flags, pline, "regex")
	if !ok {
		return
	}
	switch source {
	case "last_message", "reply":
		a := assert.New(assert.OutputMatches)
		a.Value = re
		r.add(c, a, pline)
	case "file":
		a := assert.New(assert.FileMatches)
		a.Path, a.Value = path, re
		r.add(c, a, pline)
	default:
		r.errorf(tline, rulePEUnmapped, "regex target %q has no mapping: skillfleet's assertions read the reply (output_matches), one file (file_matches) or a named tool's arguments (tool_used with input_match → tool_called args_match), not the whole transcript or every file", source)
	}
}

// regexTarget reads target: a scalar (last_message, trace, files) or {source, path}. Without a
// target a regex reads the reply (assumed: the reference shows last_message first).
func (r *reader) regexTarget(f map[string]pair, line int) (string, string, int, bool) {
	p, has := f["target"]
	if !has {
		return "last_message", "", line, true
	}
	n := r.deref(p.val)
	if n == nil {
		return "", "", 0, false
	}
	if n.Kind == yaml.ScalarNode {
		v, ok := r.str(n, "regex target", rulePEGrader)
		return v, "", p.line, ok
	}
	pairs, ok := r.mapping(n, "regex target", "plugineval", map[string]bool{"source": true, "path": true})
	if !ok {
		return "", "", 0, false
	}
	source, path := "", ""
	for _, q := range pairs {
		v, ok := r.str(q.val, "target "+q.key, rulePEGrader)
		if !ok {
			return "", "", 0, false
		}
		if q.key == "source" {
			source = v
		} else {
			path = v
		}
	}
	switch {
	case source == "":
		r.errorf(p.line, rulePEGrader, "regex target has no source")
		return "", "", 0, false
	case source == "file" && path == "":
		r.errorf(p.line, rulePEGrader, "regex target {source: file} needs a path")
		return "", "", 0, false
	case source != "file" && path != "":
		r.errorf(p.line, rulePEGrader, "regex target has a path but its source is %q, not file", source)
		return "", "", 0, false
	}
	return source, path, p.line, true
}

// toolUsedGrader maps tool_used {tool, input_match, min, max} onto tool_called.
func (r *reader) toolUsedGrader(c *Case, f map[string]pair, line int) {
	a := assert.New(assert.ToolCalled)
	tool, _, has := r.optStr(f, "tool", "tool_used")
	if !has {
		if _, present := f["tool"]; !present {
			r.errorf(line, rulePEGrader, "tool_used grader has no tool")
		}
		return
	}
	a.Value = tool
	if m, mline, ok := r.optStr(f, "input_match", "tool_used"); ok {
		re, ok := r.jsPattern(m, "", mline, "tool_used input_match")
		if !ok {
			return
		}
		a.ArgsMatch = re
	}
	minSet := false
	if p, ok := f["min"]; ok {
		a.Min, minSet = r.integer(p.val, "tool_used min", rulePEGrader)
	}
	if p, ok := f["max"]; ok {
		var v int
		v, a.MaxSet = r.integer(p.val, "tool_used max", rulePEGrader)
		a.Max = int64(v)
	}
	if !minSet && a.MaxSet && a.Max == 0 {
		a.Min = 0 // `max: 0` alone means "never called like this", as in a prompt case
	}
	r.add(c, a, line)
}

// toolOrderGrader maps tool_order {before, after} onto tool_order [before, after].
func (r *reader) toolOrderGrader(c *Case, f map[string]pair, line int) {
	var names []string
	for _, key := range []string{"before", "after"} {
		p, has := f[key]
		if !has {
			r.errorf(line, rulePEGrader, "tool_order grader has no %s", key)
			return
		}
		n := r.deref(p.val)
		if n == nil {
			return
		}
		if n.Kind == yaml.ScalarNode {
			v, ok := r.str(n, "tool_order "+key, rulePEGrader)
			if !ok {
				return
			}
			names = append(names, v)
			continue
		}
		pairs, ok := r.mapping(n, "tool_order "+key, "plugineval", map[string]bool{"tool": true, "input_match": true})
		if !ok {
			return
		}
		tool := ""
		for _, q := range pairs {
			if q.key == "input_match" {
				r.errorf(q.line, rulePEUnmapped, "tool_order %s input_match has no mapping: skillfleet's tool_order orders the first calls of tools by name only", key)
				return
			}
			tool, _ = r.str(q.val, "tool_order "+key+" tool", rulePEGrader)
		}
		if tool == "" {
			r.errorf(p.line, rulePEGrader, "tool_order %s has no tool", key)
			return
		}
		names = append(names, tool)
	}
	a := assert.New(assert.ToolOrder)
	a.Names = names
	r.add(c, a, line)
}

// fileExistsGrader maps file_exists {path, exists} onto file_exists or file_not_exists.
func (r *reader) fileExistsGrader(c *Case, f map[string]pair, line int) {
	p, pline, has := r.optStr(f, "path", "file_exists")
	if !has {
		if _, present := f["path"]; !present {
			r.errorf(line, rulePEGrader, "file_exists grader has no path")
		}
		return
	}
	if strings.ContainsAny(p, "*?[{") {
		r.errorf(pline, rulePEUnmapped, "file_exists path %q is a glob: skillfleet's file_exists checks one path", p)
		return
	}
	t := assert.FileExists
	if q, ok := f["exists"]; ok {
		n := r.deref(q.val)
		if n == nil || n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
			r.errorf(q.line, rulePEGrader, "exists must be true or false, got %s", kindName(n))
			return
		}
		if n.Value == "false" {
			t = assert.FileNotExists
		}
	}
	a := assert.New(t)
	a.Path = p
	r.add(c, a, pline)
}

// judgedGrader maps llm onto semantic_match with three votes; focus other than the reply has
// no mapping, because the judge is shown the agent's reply only.
func (r *reader) judgedGrader(c *Case, kind string, f map[string]pair, body string, bodyLine, line int, fallback string) {
	if p, ok := f["focus"]; ok {
		n := r.deref(p.val)
		if n == nil {
			return
		}
		v := ""
		if n.Kind == yaml.ScalarNode {
			v, _ = r.str(n, kind+" focus", rulePEGrader)
		}
		if v != "last_message" && v != "reply" {
			shown := v
			if n.Kind != yaml.ScalarNode {
				shown = "a " + kindName(n)
			}
			r.errorf(p.line, rulePEUnmapped, "%s focus %q has no mapping: the judge is shown the agent's reply, not the transcript or files", kind, shown)
			return
		}
	}
	criterion, cline := body, bodyLine
	if v, vline, ok := r.optStr(f, "criteria", kind); ok {
		if body != "" {
			r.errorf(vline, rulePEGrader, "%s grader has both criteria and a body; write the rubric once", kind)
			return
		}
		criterion, cline = v, vline
	}
	if strings.TrimSpace(criterion) == "" {
		if fallback == "" {
			r.errorf(line, rulePEGrader, "%s grader has no rubric (its body, or criteria)", kind)
			return
		}
		criterion, cline = fallback, line
	}
	if r.add(c, assert.Assertion{Type: assert.SemanticMatch, Value: strings.TrimSpace(criterion)}, cline) {
		c.Assertions[len(c.Assertions)-1].Votes = PluginEvalVotes
	}
}

// baselineGrader maps baseline onto semantic_match with the reference transcript as the
// case's reference (the judge's EvaluateWithReference, as an eval's expected_output is).
func (r *reader) baselineGrader(c *Case, paths *skillPaths, caseRel string, f map[string]pair, body string, bodyLine, line int) {
	file, fline, has := r.optStr(f, "baseline_file", "baseline")
	if !has {
		if _, present := f["baseline_file"]; !present {
			r.errorf(line, rulePEGrader, "baseline grader has no baseline_file (the reference transcript)")
		}
		return
	}
	self := r.file
	if path.IsAbs(file) || !filepath.IsLocal(filepath.FromSlash(file)) {
		r.errorf(fline, rulePEReference, "baseline_file %q escapes the case directory", file)
		return
	}
	data, ok := r.readPE(paths, caseRel+"/"+file, maxReferenceBytes)
	if !ok {
		// readPE reported on the reference file; say which grader asked for it too.
		d := r.diags[len(r.diags)-1]
		r.diags = r.diags[:len(r.diags)-1]
		r.file = self
		r.errorf(fline, rulePEReference, "baseline_file %s", d.Message)
		return
	}
	r.file = self
	if len(bytes.TrimSpace(data)) == 0 {
		r.errorf(fline, rulePEReference, "baseline_file %q is empty", file)
		return
	}
	c.Reference = string(data)
	r.judgedGrader(c, graderBaseline, f, body, bodyLine, line, baselineCriterion)
}
