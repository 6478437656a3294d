package report

import (
	"cmp"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"sync"

	skillfleetv1 "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/verdict"
)

// CaseKey names a case of a run: its skill, its name, the agent it ran against (empty for
// command cases) and its arm ("" for with_skill). A prompt case run against two agents, or in
// two arms, is two report rows.
type CaseKey struct{ Skill, Case, Agent, Arm string }

// ArmWithSkill is the arm of every case of a run without a baseline. Reports, keys and
// results name it "" so that such runs render as they always did.
const ArmWithSkill = "with_skill"

// armKey is the arm as reports and keys carry it: "" for with_skill.
func armKey(arm string) string {
	if arm == ArmWithSkill {
		return ""
	}
	return arm
}

// PlannedCase is a case as the plan has it: the Builder expects Epochs results for it.
type PlannedCase struct {
	Skill string
	Case  string
	// Agent is the agent the case runs against; empty for command cases.
	Agent string
	// Arm is the case's arm of a compared run: "" (or "with_skill"), "without_skill" or
	// "old_skill".
	Arm  string
	Kind skillfleetv1.CaseKind
	// Epochs is the case's `runs`; 0 means 1.
	Epochs int
	// Confidence is the fraction of epochs that must pass; 0 means 1.0.
	Confidence float64
	// Sequential, for a `runs: auto` case, is its rule: epochs in order until the sequential
	// test decides, Epochs (its MaxRuns) at most; nil for the fixed rule.
	Sequential *verdict.Sequential
	// File and Line are where the case was written.
	File string
	Line int
}

// Builder aggregates the results of one run into case verdicts. It keeps per case a few
// counters, one hash per epoch (to tell a redelivered duplicate from a new result) and at
// most three capped pieces of evidence, never every result. It is safe for concurrent use:
// the coordinator feeds it while its API reads Counts and Report.
type Builder struct {
	mu        sync.Mutex
	run       string
	seed      maphash.Seed
	byKey     map[CaseKey]*caseState
	cases     []*caseState // in skill, then case order
	jobsTotal int
	jobsDone  int
	// counts of cases by verdict, VERDICT_UNSPECIFIED being pending; kept up to date on every
	// change so Counts is cheap however often it is called.
	// Only with_skill cases are counted: a baseline arm failing is what a comparison expects.
	counts [7]int
	// counted is how many cases counts covers.
	counted int
	// open is how many cases of every arm have no settled verdict yet.
	open int
	// closed is set by Skip: the report is final and later results are ignored.
	closed      bool
	closeReason string
}

// maxAgentVersions bounds the CLI versions a case names: a fleet mid-upgrade runs two.
const maxAgentVersions = 4

// caseState is what a Builder keeps of one case.
type caseState struct {
	skill, name string
	agent       string
	arm         string // "" for with_skill
	usage       Usage
	kind        skillfleetv1.CaseKind
	file        string
	line        int
	epochs      int
	confidence  float64
	// seq is a `runs: auto` case's rule, outcomes its epochs' counted verdicts by epoch
	// (VERDICT_UNSPECIFIED: none yet), and atMax says it reached its MaxRuns without the
	// test deciding; nil, nil and false for the fixed rule.
	seq      *verdict.Sequential
	outcomes []skillfleetv1.Verdict
	atMax    bool
	// held says the case's verdict waits for all its epochs, or for Release: its epochs are
	// paired with another arm's, so none may be withdrawn early. stoppedAt, once Release
	// stopped its epochs there, is how many it runs; stopNote says why, for its reason.
	held      bool
	stoppedAt int
	stopNote  string

	// agentVersions are the CLI versions the epochs ran on, once each, at most
	// maxAgentVersions.
	agentVersions []string

	// jobs holds, per epoch, a hash of the job id whose result was counted (0: none yet).
	jobs     []uint64
	tally    Tally
	duration int64
	attempts int32
	// conflict, when set, makes the case errored: two different jobs reported one epoch.
	conflict string
	status   skillfleetv1.Verdict
	// cut says the run ended (Skip) while the case was still open: its epochs without a
	// result are skipped. A case settled before then did not need them.
	cut bool

	// Evidence from the lowest-numbered epoch of each kind; dropped once the verdict is
	// certain and the evidence cannot be the one shown.
	pass, fail, undecided *evidence
	// The lowest-numbered epoch that did not pass, kept for the reason of a passed case.
	firstBadEpoch   int32
	firstBadVerdict skillfleetv1.Verdict
	// The run the lowest reused epoch reuses.
	reusedFrom  string
	reusedEpoch int32

	// rendered is the case as Report last rendered it, and fresh says nothing changed since:
	// a report of a run of 100,000 cases renders only the cases that changed, not every one.
	rendered Case
	fresh    bool
}

// NewBuilder starts the aggregation of a run's results for the planned cases. A case listed
// twice (same skill and name) is taken once, from its first listing.
func NewBuilder(run string, cases []PlannedCase) *Builder {
	b := &Builder{run: run, seed: maphash.MakeSeed(), byKey: make(map[CaseKey]*caseState, len(cases))}
	for _, pc := range cases {
		k := CaseKey{pc.Skill, pc.Case, pc.Agent, armKey(pc.Arm)}
		if _, dup := b.byKey[k]; dup {
			continue
		}
		cs := &caseState{
			skill: pc.Skill, name: pc.Case, agent: pc.Agent, arm: k.Arm, kind: pc.Kind, file: pc.File, line: pc.Line,
			epochs:     NormalizeEpochs(pc.Epochs),
			confidence: NormalizeConfidence(pc.Confidence),
		}
		if pc.Sequential != nil {
			seq := *pc.Sequential
			seq.MaxRuns = cs.epochs
			cs.seq, cs.outcomes = &seq, make([]skillfleetv1.Verdict, cs.epochs)
		}
		b.byKey[k] = cs
		b.cases = append(b.cases, cs)
		b.jobsTotal += cs.epochs
	}
	slots := make([]uint64, b.jobsTotal) // one allocation for every case's epoch slots
	for _, cs := range b.cases {
		cs.jobs, slots = slots[:cs.epochs:cs.epochs], slots[cs.epochs:]
	}
	slices.SortFunc(b.cases, func(x, y *caseState) int {
		return cmp.Or(strings.Compare(x.skill, y.skill), strings.Compare(x.name, y.name), strings.Compare(x.agent, y.agent), strings.Compare(x.arm, y.arm))
	})
	for _, cs := range b.cases {
		if cs.arm == "" {
			b.counted++
		}
	}
	b.counts[skillfleetv1.Verdict_VERDICT_UNSPECIFIED] = b.counted
	b.open = len(b.cases)
	return b
}

// Add counts one result. Exactly one result per job counts: the first for a job id wins, and
// a redelivered duplicate returns false. A result that does not belong to this run's plan —
// another run id, an unknown case, an epoch outside 1..runs, no job id — is ignored and
// returns false; the caller logs it. So are results after Skip.
//
// A second, different job reporting an epoch that already has a result means the plan has
// more jobs per epoch than the Builder was told (e.g. agents missing from the planned cases).
// Which result is the real one cannot be known, so the result is not counted and the case is
// errored with a reason saying so, rather than a pass being computed from half the jobs.
func (b *Builder) Add(r *skillfleetv1.Result) (accepted bool) {
	if r == nil || r.GetJobId() == "" {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed || (r.GetRunId() != "" && r.GetRunId() != b.run) {
		return false
	}
	cs := b.byKey[CaseKey{r.GetSkill(), r.GetCaseName(), r.GetAgent(), armKey(r.GetArm())}]
	epoch := int(r.GetEpoch())
	if cs == nil || epoch < 1 || epoch > cs.epochs {
		return false
	}
	h := maphash.String(b.seed, r.GetJobId())
	if h == 0 {
		h = 1 // 0 marks an empty slot
	}
	switch slot := cs.jobs[epoch-1]; {
	case slot == h:
		return false
	case slot != 0:
		if cs.conflict == "" {
			cs.conflict = fmt.Sprintf("two different jobs reported epoch %d (the second was %s): "+
				"the plan has more jobs per epoch than the report was told, so no verdict can be trusted",
				epoch, clip(r.GetJobId()))
		}
		b.refresh(cs)
		return false
	}
	cs.jobs[epoch-1] = h
	b.jobsDone++
	cs.record(r)
	b.refresh(cs)
	return true
}

// record counts r and keeps its evidence if it may be the one shown.
func (cs *caseState) record(r *skillfleetv1.Result) {
	v, why := verdict.Counted(r)
	cs.duration += jobDurationMS(r.GetTimings())
	cs.usage.add(r.GetUsage())
	cs.attempts = max(cs.attempts, r.GetAttempt())
	if v := r.GetAgentVersion(); v != "" && len(cs.agentVersions) < maxAgentVersions && !slices.Contains(cs.agentVersions, v) {
		cs.agentVersions = append(cs.agentVersions, v)
	}
	if cs.kind == skillfleetv1.CaseKind_CASE_KIND_UNSPECIFIED {
		cs.kind = r.GetKind()
	}
	epoch := r.GetEpoch()
	if cs.outcomes != nil {
		cs.outcomes[epoch-1] = v
	}
	if v != skillfleetv1.Verdict_VERDICT_PASSED && (cs.firstBadEpoch == 0 || epoch < cs.firstBadEpoch) {
		cs.firstBadEpoch, cs.firstBadVerdict = epoch, v
	}
	// Once passed or failed is certain, only evidence of that kind can be shown; it is still
	// replaced by a lower epoch's, so what is shown does not depend on arrival order.
	passed := cs.status == skillfleetv1.Verdict_VERDICT_PASSED
	failed := cs.status == skillfleetv1.Verdict_VERDICT_FAILED
	switch v {
	case skillfleetv1.Verdict_VERDICT_PASSED:
		cs.tally.Passed++
		if !failed && (cs.pass == nil || epoch < cs.pass.epoch) {
			cs.pass = newEvidence(r, v, why)
		}
	case skillfleetv1.Verdict_VERDICT_FAILED:
		cs.tally.Failed++
		if !passed && (cs.fail == nil || epoch < cs.fail.epoch) {
			cs.fail = newEvidence(r, v, why)
		}
	default:
		switch v {
		case skillfleetv1.Verdict_VERDICT_ERRORED:
			cs.tally.Errored++
		case skillfleetv1.Verdict_VERDICT_TIMED_OUT:
			cs.tally.TimedOut++
		case skillfleetv1.Verdict_VERDICT_REUSED:
			cs.tally.Reused++
			if cs.reusedFrom == "" || epoch < cs.reusedEpoch {
				cs.reusedFrom, cs.reusedEpoch = r.GetReusedFrom(), epoch
			}
		default:
			cs.tally.Skipped++
		}
		// The evidence of an undecided case is of the kind its status will name (errored
		// before timed_out before skipped), then from the lowest epoch.
		if !passed && !failed && (cs.undecided == nil || undecidedRank(v) < undecidedRank(cs.undecided.verdict) ||
			(v == cs.undecided.verdict && epoch < cs.undecided.epoch)) {
			cs.undecided = newEvidence(r, v, why)
		}
	}
}

func undecidedRank(v skillfleetv1.Verdict) int {
	switch v {
	case skillfleetv1.Verdict_VERDICT_ERRORED:
		return 0
	case skillfleetv1.Verdict_VERDICT_TIMED_OUT:
		return 1
	default:
		return 2
	}
}

// refresh recomputes a case's verdict and keeps the live counts in step; the case is
// rendered again at the next Report. Every change of a case ends with it.
func (b *Builder) refresh(cs *caseState) {
	cs.fresh = false
	v := skillfleetv1.Verdict_VERDICT_ERRORED
	switch {
	case cs.conflict != "":
	case cs.seq != nil:
		v, cs.atMax, _ = cs.seq.Decide(cs.outcomes)
		if v == skillfleetv1.Verdict_VERDICT_UNSPECIFIED && cs.stoppedAt > 0 && cs.tally.Reported() >= cs.stoppedAt {
			// Its epochs stopped before the test decided: undecided, and never a pass or a
			// fail the epochs not run could have changed.
			v, cs.atMax = stoppedVerdict(cs.tally), true
		}
		if v == skillfleetv1.Verdict_VERDICT_UNSPECIFIED && b.closed {
			// Cut short by the run's end: the fixed rule over every epoch, the missing ones
			// skipped, as for any case.
			v = Decide(cs.epochs, cs.confidence, cs.tally, true)
		}
	default:
		v = Decide(cs.epochs, cs.confidence, cs.tally, b.closed)
	}
	if cs.held && cs.conflict == "" && !b.closed && cs.tally.Reported() < cs.epochs {
		v = skillfleetv1.Verdict_VERDICT_UNSPECIFIED
	}
	if v == cs.status {
		return
	}
	if cs.status == skillfleetv1.Verdict_VERDICT_UNSPECIFIED {
		b.open--
	} else if v == skillfleetv1.Verdict_VERDICT_UNSPECIFIED {
		b.open++
	}
	if cs.arm == "" {
		b.counts[cs.status]--
		b.counts[v]++
	}
	cs.status = v
	switch v {
	case skillfleetv1.Verdict_VERDICT_PASSED:
		cs.fail, cs.undecided = nil, nil
	case skillfleetv1.Verdict_VERDICT_FAILED:
		cs.pass, cs.undecided = nil, nil
	}
}

// stoppedVerdict is the verdict of a case whose epochs were stopped before its sequential
// test decided: errored if one of them errored, else timed_out if one timed out, else
// skipped; never passed or failed, which only the test (or every epoch) decides.
func stoppedVerdict(t Tally) skillfleetv1.Verdict {
	switch {
	case t.Errored > 0:
		return skillfleetv1.Verdict_VERDICT_ERRORED
	case t.TimedOut > 0:
		return skillfleetv1.Verdict_VERDICT_TIMED_OUT
	}
	return skillfleetv1.Verdict_VERDICT_SKIPPED
}

// Hold makes case k's verdict wait for all its epochs (or for Release), though fewer could
// settle it: a compared run pairs its epochs with another arm's, and a settled case's
// epochs would be withdrawn.
func (b *Builder) Hold(k CaseKey) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if cs := b.byKey[k]; cs != nil {
		cs.held = true
		b.refresh(cs)
	}
}

// Release ends Hold on case k. With stoppedAt > 0 its epochs stop there, for note (said in
// its reason): a `runs: auto` case whose sequential test decided within them keeps that
// verdict, exactly the one all its epochs would have given; one whose test had not is
// undecided, errored, timed_out or skipped (see stoppedVerdict), never passed or failed.
// With stoppedAt 0 it goes on under its own rule.
func (b *Builder) Release(k CaseKey, stoppedAt int, note string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	cs := b.byKey[k]
	if cs == nil {
		return
	}
	cs.held = false
	if cs.seq != nil && stoppedAt > 0 && stoppedAt < cs.epochs {
		cs.stoppedAt, cs.stopNote = stoppedAt, clip(note)
	}
	b.refresh(cs)
}

// Skip ends the run early (cancelled, or its deadline passed): every epoch without a result
// counts as skipped, every case gets its final verdict by Decide, and later results are
// ignored so the report no longer changes. A case that had not yet passed never passes now.
// Epochs that never ran are skipped, not timed_out, even at a deadline: timed_out means the
// case's own timeout killed its sandbox, and a run deadline says nothing about the case.
// The reason (e.g. "run cancelled by alice", "run deadline of 2h exceeded") goes into the
// reason of each case it affected. A second Skip does nothing.
func (b *Builder) Skip(reason string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.closed = true
	b.closeReason = clip(reason)
	for _, cs := range b.cases {
		cs.cut = cs.status == skillfleetv1.Verdict_VERDICT_UNSPECIFIED
		b.refresh(cs)
	}
}

// Done reports whether every planned job has a result.
func (b *Builder) Done() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.jobsDone == b.jobsTotal
}

// Settled reports whether every case, of every arm, has its verdict: the epochs without a
// result could not change any (see Decide). A run whose cases are settled needs no more of
// its jobs.
func (b *Builder) Settled() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.open == 0
}

// Open reports whether case k has no settled verdict yet (false for a case not in the plan).
func (b *Builder) Open(k CaseKey) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	cs := b.byKey[k]
	return cs != nil && cs.status == skillfleetv1.Verdict_VERDICT_UNSPECIFIED
}

// Tally is case k's epochs reported so far by verdict (as counted: see verdict.Counted).
func (b *Builder) Tally(k CaseKey) Tally {
	b.mu.Lock()
	defer b.mu.Unlock()
	if cs := b.byKey[k]; cs != nil {
		return cs.tally
	}
	return Tally{}
}

// Outcomes is a `runs: auto` case's counted verdicts by epoch (VERDICT_UNSPECIFIED: none
// yet), a copy; nil for a case of the fixed rule.
func (b *Builder) Outcomes(k CaseKey) []skillfleetv1.Verdict {
	b.mu.Lock()
	defer b.mu.Unlock()
	if cs := b.byKey[k]; cs != nil && cs.outcomes != nil {
		return slices.Clone(cs.outcomes)
	}
	return nil
}

// JobsDone is how many planned jobs have a result.
func (b *Builder) JobsDone() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.jobsDone
}

// JobsTotal is how many jobs the plan has: the sum of the cases' epochs.
func (b *Builder) JobsTotal() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.jobsTotal
}

// Counts tallies the with_skill cases by verdict as things stand (a baseline arm's cases are in
// the report, not in these counts); a case is counted under a verdict as soon as that verdict
// is certain, and total includes the cases still pending.
func (b *Builder) Counts() *skillfleetv1.Counts {
	b.mu.Lock()
	defer b.mu.Unlock()
	return &skillfleetv1.Counts{
		Total:    int32(b.counted),
		Passed:   int32(b.counts[skillfleetv1.Verdict_VERDICT_PASSED]),
		Failed:   int32(b.counts[skillfleetv1.Verdict_VERDICT_FAILED]),
		Errored:  int32(b.counts[skillfleetv1.Verdict_VERDICT_ERRORED]),
		TimedOut: int32(b.counts[skillfleetv1.Verdict_VERDICT_TIMED_OUT]),
		Skipped:  int32(b.counts[skillfleetv1.Verdict_VERDICT_SKIPPED]),
		Reused:   int32(b.counts[skillfleetv1.Verdict_VERDICT_REUSED]),
	}
}

// Report is the run's report as things stand, in skill, then case order. Taken before Done
// or Skip, cases without a final verdict are pending.
func (b *Builder) Report() Report {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := Report{Run: b.run, Cases: make([]Case, 0, len(b.cases))}
	for _, cs := range b.cases {
		if !cs.fresh {
			// Reports share what is rendered: a case's assertions, interval and usage are
			// never changed in place, only replaced by the next rendering.
			cs.rendered, cs.fresh = cs.report(b.closed, b.closeReason), true
		}
		r.Cases = append(r.Cases, cs.rendered)
	}
	r.Summary, r.Baseline = summarizeArms(r.Cases)
	if total := b.usageLocked(); !total.zero() {
		r.Usage = &total
	}
	return r
}

// Usage is what the results counted so far spent on models.
func (b *Builder) Usage() Usage {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.usageLocked()
}

func (b *Builder) usageLocked() Usage {
	var total Usage
	for _, cs := range b.cases {
		total.PromptTokens += cs.usage.PromptTokens
		total.CompletionTokens += cs.usage.CompletionTokens
		total.Cost += cs.usage.Cost
		total.CacheReadTokens += cs.usage.CacheReadTokens
		total.CacheWriteTokens += cs.usage.CacheWriteTokens
	}
	return total
}

// Case is the live state of one case.
func (b *Builder) Case(k CaseKey) (Case, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	cs := b.byKey[k]
	if cs == nil {
		return Case{}, false
	}
	return cs.report(b.closed, b.closeReason), true
}

// report renders a case with the evidence its status calls for.
func (cs *caseState) report(closed bool, closeReason string) Case {
	missing := cs.epochs - cs.tally.Reported()
	c := Case{
		Skill: cs.skill, Case: cs.name, Agent: cs.agent, Arm: cs.arm, Kind: KindName(cs.kind), Status: StatusOf(cs.status),
		Epochs: cs.epochs, PassedEpochs: cs.tally.Passed, FailedEpochs: cs.tally.Failed,
		ErroredEpochs: cs.tally.Errored, TimedOutEpochs: cs.tally.TimedOut, SkippedEpochs: cs.tally.Skipped,
		ReusedEpochs: cs.tally.Reused, ReusedFrom: cs.reusedFrom,
		EpochsRun: cs.tally.Reported() - cs.tally.Reused, EpochsPlanned: cs.epochs,
		Sequential: cs.seq != nil, Undecided: cs.atMax, StoppedAt: cs.stoppedAtIfUndecided(),
		RequiredPasses: RequiredPasses(cs.epochs, cs.confidence), Confidence: cs.confidence,
		Assertions: []Assertion{}, DurationMS: cs.duration, Attempts: int(cs.attempts),
		Usage: cs.usageOrNil(),
		File:  cs.file, Line: cs.line,
	}
	if len(cs.agentVersions) > 0 {
		c.AgentVersions = slices.Sorted(slices.Values(cs.agentVersions))
	}
	if closed && cs.cut {
		c.SkippedEpochs += missing
	}
	if decided := cs.tally.Passed + cs.tally.Failed; cs.epochs > 1 && decided > 0 {
		iv := Wilson(cs.tally.Passed, decided)
		c.Interval = &iv
	}
	var ev *evidence
	switch cs.status {
	case skillfleetv1.Verdict_VERDICT_PASSED:
		ev = cs.pass
	case skillfleetv1.Verdict_VERDICT_FAILED:
		ev = cs.fail
	default:
		ev = cmp.Or(cs.undecided, cs.fail, cs.pass)
	}
	if ev != nil {
		c.Assertions = slices.Clone(ev.assertions)
		c.Output, c.Stdout, c.Stderr, c.OutputTruncated = ev.output, ev.stdout, ev.stderr, ev.truncated
	}
	c.Reason = cs.reason(c, ev, closed && cs.cut && missing > 0, closeReason)
	return c
}

// reason says in words why a case has its status.
func (cs *caseState) reason(c Case, ev *evidence, cut bool, closeReason string) string {
	if cs.conflict != "" {
		return cs.conflict
	}
	tally := epochTally(c)
	switch cs.status {
	case skillfleetv1.Verdict_VERDICT_PASSED:
		if c.PassedEpochs == c.Epochs || cs.firstBadEpoch == 0 {
			return ""
		}
		return fmt.Sprintf("%s; first epoch not passing: %d (%s)", tally, cs.firstBadEpoch, StatusOf(cs.firstBadVerdict))
	case skillfleetv1.Verdict_VERDICT_FAILED:
		if cs.epochs > 1 {
			return tally
		}
		if ev != nil {
			return ev.reason
		}
		return ""
	case skillfleetv1.Verdict_VERDICT_REUSED:
		return "not run: reused from run " + cs.reusedFrom + ", which passed the same cell digest"
	case skillfleetv1.Verdict_VERDICT_UNSPECIFIED:
		return fmt.Sprintf("%d of %d epochs reported", c.Epochs-c.pendingEpochs(), c.Epochs)
	}
	// errored, timed_out, skipped: say what was uncertain and why.
	if c.StoppedAt > 0 {
		return fmt.Sprintf("%s; %s; %s", undecidedText(c), tally, cs.stopNote)
	}
	if cs.tally.Reported() == 0 { // only possible once the run ended early
		return "not run: " + cmp.Or(closeReason, "the run ended early")
	}
	why := ""
	if ev != nil {
		why = cmp.Or(ev.reason, "no reason given")
	}
	if cs.epochs == 1 {
		return why
	}
	parts := []string{tally + "; the epochs without a pass or fail could have made up the difference"}
	if cut {
		parts = append(parts, "epochs not run: "+cmp.Or(closeReason, "the run ended early"))
	}
	if ev != nil {
		parts = append(parts, fmt.Sprintf("epoch %d %s: %s", ev.epoch, StatusOf(ev.verdict), why))
	}
	return strings.Join(parts, "; ")
}

// stoppedAtIfUndecided is where the case's epochs were stopped, when that left it undecided.
func (cs *caseState) stoppedAtIfUndecided() int {
	if cs.atMax && cs.stoppedAt > 0 && cs.tally.Reported() < cs.epochs {
		return cs.stoppedAt
	}
	return 0
}

func (cs *caseState) usageOrNil() *Usage {
	if cs.usage.zero() {
		return nil
	}
	u := cs.usage
	return &u
}
