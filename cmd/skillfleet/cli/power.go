package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/skillfleet/skillfleet/changes"
	"github.com/skillfleet/skillfleet/flaky"
	"github.com/skillfleet/skillfleet/fleet"
	"github.com/skillfleet/skillfleet/history"
	"github.com/skillfleet/skillfleet/internal/tenant"
	"github.com/skillfleet/skillfleet/internal/text"
	"github.com/skillfleet/skillfleet/stats"
	"github.com/skillfleet/skillfleet/suite"
)

// assumedFlipRate is the chance that two epochs of a case disagree, assumed of a case the
// history knows nothing of: about the 27% of verdicts an A/A run flipped in a public skills
// repository's gate (issue 33), rounded up, so that the estimate errs towards underpowered.
const assumedFlipRate = 0.3

// planPower is plan --baseline's estimate of its comparison's design, before any token is
// spent: the cases the arms pair on, the smallest difference they detect, and whether that is
// more than --min-effect.
type planPower struct {
	// Cases counts the cases (case × agent) that run in both arms; Epochs their epochs
	// (runs), the fewest and the most.
	Cases     int `json:"cases"`
	MinEpochs int `json:"min_epochs"`
	MaxEpochs int `json:"max_epochs"`
	// MinDetectable is the smallest difference in pass rate the comparison detects at 80%
	// power and alpha 0.05 over all cases (nil: none of at most 1); MinEffect is --min-effect.
	MinDetectable *float64 `json:"min_detectable"`
	MinEffect     float64  `json:"min_effect"`
	Underpowered  bool     `json:"underpowered"`
	// Skills counts the skills compared; UnderpoweredSkills names those whose own cases
	// cannot detect MinEffect.
	Skills             int      `json:"skills"`
	UnderpoweredSkills []string `json:"underpowered_skills"`
	// FromHistory counts the cases whose noise comes from the suite's history; the others'
	// is AssumedFlipRate.
	FromHistory     int     `json:"from_history"`
	AssumedFlipRate float64 `json:"assumed_flip_rate"`
	Method          string  `json:"method"`
	// Sequential are the skills whose comparison may stop early, each with the design the
	// coordinator will run (suite.Plan.Lockstep, stats.NewGroupSequential), in name order.
	// SequentialCandidates counts the compared skills with a `runs: auto` case: those of them
	// not in Sequential run every epoch.
	Sequential           []planSequential `json:"sequential"`
	SequentialCandidates int              `json:"sequential_candidates"`
}

// planSequential is one skill's group-sequential design: its compared cases and the looks.
type planSequential struct {
	Skill string `json:"skill"`
	Cases int    `json:"cases"`
	stats.GroupSequential
}

// estimatePower estimates the design of p's baseline comparison. A case's noise is the
// variance of its difference between two arms that do not differ: 2q(1−q)/runs for a case
// that passes an epoch with probability q, q estimated from its epochs in rates (the
// unbiased 2q̂(1−q̂)·n/(n−1) of n decided epochs), or assumedFlipRate/runs without a record.
func estimatePower(p *suite.Plan, rates []changes.CaseRate, minEffect float64) planPower {
	type key struct{ skill, name, agent string }
	known := make(map[key]changes.CaseRate, len(rates))
	for _, r := range rates {
		if r.Decided > 1 {
			known[key{r.Skill, r.Case, r.Agent}] = r
		}
	}
	out := planPower{MinEffect: minEffect, AssumedFlipRate: assumedFlipRate, Method: stats.PowerMethod, UnderpoweredSkills: []string{}}
	type group struct {
		n   int
		sum float64
	}
	skills := map[string]*group{}
	var all group
	seen := map[key]bool{}
	for _, j := range p.Jobs {
		k := key{j.Case.Skill.Name, j.Case.Name, j.Agent}
		if j.Arm != p.Baseline || seen[k] {
			continue
		}
		seen[k] = true
		runs := max(j.Case.Runs, 1)
		flip := assumedFlipRate
		if r, ok := known[k]; ok {
			q, n := float64(r.Passed)/float64(r.Decided), float64(r.Decided)
			flip = 2 * q * (1 - q) * n / (n - 1)
			out.FromHistory++
		}
		v := stats.EpochFlipVariance(flip, runs)
		if out.Cases == 0 || runs < out.MinEpochs {
			out.MinEpochs = runs
		}
		out.MaxEpochs = max(out.MaxEpochs, runs)
		out.Cases++
		all.n++
		all.sum += v
		g := skills[k.skill]
		if g == nil {
			g = &group{}
			skills[k.skill] = g
		}
		g.n++
		g.sum += v
	}
	detect := func(g group) (*float64, bool) {
		if g.n == 0 {
			return nil, true
		}
		mde, ok := stats.MinDetectable(g.n, g.sum/float64(g.n))
		if !ok {
			return nil, true
		}
		return &mde, mde > minEffect
	}
	out.MinDetectable, out.Underpowered = detect(all)
	out.Skills = len(skills)
	for name, g := range skills {
		if _, under := detect(*g); under {
			out.UnderpoweredSkills = append(out.UnderpoweredSkills, name)
		}
	}
	slices.Sort(out.UnderpoweredSkills)
	out.Sequential, out.SequentialCandidates = sequentialDesigns(p)
	return out
}

// sequentialDesigns are the group-sequential designs of p's comparison, as the coordinator
// will plan them, and the number of compared skills with a `runs: auto` case.
func sequentialDesigns(p *suite.Plan) ([]planSequential, int) {
	lockstep, compared := p.Lockstep()
	out := []planSequential{}
	for _, ls := range lockstep {
		d, err := stats.NewGroupSequential(stats.Alpha, ls.Epochs, stats.DefaultLooks, ls.Cases, compared)
		if err != nil {
			continue
		}
		out = append(out, planSequential{Skill: ls.Skill, Cases: ls.Cases, GroupSequential: d})
	}
	candidates := map[string]bool{}
	for _, j := range p.Jobs {
		if j.Arm == p.Baseline && j.Case.Sequential {
			candidates[j.Case.Skill.Name] = true
		}
	}
	return out, len(candidates)
}

// write prints the estimate for a person, saying where the noise came from.
func (pp planPower) write(w io.Writer, suiteName string) {
	epochs := fmt.Sprint(pp.MinEpochs)
	if pp.MaxEpochs != pp.MinEpochs {
		epochs = fmt.Sprintf("%d to %d", pp.MinEpochs, pp.MaxEpochs)
	}
	mde := "no difference (too few cases or too much noise)"
	if pp.MinDetectable != nil {
		mde = fmt.Sprintf("%.1f points", 100**pp.MinDetectable)
	}
	verdict := "enough"
	if pp.Underpowered {
		verdict = "underpowered"
	}
	fmt.Fprintf(w, "power: the comparison of %d cases × %s epochs detects %s at 80%% power, alpha 0.05; --min-effect %.1f points: %s\n",
		pp.Cases, epochs, mde, 100*pp.MinEffect, verdict)
	if len(pp.UnderpoweredSkills) > 0 {
		names := pp.UnderpoweredSkills
		more := ""
		if len(names) > 10 {
			names, more = names[:10], fmt.Sprintf(" and %d more", len(names)-10)
		}
		fmt.Fprintf(w, "power: %d of %d skills cannot detect %.1f points on their own cases: %s%s\n", len(pp.UnderpoweredSkills), pp.Skills, 100*pp.MinEffect, strings.Join(names, ", "), more)
	}
	switch {
	case pp.FromHistory == pp.Cases:
		fmt.Fprintf(w, "power: noise from the history of suite %s (every case's epoch pass rate over its last runs)\n", suiteName)
	case pp.FromHistory > 0:
		fmt.Fprintf(w, "power: noise from the history of suite %s for %d of %d cases; the others assumed to flip between two epochs %.0f%% of the time\n", suiteName, pp.FromHistory, pp.Cases, 100*pp.AssumedFlipRate)
	default:
		fmt.Fprintf(w, "power: no history of suite %s: assumed that two epochs of a case disagree %.0f%% of the time (run it, or skillfleet test --aa, to know)\n", suiteName, 100*pp.AssumedFlipRate)
	}
	fmt.Fprintf(w, "power: %s\n", pp.Method)
	pp.writeSequential(w)
}

// writeSequential says which skills' comparisons may stop early, and at which looks.
func (pp planPower) writeSequential(w io.Writer) {
	if len(pp.Sequential) == 0 {
		if pp.SequentialCandidates > 0 {
			fmt.Fprintf(w, "sequential: no comparison can stop early: %s a `runs: auto` case, but a skill's comparison stops early only when every compared case of it is `runs: auto` with one max_runs and none is `parallel: false`; they run every epoch\n",
				text.Count(pp.SequentialCandidates, "skill has", "skills have"))
		}
		return
	}
	fmt.Fprintf(w, "sequential: %d of %d compared skills may stop early: both arms run in lockstep to each look, where the comparison stops once significant or futile (alpha %.2g spent across the looks: %s; a skill's level divided by the %s compared); the power above is that of all epochs, which stopping early costs little\n",
		len(pp.Sequential), pp.Skills, pp.Sequential[0].Alpha, stats.Spending, text.Count(pp.Sequential[0].Skills, "skill", "skills"))
	for i, s := range pp.Sequential {
		if i == 10 {
			fmt.Fprintf(w, "sequential: and %d more skills\n", len(pp.Sequential)-10)
			break
		}
		levels := make([]string, len(s.Levels))
		for k, l := range s.Levels {
			levels[k] = fmt.Sprintf("%.2g", l)
			if l == 0 {
				levels[k] = "none (out of reach of its cases: carried to the next)"
			}
		}
		fmt.Fprintf(w, "sequential: %s: %s × %d epochs, looks at epochs %s, alpha at each %s\n",
			s.Skill, text.Count(s.Cases, "case", "cases"), s.Epochs, text.Ints(s.Looks), strings.Join(levels, ", "))
	}
}

// historyRates reads the suite's per-case epoch record from a local history for plan
// --baseline. No history (none asked for and no default file, or --history off) is no
// record, not an error: the estimate then says what it assumed.
func historyRates(ctx context.Context, e *env, target, suiteName string) ([]changes.CaseRate, error) {
	if target == fleet.HistoryOff {
		return nil, nil
	}
	hc, err := localHistory(target, e)
	if err != nil || hc.Target == fleet.HistoryOff {
		return nil, err
	}
	if !history.IsPostgres(hc.Target) {
		if _, err := os.Stat(hc.Target); err != nil {
			return nil, nil // opening would create an empty database
		}
	}
	s, err := history.Open(ctx, history.Options{Target: hc.Target, Password: hc.Password})
	if err != nil {
		return nil, failf("%v", err)
	}
	defer s.Close()
	rates, err := changes.PassRates(ctx, s, tenant.DefaultTeam, suiteName, "", flaky.Config{})
	if err != nil {
		return nil, failf("%v", err)
	}
	return rates, nil
}
