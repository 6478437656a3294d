package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/skillfleet/skillfleet/internal/tenant"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/queue"
)

// Pushed suites and schedules live in the run-state bucket under these prefixes: a run id
// holds no dot, so they never meet a run's key, and the bucket is one the coordinator may
// already write (no new bucket, no new permission). A team's names follow the prefix as
// "TEAM.NAME", the default team's as "NAME" (as before teams): neither holds a dot, so a key
// names one team's object and no other team can reach it.
const (
	suiteKeyPrefix    = "suite."
	scheduleKeyPrefix = "schedule."
)

// ref is a team's name of a suite or schedule.
type ref struct{ team, name string }

// key is the store key of r under prefix.
func (r ref) key(prefix string) string {
	if tenant.Team(r.team) == tenant.DefaultTeam {
		return prefix + r.name
	}
	return prefix + r.team + "." + r.name
}

// String is r as audit records and errors name it.
func (r ref) String() string { return tenant.Team(r.team) + "/" + r.name }

// refOf reads a key's rest after its prefix.
func refOf(rest string) ref {
	if team, name, ok := strings.Cut(rest, "."); ok {
		return ref{team: team, name: name}
	}
	return ref{team: tenant.DefaultTeam, name: rest}
}

// ScheduleStore is the run-state store with compare-and-swap (queue.RunStore): a schedule's
// slot is claimed by an update at the revision read, so of two coordinators exactly one fires.
type ScheduleStore interface {
	RunStore
	// KeysUnder lists the keys under prefix (ending with a dot) that hold a value, keys
	// written meanwhile included, reading those keys alone.
	KeysUnder(ctx context.Context, prefix string) ([]string, error)
	// Create returns an error wrapping queue.ErrConflict when key holds a value.
	Create(ctx context.Context, key string, value []byte) (revision uint64, err error)
	// Update returns an error wrapping queue.ErrConflict when key changed since revision.
	Update(ctx context.Context, key string, value []byte, revision uint64) (uint64, error)
}

// ErrNoSuite is returned for a suite name nothing was pushed under.
var ErrNoSuite = errors.New("no suite pushed under that name")

// ErrScheduleExists is returned when adding a schedule under a name in use.
var ErrScheduleExists = errors.New("a schedule of that name exists: remove it first")

// ErrNoSchedules is returned by a coordinator whose run store cannot compare-and-swap.
var ErrNoSchedules = errors.New("this coordinator keeps no suites or schedules")

// InvalidError is a request the coordinator refuses as malformed (a bad name or cron line).
type InvalidError struct{ Err error }

func (e *InvalidError) Error() string { return e.Err.Error() }
func (e *InvalidError) Unwrap() error { return e.Err }

// PushedSuite is the latest bundle pushed under a suite name.
type PushedSuite struct {
	Name string `json:"name"`
	// Team owns the suite: its name is in the team's namespace.
	Team         string    `json:"team"`
	BundleDigest string    `json:"bundle_digest"`
	PushedAt     time.Time `json:"pushed_at"`
	// By is the principal that pushed it ("" for an anonymous caller).
	By string `json:"by"`
	// Jobs is how many jobs the suite planned into with the coordinator's default agents.
	Jobs int `json:"jobs"`
}

// Schedule fires a pushed suite's latest bundle on the scheduled lane at each slot of Cron.
type Schedule struct {
	Name string `json:"name"`
	// Team owns the schedule and the suite it fires (of the same team); it is set from the
	// creator's token, never from a request body.
	Team  string `json:"team"`
	Suite string `json:"suite"`
	// Cron is a standard five-field line or a descriptor (@daily, @hourly, @every 1h), in UTC.
	Cron string `json:"cron"`
	// Agents run the prompt cases; empty means the coordinator's defaults.
	Agents []string `json:"agents,omitempty"`
	// MaxCost is each fired run's cost cap in US dollars (RunSpec.max_cost); 0 none.
	MaxCost   float64   `json:"max_cost,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	By        string    `json:"by"`
	// LastFired is the latest slot claimed (the creation time until the first fire).
	LastFired time.Time `json:"last_fired"`
	// LastRun and LastError say what the last fire submitted or why it could not.
	LastRun   string `json:"last_run,omitempty"`
	LastError string `json:"last_error,omitempty"`
}

var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$`)

func checkName(what, name string) error {
	if !namePattern.MatchString(name) {
		return &InvalidError{Err: fmt.Errorf("%s name %q: want 1-100 characters of [A-Za-z0-9_-], starting with a letter or digit", what, name)}
	}
	return nil
}

// ParseCron parses a schedule's cron line: five fields (minute hour day-of-month month
// day-of-week) or a descriptor such as @daily.
func ParseCron(line string) (cron.Schedule, error) {
	s, err := cron.ParseStandard(line)
	if err != nil {
		return nil, &InvalidError{Err: fmt.Errorf("cron %q: %w", line, err)}
	}
	return s, nil
}

func (c *Coordinator) scheduleStore() (ScheduleStore, error) {
	if c.schedules == nil {
		return nil, ErrNoSchedules
	}
	return c.schedules, nil
}

// mayChangeIn returns nil when the caller of ctx may change team's objects, ErrNotFound when
// it may not read them (another team's: not disclosed) and ErrForbidden when it may only
// read them; a refusal is audited as action on object.
func (c *Coordinator) mayChangeIn(ctx context.Context, team, action, object string) error {
	p := tenant.Of(ctx)
	switch {
	case !p.CanRead(team):
		c.audit(p, "", action, object, outcomeDenied, "another team's")
		return fmt.Errorf("%s: %w", object, ErrNotFound)
	case !p.CanChange(team):
		c.audit(p, team, action, object, outcomeDenied, "role "+p.Role.String())
		return fmt.Errorf("%s %s: %w (%s)", action, object, ErrForbidden, p.Role)
	}
	return nil
}

// PushSuite stores body as the latest bundle of team's suite name. It is checked, extracted
// and planned (with the default agents) as a submission is, so a suite that could not run is
// refused now rather than at 2 am; nothing is stored for a refused one.
func (c *Coordinator) PushSuite(ctx context.Context, team, name string, body io.Reader) (*PushedSuite, error) {
	store, err := c.scheduleStore()
	if err != nil {
		return nil, err
	}
	if err := checkName("suite", name); err != nil {
		return nil, err
	}
	id := ref{tenant.Team(team), name}
	if err := c.mayChangeIn(ctx, id.team, "push", "suite/"+id.String()); err != nil {
		return nil, err
	}
	stage, err := os.MkdirTemp(c.cache.Dir(), ".tmp-push-")
	if err != nil {
		return nil, fmt.Errorf("stage upload: %w", err)
	}
	defer func() { _ = os.RemoveAll(stage) }()
	tarPath := filepath.Join(stage, "bundle.tar")
	digest, err := spool(ctx, body, tarPath, c.cfg.MaxBundleBytes)
	if err != nil {
		return nil, err
	}
	tree := filepath.Join(stage, "tree")
	if err := extract(tarPath, tree); err != nil {
		return nil, &PlanError{Err: err}
	}
	spec := &pb.RunSpec{Name: name, Team: id.team, BundleDigest: digest, Priority: pb.Priority_PRIORITY_SCHEDULED, CreatedAt: timestamppb.New(c.now())}
	r, err := c.planIn(tree, spec, c.cfg.MaxJobsPerRun)
	if err != nil {
		return nil, err
	}
	if err := c.checkJobSizes(r); err != nil {
		return nil, err
	}
	if err := c.checkBundleRoom(ctx, id.team, digest, tarPath); err != nil {
		c.audit(tenant.Of(ctx), id.team, "push", "suite/"+id.String(), outcomeRefused, err.Error())
		return nil, err
	}
	// As in admit: the sweep must not delete the bundle before the record refers to it.
	c.sweepMu.RLock()
	defer c.sweepMu.RUnlock()
	stored, err := c.bundles.PutBundleFile(ctx, tarPath)
	if err != nil {
		return nil, fmt.Errorf("store bundle: %w", err)
	}
	if stored != digest {
		return nil, fmt.Errorf("store bundle: the spooled upload changed: hashed %s, stored %s", digest, stored)
	}
	if err := c.cache.Adopt(digest, tree); err != nil {
		c.log.Warn("keeping the extracted bundle failed", zap.String("bundle", digest), zap.Error(err))
	}
	p := tenant.Of(ctx)
	ps := &PushedSuite{Name: name, Team: id.team, BundleDigest: digest, PushedAt: c.now().UTC(), By: p.Name, Jobs: len(r.plan.Jobs)}
	b, err := json.Marshal(ps)
	if err != nil {
		return nil, err
	}
	if _, err := store.Put(ctx, id.key(suiteKeyPrefix), b); err != nil {
		return nil, fmt.Errorf("store suite %s: %w", name, err)
	}
	// The suite's previous bundle may be held by nothing else now.
	c.held.forget()
	c.audit(p, id.team, "push", "suite/"+id.String(), outcomeOK, "bundle "+digest)
	return ps, nil
}

// Suite returns the latest push of team's suite name, or ErrNoSuite: also for a suite the
// caller of ctx may not read.
func (c *Coordinator) Suite(ctx context.Context, team, name string) (*PushedSuite, error) {
	store, err := c.scheduleStore()
	if err != nil {
		return nil, err
	}
	id := ref{tenant.Team(team), name}
	if checkName("suite", name) != nil || !tenant.Of(ctx).CanRead(id.team) {
		return nil, fmt.Errorf("%w: %q", ErrNoSuite, name)
	}
	b, _, err := store.Get(ctx, id.key(suiteKeyPrefix))
	if errors.Is(err, queue.ErrNotFound) {
		return nil, fmt.Errorf("%w: %q", ErrNoSuite, name)
	}
	if err != nil {
		return nil, err
	}
	ps := &PushedSuite{}
	if err := json.Unmarshal(b, ps); err != nil {
		return nil, fmt.Errorf("suite %s: stored record is unreadable: %w", name, err)
	}
	ps.Team = id.team // a record pushed before teams names none
	return ps, nil
}

// Suites returns every pushed suite the caller of ctx may read, by team and name.
func (c *Coordinator) Suites(ctx context.Context) ([]*PushedSuite, error) {
	names, err := c.keysUnder(ctx, suiteKeyPrefix)
	if err != nil {
		return nil, err
	}
	out := make([]*PushedSuite, 0, len(names))
	for _, n := range names {
		ps, err := c.Suite(ctx, n.team, n.name)
		if errors.Is(err, ErrNoSuite) {
			continue // removed since listed
		}
		if err != nil {
			return nil, err
		}
		out = append(out, ps)
	}
	return out, nil
}

// keysUnder returns the names stored under prefix that the caller of ctx may read, sorted by
// team and name.
func (c *Coordinator) keysUnder(ctx context.Context, prefix string) ([]ref, error) {
	store, err := c.scheduleStore()
	if err != nil {
		return nil, err
	}
	keys, err := store.KeysUnder(ctx, prefix)
	if err != nil {
		return nil, err
	}
	p := tenant.Of(ctx)
	var out []ref
	for _, k := range keys {
		if rest, ok := strings.CutPrefix(k, prefix); ok {
			if r := refOf(rest); p.CanRead(r.team) {
				out = append(out, r)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].team < out[j].team || (out[i].team == out[j].team && out[i].name < out[j].name)
	})
	return out, nil
}

// AddSchedule stores a new schedule. Its first slot is the first one after now: adding a
// schedule never fires a slot that passed before it existed.
func (c *Coordinator) AddSchedule(ctx context.Context, s Schedule) (*Schedule, error) {
	store, err := c.scheduleStore()
	if err != nil {
		return nil, err
	}
	if err := checkName("schedule", s.Name); err != nil {
		return nil, err
	}
	id := ref{tenant.Team(s.Team), s.Name}
	if err := c.mayChangeIn(ctx, id.team, "schedule.add", "schedule/"+id.String()); err != nil {
		return nil, err
	}
	sched, err := ParseCron(s.Cron)
	if err != nil {
		return nil, err
	}
	if gap := shortestGap(sched, c.now().UTC()); gap < c.cfg.MinScheduleInterval {
		return nil, &InvalidError{Err: fmt.Errorf("cron %q fires every %s, more often than the fleet's minimum interval of %s",
			s.Cron, gap, c.cfg.MinScheduleInterval)}
	}
	// Every team's schedules count toward the fleet's limit, whoever asks.
	all, err := c.keysUnder(tenant.With(ctx, tenant.Anonymous), scheduleKeyPrefix)
	if err != nil {
		return nil, err
	}
	if len(all) >= c.cfg.MaxSchedules {
		return nil, &InvalidError{Err: fmt.Errorf("the fleet keeps %d schedules already, its limit: remove one first", len(all))}
	}
	if n := countTeam(all, id.team); n >= c.cfg.MaxSchedulesPerTeam {
		return nil, &InvalidError{Err: fmt.Errorf("team %s keeps %d schedules already, its limit: remove one first", id.team, n)}
	}
	if err := c.checkSpec(&pb.RunSpec{Agents: s.Agents, MaxCost: s.MaxCost}); err != nil {
		return nil, err
	}
	if _, err := c.Suite(ctx, id.team, s.Suite); err != nil {
		return nil, err
	}
	now := c.now().UTC()
	p := tenant.Of(ctx)
	s.Team, s.CreatedAt, s.LastFired, s.By, s.LastRun, s.LastError = id.team, now, now, p.Name, "", ""
	b, err := json.Marshal(&s)
	if err != nil {
		return nil, err
	}
	if _, err := store.Create(ctx, id.key(scheduleKeyPrefix), b); err != nil {
		if errors.Is(err, queue.ErrConflict) {
			return nil, fmt.Errorf("%w: %q", ErrScheduleExists, s.Name)
		}
		return nil, err
	}
	c.audit(p, id.team, "schedule.add", "schedule/"+id.String(), outcomeOK, fmt.Sprintf("suite %s, cron %q", s.Suite, s.Cron))
	return &s, nil
}

func countTeam(refs []ref, team string) int {
	n := 0
	for _, r := range refs {
		if r.team == team {
			n++
		}
	}
	return n
}

// RemoveSchedule deletes team's schedule name; an unknown name, or another team's, is
// ErrNotFound.
func (c *Coordinator) RemoveSchedule(ctx context.Context, team, name string) error {
	store, err := c.scheduleStore()
	if err != nil {
		return err
	}
	id := ref{tenant.Team(team), name}
	if err := c.mayChangeIn(ctx, id.team, "schedule.remove", "schedule/"+id.String()); err != nil {
		return err
	}
	if _, _, err := c.loadSchedule(ctx, id); err != nil {
		return err
	}
	if err := store.Delete(ctx, id.key(scheduleKeyPrefix)); err != nil {
		return err
	}
	c.audit(tenant.Of(ctx), id.team, "schedule.remove", "schedule/"+id.String(), outcomeOK, "")
	return nil
}

// Schedules returns every schedule the caller of ctx may read, by team and name.
func (c *Coordinator) Schedules(ctx context.Context) ([]*Schedule, error) {
	names, err := c.keysUnder(ctx, scheduleKeyPrefix)
	if err != nil {
		return nil, err
	}
	out := make([]*Schedule, 0, len(names))
	for _, n := range names {
		s, _, err := c.loadSchedule(ctx, n)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func (c *Coordinator) loadSchedule(ctx context.Context, id ref) (*Schedule, uint64, error) {
	store, err := c.scheduleStore()
	if err != nil {
		return nil, 0, err
	}
	if checkName("schedule", id.name) != nil || !tenant.Of(ctx).CanRead(id.team) {
		return nil, 0, fmt.Errorf("schedule %q: %w", id.name, ErrNotFound)
	}
	b, rev, err := store.Get(ctx, id.key(scheduleKeyPrefix))
	if errors.Is(err, queue.ErrNotFound) {
		return nil, 0, fmt.Errorf("schedule %q: %w", id.name, ErrNotFound)
	}
	if err != nil {
		return nil, 0, err
	}
	s := &Schedule{}
	if err := json.Unmarshal(b, s); err != nil {
		return nil, 0, fmt.Errorf("schedule %s: stored record is unreadable: %w", id, err)
	}
	// The key is the record's team: a record written before teams names none, and a body
	// cannot move a schedule into another team.
	s.Team = id.team
	return s, rev, nil
}

// scheduleLoop fires due schedules at start and then every ScheduleEvery, on the injected
// clock, until ctx is done.
func (c *Coordinator) scheduleLoop(ctx context.Context) {
	t := c.clock.NewTicker(c.cfg.ScheduleEvery)
	defer t.Stop()
	for {
		if _, err := c.FireDue(ctx); err != nil && ctx.Err() == nil {
			c.log.Warn("firing schedules failed; the next tick tries again", zap.Error(err))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
	}
}

// FireDue submits a run for every schedule with a slot after its last fire and at or before
// now, and returns the ids of the runs it submitted. Slots missed while no coordinator ran
// fire once, as the latest of them. Each slot is claimed first, by an update at the revision
// read: a coordinator that loses the claim to another submits nothing.
func (c *Coordinator) FireDue(ctx context.Context) ([]string, error) {
	if c.schedules == nil {
		return nil, nil
	}
	names, err := c.keysUnder(ctx, scheduleKeyPrefix)
	if err != nil {
		return nil, err
	}
	var runs []string
	for _, n := range names {
		id, err := c.fire(ctx, n)
		if err != nil {
			c.log.Warn("schedule did not fire", zap.Stringer("schedule", n), zap.Error(err))
			continue
		}
		if id != "" {
			runs = append(runs, id)
		}
	}
	return runs, nil
}

// fire fires one schedule if a slot is due, returning the run it submitted ("" for none).
func (c *Coordinator) fire(ctx context.Context, name ref) (string, error) {
	s, rev, err := c.loadSchedule(ctx, name)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return "", nil
		}
		return "", err
	}
	sched, err := ParseCron(s.Cron)
	if err != nil {
		return "", err
	}
	now := c.now().UTC()
	slot := latestSlot(sched, s.LastFired, now)
	if slot.IsZero() {
		return "", nil
	}
	s.LastFired, s.LastRun, s.LastError = slot, "", ""
	if rev, err = c.putSchedule(ctx, s, rev); err != nil {
		if errors.Is(err, queue.ErrConflict) {
			c.log.Debug("schedule slot claimed by another coordinator", zap.Stringer("schedule", name), zap.Time("slot", slot))
			return "", nil
		}
		return "", err
	}
	// Claimed: from here on this slot is ours alone, and a failure is recorded, not retried.
	id, subErr := c.submitScheduled(ctx, s)
	if subErr != nil {
		s.LastError = subErr.Error()
	} else {
		s.LastRun = id
	}
	if _, err := c.putSchedule(ctx, s, rev); err != nil && !errors.Is(err, queue.ErrConflict) {
		c.log.Warn("recording a schedule's fire failed", zap.Stringer("schedule", name), zap.Error(err))
	}
	if subErr != nil {
		return "", fmt.Errorf("slot %s: %w", slot.Format(time.RFC3339), subErr)
	}
	c.log.Info("schedule fired", zap.Stringer("schedule", name), zap.String("run", id), zap.Time("slot", slot))
	return id, nil
}

func (c *Coordinator) putSchedule(ctx context.Context, s *Schedule, rev uint64) (uint64, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return 0, err
	}
	return c.schedules.Update(ctx, ref{s.Team, s.Name}.key(scheduleKeyPrefix), b, rev)
}

// submitScheduled starts a run of the schedule's suite, from its latest pushed bundle, on the
// scheduled lane, admitted as its creator's, in the schedule's team. A fire the creator's or
// the team's quota cannot take is refused before any planning, from the jobs the suite
// planned into when it was pushed: a schedule over quota costs one lookup, not a plan.
func (c *Coordinator) submitScheduled(ctx context.Context, s *Schedule) (string, error) {
	ps, err := c.Suite(ctx, s.Team, s.Suite)
	if err != nil {
		return "", err
	}
	if err := c.quotaHolds(s.By, s.Team, ps.Jobs); err != nil {
		return "", err
	}
	spec := &pb.RunSpec{Name: s.Suite, Agents: s.Agents, MaxCost: s.MaxCost, Priority: pb.Priority_PRIORITY_SCHEDULED}
	// The creator's role then may since have changed; the schedule fires as a member of its
	// team, which is all a schedule can do.
	as := tenant.Principal{Name: s.By, Team: s.Team, Role: tenant.Member}
	st, err := c.submitStored(tenant.With(ctx, as), ps.BundleDigest, spec)
	if err != nil {
		return "", err
	}
	return st.GetId(), nil
}

// submitStored admits a run of a bundle the store holds already, as Submit admits an upload.
func (c *Coordinator) submitStored(ctx context.Context, digest string, spec *pb.RunSpec) (*pb.RunStatus, error) {
	if err := c.checkSpec(spec); err != nil {
		return nil, err
	}
	spec = proto.Clone(spec).(*pb.RunSpec)
	spec.Id = c.newID()
	spec.BundleDigest = digest
	spec.CreatedAt = timestamppb.New(c.now())
	dir, release, err := c.cache.Get(ctx, digest)
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", digest, err)
	}
	defer release()
	r, err := c.planIn(dir, spec, c.cfg.MaxJobsPerRun)
	if err != nil {
		return nil, err
	}
	return c.admit(ctx, r, "", "")
}

// slotWindows are the spans searched, smallest first, for a schedule's latest slot: the first
// that holds one bounds the walk to the slots in it, so a schedule that fires every minute
// and was last fired a year ago costs an hour's worth of steps, not a year's.
var slotWindows = []time.Duration{time.Hour, 24 * time.Hour, 32 * 24 * time.Hour, 367 * 24 * time.Hour}

// latestSlot is the latest slot of s after after and at or before now, or the zero time.
func latestSlot(s cron.Schedule, after, now time.Time) time.Time {
	first := s.Next(after)
	if first.IsZero() || first.After(now) {
		return time.Time{}
	}
	from := after
	for _, w := range slotWindows {
		if start := now.Add(-w); start.After(after) {
			if n := s.Next(start); !n.IsZero() && !n.After(now) {
				from = start
				break
			}
			continue
		}
		break
	}
	slot := s.Next(from)
	for {
		n := s.Next(slot)
		if n.IsZero() || n.After(now) {
			return slot
		}
		slot = n
	}
}

// shortestGap is the shortest gap between consecutive slots of s among its next 100 after
// now (a cron line's gaps repeat within a day or a week; @every's never change).
func shortestGap(s cron.Schedule, now time.Time) time.Duration {
	prev := s.Next(now)
	gap := time.Duration(math.MaxInt64)
	for range 100 {
		next := s.Next(prev)
		if next.IsZero() || !next.After(prev) {
			return 0
		}
		gap = min(gap, next.Sub(prev))
		prev = next
	}
	return gap
}
