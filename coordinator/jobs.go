package coordinator

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"google.golang.org/protobuf/proto"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/skillfleet/skillfleet/assert/assertpb"
	"github.com/skillfleet/skillfleet/bundle"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/report"
	"github.com/skillfleet/skillfleet/suite"
)

// jobMessage turns a planned job into what travels to a worker: everything the worker needs
// to run and judge the case (the compiled assertions, the catalog its agent is shown, the
// limits), so a worker never reads a case file or a SKILL.md.
func jobMessage(spec *pb.RunSpec, p *suite.Plan, cat *jobCatalog, j suite.Job, maxAttempts int, now *timestamppb.Timestamp) (*pb.Job, error) {
	c := j.Case
	sd := p.Skill(c.Skill.Name)
	if sd == nil {
		return nil, fmt.Errorf("skill %s is not in the bundle", c.Skill.Name)
	}
	m := &pb.Job{
		Id: j.ID, RunId: spec.GetId(), Skill: c.Skill.Name, CaseName: c.Name, Epoch: int32(j.Epoch),
		TimeoutMs: c.Timeout.Milliseconds(), Parallel: c.Parallel,
		// The uploaded bundle, which may hold more than the plan selected: it is what workers fetch.
		BundleDigest: spec.GetBundleDigest(),
		SkillPath:    sd.Path, Closure: sd.Closure, Agent: j.Agent, MaxAttempts: int32(maxAttempts),
		Priority: spec.GetPriority(), File: c.File, Line: int32(c.Line), QueuedAt: now,
		Limits: spec.GetLimits(),
	}
	switch c.Kind {
	case suite.KindPrompt:
		m.Kind = pb.CaseKind_CASE_KIND_PROMPT
		m.Input = c.Input
		m.AllowedTools = cat.allowed[c.Skill.Name]
		if j.Arm != suite.ArmWithSkill && j.Arm != "" {
			// Set only on baseline jobs, so a run without one sends the messages it always did.
			m.Arm = string(j.Arm)
		}
		if j.Arm == suite.ArmOldSkill {
			m.AllowedTools = cat.allowedOld[c.Skill.Name]
		}
		// By reference: the catalog is the same for every prompt job of the run.
		m.CatalogDigest = cat.digest
		m.Files = c.Files
		m.Reference = c.Reference
	case suite.KindCommand:
		m.Kind = pb.CaseKind_CASE_KIND_COMMAND
		m.Command = c.Command
		if c.Stdin != nil {
			m.Stdin, m.HasStdin = []byte(*c.Stdin), true
		}
		m.Env = c.Env
		// The fixtures it declares: its sandbox shows them even under tests/, which it hides.
		m.Files = c.Files
	}
	m.Hidden = hiddenPaths(cat, sd.Closure, j.Arm)
	for _, a := range c.Assertions {
		pa, err := assertpb.Encode(a.Assertion, c.File, a.Line, a.Votes)
		if err != nil {
			return nil, fmt.Errorf("case %s/%s: %w", c.Skill.Name, c.Name, err)
		}
		m.Assertions = append(m.Assertions, pa)
	}
	if d, ok := cat.cases.Load(c); ok {
		m.CaseDigest = d.(string)
	} else {
		m.CaseDigest = caseDigest(c, m)
		cat.cases.Store(c, m.CaseDigest)
	}
	m.CellKey = cellKey(m, sd.ClosureDigest, p.OldClosureDigest(c.Skill.Name), cat.files)
	m.ResultKey = resultKey(c.Skill.Name, c.Name)
	return m, nil
}

// hiddenPaths are the bundle paths of the test definitions of the skills a job's sandbox may
// show (pb.Job.hidden): its closure's, and for an old_skill job also the old versions',
// which it is shown in their place.
func hiddenPaths(cat *jobCatalog, closure []string, arm suite.Arm) []string {
	var out []string
	for _, name := range closure {
		out = append(out, cat.tests[name]...)
		if arm == suite.ArmOldSkill {
			out = append(out, cat.testsOld[name]...)
		}
	}
	return out
}

// cellKey digests what the coordinator knows defines a cell (a case × agent × arm): the
// skill and case names, the case digest, the closure digest of the skill (its files and those
// of its requires closure), the old version's for the old_skill arm, the agent's name and the
// limits. It leaves out what only a worker knows, its agent's configuration: the worker adds
// that to make the cell digest (see worker.CellDigest). It leaves out the epoch, so every
// epoch of a cell has its key.
//
// The key covers every file the job's sandbox holds, so that a changed file a case can reach
// always re-runs it (issue 25): the sandbox holds the closure's directories, and a prompt
// job's also every SKILL.md of its catalog (catalogFiles), which its agent may read to
// activate that skill, but not the other skills' scripts or references (worker
// skillMounts). A changed SKILL.md anywhere in the suite therefore re-runs every prompt cell;
// a changed script, reference or asset re-runs only the cells whose closure holds it.
//
// What is hashed is written as fmt's "cell/2\x00%q\x00%q\x00%q\x00%q\x00%s\x00%s\x00" wrote
// it (strconv's quoting is %q's), into one buffer: keys stored in the history must not change,
// and the coordinator makes one for every job it publishes.
func cellKey(m *pb.Job, closure, oldClosure, catalogFiles string) string {
	arm := m.GetArm()
	var stack [512]byte
	b := append(stack[:0], "cell/2\x00"...)
	for _, s := range [...]string{m.GetSkill(), m.GetCaseName(), m.GetAgent(), arm} {
		b = append(strconv.AppendQuote(b, s), 0)
	}
	b = append(append(b, m.GetCaseDigest()...), 0)
	b = append(append(b, closure...), 0)
	if arm == string(suite.ArmOldSkill) {
		b = append(append(append(b, "old "...), oldClosure...), 0)
	}
	if m.GetKind() == pb.CaseKind_CASE_KIND_PROMPT {
		b = append(append(append(b, "catalog "...), catalogFiles...), 0)
	}
	if l := m.GetLimits(); l != nil {
		b, _ = proto.MarshalOptions{Deterministic: true}.MarshalAppend(b, l)
	}
	sum := sha256.Sum256(b)
	return digestString(sum[:])
}

// digestString is bundle.DigestPrefix and sum in hex, made in one allocation.
func digestString(sum []byte) string {
	var stack [len(bundle.DigestPrefix) + 2*sha256.Size]byte
	b := append(stack[:0], bundle.DigestPrefix...)
	b = hex.AppendEncode(b, sum)
	return string(b)
}

// maxFixtureDigestBytes bounds what caseDigest reads of one fixture; a larger file is digested
// by its first bytes and its size.
const maxFixtureDigestBytes = 64 << 20

// caseDigest digests what defines a case, so that a comparison can tell the same case from
// an edited one: its kind, input, command, stdin, env, reference, timeout, epochs, confidence,
// the assertions (without the file and line they were written at: moving a case is not
// changing it) and its fixture files by path and content. m is the job built from c.
func caseDigest(c *suite.Case, m *pb.Job) string {
	def := &pb.Job{
		Kind: m.GetKind(), Input: m.GetInput(), Command: m.GetCommand(), Stdin: m.GetStdin(), HasStdin: m.GetHasStdin(),
		Env: m.GetEnv(), Reference: m.GetReference(), TimeoutMs: m.GetTimeoutMs(),
	}
	if m.GetKind() == pb.CaseKind_CASE_KIND_PROMPT {
		// A command job carries its fixtures too, since they are hidden otherwise; they are
		// digested below, by path and content, as they always were, so its digest is the
		// one earlier runs recorded.
		def.Files = m.GetFiles()
	}
	for _, a := range m.GetAssertions() {
		a := proto.CloneOf(a)
		a.File, a.Line = "", 0
		def.Assertions = append(def.Assertions, a)
	}
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(def)
	if err != nil {
		// Only an invalid UTF-8 string fails to marshal; the suite refuses those when it is read.
		data = fmt.Appendf(nil, "%v", def)
	}
	h := sha256.New()
	h.Write(data)
	// Epochs and confidence decide the case's verdict, so they are part of what it is.
	fmt.Fprintf(h, "\x00runs %d confidence %s", c.Runs, strconv.FormatFloat(c.Confidence, 'g', -1, 64))
	files := slices.Clone(c.Files)
	slices.Sort(files)
	for _, f := range files {
		fmt.Fprintf(h, "\x00file %q\x00", f)
		fh, err := os.Open(filepath.Join(c.Skill.Dir, filepath.FromSlash(f)))
		if err != nil {
			// The suite checked the file when it was planned; one that cannot be read now is
			// said so in the digest rather than ignored.
			fmt.Fprintf(h, "unreadable")
			continue
		}
		n, _ := io.Copy(h, io.LimitReader(fh, maxFixtureDigestBytes))
		fh.Close()
		fmt.Fprintf(h, "\x00%d", n)
	}
	return bundle.DigestPrefix + hex.EncodeToString(h.Sum(nil))
}

// plannedCases lists the cases of a plan for the report builder: one per case and agent, in
// plan order.
func plannedCases(p *suite.Plan) []report.PlannedCase {
	type key struct {
		c     *suite.Case
		agent string
		arm   suite.Arm
	}
	seen := make(map[key]bool, len(p.Cases))
	out := make([]report.PlannedCase, 0, len(p.Cases))
	for _, j := range p.Jobs {
		k := key{j.Case, j.Agent, j.Arm}
		if seen[k] {
			continue
		}
		seen[k] = true
		c := j.Case
		kind := pb.CaseKind_CASE_KIND_PROMPT
		if c.Kind == suite.KindCommand {
			kind = pb.CaseKind_CASE_KIND_COMMAND
		}
		out = append(out, report.PlannedCase{
			Skill: c.Skill.Name, Case: c.Name, Agent: j.Agent, Arm: string(j.Arm), Kind: kind, Epochs: c.Runs,
			Confidence: c.Confidence, Sequential: sequentialRule(c), File: c.File, Line: c.Line,
		})
	}
	return out
}

// resultKey is the result key of a case (pb.Job.result_key): 64 bits of the hash of its
// skill's and its own name, so that any reader who knows the names finds the case's results
// without the plan. Two cases of a run sharing one is harmless: a case read files each
// result by its job.
func resultKey(skillName, caseName string) string {
	var stack [256]byte
	sum := sha256.Sum256(append(append(append(stack[:0], skillName...), 0), caseName...))
	var out [17]byte
	out[0] = 'c'
	hex.Encode(out[1:], sum[:8])
	return string(out[:])
}
