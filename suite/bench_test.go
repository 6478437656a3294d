package suite

import (
	"runtime"
	"testing"

	"github.com/skillfleet/skillfleet/skill"
	"github.com/skillfleet/skillfleet/suite/suitetest"
)

// BenchmarkPlan100k loads and plans 100,000 prompt cases across 1,000 skills (plus 100 command
// cases): discovery, validation, requires resolution, case files, digests and job expansion.
func BenchmarkPlan100k(b *testing.B) {
	root := b.TempDir()
	if err := suitetest.Generate(root, 1000, 100); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		s := Load([]string{root}, skill.Options{})
		if s.Diagnostics.HasErrors() {
			b.Fatalf("generated suite has errors: %v", s.Diagnostics[0])
		}
		p, err := s.Plan(PlanOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if len(s.Cases) != 100_100 {
			b.Fatalf("%d cases, want 100100", len(s.Cases))
		}
		b.ReportMetric(float64(len(p.Jobs)), "jobs")
	}
}

// BenchmarkPlanHuge plans a suite that expands into 10,000,000 jobs (10,000 cases × runs: 1000)
// with and without a job cap: without it the plan holds every job; with the coordinator's
// default cap it is refused after counting, having made none.
func BenchmarkPlanHuge(b *testing.B) {
	root := b.TempDir()
	if err := suitetest.GenerateRuns(root, 100, 100, 1000); err != nil {
		b.Fatal(err)
	}
	s := Load([]string{root}, skill.Options{})
	if s.Diagnostics.HasErrors() {
		b.Fatalf("generated suite has errors: %v", s.Diagnostics[0])
	}
	for _, bc := range []struct {
		name string
		max  int
	}{{"uncapped", 0}, {"cap100k", 100_000}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p, err := s.Plan(PlanOptions{MaxJobs: bc.max})
				if bc.max > 0 {
					if err == nil {
						b.Fatal("want the plan refused")
					}
					continue
				}
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(len(p.Jobs)), "jobs")
			}
		})
	}
}

// BenchmarkPlanMemory measures what a plan keeps alive, as the coordinator keeps a run's plan
// for as long as the run lasts: the heap in use after a collection with only the plan held,
// less the heap in use before loading, per job and per case. The suite is the 100,000-case
// one of BenchmarkPlan100k (166,768 jobs) planned against two agents, as a fleet would.
func BenchmarkPlanMemory(b *testing.B) {
	root := b.TempDir()
	if err := suitetest.Generate(root, 1000, 100); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		before := heapInUse()
		p := planTwoAgents(b, root)
		held := heapInUse() - before
		b.ReportMetric(float64(held)/float64(len(p.Jobs)), "B/job")
		b.ReportMetric(float64(held)/float64(len(p.Cases)), "B/case")
		b.ReportMetric(float64(held)/(1<<20), "MiB")
		runtime.KeepAlive(p)
	}
}

// planTwoAgents loads and plans root against two agents, keeping nothing of the suite but
// what the plan holds.
func planTwoAgents(b *testing.B, root string) *Plan {
	s := Load([]string{root}, skill.Options{})
	if s.Diagnostics.HasErrors() {
		b.Fatalf("generated suite has errors: %v", s.Diagnostics[0])
	}
	p, err := s.Plan(PlanOptions{Agents: []string{"agent-a", "agent-b"}})
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// heapInUse is the heap in use after a full collection.
func heapInUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
