package coordinator

import (
	"fmt"
	"runtime"
	"testing"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/skill"
	"github.com/skillfleet/skillfleet/suite"
	"github.com/skillfleet/skillfleet/suite/suitetest"
)

// heapInUse is the live heap after two collections.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// planRun plans a generated suite of cases prompt cases of runs epochs against agents agents
// and makes the coordinator's run of it, as admission does.
func planRun(b testing.TB, cases, runs, agents int) *run {
	b.Helper()
	dir := b.TempDir()
	if err := suitetest.GenerateRuns(dir, cases/100, 100, runs); err != nil {
		b.Fatal(err)
	}
	s := suite.Load([]string{dir}, skill.Options{})
	names := make([]string, agents)
	for i := range names {
		names[i] = fmt.Sprintf("agent-%d", i)
	}
	plan, err := s.Plan(suite.PlanOptions{Agents: names})
	if err != nil {
		b.Fatal(err)
	}
	cat, err := catalogOf(s.Catalog.Skills(), plan.Old)
	if err != nil {
		b.Fatal(err)
	}
	return newRun(&pb.RunSpec{Id: "r1"}, plan, cat)
}

// BenchmarkRunMemory measures what the coordinator keeps of an unfinished run (its plan,
// catalog, aggregate and dispatch state) per case and per job: two suites of the same cases,
// one epoch and ten, give the two by difference. Run with -benchtime 1x.
func BenchmarkRunMemory(b *testing.B) {
	const cases = 20_000
	measure := func(runs int) float64 {
		before := heapInUse()
		r := planRun(b, cases, runs, 1)
		after := heapInUse()
		runtime.KeepAlive(r)
		return float64(after - before)
	}
	for range b.N {
		one, ten := measure(1), measure(10)
		perJob := (ten - one) / float64(9*cases)
		perCase := one/cases - perJob
		b.ReportMetric(perJob, "B/job")
		b.ReportMetric(perCase, "B/case")
		b.ReportMetric((perCase*100_000+perJob*1_000_000)/(1<<20), "MiB/1M-jobs-100k-cases")
	}
}
