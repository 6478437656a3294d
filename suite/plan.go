package suite

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/skillfleet/skillfleet/bundle"
	"github.com/skillfleet/skillfleet/diag"
	"github.com/skillfleet/skillfleet/skill"
)

// Filter selects skills and cases by glob (path.Match syntax) and cases by kind; empty
// patterns match everything.
type Filter struct {
	Skills []string
	Cases  []string
	// Kinds keeps only cases of these kinds; empty keeps every kind.
	Kinds []Kind
}

// Validate reports a malformed pattern, a usage error rather than a finding.
func (f Filter) Validate() error {
	for _, p := range append(append([]string(nil), f.Skills...), f.Cases...) {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("bad pattern %q: %w", p, err)
		}
	}
	for _, k := range f.Kinds {
		if k != KindPrompt && k != KindCommand {
			return fmt.Errorf("unknown case kind %q (want %s or %s)", k, KindPrompt, KindCommand)
		}
	}
	return nil
}

// Kinds converts kind names (as a run spec or a flag carries them) to Kinds; Validate checks them.
func Kinds(names []string) []Kind {
	kinds := make([]Kind, len(names))
	for i, n := range names {
		kinds[i] = Kind(n)
	}
	return kinds
}

// keeps reports whether c passes the filter.
func (f Filter) keeps(c *Case) bool {
	return matchAny(f.Skills, c.Skill.Name) && matchAny(f.Cases, c.Name) && (len(f.Kinds) == 0 || slices.Contains(f.Kinds, c.Kind))
}

func matchAny(patterns []string, name string) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// Select returns the skills a filter's skill globs pick; a bundle of them also carries their
// dependency closure.
func (s *Suite) Select(f Filter) []*skill.Skill {
	var out []*skill.Skill
	for _, sk := range s.Catalog.Skills() {
		if matchAny(f.Skills, sk.Name) {
			out = append(out, sk)
		}
	}
	return out
}

// PlanOptions shape a plan.
type PlanOptions struct {
	Filter Filter
	// Agents to run prompt cases against. Empty plans each prompt case once with no agent; the
	// worker then reports it errored ("no agent configured") rather than guessing one.
	Agents []string
	// Baseline, when its Arm is set, plans a second arm of every prompt case, interleaved
	// with the with_skill jobs.
	Baseline Baseline
	// MaxJobs, when positive, refuses a plan of more jobs with a *TooManyJobsError before
	// any job is made: the count is cheap, the jobs of a hostile suite are not.
	MaxJobs int
}

// TooManyJobsError is a plan refused because it expands into more jobs than allowed. It names
// the case that crossed the limit, so the user sees where the expansion comes from.
type TooManyJobsError struct {
	// Max is the limit; Jobs how many the plan had reached when it stopped counting (more
	// than Max, not necessarily the total).
	Max, Jobs int
	// File and Line locate the case that crossed the limit.
	File string
	Line int
	Case string
}

func (e *TooManyJobsError) Error() string {
	return fmt.Sprintf("%s:%d: error plan.maxJobs: the suite expands into more than %d jobs (case %s crossed it at %d; cases × runs × agents)",
		e.File, e.Line, e.Max, e.Case, e.Jobs)
}

// Job is one execution of one case: case × epoch × agent × arm.
type Job struct {
	// ID is stable: the same suite planned twice gives the same ids, and a with_skill job has
	// the id it had before runs had arms.
	ID    string
	Case  *Case
	Epoch int
	Agent string
	// Arm is ArmWithSkill, or the run's baseline arm.
	Arm Arm
}

// Plan is the expansion of a suite into jobs, with content digests.
type Plan struct {
	// SuiteDigest is the sha256 of the suite bundle: the selected skills and their dependency
	// closure, written deterministically.
	SuiteDigest string
	Skills      []bundle.SkillDigest
	Cases       []*Case
	Jobs        []Job
	BundleBytes int64
	// Baseline is the run's second arm ("" for none).
	Baseline Arm
	// Old is the old versions the bundle holds under bundle.BaselineDir (old_skill), in
	// name order: the selected skills the old root has, and their closures there.
	Old []*skill.Skill
	// Diagnostics are the plan's warnings: a selected skill the old root lacks.
	Diagnostics diag.Diagnostics

	skillIndex map[string]int
	hasOld     map[string]bool
	// oldClosure is the closure digest of each old version the bundle holds, by skill name.
	oldClosure map[string]string
}

// Plan expands the selected cases into jobs and computes the digests. It reads every file of
// the selected skills once, to hash them the same way the bundle does.
func (s *Suite) Plan(opts PlanOptions) (*Plan, error) {
	if err := opts.Filter.Validate(); err != nil {
		return nil, err
	}
	base := opts.Baseline
	if _, err := ParseArm(string(base.Arm)); err != nil {
		return nil, err
	}
	if base.Arm != ArmOldSkill {
		base.Old = nil
	} else if base.Old == nil {
		return nil, fmt.Errorf("an %s baseline needs the old skills", ArmOldSkill)
	}
	selected := s.Select(opts.Filter)
	// The jobs do not depend on the digests: they are made while the bundle is hashed, which
	// reads every file of the selection. Both only read the suite.
	type written struct {
		b   *bundle.Bundle
		err error
	}
	bundled := make(chan written, 1)
	go func() {
		b, err := WriteBundleWith(io.Discard, s.Graph, selected, base.Old)
		bundled <- written{b, err}
	}()
	p := &Plan{Baseline: base.Arm}
	_, p.Old = oldDirs(base.Old, selected)
	p.hasOld = make(map[string]bool, len(p.Old))
	for _, o := range p.Old {
		p.hasOld[o.Name] = true
	}
	for _, c := range s.Cases {
		if opts.Filter.keeps(c) {
			p.Cases = append(p.Cases, c)
		}
	}
	if base.Arm == ArmOldSkill {
		p.Diagnostics = missingOld(p.Cases, p.hasOld)
	}
	p.Diagnostics = append(p.Diagnostics, missingDefaultBaseline(p.Cases, base.Arm)...)
	expandErr := p.expand(opts.Agents, opts.MaxJobs)
	w := <-bundled
	if w.err != nil {
		return nil, w.err // the bundle's error first, as when it was written before the jobs
	}
	if expandErr != nil {
		return nil, expandErr
	}
	b := w.b
	for _, sf := range b.Skipped {
		// Never opened, never shipped, and said so: the skill the agent gets lacks the file.
		p.Diagnostics = append(p.Diagnostics, diag.Warning("bundle.specialFile", sf.Path, 0, fmt.Sprintf(
			"this is %s, not a regular file: left out of the bundle, so the agent's copy of skill %s has no such file", describeType(sf.Mode), sf.Skill)))
	}
	p.SuiteDigest, p.BundleBytes, p.skillIndex = b.Digest, b.Bytes, make(map[string]int, len(b.Skills))
	for _, sd := range b.Skills {
		// The old versions are files of the bundle, not skills of the plan.
		if name, ok := strings.CutPrefix(sd.Name, bundle.BaselineDir+"/"); ok {
			if p.oldClosure == nil {
				p.oldClosure = make(map[string]string)
			}
			p.oldClosure[name] = sd.ClosureDigest
			continue
		}
		p.skillIndex[sd.Name] = len(p.Skills)
		p.Skills = append(p.Skills, sd)
	}
	return p, nil
}

// Expand returns a copy of the plan with its cases expanded into jobs again, for agents and
// refusing more than maxJobs jobs when maxJobs is positive. It reads no file: a plan made
// before the agents were known (skillfleet test plans before it builds its agents) is
// completed by whoever knows them, without planning the suite again. Cases and skills are
// shared with p.
func (p *Plan) Expand(agents []string, maxJobs int) (*Plan, error) {
	out := &Plan{SuiteDigest: p.SuiteDigest, Skills: p.Skills, Cases: p.Cases, BundleBytes: p.BundleBytes,
		Baseline: p.Baseline, Old: p.Old, Diagnostics: p.Diagnostics, skillIndex: p.skillIndex, hasOld: p.hasOld, oldClosure: p.oldClosure}
	if err := out.expand(agents, maxJobs); err != nil {
		return nil, err
	}
	return out, nil
}

// expand sets p.Jobs from p.Cases: every epoch of every case, against every agent for a prompt
// case, in every arm of the case. The arms of one (case, agent, epoch) are adjacent, so both
// meet the same time of day and the same rate limits, however far a run gets.
func (p *Plan) expand(agents []string, maxJobs int) error {
	if len(agents) == 0 {
		agents = []string{""}
	}
	// Counted first, so the job list is allocated once: a plan can hold 100,000s of jobs.
	jobs := 0
	for _, c := range p.Cases {
		jobs += c.Runs * len(caseAgents(c, agents)) * len(p.baselineArms(c))
		if maxJobs > 0 && jobs > maxJobs {
			return &TooManyJobsError{Max: maxJobs, Jobs: jobs, File: c.File, Line: c.Line, Case: c.Skill.Name + "/" + c.Name}
		}
	}
	p.Jobs = make([]Job, 0, jobs)
	for _, c := range p.Cases {
		arms := p.baselineArms(c)
		for _, agent := range caseAgents(c, agents) {
			for epoch := 1; epoch <= c.Runs; epoch++ {
				for _, arm := range arms {
					p.Jobs = append(p.Jobs, Job{ID: ArmJobID(c.Skill.Name, c.Name, c.Kind, epoch, agent, arm), Case: c, Epoch: epoch, Agent: agent, Arm: arm})
				}
			}
		}
	}
	return nil
}

// caseAgents is who a case runs against: every agent for a prompt case, none for a command.
func caseAgents(c *Case, agents []string) []string {
	if c.Kind == KindCommand {
		return []string{""}
	}
	return agents
}

// JobID derives a job's stable id from what identifies it. Content is deliberately left out:
// the id names the same test across edits, so history and dashboards can follow it.
func JobID(skillName, caseName string, kind Kind, epoch int, agent string) string {
	return ArmJobID(skillName, caseName, kind, epoch, agent, ArmWithSkill)
}

// ArmJobID is JobID for a job of an arm. The arm enters the hash only when it is not
// with_skill, so the jobs of a run without a baseline keep the ids they always had.
func ArmJobID(skillName, caseName string, kind Kind, epoch int, agent string, arm Arm) string {
	// The hash input is the parts, each ended by a NUL byte, built on the stack: a plan derives
	// an id per job, 100,000s of them.
	var scratch [128]byte
	b := append(scratch[:0], skillName...)
	b = append(b, 0)
	b = append(b, caseName...)
	b = append(b, 0)
	b = append(b, kind...)
	b = append(b, 0)
	b = strconv.AppendInt(b, int64(epoch), 10)
	b = append(b, 0)
	b = append(b, agent...)
	b = append(b, 0)
	if arm != ArmWithSkill && arm != "" {
		b = append(b, arm...)
		b = append(b, 0)
	}
	sum := sha256.Sum256(b)
	var id [1 + jobIDHexDigits]byte
	id[0] = 'j'
	hex.Encode(id[1:], sum[:jobIDHexDigits/2])
	return string(id[:])
}

// jobIDHexDigits is how much of the hash a job id keeps, in hexadecimal digits.
const jobIDHexDigits = 20

// OldClosureDigest is the closure digest of the old version of a skill the bundle holds for
// the old_skill arm, or "" when it holds none.
func (p *Plan) OldClosureDigest(name string) string { return p.oldClosure[name] }

// Skill returns the digest entry of a skill in the plan, or nil.
func (p *Plan) Skill(name string) *bundle.SkillDigest {
	if i, ok := p.skillIndex[name]; ok {
		return &p.Skills[i]
	}
	return nil
}
