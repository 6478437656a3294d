package main

import (
	"bytes"
	"fmt"
	"runtime"
	"runtime/pprof"
	"strings"

	"github.com/google/pprof/profile"
)

// The parts a profile of the dispatch benchmark is split into. Each sample is its innermost
// frame's that belongs to a part, so that skillfleet's handlers called by the client library
// count as skillfleet's, and the client library's publishing called by skillfleet as the
// library's.
const (
	partServer    = iota // the NATS server
	partClient           // the NATS client library
	partCollector        // the collector's background workers
	partOurs             // skillfleet's own code, with the allocations it makes and the collection they make it assist
	partOther            // the runtime's own: the scheduler, the network poller
	numParts
)

// partPrefixes are the function-name prefixes of each part's frames; partOther has none.
var partPrefixes = [numParts][]string{
	partServer:    {"github.com/nats-io/nats-server/"},
	partClient:    {"github.com/nats-io/nats.go"},
	partCollector: {"runtime.gcBgMarkWorker", "runtime.bgsweep", "runtime.bgscavenge"},
	partOurs:      {"github.com/skillfleet/skillfleet/", "main."},
}

// parts is one profile's samples summed by part, in the profile's unit.
type parts [numParts]int64

func (p parts) total() int64 {
	var t int64
	for _, v := range p {
		t += v
	}
	return t
}

// splitProfile sums the values of type typ (in unit) of p's samples by part.
func splitProfile(p *profile.Profile, typ, unit string) (parts, error) {
	idx := -1
	for i, st := range p.SampleType {
		if st.Type == typ && st.Unit == unit {
			idx = i
		}
	}
	if idx < 0 {
		return parts{}, fmt.Errorf("the profile has no %s/%s samples", typ, unit)
	}
	var out parts
	for _, s := range p.Sample {
		out[partOf(s)] += s.Value[idx]
	}
	return out, nil
}

// partOf is the part of the innermost frame of s that belongs to one.
func partOf(s *profile.Sample) int {
	for _, loc := range s.Location { // innermost first
		// A location's lines are its inlined calls, innermost first too.
		for _, line := range loc.Line {
			if line.Function == nil {
				continue
			}
			for part, prefixes := range partPrefixes {
				for _, prefix := range prefixes {
					if strings.HasPrefix(line.Function.Name, prefix) {
						return part
					}
				}
			}
		}
	}
	return partOther
}

// cpuSplit is where a measured run's CPU went, by part, and the share of the bytes it
// allocated that skillfleet's own code allocated. The dispatch benchmark uses it to say how
// far its ratio could go were skillfleet's own code to cost nothing.
type cpuSplit struct {
	CPU parts // nanoseconds
	// OurAllocs is skillfleet's own code's share of the bytes allocated.
	OurAllocs float64
}

// Bound is the ratio a run measured at ratio would reach with skillfleet's own part at zero
// and every other part as it was: the CPU bounds both sides' rates on this machine. With
// shrinkCollector, the collector's background work shrinks too, by skillfleet's share of the
// allocations (collection costs about in proportion to what is allocated, at the same live
// heap).
func (s cpuSplit) Bound(ratio float64, shrinkCollector bool) float64 {
	total := float64(s.CPU.total())
	left := total - float64(s.CPU[partOurs])
	if shrinkCollector {
		left -= float64(s.CPU[partCollector]) * s.OurAllocs
	}
	if left <= 0 {
		return 0
	}
	return ratio * total / left
}

// String gives each part per job of n; ours names the part of the profiled program's own code.
func (s cpuSplit) String(n int, ours string) string {
	us := func(v int64) string { return fmt.Sprintf("%.0f µs", float64(v)/1e3/float64(n)) }
	return fmt.Sprintf("NATS server %s, nats.go %s, the collector's background work %s, %s %s (%.0f%% of the bytes allocated), the runtime's scheduling and polling %s a job",
		us(s.CPU[partServer]), us(s.CPU[partClient]), us(s.CPU[partCollector]), ours, us(s.CPU[partOurs]), 100*s.OurAllocs, us(s.CPU[partOther]))
}

// profileCPU runs fn under the CPU profiler and returns where its CPU went and what share of
// the bytes it allocated skillfleet's own code did.
func profileCPU(fn func() error) (cpuSplit, error) {
	before, err := allocParts()
	if err != nil {
		return cpuSplit{}, err
	}
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		return cpuSplit{}, err
	}
	err = fn()
	pprof.StopCPUProfile()
	if err != nil {
		return cpuSplit{}, err
	}
	after, err := allocParts()
	if err != nil {
		return cpuSplit{}, err
	}
	p, err := profile.Parse(&buf)
	if err != nil {
		return cpuSplit{}, err
	}
	var s cpuSplit
	if s.CPU, err = splitProfile(p, "cpu", "nanoseconds"); err != nil {
		return cpuSplit{}, err
	}
	var allocated parts
	for i := range allocated {
		allocated[i] = after[i] - before[i]
	}
	if t := allocated.total(); t > 0 {
		s.OurAllocs = float64(allocated[partOurs]) / float64(t)
	}
	return s, nil
}

// allocParts is the bytes allocated so far by part, as the heap profile samples them. The
// profile is as of the last collection, so one is made first: without it, what was
// allocated since the previous one would be left out.
func allocParts() (parts, error) {
	runtime.GC()
	var buf bytes.Buffer
	if err := pprof.Lookup("allocs").WriteTo(&buf, 0); err != nil {
		return parts{}, err
	}
	p, err := profile.Parse(&buf)
	if err != nil {
		return parts{}, err
	}
	return splitProfile(p, "alloc_space", "bytes")
}
