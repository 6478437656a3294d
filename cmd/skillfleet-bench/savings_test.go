package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	verdictpkg "github.com/skillfleet/skillfleet/verdict"
)

const (
	pass = pb.Verdict_VERDICT_PASSED
	fail = pb.Verdict_VERDICT_FAILED
)

// epochsOf makes planned epochs of the verdicts vs, each of 10 tokens, lasting durations[i].
func epochsOf(vs []pb.Verdict, durations []float64) []epoch {
	out := make([]epoch, len(vs))
	for i, v := range vs {
		out[i] = epoch{v: v, tokens: 10, duration: durations[i]}
	}
	return out
}

// TestPlayFleet plays single cases whose epochs and durations are given, and checks what
// curtailment started, completed and charged against the figures worked by hand in each
// row's comment.
func TestPlayFleet(t *testing.T) {
	five := rule{fixed: &verdictpkg.Fixed{Epochs: 5, Need: 4}}
	durations := []float64{1, 2, 3, 4, 5}
	tests := []struct {
		name               string
		vs                 []pb.Verdict
		slots              int
		serial             bool
		started, completed int
		tokens             float64
		want               pb.Verdict
	}{
		// Four released at once (Dispatch: a fifth only after a result that is not a pass);
		// all pass: settled at the fourth.
		{name: "passes in four", vs: []pb.Verdict{pass, pass, pass, pass, pass}, started: 4, completed: 4, tokens: 40, want: pass},
		// e1 fails at t=1: e5 is released (ends at 6); e2 fails at t=2: failed. e3 (0–3),
		// e4 (0–4) and e5 (1–6) are cancelled at t=2, charged 10·2/3 + 10·2/4 + 10·1/5.
		{name: "two failures, everything running", vs: []pb.Verdict{fail, fail, pass, pass, pass}, started: 5, completed: 2,
			tokens: 20 + 10*2.0/3 + 10*2.0/4 + 10*1.0/5, want: fail},
		// One slot: e1 (0–1) fails, e5 is queued behind e3 and e4; e2 (1–3) fails: the three
		// queued are withdrawn, never started.
		{name: "two failures, one slot", vs: []pb.Verdict{fail, fail, pass, pass, pass}, slots: 1, started: 2, completed: 2, tokens: 20, want: fail},
		// One epoch at a time: the same two.
		{name: "two failures, serial", vs: []pb.Verdict{fail, fail, pass, pass, pass}, serial: true, started: 2, completed: 2, tokens: 20, want: fail},
		// A failure among passes: e1 fails at t=1 and releases e5 (1–6); e2–e4 pass at 2, 3,
		// 4: not yet 4 passes; e5 passes at 6: passed with all five.
		{name: "one failure needs the fifth", vs: []pb.Verdict{fail, pass, pass, pass, pass}, started: 5, completed: 5, tokens: 50, want: pass},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := playFleet([]rule{five}, [][]epoch{epochsOf(tt.vs, durations)}, tt.slots, tt.serial)[0]
			if got.started != tt.started || got.completed != tt.completed || math.Abs(got.tokens-tt.tokens) > 1e-9 || got.v != tt.want {
				t.Errorf("started %d completed %d tokens %.4f %s; want %d %d %.4f %s", got.started, got.completed, got.tokens, got.v,
					tt.started, tt.completed, tt.tokens, tt.want)
			}
			if all := playAll(five, epochsOf(tt.vs, durations)); all.v != got.v {
				t.Errorf("curtailed %s, all epochs %s", got.v, all.v)
			}
		})
	}
}

// sprtWorked is what the tests read of stats/testdata/sprt.json (computed by sprt.py,
// independently of the Go code): the pass line and the exact operating figures of 0.8 ± 0.1.
type sprtWorked []struct {
	Confidence, Delta, Alpha, Beta float64
	PassLine                       []int
	Operating                      []struct {
		MaxRuns int
		P0, P1  struct{ PPass, PUndecided, Epochs float64 }
	}
}

// readJSON reads the worked table at path into v.
func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func loadSPRTWorked(t *testing.T) sprtWorked {
	t.Helper()
	var w sprtWorked
	readJSON(t, "../../stats/testdata/sprt.json", &w)
	if len(w) == 0 || w[0].Confidence != 0.8 || w[0].Delta != 0.1 {
		t.Fatalf("sprt.json's first configuration is not 0.8 ± 0.1: %+v", w[0])
	}
	return w
}

// TestPlayFleetRunsAuto: a runs: auto case that passes every epoch releases as many as reach
// the passing boundary, all at once, and stops there: the first n whose pass line (sprt.py's)
// is at most n.
func TestPlayFleetRunsAuto(t *testing.T) {
	w := loadSPRTWorked(t)[0]
	want := 0
	for i, line := range w.PassLine {
		if line <= i+1 {
			want = i + 1
			break
		}
	}
	ru, err := autoRule(w.Confidence, w.Delta, w.Alpha, w.Beta, 20)
	if err != nil {
		t.Fatal(err)
	}
	vs := make([]pb.Verdict, 20)
	ds := make([]float64, 20)
	for i := range vs {
		vs[i], ds[i] = pass, float64(20-i) // the later epochs end first
	}
	got := playFleet([]rule{ru}, [][]epoch{epochsOf(vs, ds)}, 0, false)[0]
	if want == 0 || got.started != want || got.completed != want || got.v != pass {
		t.Errorf("started %d, completed %d, %s; want %d of each, passed", got.started, got.completed, got.v, want)
	}
}

// savingsWorked is testdata/savings.json (savings.py): exact expected epochs and tokens of
// curtailed fixed-rule cases played one epoch at a time.
type savingsWorked struct {
	FailTokens float64 `json:"fail_tokens"`
	Cases      []struct {
		Runs       int     `json:"runs"`
		Confidence float64 `json:"confidence"`
		P          float64 `json:"p"`
		Need       int     `json:"need"`
		Epochs     float64 `json:"epochs"`
		Tokens     float64 `json:"tokens"`
		PPass      float64 `json:"p_pass"`
	} `json:"cases"`
}

// simulate plays n cases of rule ru whose epochs pass with probability p (a pass costs 1
// token, a fail failTokens) one epoch at a time, and returns the mean epochs, their standard
// error, the mean tokens and theirs, and the share passed.
func simulate(ru rule, p, failTokens float64, n int, seed uint64) (epochs, seEpochs, tokens, seTokens, passed float64) {
	r := rand.New(rand.NewPCG(seed, 7))
	rules := make([]rule, n)
	planned := make([][]epoch, n)
	for c := range n {
		rules[c] = ru
		planned[c] = make([]epoch, ru.epochs())
		for i := range planned[c] {
			e := epoch{v: fail, tokens: failTokens, duration: 1 + r.Float64()}
			if r.Float64() < p {
				e.v, e.tokens = pass, 1
			}
			planned[c][i] = e
		}
	}
	var se, see, st, sst float64
	won := 0
	for _, pl := range playFleet(rules, planned, 0, true) {
		e := float64(pl.started)
		se, see, st, sst = se+e, see+e*e, st+pl.tokens, sst+pl.tokens*pl.tokens
		if pl.v == pass {
			won++
		}
	}
	f := float64(n)
	epochs, tokens = se/f, st/f
	return epochs, math.Sqrt((see/f - epochs*epochs) / f), tokens, math.Sqrt((sst/f - tokens*tokens) / f), float64(won) / f
}

// TestSavingsAgainstExact plays 20,000 cases of each worked configuration one epoch at a
// time and checks the mean epochs, mean tokens and share passed against the exact values of
// testdata/savings.py (fixed rules) and stats/testdata/sprt.py (runs: auto at 0.8 ± 0.1 with
// max_runs 20, at the edges of its zone), within four standard errors.
func TestSavingsAgainstExact(t *testing.T) {
	var w savingsWorked
	readJSON(t, "testdata/savings.json", &w)
	const n = 20000
	check := func(t *testing.T, what string, got, want, se float64) {
		t.Helper()
		if math.Abs(got-want) > 4*se+1e-9 {
			t.Errorf("%s %.4f, exact %.4f (4 SE %.4f)", what, got, want, 4*se)
		}
	}
	for i, c := range w.Cases {
		t.Run(fmt.Sprintf("runs %d confidence %g p %g", c.Runs, c.Confidence, c.P), func(t *testing.T) {
			ru := fixedRule(c.Runs, c.Confidence)
			if ru.fixed.Need != c.Need {
				t.Fatalf("need %d, savings.py %d", ru.fixed.Need, c.Need)
			}
			e, see, tok, set, passed := simulate(ru, c.P, w.FailTokens, n, uint64(i))
			check(t, "mean epochs", e, c.Epochs, see)
			check(t, "mean tokens", tok, c.Tokens, set)
			check(t, "share passed", passed, c.PPass, math.Sqrt(c.PPass*(1-c.PPass)/n))
		})
	}
	sw := loadSPRTWorked(t)[0]
	ru, err := autoRule(sw.Confidence, sw.Delta, sw.Alpha, sw.Beta, 20)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range sw.Operating {
		if op.MaxRuns != 20 {
			continue
		}
		for _, edge := range []struct {
			name  string
			p     float64
			exact struct{ PPass, PUndecided, Epochs float64 }
		}{{"p0", sw.Confidence - sw.Delta, op.P0}, {"p1", sw.Confidence + sw.Delta, op.P1}} {
			t.Run("runs: auto at "+edge.name, func(t *testing.T) {
				e, see, _, _, passed := simulate(ru, edge.p, 1, n, 99)
				check(t, "mean epochs", e, edge.exact.Epochs, see)
				check(t, "share passed", passed, edge.exact.PPass, math.Sqrt(edge.exact.PPass*(1-edge.exact.PPass)/n))
			})
		}
	}
}

// TestSavingsCommand runs the command on a small suite: every design's curtailed verdicts
// match running every epoch (it fails otherwise), and the tables name the mix and the designs.
func TestSavingsCommand(t *testing.T) {
	for _, args := range [][]string{{"--cases", "300"}, {"--cases", "300", "--slots", "0"}, {"--cases", "300", "--serial"}} {
		var out, errOut bytes.Buffer
		cmd := newSavingsCommand()
		cmd.SetArgs(args)
		cmd.SetOut(&out)
		cmd.SetErr(&errOut)
		if err := cmd.Execute(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, errOut.String())
		}
		for _, want := range []string{"| stable |", "runs and confidence as written (the mix)", "max_runs 40", "tokens saved"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%v: the output lacks %q:\n%s", args, want, out.String())
			}
		}
	}
	cmd := newSavingsCommand()
	cmd.SetArgs([]string{"--errored", "1"})
	cmd.SetOut(&bytes.Buffer{})
	if err := cmd.Execute(); err == nil {
		t.Error("--errored 1 accepted")
	}
}
