package main

import (
	"bytes"
	"math"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

// stackProfile is a CPU profile with one sample of ns nanoseconds per stack, each stack
// listed innermost function first, as the runtime writes them.
func stackProfile(stacks map[string][]string, ns map[string]int64) *profile.Profile {
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:     10_000_000,
	}
	funcs := map[string]*profile.Function{}
	for key, stack := range stacks {
		var locs []*profile.Location
		for _, name := range stack {
			fn := funcs[name]
			if fn == nil {
				fn = &profile.Function{ID: uint64(len(funcs) + 1), Name: name}
				funcs[name] = fn
				p.Function = append(p.Function, fn)
			}
			loc := &profile.Location{ID: uint64(len(p.Location) + 1), Line: []profile.Line{{Function: fn}}}
			p.Location = append(p.Location, loc)
			locs = append(locs, loc)
		}
		p.Sample = append(p.Sample, &profile.Sample{Location: locs, Value: []int64{1, ns[key]}})
	}
	return p
}

func TestSplitProfile(t *testing.T) {
	p := stackProfile(map[string][]string{
		// The server's store path, reached from its own goroutine.
		"store": {"syscall.pwrite", "github.com/nats-io/nats-server/v2/server.(*fileStore).StoreMsg", "runtime.goexit"},
		// An allocation the server makes counts for the server, not the allocator.
		"server-alloc": {"runtime.mallocgc", "github.com/nats-io/nats-server/v2/server.(*client).readLoop"},
		"client":       {"github.com/nats-io/nats.go.(*Conn).processMsg", "github.com/nats-io/nats.go.(*Conn).readLoop"},
		// A handler of ours called by the client library's dispatcher is ours, and the
		// library's publishing called by us is the library's: the innermost frame that
		// belongs to a part decides.
		"callback":  {"google.golang.org/protobuf/proto.Unmarshal", "github.com/skillfleet/skillfleet/queue.(*puller).deliver", "github.com/nats-io/nats.go.(*Conn).waitForMsgs"},
		"publish":   {"github.com/nats-io/nats.go.(*Conn).publish", "github.com/skillfleet/skillfleet/queue.(*asyncPublisher).send"},
		"mark":      {"runtime.scanobject", "runtime.gcDrain", "runtime.gcBgMarkWorker"},
		"sweep":     {"runtime.sweepone", "runtime.bgsweep"},
		"ours":      {"github.com/skillfleet/skillfleet/coordinator.jobMessage", "github.com/skillfleet/skillfleet/coordinator.(*Coordinator).publish"},
		"assist":    {"runtime.gcAssistAlloc", "runtime.mallocgc", "github.com/skillfleet/skillfleet/worker.(*Worker).handle"},
		"scheduler": {"runtime.schedule", "runtime.mcall"},
	}, map[string]int64{
		"store": 40, "server-alloc": 2, "client": 7, "callback": 3, "publish": 6, "mark": 11, "sweep": 1, "ours": 20, "assist": 5, "scheduler": 4,
	})
	// Through the encoded form, as the runtime's profiles come.
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	parsed, err := profile.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	got, err := splitProfile(parsed, "cpu", "nanoseconds")
	if err != nil {
		t.Fatal(err)
	}
	want := parts{partServer: 42, partClient: 13, partCollector: 12, partOurs: 28, partOther: 4}
	if got != want {
		t.Errorf("split = %v, want %v", got, want)
	}
	if got.total() != 99 {
		t.Errorf("total = %d, want 99", got.total())
	}
	if _, err := splitProfile(parsed, "alloc_space", "bytes"); err == nil {
		t.Error("a CPU profile was split by bytes allocated")
	}
}

func TestCPUSplitBound(t *testing.T) {
	for _, tc := range []struct {
		name   string
		split  cpuSplit
		ratio  float64
		want   float64 // the collector as measured
		shrunk float64 // the collector shrunk by our share of the allocations
	}{
		// 0.45 × 200 / (200 − 50) = 0.6; 0.45 × 200 / (200 − 50 − 20 × 0.5) = 0.642857...,
		// worked by hand.
		{"a quarter ours", cpuSplit{CPU: parts{100, 20, 20, 50, 10}, OurAllocs: 0.5}, 0.45, 0.6, 0.45 * 200 / 140},
		{"nothing ours", cpuSplit{CPU: parts{partServer: 100, partCollector: 50}}, 0.5, 0.5, 0.5},
		// 0.3 × 120 / 40 = 0.9; with all the allocations ours, the collector's 10 go too.
		{"two thirds ours", cpuSplit{CPU: parts{partServer: 30, partCollector: 10, partOurs: 80}, OurAllocs: 1}, 0.3, 0.9, 1.2},
		{"all ours", cpuSplit{CPU: parts{partOurs: 10}}, 0.4, 0, 0},
		{"empty", cpuSplit{}, 0.4, 0, 0},
	} {
		if got := tc.split.Bound(tc.ratio, false); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: bound = %v, want %v", tc.name, got, tc.want)
		}
		if got := tc.split.Bound(tc.ratio, true); math.Abs(got-tc.shrunk) > 1e-12 {
			t.Errorf("%s: bound with the collector shrunk = %v, want %v", tc.name, got, tc.shrunk)
		}
	}
}

func TestCPUSplitString(t *testing.T) {
	s := cpuSplit{CPU: parts{84e6, 18e6, 37e6, 68e6, 5e6}, OurAllocs: 0.42}
	want := "NATS server 84 µs, nats.go 18 µs, the collector's background work 37 µs, skillfleet's own code 68 µs (42% of the bytes allocated), the runtime's scheduling and polling 5 µs a job"
	if got := s.String(1000, "skillfleet's own code"); got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
}

func TestProfileCPUSeesTheWork(t *testing.T) {
	// A busy loop of ours (a function of this package) that allocates: it lands in Ours. It
	// runs for 300 ms of CPU, not of the clock, so that a loaded machine still gives it a
	// few of the profiler's samples at 100 Hz (and the heap profile's, one per 512 KiB).
	var keep [][]byte
	split, err := profileCPU(func() error {
		start, deadline := processCPU(), time.Now().Add(time.Minute)
		for processCPU()-start < 300*time.Millisecond && time.Now().Before(deadline) {
			for range 64 {
				keep = append(keep[:0], make([]byte, 64<<10))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if split.CPU[partOurs] == 0 || split.CPU[partServer] != 0 || split.CPU[partClient] != 0 {
		t.Errorf("split of a busy loop = %v, want it in Ours", split.CPU)
	}
	if split.OurAllocs < 0.5 {
		t.Errorf("the busy loop's share of the bytes allocated = %v, want most", split.OurAllocs)
	}
}
