package stats

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// benchArms builds two runs of n cases over n/100 skills, three epochs each, with a few
// errored epochs, as a nightly comparison of a large fleet would look.
func benchArms(n int) (a, b []Case) {
	r := rand.New(rand.NewPCG(1, 1))
	verdict := func(p float64) Verdict {
		switch x := r.Float64(); {
		case x < 0.02:
			return Errored
		case x < p:
			return Passed
		}
		return Failed
	}
	for i := range n {
		skill := fmt.Sprintf("skill-%04d", i%(n/100))
		name := fmt.Sprintf("case-%06d", i)
		p := r.Float64()
		var ea, eb []Epoch
		for range 3 {
			ea = append(ea, Epoch{Verdict: verdict(p), Tokens: 1000 + r.Int64N(2000), Cost: 0.01, Duration: time.Duration(r.Int64N(60e9))})
			eb = append(eb, Epoch{Verdict: verdict(p + 0.05), Tokens: 1200 + r.Int64N(2000), Cost: 0.012, Duration: time.Duration(r.Int64N(60e9))})
		}
		a = append(a, Case{Skill: skill, Case: name, Epochs: ea})
		b = append(b, Case{Skill: skill, Case: name, Epochs: eb})
	}
	return a, b
}

func BenchmarkCompare100k(b *testing.B) {
	armA, armB := benchArms(100_000)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		c, err := Compare(armA, armB, Options{Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		if !c.Overall.Tested {
			b.Fatal("nothing compared")
		}
	}
}

// BenchmarkSignFlipIntegers is the exact sign-flip test of one skill of 100 cases of ten
// epochs, as integerDeltas scales them (by 360: nine, eight or ten epochs decided).
func BenchmarkSignFlipIntegers(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	k := make([]int, 100)
	for i := range k {
		k[i] = (r.IntN(11) - r.IntN(11)) * 36
	}
	for b.Loop() {
		if _, ok := signFlipIntegers(k); !ok {
			b.Fatal("over the exact budget")
		}
	}
}
