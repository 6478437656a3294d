package flaky

import (
	"math"
	"strconv"
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

// decide applies the labelling rules to the evidence and says why in words. The words are
// appended to one buffer rather than formatted: the flaky list assesses every cell of a suite,
// and formatting the reason would cost several times the assessment itself.
func decide(ev Evidence, prev Label, cfg Config) (Label, string) {
	b := make([]byte, 0, 192)
	calm := ev.RecentRuns >= cfg.ExitRuns && ev.RecentFlips <= cfg.ExitFlips
	var l Label
	switch {
	case prev == Flaky && calm:
		l = stable(ev)
		b = append(b, "no longer flaky: "...)
		b = appendRecent(b, ev)
	case prev == Flaky && ev.RecentRuns < cfg.ExitRuns:
		l = Flaky
		b = append(b, "still flaky: leaving needs "...)
		b = strconv.AppendInt(b, int64(cfg.ExitRuns), 10)
		b = append(b, " decided runs with at most "...)
		b = appendChanges(b, cfg.ExitFlips)
	case prev == Flaky:
		l = Flaky
		b = append(b, "still flaky: "...)
		b = appendRecent(b, ev)
		b = append(b, ", more than the "...)
		b = strconv.AppendInt(b, int64(cfg.ExitFlips), 10)
		b = append(b, " a calm cell has"...)
	case ev.Decided < cfg.MinRuns:
		l = Insufficient
		b = strconv.AppendInt(b, int64(ev.Decided), 10)
		b = append(b, " decided runs ("...)
		b = append(b, ev.Outcomes...)
		b = append(b, "), fewer than the "...)
		b = strconv.AppendInt(b, int64(cfg.MinRuns), 10)
		b = append(b, " a label needs"...)
		return l, string(appendLeftOut(b, ev))
	default:
		inBand := ev.Interval.Lo >= cfg.Band-eps && ev.Interval.Hi <= 1-cfg.Band+eps
		entering := ev.FlipRate >= cfg.EnterFlipRate-eps
		switch {
		case entering && inBand && ev.RecentFlips > cfg.ExitFlips:
			l = Flaky
			b = append(b, "flip rate "...)
			b = appendRate(b, ev.FlipRate)
			b = append(b, " ≥ "...)
			b = appendRate(b, cfg.EnterFlipRate)
			b = append(b, " and pass rate interval inside "...)
			b = appendInterval(b, cfg.Band, 1-cfg.Band)
		case !entering:
			l = stable(ev)
			b = append(b, "not flaky: flip rate "...)
			b = appendRate(b, ev.FlipRate)
			b = append(b, " < "...)
			b = appendRate(b, cfg.EnterFlipRate)
		case !inBand:
			l = stable(ev)
			b = append(b, "not flaky: pass rate interval "...)
			b = appendInterval(b, ev.Interval.Lo, ev.Interval.Hi)
			b = append(b, " reaches outside "...)
			b = appendInterval(b, cfg.Band, 1-cfg.Band)
		default:
			l = stable(ev)
			b = append(b, "not flaky: calm lately, "...)
			b = appendRecent(b, ev)
		}
	}
	b = append(b, "; "...)
	b = appendChanges(b, ev.Flips)
	b = append(b, " in "...)
	b = strconv.AppendInt(b, int64(ev.Decided), 10)
	b = append(b, " decided runs ("...)
	b = append(b, ev.Outcomes...)
	b = append(b, "), pass rate "...)
	b = appendRate(b, ev.PassRate)
	b = append(b, ' ')
	b = appendInterval(b, ev.Interval.Lo, ev.Interval.Hi)
	return l, string(appendLeftOut(b, ev))
}

// stable is the stable label of the latest decided outcome.
func stable(ev Evidence) Label {
	if strings.HasSuffix(ev.Outcomes, "P") {
		return StablePass
	}
	return StableFail
}

func appendRecent(b []byte, ev Evidence) []byte {
	b = appendChanges(b, ev.RecentFlips)
	b = append(b, " in the last "...)
	b = strconv.AppendInt(b, int64(ev.RecentRuns), 10)
	return append(b, " decided runs"...)
}

func appendChanges(b []byte, n int) []byte {
	b = strconv.AppendInt(b, int64(n), 10)
	if n == 1 {
		return append(b, " change"...)
	}
	return append(b, " changes"...)
}

func appendRate(b []byte, x float64) []byte { return strconv.AppendFloat(b, x, 'f', 2, 64) }

func appendInterval(b []byte, lo, hi float64) []byte {
	b = append(b, '[')
	b = appendRate(b, lo)
	b = append(b, ", "...)
	b = appendRate(b, hi)
	return append(b, ']')
}

func appendLeftOut(b []byte, ev Evidence) []byte {
	switch ev.InfraEpochs {
	case 0:
		return b
	case 1:
		return append(b, "; 1 infrastructure failure left out"...)
	}
	b = append(b, "; "...)
	b = strconv.AppendInt(b, int64(ev.InfraEpochs), 10)
	return append(b, " infrastructure failures left out"...)
}
