package main

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/fleet"
	"github.com/skillfleet/skillfleet/internal/cmdutil"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/queue/queuebench"
	"github.com/skillfleet/skillfleet/sandbox"
	"github.com/skillfleet/skillfleet/skill/skilltest"
	"github.com/skillfleet/skillfleet/suite/suitetest"
	"github.com/skillfleet/skillfleet/worker"
)

// benchResult is one row of BENCHMARKS.md.
type benchResult struct {
	name, figure, target string
	met                  *bool
	detail               string
}

type bencher struct {
	stderr io.Writer
	// skillfleet is the user binary the validate and plan benchmarks run as child processes.
	skillfleet string
	work       string
	log        *zap.Logger
	// cpuProfile and memProfile, when set, are where the dispatch benchmark writes the CPU
	// profile of its measured skillfleet runs and the allocations made during them.
	cpuProfile, memProfile string
}

var benchNames = []string{"validate", "plan", "dispatch", "aggregate", "sandbox", "slots", "agent", "compare"}

func newCommand() *cobra.Command {
	var (
		out        string
		only       []string
		skillfleet string
		cpuProfile string
		memProfile string
	)
	cmd := &cobra.Command{
		Use:   "skillfleet-bench [--out BENCHMARKS.md] [--skillfleet PATH] [--only " + strings.Join(benchNames, ",") + "]",
		Short: "Measure skillfleet against its speed and memory targets and write BENCHMARKS.md",
		Long: `skillfleet-bench generates its inputs in a temporary directory and measures:
  validate   validate + deps over 10,000 generated skills (child processes: wall time, peak RSS)
  plan       plan of 100,000 prompt cases across 1,000 skills (child process: wall, peak RSS)
  dispatch   20,000 no-op jobs through coordinator, JetStream, workers and report, against a
             raw nats.go publisher and pull consumer moving the same number of messages
  aggregate  the heap while a run aggregates 100,000 results
  sandbox    per-job sandbox overhead, cold and warm, against raw 'docker run --rm IMAGE true'
  slots      worker throughput with 1, 2 and 4 slots on real sandboxes
  agent      the built-in agent's and the judge's overhead per job beyond the model's latency
skillfleet-bench fleet is the fleet simulator for capacity planning: simulated workers against
a real coordinator and NATS, and a measured run through them (see skillfleet-bench fleet --help).
The validate and plan benchmarks run the skillfleet binary (--skillfleet; default: the one
next to this binary, else on $PATH). The sandbox and slots benchmarks need Docker and the
sandbox image.`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, o := range only {
				if !slices.Contains(benchNames, o) {
					return cmdutil.Usage(fmt.Errorf("unknown benchmark %q (want %s)", o, strings.Join(benchNames, ", ")))
				}
			}
			bin, err := skillfleetBinary(skillfleet)
			if err != nil {
				return cmdutil.Usage(err)
			}
			work, err := os.MkdirTemp("", "skillfleet-bench-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(work)
			stderr := cmd.ErrOrStderr()
			b := &bencher{stderr: stderr, skillfleet: bin, work: work, log: zap.NewNop(), cpuProfile: cpuProfile, memProfile: memProfile}
			runs := map[string]func(context.Context) ([]benchResult, error){
				"validate": b.validate, "plan": b.plan, "dispatch": b.dispatch,
				"aggregate": b.aggregate, "sandbox": b.sandbox, "slots": b.slots, "agent": b.agentOverhead, "compare": b.compareRuns,
			}
			var results []benchResult
			for _, name := range benchNames {
				if len(only) > 0 && !slices.Contains(only, name) {
					continue
				}
				fmt.Fprintf(stderr, "bench %s ...\n", name)
				rs, err := runs[name](cmd.Context())
				if err != nil {
					return fmt.Errorf("bench %s: %w", name, err)
				}
				for _, r := range rs {
					fmt.Fprintf(stderr, "  %-40s %s\n", r.name, r.figure)
				}
				results = append(results, rs...)
			}
			doc := benchMarkdown(results, only)
			if out == "" || out == "-" {
				_, err = io.WriteString(cmd.OutOrStdout(), doc)
				return err
			}
			// The Go benchmarks' section is written by hand from `go test -bench` runs (each
			// with its command): kept as it is.
			if old, err := os.ReadFile(out); err == nil {
				if i := strings.Index(string(old), goBenchmarksHeading); i >= 0 {
					doc += "\n" + string(old[i:])
				}
			}
			return os.WriteFile(out, []byte(doc), 0o644)
		},
	}
	cmd.AddCommand(newFleetCommand(), newSavingsCommand())
	cmd.Flags().StringVar(&out, "out", "", "write the Markdown report to this file (default: stdout)")
	cmd.Flags().StringSliceVar(&only, "only", nil, "run only these benchmarks")
	cmd.Flags().StringVar(&cpuProfile, "cpuprofile", "", "write the CPU profile of the dispatch benchmark's measured skillfleet runs to this file")
	cmd.Flags().StringVar(&memProfile, "memprofile", "", "write the allocation profile of the dispatch benchmark's measured skillfleet runs to this file")
	cmd.Flags().StringVar(&skillfleet, "skillfleet", "", "the skillfleet binary the validate and plan benchmarks run (default: next to this binary, else on $PATH)")
	return cmd
}

// skillfleetBinary finds the user binary: the flag, else the skillfleet next to this binary
// (make build puts both in bin/), else the one on $PATH.
func skillfleetBinary(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if self, err := os.Executable(); err == nil {
		sibling := filepath.Join(filepath.Dir(self), "skillfleet")
		if fi, err := os.Stat(sibling); err == nil && fi.Mode().IsRegular() {
			return sibling, nil
		}
	}
	p, err := exec.LookPath("skillfleet")
	if err != nil {
		return "", fmt.Errorf("no skillfleet binary next to this one or on $PATH: build it (make build) or name it with --skillfleet")
	}
	return p, nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func verdict(ok bool) *bool { return &ok }

// child runs the skillfleet binary with args and returns its wall time and peak RSS in bytes.
func (b *bencher) child(args ...string) (time.Duration, int64, error) {
	cmd := exec.Command(b.skillfleet, args...)
	cmd.Stdout = io.Discard
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if cmd.ProcessState == nil {
		return 0, 0, err
	}
	ru, _ := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	var rss int64
	if ru != nil {
		rss = ru.Maxrss * 1024 // kilobytes on Linux
	}
	if code := cmd.ProcessState.ExitCode(); code > 1 || code < 0 {
		return wall, rss, fmt.Errorf("%s: exit %d: %s", strings.Join(args, " "), code, firstLine(stderr.String()))
	}
	return wall, rss, nil
}

func mib(n int64) string { return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20)) }

func (b *bencher) validate(context.Context) ([]benchResult, error) {
	root := filepath.Join(b.work, "skills-10k")
	if err := skilltest.GenerateRoot(root, 10000, 1); err != nil {
		return nil, err
	}
	vWall, vRSS, err := b.child("validate", root)
	if err != nil {
		return nil, err
	}
	dWall, dRSS, err := b.child("deps", root)
	if err != nil {
		return nil, err
	}
	wall, rss := vWall+dWall, max(vRSS, dRSS)
	return []benchResult{{
		name:   "validate + deps, 10,000 skills",
		figure: fmt.Sprintf("%.2f s, %s peak RSS", wall.Seconds(), mib(rss)),
		target: "< 2 s, < 200 MB", met: verdict(wall < 2*time.Second && rss < 200_000_000),
		detail: fmt.Sprintf("`skillfleet validate ROOT`: %.2f s, %s; `skillfleet deps ROOT`: %.2f s, %s (generated by skilltest.GenerateRoot(dir, 10000, 1): 0-3 requires per skill).",
			vWall.Seconds(), mib(vRSS), dWall.Seconds(), mib(dRSS)),
	}}, nil
}

func (b *bencher) plan(context.Context) ([]benchResult, error) {
	const skills, casesPerSkill = 1000, 100
	root := filepath.Join(b.work, "cases-100k")
	if err := suitetest.Generate(root, skills, casesPerSkill); err != nil {
		return nil, err
	}
	var walls []time.Duration
	var rss int64
	for range 3 {
		w, r, err := b.child("plan", "--format", "json", root)
		if err != nil {
			return nil, err
		}
		walls = append(walls, w)
		rss = max(rss, r)
	}
	slices.Sort(walls)
	wall := walls[1]
	return []benchResult{{
		name:   "plan, 100,000 cases across 1,000 skills",
		figure: fmt.Sprintf("%.2f s (median of 3), %s peak RSS", wall.Seconds(), mib(rss)),
		target: "< 3 s, < 300 MB", met: verdict(wall < 3*time.Second && rss < 300_000_000),
		detail: fmt.Sprintf("`skillfleet plan --format json ROOT`: runs %v. 100,100 cases (every third with runs: 3) become %d jobs; each case has three assertions, one a regex compiled at plan time.",
			walls, plannedJobs(skills, casesPerSkill)),
	}}, nil
}

// plannedJobs is how many jobs suitetest.Generate's suite plans into: every case once, the
// third with runs: 3 (cases 0, 3, 6, ...) twice more, and a command case for every tenth skill.
func plannedJobs(skills, casesPerSkill int) int {
	return skills*(casesPerSkill+2*((casesPerSkill+2)/3)) + (skills+9)/10
}

// noopExecutor passes every job without running anything. It exists only to measure the
// dispatch path (coordinator, JetStream, workers, aggregation) on its own.
type noopExecutor struct{}

func (noopExecutor) Execute(context.Context, *pb.Job, string) (*pb.Result, error) {
	return &pb.Result{Verdict: pb.Verdict_VERDICT_PASSED, Assertions: []*pb.AssertionResult{{Type: "exit_code", Passed: true, Message: "no-op executor (benchmark)"}}}, nil
}

// runTiming is the wall time of a run from its start (after the coordinator planned it) to its
// end, and the CPU this whole process spent and the heap objects it allocated meanwhile.
type runTiming struct {
	wall, cpu time.Duration
	allocs    uint64
}

// heapAllocs is how many heap objects this process has allocated so far.
func heapAllocs() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Mallocs
}

// profile starts the profiles asked for (--cpuprofile, --memprofile) of the measured run of
// round, one file per round (PATH.ROUND; go tool pprof merges several), and returns what
// stops them and what to call with the run's statuses. The allocation profile is written
// before (PATH.ROUND.base) and after the run, so that go tool pprof -base PATH.ROUND.base
// PATH.ROUND shows only the run's allocations, and once half of its n jobs are done
// (PATH.ROUND.mid), where -sample_index=inuse_space shows what the heap holds mid-run.
func (b *bencher) profile(round, n int) (stop func() error, during func(*pb.RunStatus), err error) {
	var cpu *os.File
	if b.cpuProfile != "" {
		f, err := os.Create(fmt.Sprintf("%s.%d", b.cpuProfile, round))
		if err != nil {
			return nil, nil, err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, nil, err
		}
		cpu = f
	}
	writeHeap := func(path string) error {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	if b.memProfile != "" {
		if err := writeHeap(fmt.Sprintf("%s.%d.base", b.memProfile, round)); err != nil {
			if cpu != nil {
				pprof.StopCPUProfile()
				cpu.Close()
			}
			return nil, nil, err
		}
		mid := false
		during = func(st *pb.RunStatus) {
			if !mid && int(st.GetDoneJobs()) >= n/2 {
				mid = true
				// Written after a collection, so that it shows what is live now.
				runtime.GC()
				if err := writeHeap(fmt.Sprintf("%s.%d.mid", b.memProfile, round)); err != nil {
					fmt.Fprintf(b.stderr, "  mid-run heap profile: %v\n", err)
				}
			}
		}
	}
	return func() error {
		var err error
		if cpu != nil {
			pprof.StopCPUProfile()
			err = cpu.Close()
		}
		if b.memProfile != "" {
			err = cmp.Or(err, writeHeap(fmt.Sprintf("%s.%d", b.memProfile, round)))
		}
		return err
	}, during, nil
}

// processCPU is the user and system CPU time this process has used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// submit uploads a generated suite to a local fleet's coordinator, which plans it and starts
// the run.
func submit(ctx context.Context, f *fleet.InProcess, root string) (*pb.RunStatus, error) {
	bundle, err := bundleOf(root)
	if err != nil {
		return nil, err
	}
	return f.Coordinator.Submit(ctx, bundle, &pb.RunSpec{Name: "bench"})
}

// runThrough submits a generated suite to a local fleet and waits for it to end.
// during, if not nil, is called with each status read while the run is going.
func (b *bencher) runThrough(ctx context.Context, f *fleet.InProcess, root string, during func(*pb.RunStatus)) (runTiming, *pb.RunStatus, error) {
	st, err := submit(ctx, f, root)
	if err != nil {
		return runTiming{}, nil, err
	}
	return waitRun(ctx, f, st, during)
}

// waitRun waits for the submitted run st to end; the timing starts when it is called.
func waitRun(ctx context.Context, f *fleet.InProcess, st *pb.RunStatus, during func(*pb.RunStatus)) (runTiming, *pb.RunStatus, error) {
	cpu, allocs := processCPU(), heapAllocs()
	start := time.Now()
	for {
		cur, err := f.Coordinator.Status(ctx, st.GetId())
		if err != nil {
			return runTiming{}, nil, err
		}
		if during != nil {
			during(cur)
		}
		if cur.GetState() != pb.RunState_RUN_STATE_RUNNING {
			return runTiming{wall: time.Since(start), cpu: processCPU() - cpu, allocs: heapAllocs() - allocs}, cur, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// jobMessages returns the n job messages a coordinator stores for the suite at root, headers
// included, as the server holds them: what the raw baseline moves in skillfleet's stead.
func (b *bencher) jobMessages(ctx context.Context, root string, n int) (queuebench.Msgs, error) {
	// The coordinator publishes jobs as workers free room: they are caught as they go out.
	f, err := fleet.StartInProcess(ctx, fleet.InProcessConfig{DataDir: filepath.Join(b.work, "dispatch-jobs"), Workers: 4, Slots: 16, Executor: noopExecutor{}, Log: b.log})
	if err != nil {
		return nil, err
	}
	defer f.Close(ctx)
	capture, err := queuebench.CaptureJobs(f.Server, n)
	if err != nil {
		return nil, err
	}
	if _, err := submit(ctx, f, root); err != nil {
		return nil, err
	}
	return capture.Wait(ctx, n, 2*time.Minute)
}

func (b *bencher) dispatch(ctx context.Context) ([]benchResult, error) {
	const n = 20000
	root := filepath.Join(b.work, "dispatch-20k")
	if err := suitetest.GeneratePrompts(root, 200, 100); err != nil {
		return nil, err
	}
	jobs, err := b.jobMessages(ctx, root, n)
	if err != nil {
		return nil, err
	}
	jobBytes := 0
	for _, m := range jobs {
		jobBytes += len(m.Data)
	}
	// Kept on disk between the raw baseline's rounds: as 20,000 messages with their header
	// maps they are some 40 MB of small objects the collector would mark in each of its
	// cycles during skillfleet's runs (and packed in memory, 16 MB of the process's memory
	// limit), a cost of the baseline's and not of skillfleet's.
	packed := filepath.Join(b.work, "dispatch-jobs.packed")
	if err := os.WriteFile(packed, queuebench.Pack(nil, jobs), 0o600); err != nil {
		return nil, err
	}
	var rawRates, tripRates, ourRates []float64
	// CPU per job (per message for raw) of the whole process, which holds the server too: all
	// three are bound by this machine's cores, so this is what sets their ratio.
	var rawCPU, tripCPU, ourCPU []time.Duration
	// Heap objects the process allocated per job during the measured run.
	var ourAllocs []float64
	for round := range 3 {
		srv, err := queue.StartEmbedded(queue.EmbeddedConfig{StoreDir: filepath.Join(b.work, fmt.Sprintf("raw-%d", round))}, b.log)
		if err != nil {
			return nil, err
		}
		nc, err := queuebench.Dial(srv, "bench-raw")
		if err != nil {
			srv.Shutdown()
			return nil, err
		}
		data, err := os.ReadFile(packed)
		var jobs queuebench.Msgs
		if err == nil {
			jobs, err = queuebench.Unpack(data)
		}
		if err != nil {
			nc.Close()
			srv.Shutdown()
			return nil, err
		}
		c0 := processCPU()
		raw, err := queuebench.RawMsgs(ctx, nc, jobs)
		c1 := processCPU()
		var trip queuebench.Stats
		if err == nil {
			trip, err = queuebench.RoundTrip(ctx, nc, n, jobBytes/n, 256)
		}
		rawCPU, tripCPU = append(rawCPU, (c1-c0)/n), append(tripCPU, (processCPU()-c1)/n)
		nc.Close()
		srv.Shutdown()
		if err != nil {
			return nil, err
		}
		rawRates = append(rawRates, raw.MsgsPerSec)
		tripRates = append(tripRates, trip.MsgsPerSec)

		f, err := fleet.StartInProcess(ctx, fleet.InProcessConfig{DataDir: filepath.Join(b.work, fmt.Sprintf("fleet-%d", round)), Workers: 4, Slots: 16, Executor: noopExecutor{}, Log: b.log})
		if err != nil {
			return nil, err
		}
		// The first run warms the workers' bundle caches, as an earlier run of a suite does;
		// the second is measured.
		var took runTiming
		var st *pb.RunStatus
		for k := range 2 {
			stop := func() error { return nil }
			var during func(*pb.RunStatus)
			if k == 1 {
				if stop, during, err = b.profile(round, n); err != nil {
					break
				}
			}
			took, st, err = b.runThrough(ctx, f, root, during)
			if perr := stop(); err == nil {
				err = perr
			}
			if err != nil {
				break
			}
		}
		_ = f.Close(ctx)
		if err != nil {
			return nil, err
		}
		if st.GetState() != pb.RunState_RUN_STATE_COMPLETED || st.GetDoneJobs() != n {
			return nil, fmt.Errorf("dispatch run ended %v with %d of %d jobs", st.GetState(), st.GetDoneJobs(), n)
		}
		ourRates = append(ourRates, n/took.wall.Seconds())
		ourCPU = append(ourCPU, took.cpu/n)
		ourAllocs = append(ourAllocs, float64(took.allocs)/n)
		fmt.Fprintf(b.stderr, "  round %d: skillfleet %.0f jobs/s (%.0f µs CPU, %.0f allocs a job); raw %.0f msgs/s; raw round trip %.0f jobs/s (%.0f µs CPU a job): %.2f× of it\n",
			round, ourRates[round], float64(ourCPU[round].Nanoseconds())/1e3, ourAllocs[round], rawRates[round], tripRates[round], float64(tripCPU[round].Nanoseconds())/1e3, ourRates[round]/tripRates[round])
	}
	ourSplit, tripSplit, err := b.dispatchSplit(ctx, root, n, jobBytes/n)
	if err != nil {
		return nil, err
	}
	slices.Sort(rawRates)
	slices.Sort(tripRates)
	slices.Sort(ourRates)
	raw, trip, ours := rawRates[1], tripRates[1], ourRates[1]
	bound, bound2 := ourSplit.Bound(ours/trip, false), ourSplit.Bound(ours/trip, true)
	for _, c := range [][]time.Duration{rawCPU, tripCPU, ourCPU} {
		slices.Sort(c)
	}
	slices.Sort(ourAllocs)
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	return []benchResult{{
		name: "dispatch, 20,000 no-op jobs",
		figure: fmt.Sprintf("%.0f jobs/s vs raw %.0f msgs/s (%.2f×); raw round trip %.0f jobs/s (skillfleet at %.2f× of it; %.2f–%.2f× were its own code free); CPU %.0f µs a job (round trip %.0f), %.0f allocations a job",
			ours, raw, ours/raw, trip, ours/trip, bound, bound2, us(ourCPU[1]), us(tripCPU[1]), ourAllocs[1]),
		target: "≥ 0.8× the raw round trip", met: verdict(ours >= 0.8*trip),
		detail: fmt.Sprintf("Median of 3 interleaved rounds. skillfleet: from the run's start (after upload and planning) to its end, through coordinator → JetStream → 4 workers × 16 slots → results → aggregation, with the workers' bundle caches warm from an earlier run of the suite; rounds %.0f jobs/s. Raw: queuebench.RawMsgs moving the same messages, the suite's 20,000 job messages as the coordinator stores them (subject, message id and expected-stream headers, %d-byte protobuf payloads on average), with a nats.go PublishMsgAsync publisher and a pull consumer fetching batches of 256 from a work-queue stream and acking each message; rounds %.0f msgs/s. Raw round trip: queuebench.RoundTrip, the least any dispatcher with durable results does per job (a job of that size stored with a message id, pulled in batches of 256, a 256-byte result stored with a message id, the job acked after its result, the result read by an ordered consumer) and nothing else, rounds %.0f jobs/s. A job is two stored messages where the raw baseline's is one, so the round trip itself comes to only %.2f× the raw rate; the embedded server, coordinator and workers share this machine's 2 cores, and all three are bound by them. CPU of the whole process (server included), medians: skillfleet %.0f µs per job, raw %.0f µs per message, raw round trip %.0f µs per job; half the raw rate needs at most %.0f µs per job. Where the CPU goes (a fourth run of each under the CPU profiler, after the measured rounds; each sample is its innermost frame's that belongs to the NATS server, nats.go, the collector's background workers or skillfleet, else the runtime's own): skillfleet's run %s; the round trip's %s. With skillfleet's own part at zero and the rest as measured, its ratio would be %.2f×; %.2f× if the collector's background work also shrank by skillfleet's share of the bytes allocated. The rest of the gap to the round trip is the server's and the client library's work for skillfleet's messages, and the collection of what they allocate.",
			ourRates, jobBytes/n, rawRates, tripRates, trip/raw, us(ourCPU[1]), us(rawCPU[1]), us(tripCPU[1]), 2*us(rawCPU[1]),
			ourSplit.String(n, "skillfleet's own code"), tripSplit.String(n, "the round trip's own code (queuebench)"), bound, bound2),
	}}, nil
}

// dispatchSplit profiles one more skillfleet run of the suite at root (after a warm-up run, as
// the measured ones) and one more raw round trip of n jobs of size bytes, and says where the
// CPU of each went.
func (b *bencher) dispatchSplit(ctx context.Context, root string, n, size int) (ours, trip cpuSplit, err error) {
	srv, err := queue.StartEmbedded(queue.EmbeddedConfig{StoreDir: filepath.Join(b.work, "split-raw")}, b.log)
	if err != nil {
		return ours, trip, err
	}
	nc, err := queuebench.Dial(srv, "bench-raw")
	if err == nil {
		trip, err = profileCPU(func() error {
			_, err := queuebench.RoundTrip(ctx, nc, n, size, 256)
			return err
		})
		nc.Close()
	}
	srv.Shutdown()
	if err != nil {
		return ours, trip, err
	}
	f, err := fleet.StartInProcess(ctx, fleet.InProcessConfig{DataDir: filepath.Join(b.work, "split-fleet"), Workers: 4, Slots: 16, Executor: noopExecutor{}, Log: b.log})
	if err != nil {
		return ours, trip, err
	}
	defer func() { _ = f.Close(ctx) }()
	if _, _, err := b.runThrough(ctx, f, root, nil); err != nil {
		return ours, trip, err
	}
	st, err := submit(ctx, f, root)
	if err != nil {
		return ours, trip, err
	}
	ours, err = profileCPU(func() error {
		_, end, err := waitRun(ctx, f, st, nil)
		if err == nil && (end.GetState() != pb.RunState_RUN_STATE_COMPLETED || end.GetDoneJobs() != int32(n)) {
			err = fmt.Errorf("dispatch run ended %v with %d of %d jobs", end.GetState(), end.GetDoneJobs(), n)
		}
		return err
	})
	return ours, trip, err
}

func (b *bencher) aggregate(ctx context.Context) ([]benchResult, error) {
	const n = 100000
	root := filepath.Join(b.work, "aggregate-100k")
	if err := suitetest.GeneratePrompts(root, 1000, 100); err != nil {
		return nil, err
	}
	f, err := fleet.StartInProcess(ctx, fleet.InProcessConfig{DataDir: filepath.Join(b.work, "aggregate"), Workers: 4, Slots: 16, Executor: noopExecutor{}, Log: b.log})
	if err != nil {
		return nil, err
	}
	defer f.Close(ctx)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var peak uint64
	last := time.Now()
	took, st, err := b.runThrough(ctx, f, root, func(*pb.RunStatus) {
		if time.Since(last) < 200*time.Millisecond {
			return
		}
		last = time.Now()
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapInuse)
	})
	if err != nil {
		return nil, err
	}
	if st.GetDoneJobs() != n {
		return nil, fmt.Errorf("aggregate run: %d of %d jobs", st.GetDoneJobs(), n)
	}
	time.Sleep(time.Second) // let the run's loop finish its bookkeeping and exit
	runtime.GC()
	runtime.ReadMemStats(&ms)
	after := ms.HeapInuse
	return []benchResult{{
		name:   "aggregate 100,000 results",
		figure: fmt.Sprintf("peak heap %s over a %s baseline; %s retained after the run", mib(int64(peak)), mib(int64(base)), mib(int64(after))),
		target: "bounded (streamed, not held twice)", met: verdict(after < base+256<<20),
		detail: fmt.Sprintf("Whole local process (embedded NATS server with its store caches, coordinator, 4 workers) running 100,000 no-op prompt jobs in %.1f s; heap in use sampled every 200 ms. What stays is O(cases), never O(results): the plan (about 0.5 KB per case), the aggregate (per case counters and capped evidence; report.BenchmarkBuilder100k: about 19 B per job) and the finished report, kept in a cache bounded to 200,000 cases. Results themselves stay in the JetStream stream.", took.wall.Seconds()),
	}}, nil
}

func (b *bencher) sandbox(ctx context.Context) ([]benchResult, error) {
	docker, err := sandbox.NewDockerClient(ctx)
	if err != nil {
		return nil, err
	}
	defer docker.Close()
	runner, err := sandbox.New(sandbox.Config{WorkerID: fmt.Sprintf("bench-%d", os.Getpid()), WarmPool: 1}, docker, b.log, nil)
	if err != nil {
		return nil, err
	}
	if err := runner.Start(ctx); err != nil {
		return nil, err
	}
	defer runner.Close(context.WithoutCancel(ctx))
	// Interleaved rounds: the engine's speed drifts over minutes, and each round compares
	// against raw runs taken just before it.
	const n, rounds = 20, 3
	type round struct {
		raw        pcts
		st         sandbox.Stats
		cold, warm float64 // critical-path p50 over raw p50
	}
	var all []round
	for range rounds {
		var raw []time.Duration
		for range n {
			start := time.Now()
			if out, err := exec.CommandContext(ctx, "docker", "run", "--rm", sandbox.DefaultImage, "true").CombinedOutput(); err != nil {
				return nil, fmt.Errorf("docker run: %v: %s", err, out)
			}
			raw = append(raw, time.Since(start))
		}
		st, err := sandbox.Overhead(ctx, runner, n)
		if err != nil {
			return nil, err
		}
		r := round{raw: percentiles(raw), st: st}
		r.cold = float64(st.Cold.Critical.P50) / float64(r.raw.P50)
		if st.Warm != nil {
			r.warm = float64(st.Warm.Critical.P50) / float64(r.raw.P50)
		}
		all = append(all, r)
	}
	// median returns the round with the median of key, and every round's key.
	median := func(key func(round) float64) (round, []string) {
		sorted := slices.SortedFunc(slices.Values(all), func(a, b round) int { return cmp.Compare(key(a), key(b)) })
		var each []string
		for _, r := range all {
			each = append(each, fmt.Sprintf("%.2f×", key(r)))
		}
		return sorted[len(sorted)/2], each
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/1e6) }
	mc, coldRounds := median(func(r round) float64 { return r.cold })
	cold, rawP := mc.st.Cold, mc.raw
	res := []benchResult{{
		name:   "sandbox cold path (create, start, exec, collect)",
		figure: fmt.Sprintf("p50 %s, p95 %s vs raw docker run p50 %s (%.2f×)", ms(cold.Critical.P50), ms(cold.Critical.P95), ms(rawP.P50), mc.cold),
		target: "≤ 1.2× raw", met: verdict(mc.cold <= 1.2),
		detail: fmt.Sprintf("Median of %d interleaved rounds of n=%d (rounds %s); its cold phases p50/p95: create %s/%s, start %s/%s, exec %s/%s, collect %s/%s, remove %s/%s (removal happens after the result is published). Raw `docker run --rm %s true` just before: p50 %s, p95 %s.",
			rounds, n, strings.Join(coldRounds, ", "), ms(cold.Create.P50), ms(cold.Create.P95), ms(cold.Start.P50), ms(cold.Start.P95), ms(cold.Exec.P50), ms(cold.Exec.P95),
			ms(cold.Collect.P50), ms(cold.Collect.P95), ms(cold.Remove.P50), ms(cold.Remove.P95), sandbox.DefaultImage, ms(rawP.P50), ms(rawP.P95)),
	}}
	if mw, warmRounds := median(func(r round) float64 { return r.warm }); mw.st.Warm != nil {
		warm := mw.st.Warm
		res = append(res, benchResult{
			name:   "sandbox warm path (pool pop, exec, collect)",
			figure: fmt.Sprintf("p50 %s, p95 %s (%.2f× raw p50)", ms(warm.Critical.P50), ms(warm.Critical.P95), mw.warm),
			target: "< 0.25× raw", met: verdict(mw.warm < 0.25),
			detail: fmt.Sprintf("Median of %d interleaved rounds of n=%d (rounds %s); its warm acquire p50 %s, exec p50 %s, total with removal p50 %s. Each pop starts the pool's refill, a container start that competes with the job's command for the engine and this machine's 2 cores.",
				rounds, n, strings.Join(warmRounds, ", "), warm.Acquire.P50, ms(warm.Exec.P50), ms(warm.Total.P50)),
		})
	}
	return res, nil
}

type pcts struct{ P50, P95 time.Duration }

func percentiles(ds []time.Duration) pcts {
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(q float64) time.Duration { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return pcts{at(0.50), at(0.95)}
}

func (b *bencher) slots(ctx context.Context) ([]benchResult, error) {
	docker, err := sandbox.NewDockerClient(ctx)
	if err != nil {
		return nil, err
	}
	defer docker.Close()
	const jobs = 24
	root := filepath.Join(b.work, "slots")
	if err := suitetest.GenerateCommands(root, 1, jobs, "true"); err != nil {
		return nil, err
	}
	var parts []string
	for _, slots := range []int{1, 2, 4} {
		runner, err := sandbox.New(sandbox.Config{WorkerID: fmt.Sprintf("bench-slots-%d-%d", os.Getpid(), slots), WarmPool: slots}, docker, b.log, nil)
		if err != nil {
			return nil, err
		}
		if err := runner.Start(ctx); err != nil {
			return nil, err
		}
		f, err := fleet.StartInProcess(ctx, fleet.InProcessConfig{DataDir: filepath.Join(b.work, fmt.Sprintf("slots-%d", slots)), Workers: 1, Slots: slots,
			Executor: worker.NewSandboxExecutor(runner, b.log), Log: b.log})
		if err != nil {
			return nil, err
		}
		took, st, err := b.runThrough(ctx, f, root, nil)
		_ = f.Close(ctx)
		_ = runner.Close(ctx)
		if err != nil {
			return nil, err
		}
		if st.GetCases().GetPassed() != jobs {
			return nil, fmt.Errorf("slots=%d: %d of %d jobs passed", slots, st.GetCases().GetPassed(), jobs)
		}
		parts = append(parts, fmt.Sprintf("%d slot(s): %.1f jobs/s", slots, jobs/took.wall.Seconds()))
	}
	return []benchResult{{
		name:   "worker throughput, real sandboxes",
		figure: strings.Join(parts, "; "),
		target: "(no target: recorded)",
		detail: fmt.Sprintf("%d command jobs (`true`) per setting on one worker with a warm pool as large as its slots, from submission to the run's end, on this machine (%d cores).", jobs, runtime.NumCPU()),
	}}, nil
}

// goBenchmarksHeading starts BENCHMARKS.md's section of Go benchmark figures, which make bench
// keeps.
const goBenchmarksHeading = "## Go benchmarks"

func benchMarkdown(results []benchResult, only []string) string {
	var b strings.Builder
	cmdline := "skillfleet-bench --out BENCHMARKS.md"
	if len(only) > 0 {
		cmdline += " --only " + strings.Join(only, ",")
	}
	dockerVersion, _ := exec.Command("docker", "version", "--format", "{{.Server.Version}}").Output()
	fmt.Fprintf(&b, "# Benchmarks\n\nProduced by `%s` (`make bench`) on %s: %d cores, %s, Docker %s.\n\n",
		cmdline, time.Now().UTC().Format("2006-01-02 15:04 UTC"), runtime.NumCPU(), runtime.Version(), strings.TrimSpace(string(dockerVersion)))
	b.WriteString("| benchmark | measured | target | met |\n| --- | --- | --- | --- |\n")
	for _, r := range results {
		met := "—"
		if r.met != nil {
			met = map[bool]string{true: "yes", false: "**no**"}[*r.met]
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.name, r.figure, r.target, met)
	}
	b.WriteString("\n## Details\n\n")
	for _, r := range results {
		fmt.Fprintf(&b, "- **%s.** %s\n", r.name, r.detail)
	}
	return b.String()
}
