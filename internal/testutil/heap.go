package testutil

import (
	"runtime"
	"sync"
	"time"
)

// PeakHeap samples the heap in use (runtime.MemStats.HeapInuse) every 10 ms, and once more
// when stopped, until stop is called; stop returns the largest sample above base (0 if none
// was). A benchmark takes base after a collection, before the work it measures.
func PeakHeap(base uint64) (stop func() uint64) {
	var (
		mu   sync.Mutex
		peak uint64
		done = make(chan struct{})
		wg   sync.WaitGroup
	)
	sample := func() {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		mu.Lock()
		if m.HeapInuse > base {
			peak = max(peak, m.HeapInuse-base)
		}
		mu.Unlock()
	}
	wg.Go(func() {
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				sample()
			}
		}
	})
	return func() uint64 {
		close(done)
		wg.Wait()
		sample()
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}
