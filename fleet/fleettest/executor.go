// Package fleettest holds test doubles for tests that drive a whole fleet in one process.
package fleettest

import (
	"context"
	"hash/fnv"
	"sync"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// Executor passes every job except those of the case named Failing, without running anything.
// Jobs planned for an agent are held until the test releases that agent, so a test can catch a
// run while it is still going (open its event stream, cancel it) without sleeping.
type Executor struct {
	Failing string
	// PassProbability, when it names a job's case, makes the job pass with that probability
	// instead: the job passes when Uniform(Seed, its id) is below it. A job's outcome so
	// depends on its id only, never on the order jobs ran in, and a test can repeat it.
	PassProbability map[string]float64
	Seed            uint64
	// Cost is what each job's result says it spent on models (US dollars), for cost caps.
	Cost float64

	mu    sync.Mutex
	gates map[string]chan struct{}
}

func (e *Executor) gate(agent string) chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.gates == nil {
		e.gates = map[string]chan struct{}{}
	}
	g, ok := e.gates[agent]
	if !ok {
		g = make(chan struct{})
		e.gates[agent] = g
	}
	return g
}

// Release lets the held jobs of agent finish; releasing twice is harmless.
func (e *Executor) Release(agent string) {
	g := e.gate(agent)
	e.mu.Lock()
	defer e.mu.Unlock()
	select {
	case <-g:
	default:
		close(g)
	}
}

// ReleaseAll releases every agent seen so far.
func (e *Executor) ReleaseAll() {
	e.mu.Lock()
	agents := make([]string, 0, len(e.gates))
	for a := range e.gates {
		agents = append(agents, a)
	}
	e.mu.Unlock()
	for _, a := range agents {
		e.Release(a)
	}
}

// Execute implements worker.Executor.
func (e *Executor) Execute(ctx context.Context, job *pb.Job, _ string) (*pb.Result, error) {
	if a := job.GetAgent(); a != "" {
		select {
		case <-e.gate(a):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	passed := job.GetCaseName() != e.Failing
	if p, ok := e.PassProbability[job.GetCaseName()]; ok {
		passed = Uniform(e.Seed, job.GetId()) < p
	}
	v := pb.Verdict_VERDICT_PASSED
	if !passed {
		v = pb.Verdict_VERDICT_FAILED
	}
	res := &pb.Result{Verdict: v, Assertions: []*pb.AssertionResult{{Type: "exit_code", Passed: passed, Message: "scripted"}}}
	if e.Cost > 0 {
		res.Usage = &pb.Usage{PromptTokens: 1, Cost: e.Cost}
	}
	return res, nil
}

// Uniform is a number in [0, 1) made from seed and id alone: FNV-1a of the id, mixed with the
// seed by SplitMix64's finalizer, whose 53 high bits are the fraction.
func Uniform(seed uint64, id string) float64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(id))
	z := h.Sum64() ^ seed
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	return float64(z>>11) / (1 << 53)
}
