package flaky

import (
	"fmt"
	"math"
	"strings"

	"github.com/skillfleet/skillfleet/stats"
)

// kind is what an epoch counts as.
type kind uint8

const (
	notRun kind = iota
	pass
	fail
	infra
)

// classify sorts an epoch by the package's rules (see the package documentation).
func classify(e Epoch, infraClasses []string) kind {
	switch e.Verdict {
	case Passed:
		return pass
	case Failed:
		return fail
	case Errored, TimedOut:
		if isInfra(e.Class, infraClasses) {
			return infra
		}
		return fail
	}
	return notRun
}

func isInfra(class string, classes []string) bool {
	if classes == nil {
		return class == ClassSandbox || class == ClassModelEndpoint || class == ClassRateLimited
	}
	for _, c := range classes {
		if class == c {
			return true
		}
	}
	return false
}

// eps absorbs floating-point noise in the comparisons with thresholds, so 3 flips in 10
// transitions meet a 0.3 threshold.
const eps = 1e-9

// Assess labels one cell from its history. prev is the label the cell had after the previous
// assessment (the zero Label if none): it is what makes the label sticky, so a cell near the
// thresholds does not change label from one run to the next. The rules are the package
// documentation's.
func Assess(h History, prev Label, cfg Config) Assessment {
	cfg = cfg.withDefaults()
	runs := h.Runs
	if len(runs) > cfg.Window {
		runs = runs[len(runs)-cfg.Window:]
	}
	if cfg.MaxAge > 0 {
		cut := cfg.Now.Add(-cfg.MaxAge)
		for len(runs) > 0 && runs[0].Time.Before(cut) {
			runs = runs[1:]
		}
	}
	conf := h.Confidence
	if math.IsNaN(conf) || conf <= 0 || conf > 1 {
		conf = 1
	}

	ev := Evidence{Runs: len(runs)}
	if len(runs) > 0 {
		ev.From, ev.To = runs[0].Time, runs[len(runs)-1].Time
	}
	// The window is at most cfg.Window runs, so this buffer is enough for the default and
	// grows only for a larger window.
	var buf [32]byte
	out := buf[:0]
	for _, r := range runs {
		passed, decided, infraHere := 0, 0, 0
		for _, e := range r.Epochs {
			switch classify(e, cfg.Infra) {
			case pass:
				passed++
				decided++
			case fail:
				decided++
			case infra:
				infraHere++
			default:
				ev.NotRunEpochs++
			}
		}
		ev.InfraEpochs += infraHere
		if decided == 0 {
			if infraHere > 0 {
				ev.InfraRuns++
			} else {
				ev.EmptyRuns++
			}
			continue
		}
		ev.EpochsPassed += passed
		ev.EpochsDecided += decided
		if passed > 0 && passed < decided {
			ev.MixedRuns++
		}
		o := byte('F')
		if float64(passed) >= conf*float64(decided)-eps {
			o = 'P'
			ev.Passed++
		}
		if len(out) > 0 && out[len(out)-1] != o {
			ev.Flips++
			ev.LastFlipRun, ev.LastFlipTime = r.ID, r.Time
		}
		out = append(out, o)
	}
	ev.Decided = len(out)
	ev.Outcomes = string(out)
	if ev.Decided > 1 {
		ev.FlipRate = float64(ev.Flips) / float64(ev.Decided-1)
	}
	if ev.Decided > 0 {
		ev.PassRate = float64(ev.Passed) / float64(ev.Decided)
	}
	ev.Interval = stats.Wilson(ev.Passed, ev.Decided)
	recent := out[max(0, len(out)-cfg.ExitRuns):]
	ev.RecentRuns = len(recent)
	for i := 1; i < len(recent); i++ {
		if recent[i] != recent[i-1] {
			ev.RecentFlips++
		}
	}

	label, reason := decide(ev, prev, cfg)
	ev.Reason = reason
	return Assessment{Cell: h.Cell, Label: label, Evidence: ev}
}

// decide applies the labelling rules to the evidence.
func decide(ev Evidence, prev Label, cfg Config) (Label, string) {
	calm := ev.RecentRuns >= cfg.ExitRuns && ev.RecentFlips <= cfg.ExitFlips
	if prev == Flaky {
		if calm {
			return stable(ev), fmt.Sprintf("no longer flaky: %s in the last %d decided runs; %s%s",
				changes(ev.RecentFlips), ev.RecentRuns, rates(ev), leftOut(ev))
		}
		if ev.RecentRuns < cfg.ExitRuns {
			return Flaky, fmt.Sprintf("still flaky: leaving needs %d decided runs with at most %s; %s%s",
				cfg.ExitRuns, changes(cfg.ExitFlips), rates(ev), leftOut(ev))
		}
		return Flaky, fmt.Sprintf("still flaky: %s in the last %d decided runs, more than the %d a calm cell has; %s%s",
			changes(ev.RecentFlips), ev.RecentRuns, cfg.ExitFlips, rates(ev), leftOut(ev))
	}
	if ev.Decided < cfg.MinRuns {
		return Insufficient, fmt.Sprintf("%d decided runs (%s), fewer than the %d a label needs%s",
			ev.Decided, ev.Outcomes, cfg.MinRuns, leftOut(ev))
	}
	inBand := ev.Interval.Lo >= cfg.Band-eps && ev.Interval.Hi <= 1-cfg.Band+eps
	switch {
	case ev.FlipRate >= cfg.EnterFlipRate-eps && inBand && ev.RecentFlips > cfg.ExitFlips:
		return Flaky, fmt.Sprintf("flip rate %.2f ≥ %.2f and pass rate interval inside [%.2f, %.2f]; %s%s",
			ev.FlipRate, cfg.EnterFlipRate, cfg.Band, 1-cfg.Band, rates(ev), leftOut(ev))
	case ev.FlipRate < cfg.EnterFlipRate-eps:
		return stable(ev), fmt.Sprintf("not flaky: flip rate %.2f < %.2f; %s%s",
			ev.FlipRate, cfg.EnterFlipRate, rates(ev), leftOut(ev))
	case !inBand:
		return stable(ev), fmt.Sprintf("not flaky: pass rate interval [%.2f, %.2f] reaches outside [%.2f, %.2f]; %s%s",
			ev.Interval.Lo, ev.Interval.Hi, cfg.Band, 1-cfg.Band, rates(ev), leftOut(ev))
	default:
		return stable(ev), fmt.Sprintf("not flaky: calm lately, %s in the last %d decided runs; %s%s",
			changes(ev.RecentFlips), ev.RecentRuns, rates(ev), leftOut(ev))
	}
}

// stable is the stable label of the latest decided outcome.
func stable(ev Evidence) Label {
	if strings.HasSuffix(ev.Outcomes, "P") {
		return StablePass
	}
	return StableFail
}

func rates(ev Evidence) string {
	return fmt.Sprintf("%s in %d decided runs (%s), pass rate %.2f [%.2f, %.2f]",
		changes(ev.Flips), ev.Decided, ev.Outcomes, ev.PassRate, ev.Interval.Lo, ev.Interval.Hi)
}

func changes(n int) string {
	if n == 1 {
		return "1 change"
	}
	return fmt.Sprintf("%d changes", n)
}

func leftOut(ev Evidence) string {
	if ev.InfraEpochs == 0 {
		return ""
	}
	if ev.InfraEpochs == 1 {
		return "; 1 infrastructure failure left out"
	}
	return fmt.Sprintf("; %d infrastructure failures left out", ev.InfraEpochs)
}
