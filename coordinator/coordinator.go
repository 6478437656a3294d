// Package coordinator accepts suites, plans them into jobs on the JetStream queue, aggregates
// the results into a run's report, and keeps every run's state in JetStream so a restarted
// coordinator resumes where the last one stopped.
package coordinator

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/skillfleet/skillfleet/bundle"
	"github.com/skillfleet/skillfleet/diag"
	"github.com/skillfleet/skillfleet/internal/clock"
	"github.com/skillfleet/skillfleet/internal/tenant"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/report"
	"github.com/skillfleet/skillfleet/skill"
	"github.com/skillfleet/skillfleet/suite"
)

// Config tunes a coordinator.
type Config struct {
	// DataDir holds extracted bundles the coordinator plans from.
	DataDir string
	// DefaultDeadline bounds a run that asks for none.
	DefaultDeadline time.Duration
	// MaxAttempts is written into jobs; it must equal the job consumers' MaxDeliver.
	MaxAttempts int
	// StatusEvery throttles progress writes to the KV bucket.
	StatusEvery time.Duration
	// KeepBundles is how many extracted bundles the coordinator keeps on disk to plan from.
	KeepBundles int
	// KeepReportCases bounds the cases of finished runs' reports kept in memory.
	KeepReportCases int
	// Agents are the default agents prompt cases run against when a run names none.
	Agents []string
	// KnownAgents are the agent names a run may ask for; a run naming another is refused.
	// Empty means Agents; when both are empty no name is checked (the workers then report an
	// unknown agent's jobs errored).
	KnownAgents []string
	// MaxDeadline caps the deadline a run may ask for (and DefaultDeadline); 0 means 24 h.
	MaxDeadline time.Duration
	// MaxJobsPerRun refuses a suite that expands into more jobs; 0 means 100,000.
	MaxJobsPerRun int
	// MaxJobsPerPrincipal caps the jobs of one caller's unfinished runs (a token's name; ""
	// for anonymous callers), this submission's included; 0 means MaxJobsPerTeam.
	// MaxJobsPerTeam caps those of one team's (0 = 2 × MaxJobsPerRun; a team's line in Teams
	// may say otherwise), and MaxJobs those of every team's together (0 = 10 × MaxJobsPerRun):
	// the coordinator holds the plans of unfinished runs in memory. Runs resumed after a
	// restart count again: the run records its submitter and team.
	MaxJobsPerPrincipal, MaxJobsPerTeam, MaxJobs int
	// Teams are the teams' own shares and bounds (ParseTeams); a team without a line, and
	// every zero field of a line, takes TeamDefaults. TeamDefaults' zero fields are: weight 1,
	// no cap on running jobs, MaxJobsPerTeam jobs, and 512 MiB of results, 128 MiB of
	// documents stored apart and 256 MiB of bundles (an eighth of the streams' default sizes).
	Teams        map[string]TeamPolicy
	TeamDefaults TeamPolicy
	// EvictAbove is the share of the results or artifacts stream's limit above which finished
	// runs' results and documents are removed to make room (0 = 0.8), down to EvictTo of it
	// (0 = 0.6); EvictEvery is how often the streams are looked at besides when a run finishes
	// or is admitted (0 = 10 s).
	EvictAbove, EvictTo float64
	EvictEvery          time.Duration
	// FeedEvery is how often each lane's load is read for the fair share (0 = 100 ms).
	FeedEvery time.Duration
	// KeepAllEpochs runs every planned epoch of every case, even once its verdict is settled
	// (runs admitted from then on; see curtail.go). The verdicts are the same either way; it
	// is there to measure what curtailment saves.
	KeepAllEpochs bool
	// MaxBundleBytes caps an upload (the tar, headers included); 0 means
	// bundle.MaxBundleBytes plus 64 MiB of tar overhead.
	MaxBundleBytes int64
	// Retention is how long a finished run's record is kept: set it to the results stream's
	// max age, after which the run's report could not be rebuilt. Bundles no kept run refers
	// to go with them.
	Retention time.Duration
	// SweepEvery is how often retention is applied.
	SweepEvery time.Duration
	// RecoverEvery is how often the queue is searched for jobs that ran out of deliveries
	// without a result, besides at start. The MAX_DELIVERIES advisories that report them are
	// kept in a stream (queue.ExhaustedStream) and handled even when they were sent while no
	// coordinator ran; the search is the backstop for an advisory the stream lost (it keeps
	// 64 MiB of them) or one sent before the stream existed.
	RecoverEvery time.Duration
	// ScheduleEvery is how often schedules are checked for a due slot (0 = 30 s); a slot
	// fires at most this long after its time.
	ScheduleEvery time.Duration
	// MinScheduleInterval is the shortest gap a schedule's slots may have (0 = 5 minutes):
	// "@every 0s" would fire at every check and plan a run each time.
	MinScheduleInterval time.Duration
	// MaxSchedules caps the schedules the fleet keeps (0 = 200), and MaxSchedulesPerTeam
	// those of one team (0 = 20).
	MaxSchedules, MaxSchedulesPerTeam int
}

func (c *Config) defaults() error {
	if c.DataDir == "" {
		return errors.New("coordinator: a data directory is required")
	}
	if c.MaxDeadline <= 0 {
		c.MaxDeadline = 24 * time.Hour
	}
	if c.DefaultDeadline <= 0 {
		c.DefaultDeadline = min(6*time.Hour, c.MaxDeadline)
	}
	if c.DefaultDeadline > c.MaxDeadline {
		return fmt.Errorf("coordinator: the default deadline %s exceeds the maximum deadline %s", c.DefaultDeadline, c.MaxDeadline)
	}
	if c.MaxJobsPerRun <= 0 {
		c.MaxJobsPerRun = 100_000
	}
	if c.MaxJobsPerTeam <= 0 {
		c.MaxJobsPerTeam = 2 * c.MaxJobsPerRun
	}
	if c.MaxJobsPerPrincipal <= 0 {
		c.MaxJobsPerPrincipal = c.MaxJobsPerTeam
	}
	if c.MaxJobs <= 0 {
		c.MaxJobs = 10 * c.MaxJobsPerRun
	}
	def := &c.TeamDefaults
	def.Weight = max(def.Weight, 1)
	if def.MaxJobs <= 0 {
		def.MaxJobs = c.MaxJobsPerTeam
	}
	if def.MaxResultBytes <= 0 {
		def.MaxResultBytes = 512 << 20
	}
	if def.MaxArtifactBytes <= 0 {
		def.MaxArtifactBytes = 128 << 20
	}
	if def.MaxBundleBytes <= 0 {
		def.MaxBundleBytes = 256 << 20
	}
	if c.EvictAbove <= 0 || c.EvictAbove > 1 {
		c.EvictAbove = 0.8
	}
	if c.EvictTo <= 0 || c.EvictTo >= c.EvictAbove {
		c.EvictTo = min(0.6, c.EvictAbove*0.75)
	}
	if c.EvictEvery <= 0 {
		c.EvictEvery = 10 * time.Second
	}
	if c.FeedEvery <= 0 {
		c.FeedEvery = 100 * time.Millisecond
	}
	if c.MaxBundleBytes <= 0 {
		c.MaxBundleBytes = bundle.MaxBundleBytes + 64<<20
	}
	if len(c.KnownAgents) == 0 {
		c.KnownAgents = c.Agents
	}
	for _, a := range c.Agents {
		if len(c.KnownAgents) > 0 && !slices.Contains(c.KnownAgents, a) {
			return fmt.Errorf("coordinator: default agent %q is not among the known agents %q", a, c.KnownAgents)
		}
	}
	if c.MaxAttempts < 1 {
		c.MaxAttempts = 3
	}
	if c.StatusEvery <= 0 {
		c.StatusEvery = time.Second
	}
	if c.KeepBundles <= 0 {
		c.KeepBundles = 8
	}
	if c.KeepReportCases <= 0 {
		c.KeepReportCases = 200_000
	}
	if c.Retention <= 0 {
		c.Retention = queue.DefaultConfig().ResultsMaxAge
	}
	if c.SweepEvery <= 0 {
		c.SweepEvery = time.Hour
	}
	if c.RecoverEvery <= 0 {
		c.RecoverEvery = time.Minute
	}
	if c.ScheduleEvery <= 0 {
		c.ScheduleEvery = 30 * time.Second
	}
	if c.MinScheduleInterval <= 0 {
		c.MinScheduleInterval = 5 * time.Minute
	}
	if c.MaxSchedules <= 0 {
		c.MaxSchedules = 200
	}
	if c.MaxSchedulesPerTeam <= 0 {
		c.MaxSchedulesPerTeam = 20
	}
	return nil
}

// Deps are a coordinator's collaborators. A *queue.Topology is the Queue and the
// BundleStore, and its Runs() the RunStore.
type Deps struct {
	Queue    Queue
	Runs     RunStore
	Bundles  BundleStore
	Log      *zap.Logger
	Registry prometheus.Registerer
	// Audit keeps the audit log; nil keeps it in the coordinator's log only.
	Audit AuditLog
	// Clock times the run loop (deadlines, progress writes, retries); nil means the system
	// clock.
	Clock clock.Clock
	// Now stamps runs, results and events; nil means Clock.Now.
	Now func() time.Time
	// NewRunID makes run ids; nil means a sortable time-and-random id.
	NewRunID func() string
	// History, when set, is told every counted result and every finished run, to keep them
	// after the results stream has expired them.
	History History
	// Schedules keeps pushed suites and schedules; nil means Runs when it can
	// compare-and-swap (a queue.RunStore does), else the coordinator keeps none.
	Schedules ScheduleStore
	// Changes, when set, adds to a finished run's report what changed since the previous run
	// and the flaky labels; without it reports have no such section.
	Changes Changes
	// Flaky, when set, answers GET /v1/flaky; without it that route answers 404.
	Flaky Flaky
	// Reuse, when set, finds the passing runs a changed-only run's cells may reuse; without
	// it a changed-only run runs every cell.
	Reuse Reuse
}

// Reuse finds, for cell keys of a suite, the latest run other than exclude that passed every
// epoch of the cell under one cell digest since a time (history.Store.Reusable). epochs maps
// each key to its cell's number of epochs.
type Reuse interface {
	// Reusable finds, among team's runs of suite only, the latest pass of each cell key.
	Reusable(ctx context.Context, team, suite string, since time.Time, exclude string, epochs map[string]int) (map[string]Reused, error)
}

// Reused is a run a cell's verdict may be reused from.
type Reused struct {
	Run        string
	CellDigest string
	FinishedAt time.Time
}

// Changes reads the history a finished run's report is compared with. Annotate sets
// rep.Changes and the cases' flaky (and quarantine) marks; st is the run's final status. It is
// called once when the run finishes (its results may still be queued for the history: the
// implementation writes them first) and when an evicted report is rebuilt.
type Changes interface {
	Annotate(ctx context.Context, st *pb.RunStatus, rep *report.Report) error
}

// Flaky lists the flaky cells of a team's suite in a lane ("" for every lane), with their
// evidence, from that team's runs only.
type Flaky interface {
	FlakyCells(ctx context.Context, team, suite, lane string) ([]report.FlakyCell, error)
}

// History keeps results for months. Its methods are called on the run loop, so they must not
// wait for a database: queue the work and return, waiting only while the queue is full (a
// database slower than the results arrive slows the run loop rather than losing a result).
// They must not keep res or st, which the coordinator goes on using.
type History interface {
	// Record is called once per accepted result, including results replayed after a restart,
	// so the store must treat a (run, job) it already holds as the same row.
	Record(res *pb.Result, st *pb.RunStatus)
	// RunFinished is called with a run's final status.
	RunFinished(st *pb.RunStatus)
}

// noHistory is the History of a coordinator given none.
type noHistory struct{}

func (noHistory) Record(*pb.Result, *pb.RunStatus) {}
func (noHistory) RunFinished(*pb.RunStatus)        {}

// ErrNotFound is returned for a run id the coordinator does not know.
var ErrNotFound = errors.New("run not found")

// PlanError is returned when a submitted suite cannot be planned: it carries the diagnostics.
type PlanError struct {
	Diagnostics diag.Diagnostics
	Err         error
}

func (e *PlanError) Error() string {
	if e.Err != nil {
		return "suite cannot be planned: " + e.Err.Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "suite has %d error(s):", e.Diagnostics.Errors())
	n := 0
	for _, d := range e.Diagnostics {
		if d.Severity == diag.SeverityError && n < 10 {
			b.WriteString("\n  " + d.String())
			n++
		}
	}
	return b.String()
}

// Coordinator runs runs.
type Coordinator struct {
	cfg      Config
	queue    Queue
	runStore RunStore
	// schedules is nil on a coordinator that keeps no suites or schedules.
	schedules ScheduleStore
	bundles   BundleStore
	log       *zap.Logger
	now       func() time.Time
	clock     clock.Clock
	newID     func() string
	metrics   *metrics
	cache     *bundle.Cache
	pub       *queue.JobPublisher
	history   History
	changes   Changes
	flaky     Flaky
	reuse     Reuse

	base context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup

	// sweepMu keeps a retention sweep from deleting a bundle between a submission's upload
	// (which skips bundles already stored) and the run record that refers to it.
	sweepMu sync.RWMutex

	mu   sync.Mutex
	runs map[string]*run
	// admitted counts the jobs of unfinished runs, per submitter and per team.
	admitted  quotas
	auditLog  AuditLog
	finished  *reportCache
	stopWatch func()

	// feed is the lanes' fair share between teams; usage what each team holds of the shared
	// streams.
	feed  *feeder
	usage *usage
	// held is what each team holds of the bundle store (heldbundles.go); listings the read
	// of the stored runs that listings in progress share (listings.go).
	held     heldBundles
	listings listFlight
	// evictNow asks the eviction loop to look at the streams now.
	evictNow chan struct{}
}

// New prepares a coordinator; Start resumes unfinished runs.
func New(cfg Config, deps Deps) (*Coordinator, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	if deps.Queue == nil || deps.Runs == nil || deps.Bundles == nil {
		return nil, errors.New("coordinator: a queue, a run store and a bundle store are required")
	}
	if deps.Log == nil {
		deps.Log = zap.NewNop()
	}
	if deps.Clock == nil {
		deps.Clock = clock.Real{}
	}
	if deps.Now == nil {
		deps.Now = deps.Clock.Now
	}
	if deps.NewRunID == nil {
		deps.NewRunID = func() string { return newRunID(deps.Now()) }
	}
	if deps.History == nil {
		deps.History = noHistory{}
	}
	if deps.Schedules == nil {
		deps.Schedules, _ = deps.Runs.(ScheduleStore)
	}
	cache, err := bundle.NewCache(filepath.Join(cfg.DataDir, "bundles"), deps.Bundles, cfg.KeepBundles)
	if err != nil {
		return nil, err
	}
	m, err := newMetrics(deps.Registry)
	if err != nil {
		return nil, err
	}
	pub, err := deps.Queue.NewJobPublisher(queue.DefaultJobPublisherConfig())
	if err != nil {
		return nil, err
	}
	base, stop := context.WithCancel(context.Background())
	c := &Coordinator{
		cfg: cfg, queue: deps.Queue, runStore: deps.Runs, schedules: deps.Schedules, bundles: deps.Bundles, log: deps.Log, now: deps.Now, clock: deps.Clock, newID: deps.NewRunID,
		metrics: m, cache: cache, pub: pub, history: deps.History, changes: deps.Changes, flaky: deps.Flaky, reuse: deps.Reuse, base: base, stop: stop,
		runs: make(map[string]*run), admitted: newQuotas(), auditLog: deps.Audit, finished: newReportCache(cfg.KeepReportCases),
		usage: newUsage(), evictNow: make(chan struct{}, 1),
	}
	c.feed = newFeeder(c.policy)
	if deps.Registry != nil {
		if err := deps.Registry.Register(shareCollector{c}); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// refinishWithin is how recently a run must have finished for a starting coordinator to tell
// the history again: long enough for any restart after a crash, short enough that a start
// does not rewrite the history's whole past.
const refinishWithin = 7 * 24 * time.Hour

// Start resumes every run the KV bucket holds as unfinished, and starts watching for jobs that
// ran out of deliveries without a result.
func (c *Coordinator) Start(ctx context.Context) error {
	stop, err := c.queue.WatchExhausted(c.base, c.exhausted)
	if err != nil {
		return err
	}
	c.stopWatch = stop
	statuses, err := c.listStored(ctx)
	if err != nil {
		return err
	}
	for _, st := range statuses {
		if isFinal(st.GetState()) {
			c.keep(st)
			// A coordinator stopped between saving a run's final state and its history
			// writing it would leave the run running there for good ("what changed" skips
			// it): the history hears of the recently finished runs again. Idempotent.
			if f := st.GetFinishedAt(); f != nil && c.now().Sub(f.AsTime()) < refinishWithin {
				done := proto.Clone(st).(*pb.RunStatus)
				done.JobKey = nil
				c.history.RunFinished(done)
			}
			continue
		}
		c.log.Info("resuming run", zap.String("run", st.GetId()), zap.Int32("published", st.GetPublished()))
		r, err := c.prepare(ctx, st.GetSpec())
		if err != nil {
			c.log.Error("cannot resume run", zap.String("run", st.GetId()), zap.Error(err))
			st.State, st.Reason = pb.RunState_RUN_STATE_FAILED, "cannot resume: "+err.Error()
			st.FinishedAt = timestamppb.New(c.now())
			if err := c.save(ctx, st, st.GetJobKey()); err != nil {
				return err
			}
			continue
		}
		// Its prompt jobs name the catalog by digest: stored at admission, or now for a run
		// an older coordinator admitted.
		if err := c.storeCatalog(ctx, r); err != nil {
			return fmt.Errorf("resume run %s: %w", st.GetId(), err)
		}
		r.key = st.GetJobKey()
		if len(r.key) == 0 {
			// A run started by a coordinator older than job secrets. The results it stored
			// were accepted under its rules and are replayed as they are; its queued jobs
			// carry no secret, so their new results are refused (fail closed) and they end at
			// the deadline; jobs published from now on carry secrets of a new key.
			c.log.Warn("run has no job key; new results of jobs it already queued will be refused", zap.String("run", st.GetId()))
			r.legacy = true
			if r.key, err = newJobKey(); err != nil {
				return err
			}
		}
		st.JobKey = nil
		r.status = st
		// Its unfinished jobs count against its submitter's limit again, as before the
		// restart (admitted then: never refused now).
		r.principal, r.reserved = st.GetSubmittedBy(), max(int(st.GetTotalJobs()-st.GetDoneJobs()), 0)
		c.mu.Lock()
		c.admitted.byName[r.principal] += r.reserved
		c.admitted.byTeam[tenant.Team(st.GetSpec().GetTeam())] += r.reserved
		c.mu.Unlock()
		c.launch(r)
	}
	c.wg.Add(6)
	go func() {
		defer c.wg.Done()
		c.warmReports(c.base, statuses)
	}()
	go func() {
		defer c.wg.Done()
		c.feedLoop(c.base)
	}()
	go func() {
		defer c.wg.Done()
		c.evictLoop(c.base)
	}()
	go func() {
		defer c.wg.Done()
		c.sweepLoop(c.base)
	}()
	go func() {
		defer c.wg.Done()
		c.scheduleLoop(c.base)
	}()
	go func() {
		defer c.wg.Done()
		c.recoverLoop(c.base)
	}()
	return nil
}

// recoverLoop records exhausted jobs whose advisory was missed: at start and then every
// RecoverEvery until ctx is done.
func (c *Coordinator) recoverLoop(ctx context.Context) {
	t := time.NewTicker(c.cfg.RecoverEvery)
	defer t.Stop()
	for {
		if _, err := c.RecoverExhausted(ctx); err != nil && ctx.Err() == nil {
			c.log.Warn("searching the queue for exhausted jobs failed; the next search tries again", zap.Error(err))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// RecoverExhausted records as errored, exactly as the advisory handler does, every job that ran
// out of deliveries and is still queued (Queue.ExhaustedJobs), and returns how many it
// found. A job the advisory handler records at the same time gets a second errored result, which
// the run counts as a duplicate.
func (c *Coordinator) RecoverExhausted(ctx context.Context) (int, error) {
	jobs, undecided, err := c.queue.ExhaustedJobs(ctx)
	if err != nil {
		return 0, err
	}
	for _, x := range jobs {
		c.exhausted(x)
	}
	if len(jobs) > 0 {
		c.log.Warn("recovered jobs that ran out of deliveries without a recorded result", zap.Int("jobs", len(jobs)))
	}
	if undecided > 0 {
		c.log.Debug("exhausted-job search skipped lanes with jobs pending", zap.Int("pending", undecided))
	}
	return len(jobs), nil
}

// Close stops every run loop without finishing the runs: a coordinator started later on the
// same JetStream resumes them.
func (c *Coordinator) Close(ctx context.Context) error {
	if c.stopWatch != nil {
		c.stopWatch()
	}
	c.stop()
	c.wg.Wait()
	return c.pub.Close(ctx)
}

// Submit admits a suite bundle and starts its run. The upload is spooled to disk with no lock
// held (a slow client delays only itself), extracted (which validates it), planned and checked
// against the admission limits; only a suite that passes all of them is stored, so a refused
// one (a *PlanError, or an *http.MaxBytesError for an oversized upload) leaves nothing in the
// object store, the KV bucket or the data directory.
func (c *Coordinator) Submit(ctx context.Context, bundle io.Reader, spec *pb.RunSpec) (*pb.RunStatus, error) {
	if err := c.checkSpec(spec); err != nil {
		return nil, err
	}
	stage, err := os.MkdirTemp(c.cache.Dir(), ".tmp-submit-")
	if err != nil {
		return nil, fmt.Errorf("stage upload: %w", err)
	}
	defer func() { _ = os.RemoveAll(stage) }()
	tarPath := filepath.Join(stage, "bundle.tar")
	digest, err := spool(ctx, bundle, tarPath, c.cfg.MaxBundleBytes)
	if err != nil {
		return nil, err
	}
	tree := filepath.Join(stage, "tree")
	if err := extract(tarPath, tree); err != nil {
		return nil, &PlanError{Err: err}
	}

	spec = proto.Clone(spec).(*pb.RunSpec)
	spec.Id = c.newID()
	spec.BundleDigest = digest
	spec.CreatedAt = timestamppb.New(c.now())
	if spec.Priority == pb.Priority_PRIORITY_UNSPECIFIED {
		spec.Priority = pb.Priority_PRIORITY_ON_DEMAND
	}
	r, err := c.planIn(tree, spec, c.cfg.MaxJobsPerRun)
	if err != nil {
		return nil, err
	}
	return c.admit(ctx, r, tarPath, tree)
}

// admit applies the admission limits a plan is checked against (job sizes, the principal's
// jobs), and then stores the bundle at tarPath (none: it is stored already), keeps its extracted tree (if any) and starts
// the run. A refused run leaves nothing behind.
func (c *Coordinator) admit(ctx context.Context, r *run, tarPath, tree string) (*pb.RunStatus, error) {
	spec, digest := r.spec, r.spec.GetBundleDigest()
	if err := c.checkJobSizes(r); err != nil {
		return nil, err
	}
	if err := c.checkResultsRoom(ctx); err != nil {
		return nil, err
	}
	p := tenant.Of(ctx)
	if !p.CanChange(p.Team) {
		c.audit(p, "", "submit", "suite/"+spec.GetName(), outcomeDenied, "role "+p.Role.String())
		return nil, fmt.Errorf("submit: %w (%s)", ErrForbidden, p.Role)
	}
	// The run is its submitter's team's, whatever the request said.
	spec.Team = tenant.Team(p.Team)
	r.team = spec.Team
	if err := c.checkTeamRoom(spec.Team); err != nil {
		c.audit(p, "", "submit", "suite/"+spec.GetName(), outcomeRefused, err.Error())
		return nil, err
	}
	if tarPath != "" {
		if err := c.checkBundleRoom(ctx, spec.Team, digest, tarPath); err != nil {
			c.audit(p, "", "submit", "suite/"+spec.GetName(), outcomeRefused, err.Error())
			return nil, err
		}
	}
	if err := c.reserve(p.Name, spec.Team, len(r.plan.Jobs)); err != nil {
		c.audit(p, "", "submit", "suite/"+spec.GetName(), outcomeRefused, err.Error())
		return nil, err
	}
	principal := p.Name
	r.principal, r.reserved = principal, len(r.plan.Jobs)
	launched := false
	defer func() {
		if !launched {
			c.unreserve(r)
		}
	}()

	// Admitted: from here on the submission is stored. The sweep lock keeps a retention sweep
	// from deleting the bundle (which PutBundleFile skips when it is stored already) before
	// the run record refers to it.
	c.sweepMu.RLock()
	defer c.sweepMu.RUnlock()
	if tarPath != "" { // "": a pushed suite's bundle, stored already
		stored, err := c.bundles.PutBundleFile(ctx, tarPath)
		if err != nil {
			return nil, fmt.Errorf("store bundle: %w", err)
		}
		if stored != digest {
			return nil, fmt.Errorf("store bundle: the spooled upload changed: hashed %s, stored %s", digest, stored)
		}
	}
	if err := c.storeCatalog(ctx, r); err != nil {
		return nil, err
	}
	if tree != "" {
		if err := c.cache.Adopt(digest, tree); err != nil {
			// Only a cache miss later: the bundle is stored, so Get extracts it again.
			c.log.Warn("keeping the extracted bundle failed", zap.String("bundle", digest), zap.Error(err))
		}
	}
	var err error
	if r.key, err = newJobKey(); err != nil {
		return nil, err
	}
	r.status = &pb.RunStatus{
		Id: spec.Id, State: pb.RunState_RUN_STATE_RUNNING, Spec: spec,
		TotalJobs: int32(len(r.plan.Jobs)), Cases: r.builder.Counts(), UpdatedAt: spec.CreatedAt,
		SubmittedBy: principal,
		// A compared run runs every epoch of both arms, which its comparison pairs, but for
		// its skills whose comparison is group-sequential (groupseq.go).
		Curtailed: !c.cfg.KeepAllEpochs && (r.plan.Baseline == "" || groupSequential(r.plan)),
	}
	if err := c.save(ctx, r.status, r.key); err != nil {
		return nil, err
	}
	if tarPath != "" {
		if fi, err := os.Stat(tarPath); err == nil {
			c.held.add(spec.Team, digest, fi.Size())
		}
	}
	c.metrics.submitted.Inc()
	c.log.Info("run submitted", zap.String("run", spec.Id), zap.String("bundle", digest), zap.Int("jobs", len(r.plan.Jobs)))
	c.audit(p, "", "submit", "run/"+spec.Id, outcomeOK, fmt.Sprintf("suite %s, %d jobs", spec.GetName(), len(r.plan.Jobs)))
	st := r.snapshot()
	launched = true
	c.launch(r)
	return st, nil
}

// prepare plans a run from its stored bundle: a run admitted earlier, resumed or replayed, so
// the admission limits (which may have changed since) are not applied again.
func (c *Coordinator) prepare(ctx context.Context, spec *pb.RunSpec) (*run, error) {
	dir, release, err := c.cache.Get(ctx, spec.GetBundleDigest())
	if err != nil {
		return nil, &PlanError{Err: err}
	}
	defer release()
	return c.planIn(dir, spec, 0)
}

// planIn loads the suite extracted in dir and plans spec's run from it, refusing more than
// maxJobs jobs when maxJobs is positive.
func (c *Coordinator) planIn(dir string, spec *pb.RunSpec, maxJobs int) (*run, error) {
	s := suite.Load([]string{dir}, skill.Options{})
	if s.Diagnostics.HasErrors() {
		return nil, &PlanError{Diagnostics: relativeTo(dir, s.Diagnostics)}
	}
	agents := spec.GetAgents()
	if len(agents) == 0 {
		agents = c.cfg.Agents
	}
	base := suite.Baseline{Arm: suite.Arm(spec.GetBaseline())}
	if base.Arm == suite.ArmOldSkill {
		// The submitter put the old versions in the bundle; what it lacks gets no old_skill jobs.
		base.Old = suite.LoadOld([]string{filepath.Join(dir, bundle.BaselineDir)}, skill.Options{})
	}
	plan, err := s.Plan(suite.PlanOptions{
		Filter:   suite.Filter{Skills: spec.GetSkillGlobs(), Cases: spec.GetCaseGlobs(), Kinds: suite.Kinds(spec.GetCaseKinds())},
		Agents:   agents,
		MaxJobs:  maxJobs,
		Baseline: base,
	})
	if err := planError(dir, plan, err); err != nil {
		return nil, err
	}
	for _, pc := range plan.Cases {
		pc.File = relTo(dir, pc.File)
	}
	// The catalog is what the extracted bundle holds, which may be more than the plan selected.
	cat, err := catalogOf(s.Catalog.Skills(), plan.Old)
	if err != nil {
		return nil, err
	}
	return newRun(spec, plan, cat), nil
}

// planError turns what planning returned into the admission's answer: nil for a plan with
// jobs, else a *PlanError, with file names relative to dir.
func planError(dir string, plan *suite.Plan, err error) error {
	var tooMany *suite.TooManyJobsError
	if errors.As(err, &tooMany) {
		return &PlanError{Diagnostics: diag.Diagnostics{{
			Rule: "plan.maxJobs", Severity: diag.SeverityError, File: relTo(dir, tooMany.File), Line: tooMany.Line,
			Message: fmt.Sprintf("the suite expands into more than %d jobs, this coordinator's limit per run (cases × runs × agents; case %s crossed it)", tooMany.Max, tooMany.Case),
		}}}
	}
	if err != nil {
		return &PlanError{Err: err}
	}
	if len(plan.Jobs) == 0 {
		return &PlanError{Err: errors.New("no test cases matched")}
	}
	return nil
}

func (c *Coordinator) launch(r *run) {
	c.mu.Lock()
	c.runs[r.id] = r
	c.mu.Unlock()
	c.metrics.active.Inc()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer c.metrics.active.Dec()
		defer c.unreserve(r)
		c.loop(c.base, r)
	}()
}

// Status returns a run's current state.
func (c *Coordinator) Status(ctx context.Context, id string) (*pb.RunStatus, error) {
	if r := c.active(id); r != nil {
		if err := readable(ctx, r.spec.GetTeam()); err != nil {
			return nil, err
		}
		return r.snapshot(), nil
	}
	st, err := c.load(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := readable(ctx, st.GetSpec().GetTeam()); err != nil {
		return nil, err
	}
	return public(st, nil)
}

// Cancel stops a run: its queued jobs are removed, unfinished cases are skipped. Cancelling a
// finished run changes nothing and returns its status.
func (c *Coordinator) Cancel(ctx context.Context, id string) (*pb.RunStatus, error) {
	if err := c.mayChange(ctx, id, "cancel"); err != nil {
		return nil, err
	}
	p := tenant.Of(ctx)
	r := c.active(id)
	if r == nil {
		st, err := public(c.load(ctx, id))
		if err == nil {
			c.audit(p, st.GetSpec().GetTeam(), "cancel", "run/"+id, outcomeOK, "already "+st.GetState().String())
		}
		return st, err
	}
	c.audit(p, r.spec.GetTeam(), "cancel", "run/"+id, outcomeOK, "")
	select {
	case r.cancel <- "cancelled on request":
	default:
	}
	select {
	case <-r.finished:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return r.snapshot(), nil
}

// Subscribe returns a run's live events; the channel closes when the run ends.
func (c *Coordinator) Subscribe(ctx context.Context, id string) (<-chan *pb.Event, func(), error) {
	if err := c.mayRead(ctx, id); err != nil {
		return nil, nil, err
	}
	if r := c.active(id); r != nil {
		ch, cancel := r.events.subscribe(256)
		return ch, cancel, nil
	}
	st, err := public(c.load(ctx, id))
	if err != nil {
		return nil, nil, err
	}
	ch := make(chan *pb.Event, 1)
	ch <- &pb.Event{RunId: id, At: st.GetUpdatedAt(), Payload: &pb.Event_Status{Status: st}}
	close(ch)
	return ch, func() {}, nil
}

// Report returns a run's report: live for an active run, final for a finished one. A finished
// run's report is the one stored when it finished (see storeReport), rebuilt from its results
// only for a run that stored none.
func (c *Coordinator) Report(ctx context.Context, id string) (report.Report, error) {
	if err := c.mayRead(ctx, id); err != nil {
		return report.Report{}, err
	}
	// The final report first: it is kept before the run leaves the active ones.
	if rep, ok := c.finished.get(id); ok {
		return rep, nil
	}
	if r := c.active(id); r != nil {
		return r.builder.Report(), nil
	}
	st, err := c.load(ctx, id)
	if err != nil {
		return report.Report{}, err
	}
	if isFinal(st.GetState()) {
		rep, ok, err := c.loadReport(ctx, id)
		if err != nil {
			return report.Report{}, err
		}
		if ok {
			c.finished.put(id, rep)
			return rep, nil
		}
	}
	r, err := c.prepare(ctx, st.GetSpec())
	if err != nil {
		return report.Report{}, err
	}
	r.key = st.GetJobKey()
	// A run finished by a coordinator older than job secrets: its report is what that
	// coordinator accepted.
	r.legacy = len(r.key) == 0
	// Reading a report writes nothing: the history keeps the run as it finished.
	r.readOnly = true
	if st.GetCurtailed() {
		// Its rows and comparisons as the run loop had them, so that the results replayed
		// take the same looks and stops: a baseline case withdrawn at its skill's stop is
		// undecided, not pending.
		r.curtailEpochs()
	}
	if err := c.replay(ctx, r, st.GetFinishedAt()); err != nil {
		return report.Report{}, err
	}
	if r.curtail {
		r.resumeEpochs() // what it would publish does not matter here: only its decisions
	}
	if st.GetState() != pb.RunState_RUN_STATE_COMPLETED {
		r.builder.Skip(st.GetReason())
	}
	rep := r.builder.Report()
	if isFinal(st.GetState()) {
		r.finalSections(st, &rep)
	}
	if isFinal(st.GetState()) {
		c.annotate(ctx, st, &rep)
		c.finished.put(id, rep)
	}
	return rep, nil
}

// annotateTimeout bounds the history's part in a report: a slow database leaves the section
// out rather than hold the report back.
const annotateTimeout = 20 * time.Second

// annotate adds what changed and the flaky labels to a finished run's report. A failure is
// logged and said in the section's one line: the report itself stands without the history.
func (c *Coordinator) annotate(ctx context.Context, st *pb.RunStatus, rep *report.Report) {
	if c.changes == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), annotateTimeout)
	defer cancel()
	if err := c.changes.Annotate(ctx, st, rep); err != nil {
		c.log.Warn("what changed: reading the history failed", zap.String("run", st.GetId()), zap.Error(err))
		// The driver's error is for the log: the report is shown to every reader of the run.
		rep.Changes = &report.Changes{Note: "the history could not be read; the coordinator's log says why"}
	}
}

// replay feeds a run's stored results into its builder, ignoring results stored after cutoff
// (jobs that were still running when the run was cancelled or ran out of time).
func (c *Coordinator) replay(ctx context.Context, r *run, cutoff *timestamppb.Timestamp) error {
	results, n, stop, err := c.follow(ctx, r.id)
	if err != nil {
		return err
	}
	defer stop()
	for range n {
		select {
		case m, ok := <-results:
			if !ok {
				return fmt.Errorf("results of run %s ended early", r.id)
			}
			if cutoff == nil || !m.Stored.After(cutoff.AsTime()) {
				c.accept(r, m, false)
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// exhausted records a job whose every delivery ended without a result (its worker died each
// time): errored, under the last attempt so a late result of that attempt deduplicates with
// it, and then removes the message, which MaxDeliver alone leaves in the work queue.
func (c *Coordinator) exhausted(x queue.ExhaustedJob) {
	ctx, cancel := context.WithTimeout(c.base, 30*time.Second)
	defer cancel()
	job := &pb.Job{}
	if err := proto.Unmarshal(x.Data, job); err == nil && job.GetId() != "" && job.GetRunId() == x.Run {
		res := &pb.Result{
			// The job's own secret: the coordinator's verdict passes the same check as a
			// worker's.
			Secret: job.GetSecret(),
			JobId:  job.GetId(), RunId: job.GetRunId(), Skill: job.GetSkill(), CaseName: job.GetCaseName(),
			Epoch: job.GetEpoch(), Kind: job.GetKind(), Agent: job.GetAgent(), Verdict: pb.Verdict_VERDICT_ERRORED,
			Attempt:    int32(x.Deliveries),
			Reason:     fmt.Sprintf("no result after %d deliveries: the worker running it stopped each time (crashed, killed or lost its connection)", x.Deliveries),
			FinishedAt: timestamppb.New(c.now()),
		}
		data, err := proto.Marshal(res)
		if err == nil {
			err = c.queue.PublishResult(ctx, job.GetRunId(), job.GetResultKey(), job.GetId(), int(x.Deliveries), data)
		}
		if err != nil {
			c.log.Error("recording an exhausted job failed; it stays queued until the run's deadline", zap.String("job", job.GetId()), zap.Error(err))
			return
		}
		c.log.Warn("job exhausted its deliveries; recorded as errored", zap.String("run", x.Run), zap.String("job", job.GetId()))
	}
	if err := c.queue.DeleteJob(ctx, x.Seq); err != nil {
		c.log.Warn("removing an exhausted job failed", zap.Uint64("seq", x.Seq), zap.Error(err))
	}
}

func (c *Coordinator) active(id string) *run {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.runs[id]
}

// save stores a run's status with its job key; st itself is left without the key.
func (c *Coordinator) save(ctx context.Context, st *pb.RunStatus, key []byte) error {
	st.UpdatedAt = timestamppb.New(c.now())
	st.JobKey = key
	b, err := proto.Marshal(st)
	st.JobKey = nil
	if err != nil {
		return err
	}
	if _, err := c.runStore.Put(ctx, st.GetId(), b); err != nil {
		return fmt.Errorf("store run %s: %w", st.GetId(), err)
	}
	return nil
}

// public keeps a loaded status's job key from leaving the coordinator.
func public(st *pb.RunStatus, err error) (*pb.RunStatus, error) {
	if st != nil {
		st.JobKey = nil
	}
	return st, err
}

// load returns a stored run status, job key included: callers that answer requests pass it
// through public.
func (c *Coordinator) load(ctx context.Context, id string) (*pb.RunStatus, error) {
	if queue.ValidateRunID(id) != nil || id == probeKey {
		return nil, ErrNotFound
	}
	value, _, err := c.runStore.Get(ctx, id)
	if errors.Is(err, queue.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	st := &pb.RunStatus{}
	if err := proto.Unmarshal(value, st); err != nil {
		return nil, fmt.Errorf("run %s: %w: %w", id, errUnreadable, err)
	}
	return st, nil
}

// errUnreadable marks a stored run state that does not decode.
var errUnreadable = errors.New("stored state is unreadable")

// listStored returns every stored run, newest first, read in one pass over the store. A run
// that cannot be read fails the whole list rather than shortening it: the retention sweep
// would take a missing run's bundle for unused.
func (c *Coordinator) listStored(ctx context.Context) ([]*pb.RunStatus, error) {
	var out []*pb.RunStatus
	err := c.runStore.Each(ctx, func(k string, value []byte) error {
		if k == probeKey || queue.ValidateRunID(k) != nil {
			return nil // suites, schedules, the readiness probe
		}
		st := &pb.RunStatus{}
		if err := proto.Unmarshal(value, st); err != nil {
			c.log.Warn("skipping unreadable run state", zap.String("run", k), zap.Error(fmt.Errorf("%w: %w", errUnreadable, err)))
			return nil
		}
		out = append(out, st)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sortNewestFirst(out)
	return out, nil
}

// sortNewestFirst sorts runs by creation, the newest first.
func sortNewestFirst(sts []*pb.RunStatus) {
	sort.SliceStable(sts, func(i, j int) bool {
		return sts[i].GetSpec().GetCreatedAt().AsTime().After(sts[j].GetSpec().GetCreatedAt().AsTime())
	})
}

func isFinal(s pb.RunState) bool {
	switch s {
	case pb.RunState_RUN_STATE_COMPLETED, pb.RunState_RUN_STATE_CANCELLED,
		pb.RunState_RUN_STATE_DEADLINE_EXCEEDED, pb.RunState_RUN_STATE_FAILED:
		return true
	}
	return false
}

// newRunID makes ids that sort by creation time and are valid NATS subject tokens.
func newRunID(now time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "r" + now.UTC().Format("20060102t150405") + "-" + hex.EncodeToString(b[:])
}

// relativeTo rewrites diagnostic paths inside an extracted bundle to bundle-relative ones, so
// messages name the files the user wrote, not the coordinator's cache.
func relativeTo(dir string, diags diag.Diagnostics) diag.Diagnostics {
	out := make(diag.Diagnostics, len(diags))
	for i, d := range diags {
		d.File = relTo(dir, d.File)
		out[i] = d
	}
	return out
}

func relTo(dir, p string) string {
	if r, err := filepath.Rel(dir, p); err == nil && filepath.IsLocal(r) {
		return filepath.ToSlash(r)
	}
	return p
}
