package main

import (
	"container/heap"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/spf13/cobra"

	"github.com/skillfleet/skillfleet/internal/cmdutil"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/stats"
	verdictpkg "github.com/skillfleet/skillfleet/verdict"
)

// savingsOptions are the flags of skillfleet-bench savings.
type savingsOptions struct {
	cases      int
	seed       uint64
	failTokens float64
	errRate    float64
	slots      int
	serial     bool
}

func newSavingsCommand() *cobra.Command {
	o := savingsOptions{cases: 10000, seed: 1, failTokens: 1.5, errRate: 0.02, slots: 100}
	cmd := &cobra.Command{
		Use:   "savings [--cases N] [--seed S] [--fail-tokens F] [--errored R] [--slots N] [--serial]",
		Short: "Simulate what curtailment and runs: auto save of a suite's epochs and tokens",
		Long: `savings draws a suite of --cases cases as the savingsMix says (each case's pass probability
from a mix of stable, flaky, failing and broken cases; its runs and confidence from what suites
write; its tokens per epoch from a log-normal spread, a failing epoch costing --fail-tokens
times a passing one, --errored of the epochs erroring) and plays every case twice through the
coordinator's own rules (package verdict): once running every planned epoch, once curtailed on
a fleet of --slots slots: its epochs released as verdict.Fixed.Dispatch (Sequential.Dispatch
for runs: auto) allows onto one queue, plan order first, later releases at its end; results
arriving as the epochs' simulated durations end; once a case is settled its queued epochs
withdrawn (never started) and its running ones cancelled, charged for the part they ran.
--slots 0 starts every released epoch at once, the most curtailment can waste; --serial
releases one epoch of a case at a time (no waste; the model of testdata/savings.py's exact
figures). Every case must get the same verdict both ways.

It prints, as Markdown, the mix and what each design costs: epochs started, completed and
tokens, against running every epoch; and for runs: auto, its error rates at the edges of the
zone beside the fixed designs'.`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.cases < 1 || o.failTokens <= 0 || o.errRate < 0 || o.errRate >= 1 || o.slots < 0 {
				return cmdutil.Usage(fmt.Errorf("--cases must be positive, --fail-tokens positive, --errored in [0, 1) and --slots at least 0"))
			}
			return runSavings(cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.cases, "cases", o.cases, "cases in the simulated suite")
	f.Uint64Var(&o.seed, "seed", o.seed, "the seed of the suite and of its epochs")
	f.Float64Var(&o.failTokens, "fail-tokens", o.failTokens, "a failing epoch's tokens as a multiple of a passing one's")
	f.Float64Var(&o.errRate, "errored", o.errRate, "the chance of an epoch erroring (infrastructure), whatever the case")
	f.IntVar(&o.slots, "slots", o.slots, "worker slots (0: every released epoch starts at once)")
	f.BoolVar(&o.serial, "serial", o.serial, "release one epoch at a time (no epoch in flight when a case settles)")
	return cmd
}

// rule is how a case decides its verdict over its epochs: a fixed number with a threshold, or
// the sequential test of runs: auto.
type rule struct {
	fixed *verdictpkg.Fixed
	seq   *verdictpkg.Sequential
}

// epochs is how many epochs the rule plans.
func (r rule) epochs() int {
	if r.seq != nil {
		return r.seq.MaxRuns
	}
	return r.fixed.Epochs
}

// fixedRule is runs epochs of which ceil(confidence × runs) must pass.
func fixedRule(runs int, confidence float64) rule {
	return rule{fixed: &verdictpkg.Fixed{Epochs: runs, Need: max(1, int(math.Ceil(confidence*float64(runs)-1e-9)))}}
}

// autoRule is runs: auto at confidence ± delta with error rates alpha and beta, at most
// maxRuns epochs.
func autoRule(confidence, delta, alpha, beta float64, maxRuns int) (rule, error) {
	t, err := stats.NewSPRT(confidence, delta, alpha, beta)
	if err != nil {
		return rule{}, err
	}
	return rule{seq: &verdictpkg.Sequential{Test: t, MaxRuns: maxRuns, Confidence: confidence}}, nil
}

// epoch is one planned epoch of a case, drawn before it runs: its verdict, tokens and how
// long it takes.
type epoch struct {
	v        pb.Verdict
	tokens   float64
	duration float64
}

// played is what a case cost played one way, and the verdict it got.
type played struct {
	// started counts the epochs released (cancelled ones too), completed those that
	// reported; tokens is what they spent, a cancelled epoch's in proportion to the time it
	// ran.
	started, completed int
	tokens             float64
	v                  pb.Verdict
	undecided          bool
}

// tallyOf counts epochs' verdicts, and those without one (in flight when they are the
// released ones).
func tallyOf(epochs []pb.Verdict) (t verdictpkg.Tally, none int) {
	for _, v := range epochs {
		if v == pb.Verdict_VERDICT_UNSPECIFIED {
			none++
		}
		t = t.Add(v)
	}
	return t, none
}

// decide is the rule's verdict over epochs (VERDICT_UNSPECIFIED for an epoch without a
// result), unspecified while it is not settled.
func (r rule) decide(epochs []pb.Verdict) (pb.Verdict, bool) {
	if r.seq != nil {
		v, undecided, _ := r.seq.Decide(epochs)
		return v, undecided
	}
	t, _ := tallyOf(epochs)
	return r.fixed.Settled(t), false
}

// dispatch is how many more epochs the rule releases, with started released so far.
func (r rule) dispatch(epochs []pb.Verdict, started int) int {
	if r.seq != nil {
		return r.seq.Dispatch(epochs, started)
	}
	t, inFlight := tallyOf(epochs[:started])
	return r.fixed.Dispatch(t, inFlight)
}

// playAll runs every planned epoch.
func playAll(r rule, planned []epoch) played {
	p := played{started: len(planned), completed: len(planned)}
	vs := make([]pb.Verdict, len(planned))
	for i, e := range planned {
		vs[i] = e.v
		p.tokens += e.tokens
	}
	p.v, p.undecided = r.decide(vs)
	return p
}

// running is an epoch a slot runs: its case, when it started and ends, and whether it was
// cancelled (its slot given back then; the heap drops it when it comes up).
type running struct {
	c, i       int
	start, end float64
	cancelled  *bool
}

// runningHeap orders running epochs by their end.
type runningHeap []running

func (h runningHeap) Len() int           { return len(h) }
func (h runningHeap) Less(i, j int) bool { return h[i].end < h[j].end }
func (h runningHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *runningHeap) Push(x any)        { *h = append(*h, x.(running)) }
func (h *runningHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// caseRun is a case's state while the fleet plays it.
type caseRun struct {
	rule     rule
	planned  []epoch
	vs       []pb.Verdict
	released int
	// inFlight counts the case's epochs released and not yet reported (queued or running);
	// running are those a slot runs.
	inFlight int
	running  []running
	settled  bool
	p        played
}

// playFleet plays cases as the coordinator runs them with curtailment, on slots worker slots
// (0: as many as there are epochs, every released one starting at once): each case's epochs
// are released as its rule's Dispatch allows (at most one in flight when serial) onto one
// queue, in plan order, later releases at its end; a free slot takes the next; results come
// back as the epochs end. Once a case is settled its queued epochs are withdrawn (never
// started, never charged) and its running ones cancelled, charged for the part they ran.
func playFleet(rules []rule, planned [][]epoch, slots int, serial bool) []played {
	cs := make([]*caseRun, len(rules))
	var queue [][2]int // case, epoch
	release := func(c int) {
		cr := cs[c]
		var n int
		switch {
		case !serial:
			n = cr.rule.dispatch(cr.vs, cr.released)
		case cr.inFlight == 0 && cr.released < len(cr.planned):
			// Dispatch releases at least one epoch of an unsettled case with none in flight
			// (release is only called on those), and serial takes one: asking it, at a cost
			// quadratic in max_runs, would change nothing.
			n = 1
		}
		for range n {
			queue = append(queue, [2]int{c, cr.released})
			cr.released++
			cr.inFlight++
		}
	}
	for c := range rules {
		cs[c] = &caseRun{rule: rules[c], planned: planned[c], vs: make([]pb.Verdict, len(planned[c]))}
		release(c)
	}
	var h runningHeap
	busy, now := 0, 0.0
	for {
		for (slots == 0 || busy < slots) && len(queue) > 0 {
			q := queue[0]
			queue = queue[1:]
			cr := cs[q[0]]
			if cr.settled {
				continue // withdrawn
			}
			r := running{c: q[0], i: q[1], start: now, end: now + cr.planned[q[1]].duration, cancelled: new(bool)}
			heap.Push(&h, r)
			cr.running = append(cr.running, r)
			cr.p.started++
			busy++
		}
		if h.Len() == 0 {
			break
		}
		done := heap.Pop(&h).(running)
		if *done.cancelled {
			continue
		}
		busy--
		now = done.end
		cr := cs[done.c]
		cr.vs[done.i] = cr.planned[done.i].v
		cr.inFlight--
		cr.p.completed++
		cr.p.tokens += cr.planned[done.i].tokens
		for k, r := range cr.running {
			if r.i == done.i {
				cr.running = append(cr.running[:k], cr.running[k+1:]...)
				break
			}
		}
		v, undecided := cr.rule.decide(cr.vs)
		if v == pb.Verdict_VERDICT_UNSPECIFIED {
			release(done.c)
			continue
		}
		cr.settled, cr.p.v, cr.p.undecided = true, v, undecided
		for _, r := range cr.running {
			*r.cancelled = true
			busy--
			cr.p.tokens += cr.planned[r.i].tokens * (now - r.start) / (r.end - r.start)
		}
		cr.running = nil
	}
	out := make([]played, len(cs))
	for c, cr := range cs {
		out[c] = cr.p
	}
	return out
}

// mixClass is one kind of case of the simulated suite: its share, how its pass probability is
// drawn, and a word for the table.
type mixClass struct {
	name  string
	share float64
	draw  func(*rand.Rand) float64
	about string
}

// savingsMix is the suite's pass probabilities: mostly stable cases, some flaky, some failing
// and some broken. A Beta(49, 1) draw is U^(1/49) (its distribution function is x^49).
var savingsMix = []mixClass{
	{"stable", 0.60, func(r *rand.Rand) float64 { return math.Pow(r.Float64(), 1.0/49) }, "Beta(49, 1): mean 0.98"},
	{"flaky", 0.20, func(r *rand.Rand) float64 { return 0.5 + 0.45*r.Float64() }, "uniform on 0.5–0.95"},
	{"failing", 0.10, func(r *rand.Rand) float64 { return 0.05 + 0.45*r.Float64() }, "uniform on 0.05–0.5"},
	{"broken", 0.10, func(r *rand.Rand) float64 { return 1 - math.Pow(r.Float64(), 1.0/49) }, "Beta(1, 49): mean 0.02"},
}

// runsMix is the runs and confidence suites write, and their shares.
var runsMix = []struct {
	runs       int
	confidence float64
	share      float64
}{
	{3, 1, 0.30},    // a few epochs, every one must pass (Claude Code's plugin evals)
	{5, 0.8, 0.40},  // the README's example
	{10, 0.9, 0.15}, // stricter
	{10, 0.7, 0.15}, // a known-flaky area
}

// Tokens per epoch (agent and judge): a case's median is drawn log-normally around
// tokenMedian (σ tokenCaseSigma: tasks differ tenfold), each epoch varies around it (σ
// tokenEpochSigma), and a failing epoch costs --fail-tokens times a passing one (an agent that
// does not find the answer keeps going to its turn limit). An epoch's duration is proportional
// to its tokens, with its own spread (σ durationSigma): queueing and sandbox start.
const (
	tokenMedian     = 25000
	tokenCaseSigma  = 0.8
	tokenEpochSigma = 0.3
	durationSigma   = 0.3
)

// simCase is one drawn case: its pass probability and token scale.
type simCase struct {
	class  int
	p      float64
	tokens float64
	runs   int
	conf   float64
}

// pick returns the index of the share u falls in.
func pick(u float64, shares []float64) int {
	for i, s := range shares {
		if u < s {
			return i
		}
		u -= s
	}
	return len(shares) - 1
}

// drawSuite draws n cases.
func drawSuite(r *rand.Rand, n int) []simCase {
	classShares := make([]float64, len(savingsMix))
	for i, c := range savingsMix {
		classShares[i] = c.share
	}
	runShares := make([]float64, len(runsMix))
	for i, c := range runsMix {
		runShares[i] = c.share
	}
	out := make([]simCase, n)
	for i := range out {
		k := pick(r.Float64(), classShares)
		rm := runsMix[pick(r.Float64(), runShares)]
		out[i] = simCase{class: k, p: savingsMix[k].draw(r), tokens: tokenMedian * math.Exp(tokenCaseSigma*r.NormFloat64()), runs: rm.runs, conf: rm.confidence}
	}
	return out
}

// drawEpochs draws n epochs of case c: erroring with errRate, else passing with c.p.
func drawEpochs(r *rand.Rand, c simCase, n int, errRate, failTokens float64) []epoch {
	out := make([]epoch, n)
	for i := range out {
		e := epoch{v: pb.Verdict_VERDICT_FAILED, tokens: c.tokens * math.Exp(tokenEpochSigma*r.NormFloat64())}
		switch u := r.Float64(); {
		case u < errRate:
			// An infrastructure error ends an epoch early: half its tokens.
			e.v, e.tokens = pb.Verdict_VERDICT_ERRORED, e.tokens/2
		case u < errRate+(1-errRate)*c.p:
			e.v = pb.Verdict_VERDICT_PASSED
		default:
			e.tokens *= failTokens
		}
		e.duration = e.tokens * math.Exp(durationSigma*r.NormFloat64())
		out[i] = e
	}
	return out
}

// tally sums what a design cost over a suite, and how its verdicts fared.
type tally struct {
	cases                      int
	allEpochs, allTokens       float64
	started, completed, tokens float64
	undecided                  int
	// passedLow counts the passes of cases whose pass probability is at most lowP, of
	// low of them; failedHigh the fails of cases at least highP, of high.
	passedLow, low, failedHigh, high int
}

func (t *tally) add(c simCase, all, cut played, lowP, highP float64) {
	t.cases++
	t.allEpochs += float64(all.started)
	t.allTokens += all.tokens
	t.started += float64(cut.started)
	t.completed += float64(cut.completed)
	t.tokens += cut.tokens
	if cut.undecided {
		t.undecided++
	}
	switch {
	case c.p <= lowP:
		t.low++
		if cut.v == pb.Verdict_VERDICT_PASSED {
			t.passedLow++
		}
	case c.p >= highP:
		t.high++
		if cut.v == pb.Verdict_VERDICT_FAILED {
			t.failedHigh++
		}
	}
}

// saved is 1 − part/whole as a percentage.
func saved(part, whole float64) string {
	if whole == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f%%", 100*(1-part/whole))
}

// rate is k/n as a percentage, "–" for none.
func rate(k, n int) string {
	if n == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f%% of %d", 100*float64(k)/float64(n), n)
}

// design is one way to decide every case of the suite.
type design struct {
	name string
	// of gives a case's rule.
	of   func(simCase) rule
	auto bool
}

// runSavings plays the suite under each design and writes the tables.
func runSavings(w io.Writer, o savingsOptions) error {
	r := rand.New(rand.NewPCG(o.seed, 0x5a51))
	suite := drawSuite(r, o.cases)
	designs := []design{
		{name: "runs and confidence as written (the mix)", of: func(c simCase) rule { return fixedRule(c.runs, c.conf) }},
		{name: "runs: 5, confidence: 0.8, every case", of: func(simCase) rule { return fixedRule(5, 0.8) }},
		{name: "34 of 41 must pass, every case (the fixed design of 0.8 ± 0.1 at α = β = 0.05)", of: func(simCase) rule { return rule{fixed: &verdictpkg.Fixed{Epochs: 41, Need: 34}} }},
		{name: "41 of 50 must pass, every case (the fixed design erring as little as runs: auto untruncated)", of: func(simCase) rule { return rule{fixed: &verdictpkg.Fixed{Epochs: 50, Need: 41}} }},
	}
	for _, maxRuns := range []int{20, 40, 60} {
		ru, err := autoRule(0.8, 0.1, 0.05, 0.05, maxRuns)
		if err != nil {
			return err
		}
		designs = append(designs, design{name: fmt.Sprintf("runs: auto, confidence 0.8 ± 0.1, α = β = 0.05, max_runs %d, every case", maxRuns),
			of: func(simCase) rule { return ru }, auto: true})
	}
	tallies := make([]tally, len(designs))
	for di, d := range designs {
		rules := make([]rule, len(suite))
		planned := make([][]epoch, len(suite))
		for ci, c := range suite {
			rules[ci] = d.of(c)
			// A case's epochs are drawn from a stream of its own, the same in every design,
			// so that the designs see the same first epochs.
			er := rand.New(rand.NewPCG(o.seed, uint64(ci)<<8|1))
			planned[ci] = drawEpochs(er, c, rules[ci].epochs(), o.errRate, o.failTokens)
		}
		cut := playFleet(rules, planned, o.slots, o.serial)
		for ci, c := range suite {
			all := playAll(rules[ci], planned[ci])
			if all.v != cut[ci].v || all.undecided != cut[ci].undecided {
				return fmt.Errorf("case %d (p %.3f), %s: curtailed to %s (undecided %v), all epochs give %s (undecided %v)",
					ci, c.p, d.name, cut[ci].v, cut[ci].undecided, all.v, all.undecided)
			}
			tallies[di].add(c, all, cut[ci], 0.7, 0.9)
		}
	}
	writeSavings(w, o, suite, designs, tallies)
	return nil
}

// writeSavings writes the mix and the designs' tables.
func writeSavings(w io.Writer, o savingsOptions, suite []simCase, designs []design, ts []tally) {
	var b strings.Builder
	release := fmt.Sprintf("%d worker slots take the released epochs in turn", o.slots)
	if o.slots == 0 {
		release = "every released epoch starts at once"
	}
	flag := ""
	if o.serial {
		flag, release = " --serial", release+", a case's epochs one at a time"
	}
	fmt.Fprintf(&b, "`skillfleet-bench savings --cases %d --seed %d --fail-tokens %g --errored %g --slots %d%s`: %s; a settled case's queued epochs are withdrawn, its running ones cancelled and charged for the part they ran.\n\n",
		o.cases, o.seed, o.failTokens, o.errRate, o.slots, flag, release)
	counts := make([]int, len(savingsMix))
	var flip, meanTokens float64
	for _, c := range suite {
		counts[c.class]++
		flip += 2 * c.p * (1 - c.p)
		meanTokens += c.tokens
	}
	fmt.Fprintf(&b, "| class | cases | pass probability |\n| --- | --- | --- |\n")
	for i, m := range savingsMix {
		fmt.Fprintf(&b, "| %s | %d | %s |\n", m.name, counts[i], m.about)
	}
	var written []string
	for _, rm := range runsMix {
		written = append(written, fmt.Sprintf("`runs: %d, confidence: %g` %.0f%%", rm.runs, rm.confidence, 100*rm.share))
	}
	fmt.Fprintf(&b, "\nThe runs and confidence written on the cases, drawn apart from their pass probability: %s.", strings.Join(written, ", "))
	fmt.Fprintf(&b, " Two single epochs of a case disagree %.1f%% of the time on this mix (the mean of 2p(1 − p)); %.0f%% of epochs error. "+
		"Tokens per epoch: a case's median log-normal around %d (σ %.1f; mean over the cases %.0f), each epoch σ %.1f around it, a failing one ×%g, an errored one half.\n\n",
		100*flip/float64(len(suite)), 100*o.errRate, tokenMedian, tokenCaseSigma, meanTokens/float64(len(suite)), tokenEpochSigma, o.failTokens)
	fmt.Fprintf(&b, "| design | epochs if all run | epochs started (completed) | epochs saved | tokens if all run | tokens spent | tokens saved | undecided | passed at p ≤ 0.7 | failed at p ≥ 0.9 |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for i, d := range designs {
		t := ts[i]
		und := "–"
		if d.auto {
			und = rate(t.undecided, t.cases)
		}
		fmt.Fprintf(&b, "| %s | %.0f | %.0f (%.0f) | %s | %.1f M | %.1f M | %s | %s | %s | %s |\n", d.name, t.allEpochs, t.started, t.completed,
			saved(t.started, t.allEpochs), t.allTokens/1e6, t.tokens/1e6, saved(t.tokens, t.allTokens), und, rate(t.passedLow, t.low), rate(t.failedHigh, t.high))
	}
	_, _ = io.WriteString(w, b.String())
}
