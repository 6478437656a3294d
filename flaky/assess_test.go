package flaky

import (
	"strings"
	"testing"
	"time"
)

// runs builds a history from outcome letters (P, F, S for sandbox-errored), one epoch per run,
// one day apart.
func runs(outcomes string) []Run {
	t0 := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	var rs []Run
	for i, c := range outcomes {
		e := Epoch{Verdict: Passed}
		switch c {
		case 'F':
			e = Epoch{Verdict: Failed}
		case 'S':
			e = Epoch{Verdict: Errored, Class: ClassSandbox}
		case 'Q':
			e = Epoch{Verdict: Errored, Class: "quota"}
		}
		rs = append(rs, Run{ID: "r" + string(rune('a'+i)), Time: t0.AddDate(0, 0, i), Epochs: []Epoch{e}})
	}
	return rs
}

func TestAssessConfig(t *testing.T) {
	tests := []struct {
		name     string
		history  string
		prev     Label
		cfg      Config
		want     Label
		outcomes string
		reason   string // a part of the reason
	}{
		{"defaults", "PFPFP", "", Config{}, Flaky, "PFPFP", "flip rate 1.00"},
		{"a higher MinRuns waits longer", "PFPFP", "", Config{MinRuns: 6}, Insufficient, "PFPFP", "fewer than the 6"},
		{"a shorter window forgets the flips", "PFPFPPPPPP", "", Config{Window: 5}, StablePass, "PPPPP", "0 changes"},
		{"a higher entry rate is not met", "PPPFFFPPFF", "", Config{EnterFlipRate: 0.5}, StableFail, "PPPFFFPPFF", "flip rate 0.33 < 0.50"},
		{"a wider band is not met", "PFPPPPPPFP", "", Config{Band: 0.2}, StablePass, "PFPPPPPPFP", "reaches outside [0.20, 0.80]"},
		{"a tolerant exit leaves with one change", "PFPFPFFPPPPP", Flaky, Config{ExitFlips: 1}, StablePass, "PFPFPFFPPPPP", "no longer flaky"},
		{"a longer exit keeps it flaky", "PFPFPFPPPPPP", Flaky, Config{ExitRuns: 8}, Flaky, "PFPFPFPPPPPP", "2 changes in the last 8"},
		{"an extra infrastructure class is left out", "PQPQPQPQPQ", "", Config{Infra: []string{"quota"}}, StablePass, "PPPPP", "5 infrastructure failures left out"},
		{"a custom list replaces the default", "PSPSPSPSPS", "", Config{Infra: []string{"quota"}}, Flaky, "PFPFPFPFPF", "flip rate 1.00"},
		{"an empty history", "", "", Config{}, Insufficient, "", "0 decided runs"},
		{"an empty history keeps a flaky cell flaky", "", Flaky, Config{}, Flaky, "", "leaving needs 6"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := Assess(History{Runs: runs(tt.history)}, tt.prev, tt.cfg)
			if a.Label != tt.want || a.Evidence.Outcomes != tt.outcomes || !strings.Contains(a.Evidence.Reason, tt.reason) {
				t.Errorf("got %q %q %q, want %q %q containing %q",
					a.Label, a.Evidence.Outcomes, a.Evidence.Reason, tt.want, tt.outcomes, tt.reason)
			}
		})
	}
}

func TestAssessEvidence(t *testing.T) {
	rs := runs("PSFPKF")
	rs[4].Epochs = []Epoch{{Verdict: Skipped}}
	rs[3].Epochs = append(rs[3].Epochs, Epoch{Verdict: Failed}, Epoch{Verdict: Errored, Class: ClassRateLimited})
	rs = append(rs, Run{ID: "empty", Time: rs[5].Time.Add(time.Hour)})
	ev := Assess(History{Runs: rs}, "", Config{}).Evidence
	want := Evidence{
		Runs: 7, Decided: 4, InfraRuns: 1, EmptyRuns: 2, InfraEpochs: 2, NotRunEpochs: 1,
		EpochsPassed: 2, EpochsDecided: 5, MixedRuns: 1, Passed: 1, Flips: 1, RecentRuns: 4,
		RecentFlips: 1, Outcomes: "PFFF", LastFlipRun: "rc", LastFlipTime: rs[2].Time,
		From: rs[0].Time, To: rs[6].Time,
	}
	ev.Reason, ev.FlipRate, ev.PassRate, ev.Interval = "", 0, 0, want.Interval
	if ev != want {
		t.Errorf("evidence\n%+v, want\n%+v", ev, want)
	}
}

// TestAssessOverTime feeds a cell its own label back run after run, as the caller does, and
// checks the label at each step (. insufficient, p stable-pass, f stable-fail, ~ flaky). A cell
// failing at random about one run in six becomes flaky once the window holds three such
// failures (six changes in twenty runs); a flaky cell leaves after six equal runs; while the
// window still holds its flips, its next change brings it back (six lucky runs were not a fix);
// once they are out of the window, a lone failure is only stable-fail.
func TestAssessOverTime(t *testing.T) {
	tests := []struct{ history, want string }{
		{"PPPPPPFPPPPFPPPPPPFPPPPPPPPFPPPP", "....ppfppppfppppppf~~~~~pppf~~~~"},
		{"PPPPPFPFPFPFPPPPPPFPPPPPPPPPPPPPPPPPPPPPPFPPPP", "....pfp~~~~~~~~~~p~~~~~~pppppppppppppppppfpppp"},
		{"FFFFFPFPFPFPFFFFFFFFFFFFF", "....fpf~~~~~~~~~~ffffffff"},
	}
	short := map[Label]byte{Flaky: '~', StablePass: 'p', StableFail: 'f', Insufficient: '.'}
	for _, tt := range tests {
		var prev Label
		got := make([]byte, 0, len(tt.history))
		for i := 1; i <= len(tt.history); i++ {
			prev = Assess(History{Runs: runs(tt.history[:i])}, prev, Config{}).Label
			got = append(got, short[prev])
		}
		if string(got) != tt.want {
			t.Errorf("history %s\nlabels  %s\nwant    %s", tt.history, got, tt.want)
		}
	}
}
