package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/internal/text"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/skill"
	"github.com/skillfleet/skillfleet/suite"
	"github.com/skillfleet/skillfleet/suite/suitetest"
	verdictpkg "github.com/skillfleet/skillfleet/verdict"
)

// driveConfig is the measurement: a generated suite of command cases submitted through the
// coordinator's API and followed to its end.
type driveConfig struct {
	Coordinator, Token string
	// MetricsURL is the coordinator's /metrics (default: Coordinator + /metrics), asked with
	// MetricsToken when set.
	MetricsURL, MetricsToken string
	// NATSMonitor is the NATS server's monitoring URL (http://host:8222); empty: not measured.
	NATSMonitor string
	// Skills × Cases cases of Runs epochs each: Skills × Cases × Runs jobs. Kind is
	// "command" (a file per case) or "prompt" (every case of a skill in one file, so that a
	// suite of 100,000 cases stays under a bundle's file limit).
	Skills, Cases, Runs int
	Kind                string
	Name                string
	Deadline            time.Duration
	// Poll is how often the run's status is read; Sample how often memory is.
	Poll, Sample time.Duration
	// Work is where the suite is generated.
	Work string
	// Progress gets a line every few seconds while the run goes; nil: none.
	Progress io.Writer
}

func (c driveConfig) jobs() int { return c.Skills * c.Cases * c.Runs }

// measurement is what the driver measured of one run.
type measurement struct {
	cfg    driveConfig
	Status *pb.RunStatus
	// Submit is the POST's wall time (upload, check, plan, bundle stored); Run from its answer
	// to the first status read as final.
	Submit, Run time.Duration
	// SeenFinal is when the driver received the first status that read final, and Running
	// when it asked for the last one that did not, on its clock: the status became final
	// between the two.
	SeenFinal, Running time.Time
	Coord              memReading
	NATS               memReading
	// Jobs is when the in-process simulator's first job started and its last ended (zero
	// without one).
	FirstJob, LastJob time.Time
	// Answered is when the submission was answered.
	Answered time.Time
	// Results is what the run's report counted, read back through the API.
	Results resultTally
	// Stored is the results stream's state read from the NATS server after the run (with
	// NATSMonitor only); StoredErr why not.
	Stored    resultsStored
	StoredErr error
	// Pages are the times of a case's and the run's pages once it was final.
	Pages []pageTiming
}

// resultTally is a run's counted results as the API serves them.
type resultTally struct {
	Results, Jobs, Duplicates int
	ByVerdict                 map[pb.Verdict]int
	// FailedCases are the cases with a failed epoch: with the generated suite's confidence of
	// 1, the cases the report must count failed.
	FailedCases int
	// PassedButMadeToFail counts jobs counted passed that the in-process simulator failed.
	PassedButMadeToFail int
	// NewestFinished is the latest finished_at of a result: the worker stamps it just before
	// it publishes the result.
	NewestFinished time.Time
}

// drive generates the suite, submits it, follows the run to its end while sampling memory,
// and reads its results back; sim is the in-process simulator's executor, or nil.
func drive(ctx context.Context, cfg driveConfig, client *coordinator.Client, sim *simExecutor) (*measurement, error) {
	root := filepath.Join(cfg.Work, "suite")
	generate := func() error { return suitetest.GenerateCommandEpochs(root, cfg.Skills, cfg.Cases, cfg.Runs, "true") }
	if cfg.Kind == "prompt" {
		generate = func() error { return suitetest.GenerateRuns(root, cfg.Skills, cfg.Cases, cfg.Runs) }
	}
	if err := generate(); err != nil {
		return nil, err
	}
	tar, err := bundleOf(root)
	if err != nil {
		return nil, err
	}
	hc := &http.Client{Timeout: 10 * time.Second}
	peaks := &memPeaks{hc: hc, metricsURL: cfg.MetricsURL, metricsToken: cfg.MetricsToken, monitor: cfg.NATSMonitor}
	sctx, stopSampling := context.WithCancel(ctx)
	sampled := make(chan struct{})
	go func() { defer close(sampled); peaks.run(sctx, cfg.Sample) }()
	defer func() { stopSampling(); <-sampled }()

	if err := waitReady(ctx, hc, cfg.Coordinator, cfg.Progress); err != nil {
		return nil, err
	}
	m := &measurement{cfg: cfg}
	start := time.Now()
	st, err := client.Submit(ctx, tar, coordinator.SubmitOptions{Name: cfg.Name, Deadline: cfg.Deadline})
	if err != nil {
		return nil, fmt.Errorf("submit: %w", err)
	}
	answered := time.Now()
	m.Submit, m.Answered = answered.Sub(start), answered
	if int(st.GetTotalJobs()) != cfg.jobs() {
		return nil, fmt.Errorf("run %s has %d jobs, the suite %d", st.GetId(), st.GetTotalJobs(), cfg.jobs())
	}
	if m.Status, m.Running, err = follow(ctx, cfg, client, st); err != nil {
		return nil, err
	}
	m.SeenFinal = time.Now()
	m.Run = m.SeenFinal.Sub(answered)
	stopSampling()
	<-sampled
	m.Coord, m.NATS = peaks.readings()
	if sim != nil {
		m.FirstJob, m.LastJob = sim.span()
	}
	if cfg.NATSMonitor != "" {
		m.Stored, m.StoredErr = storedResults(ctx, hc, cfg.NATSMonitor)
	}
	// A case in the middle of the suite, as the generators name them.
	skill, caseName := fmt.Sprintf("cmd-%05d", cfg.Skills/2), fmt.Sprintf("case-%05d", cfg.Cases/2)
	if cfg.Kind == "prompt" {
		skill, caseName = fmt.Sprintf("runs-%05d", cfg.Skills/2), fmt.Sprintf("case_%05d", cfg.Cases/2)
	}
	// The viewer names a case by its agent too: the coordinator's default, read off a result.
	agent := ""
	_ = client.ResultsOf(ctx, m.Status.GetId(), coordinator.ResultsQuery{Skill: skill, Case: caseName}, func(r *pb.Result) error {
		agent = r.GetAgent()
		return errStop
	})
	m.Pages = timePages(ctx, cfg.Coordinator, cfg.Token, m.Status.GetId(), skill, caseName, agent)
	if m.Results, err = tallyResults(ctx, client, m.Status.GetId(), sim); err != nil {
		return nil, fmt.Errorf("reading the run's results back: %w", err)
	}
	return m, nil
}

// readyWait bounds the wait for a coordinator that is starting.
const readyWait = time.Minute

// waitReady waits for the coordinator's /readyz, so a driver started with it does not race it.
func waitReady(ctx context.Context, hc *http.Client, base string, progress io.Writer) error {
	url := strings.TrimRight(base, "/") + "/readyz"
	ctx, cancel := context.WithTimeout(ctx, readyWait)
	defer cancel()
	said := false
	for {
		err := getBody(ctx, hc, url, "", func(io.Reader) error { return nil })
		if err == nil {
			return nil
		}
		if !said && progress != nil {
			fmt.Fprintf(progress, "waiting for the coordinator: %v\n", err)
			said = true
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the coordinator at %s is not ready after %s: %w", base, readyWait, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// bundleOf bundles the suite at root as skillfleet submit does.
func bundleOf(root string) (*bytes.Buffer, error) {
	s := suite.Load([]string{root}, skill.Options{})
	if s.Diagnostics.HasErrors() {
		return nil, fmt.Errorf("generated suite: %v", s.Diagnostics[0])
	}
	var b bytes.Buffer
	if _, err := suite.WriteBundle(&b, s.Graph, s.Catalog.Skills()); err != nil {
		return nil, err
	}
	return &b, nil
}

// follow reads the run's status every cfg.Poll until it is final; running is when it asked
// for the last status that was not.
func follow(ctx context.Context, cfg driveConfig, client *coordinator.Client, st *pb.RunStatus) (final *pb.RunStatus, running time.Time, err error) {
	t := time.NewTicker(cfg.Poll)
	defer t.Stop()
	last, lastDone := time.Now(), int32(0)
	for {
		select {
		case <-ctx.Done():
			return nil, running, ctx.Err()
		case <-t.C:
		}
		asked := time.Now()
		cur, err := client.Status(ctx, st.GetId())
		if err != nil {
			return nil, running, fmt.Errorf("status of run %s: %w", st.GetId(), err)
		}
		if isFinal(cur.GetState()) {
			return cur, running, nil
		}
		running = asked
		if cfg.Progress != nil && time.Since(last) >= 5*time.Second {
			rate := float64(cur.GetDoneJobs()-lastDone) / time.Since(last).Seconds()
			fmt.Fprintf(cfg.Progress, "run %s: %d of %d jobs done (%.0f jobs/s)\n", cur.GetId(), cur.GetDoneJobs(), cur.GetTotalJobs(), rate)
			last, lastDone = time.Now(), cur.GetDoneJobs()
		}
	}
}

func isFinal(s pb.RunState) bool {
	return s != pb.RunState_RUN_STATE_RUNNING && s != pb.RunState_RUN_STATE_UNSPECIFIED
}

// tallyResults reads every result the run's report counts; sim, when the simulator ran in
// this process, says which jobs it failed.
func tallyResults(ctx context.Context, client *coordinator.Client, run string, sim *simExecutor) (resultTally, error) {
	t := resultTally{ByVerdict: map[pb.Verdict]int{}}
	// Hashes, not ids: a million job ids would cost the driver more memory than it measures.
	seed := maphash.MakeSeed()
	seen := make(map[uint64]struct{})
	failedCases := make(map[string]struct{})
	err := client.Results(ctx, run, func(r *pb.Result) error {
		t.Results++
		h := maphash.String(seed, r.GetJobId())
		if _, dup := seen[h]; dup {
			t.Duplicates++
			return nil
		}
		seen[h] = struct{}{}
		v, _ := verdictpkg.Counted(r)
		t.ByVerdict[v]++
		switch v {
		case pb.Verdict_VERDICT_FAILED:
			failedCases[r.GetSkill()+"/"+r.GetCaseName()] = struct{}{}
		case pb.Verdict_VERDICT_PASSED:
			if sim != nil && sim.madeToFail(run, r.GetJobId()) {
				t.PassedButMadeToFail++
			}
		}
		if f := r.GetFinishedAt().AsTime(); f.After(t.NewestFinished) {
			t.NewestFinished = f
		}
		return nil
	})
	t.Jobs, t.FailedCases = len(seen), len(failedCases)
	return t, err
}

// check says what is wrong with the run: not completed, a job without exactly one counted
// result, cases not all counted. The simulator's counts, when it ran in this process (sim
// non-nil), must match the report's failures.
func (m *measurement) check(sim *simExecutor) error {
	var errs []error
	st, planned := m.Status, m.cfg.jobs()
	// A curtailed run withdraws the epochs of cases settled without them: those published
	// come back skipped (or not at all, withdrawn before they were published), and a job in
	// flight when its case settled may still bring its verdict.
	jobs, withdrawn := planned, 0
	if st.GetCurtailed() {
		withdrawn = int(st.GetWithdrawnJobs())
		jobs -= withdrawn
	}
	if st.GetState() != pb.RunState_RUN_STATE_COMPLETED {
		errs = append(errs, fmt.Errorf("run %s ended %v: %s", st.GetId(), st.GetState(), st.GetReason()))
	}
	if int(st.GetDoneJobs()) != jobs || int(st.GetTotalJobs()) != jobs {
		errs = append(errs, fmt.Errorf("run %s: %d of %d jobs done, want %d (%d planned, %d withdrawn)", st.GetId(), st.GetDoneJobs(), st.GetTotalJobs(), jobs, planned, withdrawn))
	}
	if r := m.Results; r.Duplicates != 0 || r.Jobs < jobs || r.Jobs > planned || (withdrawn == 0 && r.Jobs != planned) {
		errs = append(errs, fmt.Errorf("run %s: %d counted results for %d distinct jobs (%d repeated), want one for each of %d (%d planned, %d withdrawn)", st.GetId(), r.Results, r.Jobs, r.Duplicates, jobs, planned, withdrawn))
	}
	c := st.GetCases()
	cases := m.cfg.Skills * m.cfg.Cases
	if sum := c.GetPassed() + c.GetFailed() + c.GetErrored() + c.GetTimedOut() + c.GetSkipped() + c.GetReused(); int(c.GetTotal()) != cases || int(sum) != cases {
		errs = append(errs, fmt.Errorf("run %s: %d cases counted of %d, want %d", st.GetId(), sum, c.GetTotal(), cases))
	}
	if got, want := int(c.GetFailed()), m.Results.FailedCases; got != want {
		errs = append(errs, fmt.Errorf("run %s: %d cases counted failed, but %d have a failed epoch", st.GetId(), got, want))
	}
	if sim != nil {
		// A job made to fail and withdrawn while it ran is stopped before its verdict counts.
		if got, want := m.Results.ByVerdict[pb.Verdict_VERDICT_FAILED], sim.failedJobs(st.GetId()); got > want || (withdrawn == 0 && got != want) || want-got > withdrawn {
			errs = append(errs, fmt.Errorf("run %s: the report counts %d failed jobs, the simulator failed %d (%d withdrawn)", st.GetId(), got, want, withdrawn))
		}
		if n := m.Results.PassedButMadeToFail; n > 0 {
			errs = append(errs, fmt.Errorf("run %s: %d jobs counted passed that the simulator failed", st.GetId(), n))
		}
	}
	return errors.Join(errs...)
}

// lastStored is when the run's newest result was stored, from the best source at hand, and
// what that source is.
func (m *measurement) lastStored() (time.Time, string) {
	if m.cfg.NATSMonitor != "" && m.StoredErr == nil && !m.Stored.Last.IsZero() {
		return m.Stored.Last, "the time the NATS server stored the results stream's newest message (/jsz last_ts, the server's clock)"
	}
	return m.Results.NewestFinished, "the newest result's finished_at (the worker's clock, stamped just before it publishes, so a little before it was stored)"
}

// writeText prints the measurement for the operator.
func (m *measurement) writeText(w io.Writer) {
	st := m.Status
	c := st.GetCases()
	fmt.Fprintf(w, "run %s: %v, %d jobs (%d skills × %d cases × %d runs); cases: %d passed, %d failed, %d errored\n",
		st.GetId(), st.GetState(), st.GetTotalJobs(), m.cfg.Skills, m.cfg.Cases, m.cfg.Runs, c.GetPassed(), c.GetFailed(), c.GetErrored())
	for _, row := range m.rows() {
		fmt.Fprintf(w, "  %-44s %s\n", row[0]+":", row[1])
	}
}

// rows are the measurement's figures, for the text and the Markdown.
func (m *measurement) rows() [][2]string {
	st, r := m.Status, m.Results
	jobs := m.cfg.jobs()
	coordWall := st.GetFinishedAt().AsTime().Sub(st.GetSpec().GetCreatedAt().AsTime())
	stored, how := m.lastStored()
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	rows := [][2]string{
		{"jobs", fmt.Sprintf("%s, each counted once: %d results for %d jobs; %d passed, %d failed, %d errored",
			text.Count(jobs, "job", "jobs"), r.Results, r.Jobs, r.ByVerdict[pb.Verdict_VERDICT_PASSED], r.ByVerdict[pb.Verdict_VERDICT_FAILED], r.ByVerdict[pb.Verdict_VERDICT_ERRORED])},
		{"submit (upload, check, plan, store)", fmt.Sprintf("%.2f s", m.Submit.Seconds())},
		{"run wall time", fmt.Sprintf("%.2f s, %.0f jobs/s (from the submission's answer to the first status read as final, read every %s; the coordinator's own created_at → finished_at: %.2f s)",
			m.Run.Seconds(), float64(jobs)/m.Run.Seconds(), m.cfg.Poll, coordWall.Seconds())},
		{"coordinator peak RSS", m.Coord.describe("process_resident_memory_bytes of " + m.cfg.MetricsURL)},
	}
	if !m.FirstJob.IsZero() {
		rows = append(rows, [2]string{"simulated jobs ran", fmt.Sprintf("from %.2f s to %.2f s after the submission's answer (a worker runs its first job once it has fetched and extracted the suite's bundle)",
			m.FirstJob.Sub(m.Answered).Seconds(), m.LastJob.Sub(m.Answered).Seconds())})
	}
	if m.cfg.NATSMonitor != "" {
		rows = append(rows, [2]string{"NATS server peak memory", m.NATS.describe("mem of " + strings.TrimRight(m.cfg.NATSMonitor, "/") + "/varz")})
	}
	// The status became final after the last poll that read it running was asked for, and
	// before the first that read it final was answered.
	lo, hi := ms(max(m.Running.Sub(stored), 0)), ms(m.SeenFinal.Sub(stored))
	rows = append(rows, [2]string{"last result stored → run final", fmt.Sprintf("%.0f–%.0f ms: the status, polled every %s, was last asked for and read running %.0f ms after the last result was stored and first received final %.0f ms after (the coordinator stamped finished_at %.1f ms after it, then kept the final report and status). Stored: %s",
		lo, hi, m.cfg.Poll, lo, hi, ms(st.GetFinishedAt().AsTime().Sub(stored)), how)})
	if m.StoredErr != nil {
		rows = append(rows, [2]string{"results stream", "not read: " + m.StoredErr.Error()})
	}
	for _, p := range m.Pages {
		rows = append(rows, [2]string{p.Name, p.describe()})
	}
	return rows
}

func (r memReading) describe(what string) string {
	if r.Samples == 0 {
		return fmt.Sprintf("not measured (%v)", r.Err)
	}
	return fmt.Sprintf("%s (%s at the start; %s of %s)", mib(r.Peak), mib(r.First), text.Count(r.Samples, "sample", "samples"), what)
}

// markdown is the block --out appends, for BENCHMARKS.md.
func (m *measurement) markdown(cmdline string, workers, slots int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Fleet simulator: %s, %d workers × %d slots (%s)\n\n", text.Count(m.cfg.jobs(), "job", "jobs"), workers, slots, time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, "`%s` on %d cores, %s; run %s ended %v.\n\n", cmdline, runtime.NumCPU(), runtime.Version(), m.Status.GetId(), m.Status.GetState())
	b.WriteString("| measure | value |\n| --- | --- |\n")
	for _, row := range m.rows() {
		fmt.Fprintf(&b, "| %s | %s |\n", row[0], strings.ReplaceAll(row[1], "|", "\\|"))
	}
	return b.String()
}

// appendFile appends s to path, creating it.
func appendFile(path, s string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.WriteString(f, s); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// errStop ends a read of results early once it has what it came for.
var errStop = errors.New("stop")
