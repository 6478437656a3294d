package comparison

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/internal/testutil"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

const (
	pass = pb.Verdict_VERDICT_PASSED
	fail = pb.Verdict_VERDICT_FAILED
	errd = pb.Verdict_VERDICT_ERRORED
	tout = pb.Verdict_VERDICT_TIMED_OUT
)

// result makes one epoch's result with the configuration every fixture shares.
func result(skill, name string, epoch int, v pb.Verdict) *pb.Result {
	return &pb.Result{
		Skill: skill, CaseName: name, Epoch: int32(epoch), Verdict: v,
		Usage:   &pb.Usage{PromptTokens: 100, CompletionTokens: int64(10 * epoch)},
		Timings: &pb.Timings{TotalMs: int64(1000 * epoch)},
		Model:   "model-x", JudgeModel: "judge-y", JudgePrompt: "prompt/1", CaseDigest: "sha256:" + skill + "/" + name,
	}
}

// epochs makes a case's results, one per verdict, epochs from 1.
func epochs(skill, name string, vs ...pb.Verdict) []*pb.Result {
	out := make([]*pb.Result, len(vs))
	for i, v := range vs {
		out[i] = result(skill, name, i+1, v)
	}
	return out
}

// fixture is two runs of a small suite: "alpha" fixed in B (twelve cases from failing to
// passing, one epoch each), "beta" three epochs per case with errored epochs and flips,
// "gamma" a case removed, a case added and one errored in B, "omega" broken in B (twelve
// cases from passing to failing).
func fixture() (a, b []*pb.Result) {
	for i := range 12 {
		name := fmt.Sprintf("fix-%02d", i)
		a = append(a, epochs("alpha", name, fail)...)
		b = append(b, epochs("alpha", name, pass)...)
	}
	a = append(a, epochs("alpha", "steady", pass)...)
	b = append(b, epochs("alpha", "steady", pass)...)

	a = append(a, epochs("beta", "breaks", pass, pass, pass)...)
	b = append(b, epochs("beta", "breaks", pass, fail, errd)...)
	a = append(a, epochs("beta", "flaky", fail, pass, fail)...)
	b = append(b, epochs("beta", "flaky", pass, fail, fail)...)
	a = append(a, epochs("beta", "solid", pass, pass, tout)...)
	b = append(b, epochs("beta", "solid", pass, pass, pass)...)

	a = append(a, epochs("gamma", "gone", pass)...)
	b = append(b, epochs("gamma", "added", fail)...)
	a = append(a, epochs("gamma", "lost", pass)...)
	b = append(b, epochs("gamma", "lost", errd)...)
	a = append(a, epochs("gamma", "kept", fail)...)
	b = append(b, epochs("gamma", "kept", fail)...)

	for i := range 12 {
		name := fmt.Sprintf("w-%02d", i)
		a = append(a, epochs("omega", name, pass)...)
		b = append(b, epochs("omega", name, fail)...)
	}
	return a, b
}

func compareFixture(t *testing.T) *Report {
	t.Helper()
	a, b := fixture()
	r, err := Compare(Side{Label: "run r1", Run: "r1", Results: RecordsOf(a)}, Side{Label: "run r2", Run: "r2", Results: RecordsOf(b)}, Options{Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRenderings(t *testing.T) {
	r := compareFixture(t)
	tests := []struct {
		golden string
		write  func(*bytes.Buffer) error
	}{
		{"compare.txt", func(b *bytes.Buffer) error { return r.WriteText(b) }},
		{"compare.json", func(b *bytes.Buffer) error { return r.WriteJSON(b) }},
		{"compare.junit.xml", func(b *bytes.Buffer) error { return r.WriteJUnit(b) }},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			var b bytes.Buffer
			if err := tt.write(&b); err != nil {
				t.Fatal(err)
			}
			testutil.Golden(t, filepath.Join("testdata", tt.golden), b.Bytes())
		})
	}
}

// TestComparisonFigures: what the goldens show, asserted on the values: alpha is
// significantly better, beta is not significant and left out its errored epochs per side, and
// an errored case is not paired (never a pass).
func TestComparisonFigures(t *testing.T) {
	r := compareFixture(t)
	per := map[string]int{}
	for i, s := range r.Comparison.PerSkill {
		per[s.Skill] = i
	}
	alpha := r.Comparison.PerSkill[per["alpha"]]
	if !alpha.Significant || alpha.Delta <= 0 || alpha.Test != "mcnemar-exact" || alpha.Cases != 13 {
		t.Errorf("alpha: significant %v delta %v test %s cases %d; want significant, positive, mcnemar-exact, 13", alpha.Significant, alpha.Delta, alpha.Test, alpha.Cases)
	}
	beta := r.Comparison.PerSkill[per["beta"]]
	if beta.Significant || beta.A.LeftOut != 1 || beta.B.LeftOut != 1 || beta.Test != "sign-flip-exact" {
		t.Errorf("beta: significant %v left out %d/%d test %s; want not significant, 1/1, sign-flip-exact", beta.Significant, beta.A.LeftOut, beta.B.LeftOut, beta.Test)
	}
	if omega := r.Comparison.PerSkill[per["omega"]]; !omega.Significant || omega.Delta >= 0 {
		t.Errorf("omega: significant %v delta %v; want significantly worse", omega.Significant, omega.Delta)
	}
	if FailIfWorse(r) == nil {
		t.Error("FailIfWorse passed a run with a significantly worse skill")
	}
	gamma := r.Comparison.PerSkill[per["gamma"]]
	if gamma.Cases != 1 || gamma.OnlyA != 1 || gamma.OnlyB != 1 || gamma.Unpaired != 1 || gamma.B.LeftOut != 1 {
		t.Errorf("gamma: %+v; want 1 paired, 1 only in A, 1 only in B, 1 unpaired, 1 left out in B", gamma)
	}
	var doc map[string]any
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b", "axis", "alpha", "seed", "per_skill", "overall", "changes"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("JSON has no %q", k)
		}
	}
}

func TestChanges(t *testing.T) {
	ch := compareFixture(t).Changes
	names := func(cs []CaseChange) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Skill+"/"+c.Case)
		}
		return out
	}
	fixed, broken := []string{}, []string{"beta/breaks"}
	for i := range 12 {
		fixed = append(fixed, fmt.Sprintf("alpha/fix-%02d", i))
		broken = append(broken, fmt.Sprintf("omega/w-%02d", i))
	}
	tests := []struct {
		category string
		got      []CaseChange
		want     []string
	}{
		{"newly failing", ch.NewlyFailing, broken},
		{"fixed", ch.Fixed, fixed},
		{"still failing", ch.StillFailing, []string{"beta/flaky", "gamma/kept"}},
		{"new", ch.New, []string{"gamma/added"}},
		{"removed", ch.Removed, []string{"gamma/gone"}},
		{"undecided", ch.Undecided, []string{"gamma/lost"}},
		{"flipped", ch.Flipped, []string{"beta/flaky"}},
	}
	for _, tt := range tests {
		t.Run(tt.category, func(t *testing.T) {
			if got := names(tt.got); !slices.Equal(got, tt.want) {
				t.Errorf("%s: %v, want %v", tt.category, got, tt.want)
			}
		})
	}
	if !slices.Equal(ch.Flipped[0].FlippedEpochs, []int{1, 2}) {
		t.Errorf("flaky flipped epochs %v, want [1 2]", ch.Flipped[0].FlippedEpochs)
	}
	if !slices.Equal(ch.NewlyFailing[0].FlippedEpochs, []int{2}) {
		t.Errorf("breaks flipped epochs %v, want [2] (epoch 3 errored in B is not a flip)", ch.NewlyFailing[0].FlippedEpochs)
	}
}

func TestRefusal(t *testing.T) {
	set := func(rs []Record, f func(*Record)) []Record {
		for i := range rs {
			f(&rs[i])
		}
		return rs
	}
	limits := func(mem int64) *pb.RunSpec { return &pb.RunSpec{Limits: &pb.Limits{MemoryBytes: mem}} }
	tests := []struct {
		name   string
		change func(a, b *Side)
		axis   Axis
		keys   []string
	}{
		{name: "same configuration", change: func(a, b *Side) {}},
		{name: "the skill's files may differ", change: func(a, b *Side) { a.Spec, b.Spec = limits(1), limits(1) }},
		{name: "agent model", change: func(a, b *Side) { set(b.Results, func(r *Record) { r.Model = "model-z" }) }, keys: []string{"agent model"}},
		{name: "agent name", change: func(a, b *Side) { set(b.Results, func(r *Record) { r.Agent = "other" }) }, keys: []string{"agents"}},
		{name: "judge", change: func(a, b *Side) {
			set(b.Results, func(r *Record) { r.JudgeModel, r.JudgePrompt = "judge-z", "prompt/2" })
		}, keys: []string{"judge model", "judge prompt"}},
		{name: "a case edited", change: func(a, b *Side) { b.Results[0].CaseDigest = "sha256:edited" }, keys: []string{"case digest"}},
		{name: "limits", change: func(a, b *Side) { a.Spec, b.Spec = limits(1), limits(2) }, keys: []string{"limits"}},
		{name: "arm on the skill axis", change: func(a, b *Side) { b.Arm = "without_skill" }, keys: []string{"arm"}},
		{name: "arm on the arm axis", change: func(a, b *Side) { b.Arm = "without_skill" }, axis: AxisArm},
		{name: "an older worker's results say nothing", change: func(a, b *Side) {
			set(b.Results, func(r *Record) { r.Model, r.JudgeModel, r.JudgePrompt, r.CaseDigest = "", "", "", "" })
		}},
		{name: "several at once", change: func(a, b *Side) {
			set(b.Results, func(r *Record) { r.Model = "model-z" })
			a.Spec, b.Spec = limits(1), limits(2)
		}, keys: []string{"agent model", "limits"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ra, rb := fixture()
			a, b := Side{Run: "r1", Results: RecordsOf(ra)}, Side{Run: "r2", Results: RecordsOf(rb)}
			tt.change(&a, &b)
			_, err := Compare(a, b, Options{Axis: tt.axis})
			var refused *RefusalError
			switch {
			case tt.keys == nil && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.keys == nil:
				return
			case !errors.As(err, &refused):
				t.Fatalf("error %v, want a refusal", err)
			}
			if !slices.Equal(refused.Keys(), tt.keys) {
				t.Errorf("keys %v, want %v", refused.Keys(), tt.keys)
			}
			for _, k := range tt.keys {
				if !strings.Contains(err.Error(), k+":") {
					t.Errorf("message does not name %q:\n%v", k, err)
				}
			}
		})
	}
}

func TestGates(t *testing.T) {
	steady := func(skill string, n int, va, vb pb.Verdict) (a, b []*pb.Result) {
		for i := range n {
			name := fmt.Sprintf("c%02d", i)
			a = append(a, epochs(skill, name, va)...)
			b = append(b, epochs(skill, name, vb)...)
		}
		return a, b
	}
	tests := []struct {
		name                string
		va, vb              pb.Verdict
		n                   int
		worse, unlessBetter bool // whether each gate fails
	}{
		{name: "significantly better", va: fail, vb: pass, n: 12, worse: false, unlessBetter: false},
		{name: "significantly worse", va: pass, vb: fail, n: 12, worse: true, unlessBetter: true},
		{name: "the same", va: pass, vb: pass, n: 12, worse: false, unlessBetter: true},
		{name: "worse but too few cases to say", va: pass, vb: fail, n: 3, worse: false, unlessBetter: true},
		{name: "all errored in B", va: pass, vb: errd, n: 12, worse: false, unlessBetter: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := steady("s", tt.n, tt.va, tt.vb)
			r, err := Compare(Side{Arm: "without_skill", Results: RecordsOf(a)}, Side{Arm: "with_skill", Results: RecordsOf(b)}, Options{Axis: AxisArm})
			if err != nil {
				t.Fatal(err)
			}
			if err := FailIfWorse(r); (err != nil) != tt.worse {
				t.Errorf("FailIfWorse: %v, want failing %v", err, tt.worse)
			}
			if err := FailUnlessBetter(r); (err != nil) != tt.unlessBetter {
				t.Errorf("FailUnlessBetter: %v, want failing %v", err, tt.unlessBetter)
			}
		})
	}
}

// TestReusedIsNoObservation: a changed-only run's reused cases are listed nowhere in the
// diff (their digest did not change), bar a case the other side lacks, and no reused epoch is
// counted as a pass in the statistics.
func TestReusedIsNoObservation(t *testing.T) {
	reused := pb.Verdict_VERDICT_REUSED
	var a, b []*pb.Result
	a = append(a, epochs("s", "was-passing", pass)...)
	b = append(b, epochs("s", "was-passing", reused)...)
	a = append(a, epochs("s", "was-failing", fail)...)
	b = append(b, epochs("s", "was-failing", reused)...)
	b = append(b, epochs("s", "only-b", reused)...)
	a = append(a, epochs("s", "ran", pass)...)
	b = append(b, epochs("s", "ran", fail)...)
	r, err := Compare(Side{Label: "a", Run: "a", Results: RecordsOf(a)}, Side{Label: "b", Run: "b", Results: RecordsOf(b)}, Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	ch := r.Changes
	if len(ch.NewlyFailing) != 1 || ch.NewlyFailing[0].Case != "ran" {
		t.Errorf("newly failing %+v, want only s/ran", ch.NewlyFailing)
	}
	if len(ch.Fixed)+len(ch.StillFailing)+len(ch.Undecided)+len(ch.Removed) != 0 {
		t.Errorf("reused cases listed: %+v", ch)
	}
	if len(ch.New) != 1 || ch.New[0].Case != "only-b" || ch.New[0].B != Reused {
		t.Errorf("new %+v, want s/only-b, reused in B", ch.New)
	}
	for _, c := range r.Comparison.Cases {
		if c.Case == "ran" {
			continue
		}
		if c.B.Passed != 0 || c.B.Decided != 0 || (c.B.Present && c.B.Skipped != 1) {
			t.Errorf("case %s side B %+v: a reused epoch must be no observation (skipped), never a pass", c.Case, c.B)
		}
	}
	if o := r.Comparison.Overall; o.Cases != 1 || o.B.PassRate != 0 || o.B.Skipped != 3 {
		t.Errorf("overall: %d paired cases, B pass rate %v, %d skipped; want only s/ran paired, rate 0, the 3 reused skipped", o.Cases, o.B.PassRate, o.B.Skipped)
	}
}
