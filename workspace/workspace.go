// Package workspace writes a run's results in the layout of the agentskills.io guide to
// evaluating skills and of skill-creator's schemas, so that the tools and habits built around
// them (the guide's iteration loop, skill-creator's viewer) read a skillfleet run as their own:
//
//	DIR/<skill>/iteration-<N>/<eval>/<configuration>/
//	    outputs/          files the agent created or changed in its work directory
//	    timing.json       {"total_tokens", "duration_ms", ...}
//	    grading.json      {"expectations": [{"text", "passed", "evidence"}], "summary": {...}}
//	    trajectory.json   the agent's ATIF trajectory
//
// <N> is the next free iteration, so a workspace accumulates runs as the guide's loop does.
// <eval> is the case name, prefixed "eval-" unless it already is (evals.json cases are). The
// configuration is "with_skill" (the baselines issue adds the others). A case run for several
// epochs gets one directory per epoch below its configuration, run-1, run-2, ... (a case run
// against several agents, one per agent and epoch: run-<agent>-<epoch>).
//
// Everything written comes from a suite and is hostile: names become single path elements
// (anything outside [A-Za-z0-9._-] replaced), output paths are kept inside outputs/, and
// nothing is followed or overwritten outside DIR.
package workspace

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// WithSkill is the guide's name for the configuration that runs with the skill.
const WithSkill = "with_skill"

// Job is one job's result with its documents resolved.
type Job struct {
	Result *pb.Result
	// Trajectory is the ATIF JSON, or nil.
	Trajectory []byte
}

// FromResult makes a Job of a result whose documents are inline and decoded
// (coordinator.ResolveDocuments): the output files' contents in Outputs, the trajectory's JSON
// in Trajectory.Data.
func FromResult(r *pb.Result) (Job, error) {
	j := Job{Result: r}
	d := r.GetTrajectory()
	if len(d.GetData()) == 0 {
		return j, nil
	}
	if d.GetEncoding() != "json" {
		return j, fmt.Errorf("workspace: trajectory of %s/%s is %q, not decoded JSON", r.GetSkill(), r.GetCaseName(), d.GetEncoding())
	}
	j.Trajectory = d.GetData()
	return j, nil
}

// Writer writes one run into a workspace: Add each job, then WriteBenchmark each skill's
// benchmark.json.
type Writer struct {
	root      string            // DIR
	iteration map[string]string // skill -> its iteration directory
	runs      map[string]int    // RunsKey -> results the plan has for it
}

// New prepares a writer into dir, creating it. caseRuns tells how many results each case will
// have in each configuration (RunsKey -> epochs × agents), so that a case of several gets run-*
// directories from its first result on.
func New(dir string, caseRuns map[string]int) (*Writer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	return &Writer{root: dir, iteration: map[string]string{}, runs: caseRuns}, nil
}

// Add writes one job's directory.
func (w *Writer) Add(j Job) error {
	r := j.Result
	it, err := w.iterationDir(r.GetSkill())
	if err != nil {
		return err
	}
	// A baseline job's directory is its arm's: the guide's without_skill and old_skill.
	arm := ArmOf(r)
	key := RunsKey(r)
	dir := filepath.Join(it, evalDir(r.GetCaseName()), arm)
	if w.runs[key] > 1 {
		run := "run-" + strconv.Itoa(int(r.GetEpoch()))
		if r.GetAgent() != "" {
			run = "run-" + element(r.GetAgent()) + "-" + strconv.Itoa(int(r.GetEpoch()))
		}
		dir = filepath.Join(dir, run)
	}
	if err := os.MkdirAll(filepath.Join(dir, "outputs"), 0o755); err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	if err := writeJSON(filepath.Join(dir, "timing.json"), timingOf(r)); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(dir, "grading.json"), gradingOf(r)); err != nil {
		return err
	}
	for _, f := range r.GetOutputs() {
		p := OutputPath(filepath.Join(dir, "outputs"), f.GetPath())
		if p == "" || f.GetContent() == nil && f.GetSize() > 0 {
			continue // a file listed without its content (it could not be kept)
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("workspace: %w", err)
		}
		if err := os.WriteFile(p, f.GetContent(), 0o644); err != nil {
			return fmt.Errorf("workspace: %w", err)
		}
	}
	if j.Trajectory != nil {
		if err := os.WriteFile(filepath.Join(dir, "trajectory.json"), j.Trajectory, 0o644); err != nil {
			return fmt.Errorf("workspace: %w", err)
		}
	}
	return nil
}

// iterationDir returns the skill's directory for this run: the next free iteration-<N>.
func (w *Writer) iterationDir(skill string) (string, error) {
	if d, ok := w.iteration[skill]; ok {
		return d, nil
	}
	base := filepath.Join(w.root, element(skill))
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", fmt.Errorf("workspace: %w", err)
	}
	for n := 1; ; n++ {
		d := filepath.Join(base, "iteration-"+strconv.Itoa(n))
		err := os.Mkdir(d, 0o755)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("workspace: %w", err)
		}
		w.iteration[skill] = d
		return d, nil
	}
}

// ArmOf is a result's configuration in the guide's words: with_skill, without_skill or
// old_skill; or a2, an A/A run's repeat of with_skill, kept apart so that the two identical
// arms are never mixed.
func ArmOf(r *pb.Result) string {
	if a := r.GetArm(); a == "without_skill" || a == "old_skill" || a == "a2" {
		return a
	}
	return WithSkill
}

// RunsKey is what New's caseRuns counts results by: a case in one configuration.
func RunsKey(r *pb.Result) string {
	return r.GetSkill() + "/" + r.GetCaseName() + "/" + ArmOf(r)
}

// evalDir names a case's directory as the guide does: eval-<name>.
func evalDir(caseName string) string {
	e := element(caseName)
	if strings.HasPrefix(e, "eval-") {
		return e
	}
	return "eval-" + e
}

// element makes a name one safe path element.
func element(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	e := b.String()
	if e == "" || e == "." || e == ".." || len(e) > 128 {
		e = fmt.Sprintf("x%x", name)
		if len(e) > 128 {
			e = e[:128]
		}
	}
	return e
}

// Timing is timing.json: the guide's two fields, and skill-creator's seconds.
type Timing struct {
	TotalTokens          int64   `json:"total_tokens"`
	DurationMS           int64   `json:"duration_ms"`
	TotalDurationSeconds float64 `json:"total_duration_seconds"`
	ExecutorDurationSecs float64 `json:"executor_duration_seconds"`
}

func timingOf(r *pb.Result) Timing {
	u, t := r.GetUsage(), r.GetTimings()
	return Timing{
		TotalTokens:          u.GetPromptTokens() + u.GetCompletionTokens(),
		DurationMS:           t.GetTotalMs(),
		TotalDurationSeconds: seconds(t.GetTotalMs()),
		ExecutorDurationSecs: seconds(t.GetExecutionMs()),
	}
}

func seconds(ms int64) float64 { return math.Round(float64(ms)) / 1000 }

// Expectation is one graded assertion: skill-creator's and the guide's shape.
type Expectation struct {
	Text     string `json:"text"`
	Passed   bool   `json:"passed"`
	Evidence string `json:"evidence"`
}

// Summary is grading.json's summary.
type Summary struct {
	Passed   int     `json:"passed"`
	Failed   int     `json:"failed"`
	Total    int     `json:"total"`
	PassRate float64 `json:"pass_rate"`
}

// Grading is grading.json. The assertions are written under both names in use:
// "expectations" (skill-creator's schema, which its viewer reads) and "assertion_results"
// (the guide's example).
type Grading struct {
	Expectations     []Expectation `json:"expectations"`
	AssertionResults []Expectation `json:"assertion_results"`
	Summary          Summary       `json:"summary"`
	// Verdict and Reason are skillfleet's: the job's verdict (an errored or timed-out job has
	// no assertion results worth reading) and why.
	Verdict string `json:"verdict"`
	Reason  string `json:"reason,omitempty"`
	// OutputsOmitted says which of the agent's files are missing from outputs/ or cut short.
	OutputsOmitted []string `json:"outputs_omitted,omitempty"`
}

func gradingOf(r *pb.Result) Grading {
	g := Grading{Expectations: []Expectation{}, Verdict: strings.ToLower(strings.TrimPrefix(r.GetVerdict().String(), "VERDICT_")), Reason: r.GetReason()}
	for _, a := range r.GetAssertions() {
		e := Expectation{Text: textOf(a), Passed: a.GetPassed() && !a.GetErrored(), Evidence: evidenceOf(a)}
		g.Expectations = append(g.Expectations, e)
		if e.Passed {
			g.Summary.Passed++
		} else {
			g.Summary.Failed++
		}
	}
	g.Summary.Total = len(g.Expectations)
	if g.Summary.Total > 0 {
		g.Summary.PassRate = math.Round(float64(g.Summary.Passed)/float64(g.Summary.Total)*100) / 100
	}
	g.AssertionResults = g.Expectations
	g.OutputsOmitted = r.GetOutputsOmitted()
	for _, f := range r.GetOutputs() {
		if f.GetTruncated() {
			g.OutputsOmitted = append(g.OutputsOmitted, fmt.Sprintf("%s: only the first %d of %d bytes kept", f.GetPath(), len(f.GetContent()), f.GetSize()))
		}
	}
	return g
}

// textOf is the statement an assertion checks, as a person would write it.
func textOf(a *pb.AssertionResult) string {
	if a.GetExpected() != "" {
		return a.GetType() + ": " + a.GetExpected()
	}
	return a.GetType()
}

// evidenceOf is what was found: the message, the path of a JSON difference, and an excerpt.
func evidenceOf(a *pb.AssertionResult) string {
	parts := []string{a.GetMessage()}
	if a.GetPath() != "" {
		parts = append(parts, "at "+a.GetPath())
	}
	if a.GetActual() != "" {
		parts = append(parts, "actual: "+a.GetActual())
	}
	if a.GetErrored() {
		parts = append(parts, "(not decided)")
	}
	return strings.TrimSpace(strings.Join(parts, "; "))
}

func writeJSON(p string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	if err := os.WriteFile(p, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	return nil
}

// OutputPath maps a file the agent left at rel (relative to its work directory) to its place
// below outputs/, or "" when rel would leave it.
func OutputPath(outputs, rel string) string {
	c := path.Clean("/" + filepath.ToSlash(rel))
	if c == "/" {
		return ""
	}
	return filepath.Join(outputs, filepath.FromSlash(strings.TrimPrefix(c, "/")))
}
