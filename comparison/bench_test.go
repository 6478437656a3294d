package comparison

import (
	"io"
	"testing"

	"github.com/skillfleet/skillfleet/comparison/comparisontest"
)

// BenchmarkCompare100k goes from two runs' results (100,000 cases, 300,000 results each) to
// the rendered text and JSON reports. The budget is 2 s and 500 MB.
func BenchmarkCompare100k(b *testing.B) {
	ra, rb := comparisontest.Runs(100_000)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		r, err := Compare(Side{Run: "a", Results: RecordsOf(ra)}, Side{Run: "b", Results: RecordsOf(rb)}, Options{Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		if err := r.WriteText(io.Discard); err != nil {
			b.Fatal(err)
		}
		if err := r.WriteJSON(io.Discard); err != nil {
			b.Fatal(err)
		}
		if FailIfWorse(r) != nil && !r.Comparison.Overall.Tested {
			b.Fatal("nothing compared")
		}
	}
}
