package sandbox

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/system"
	"github.com/moby/moby/client"
)

var errInjected = errors.New("injected failure")

// fakeDocker is a counting fake engine: it keeps containers in memory, counts every call and
// fails chosen calls. It implements Docker.
type fakeDocker struct {
	mu         sync.Mutex
	now        func() time.Time
	calls      map[string]int
	failNth    map[string]int  // method -> fail its n-th call (1-based)
	failAlways map[string]bool // method -> fail every call
	// createThenFail makes the n-th ContainerCreate create the container and still return an
	// error, as a timed-out request whose work the engine finished.
	createThenFail int
	// duringCreate runs inside every ContainerCreate, before the context is looked at: a test
	// cancels the caller's context there, as a job stopped mid-create does.
	duringCreate func()
	// late holds containers whose create request was abandoned by the client but that the
	// engine goes on to create after the client has looked for them.
	late       []string
	containers map[string]*fakeContainer // by id
	created    []string                  // every id ever created
	removed    map[string]bool
	info       system.Info
	images     map[string]bool
	execs      map[string]*fakeExec
	// exec decides what a command does; default: exit 0, no output.
	exec func(c *fakeContainer, cmd []string) (stdout, stderr string, exit int)
	last struct {
		create client.ContainerCreateOptions
		exec   client.ExecCreateOptions
	}
}

type fakeContainer struct {
	id, name string
	labels   map[string]string
	created  time.Time
	running  bool
	oom      bool
	exitCode int
	hc       *container.HostConfig
}

type fakeExec struct {
	container *fakeContainer
	opts      client.ExecCreateOptions
	exit      int
	done      bool
}

func newFakeDocker(now func() time.Time) *fakeDocker {
	return &fakeDocker{
		now:        now,
		calls:      map[string]int{},
		failNth:    map[string]int{},
		failAlways: map[string]bool{},
		containers: map[string]*fakeContainer{},
		removed:    map[string]bool{},
		images:     map[string]bool{DefaultImage: true},
		execs:      map[string]*fakeExec{},
		info: system.Info{
			Runtimes:        map[string]system.RuntimeWithStatus{"runc": {}, "io.containerd.runc.v2": {}},
			DefaultRuntime:  "runc",
			SwapLimit:       true,
			SecurityOptions: []string{"name=seccomp,profile=default"},
		},
	}
}

// call counts a call and reports whether it must fail. Callers hold f.mu.
func (f *fakeDocker) call(ctx context.Context, method string) error {
	f.calls[method]++
	if err := ctx.Err(); err != nil {
		return err
	}
	if f.failAlways[method] || f.failNth[method] == f.calls[method] {
		return fmt.Errorf("%s: %w", method, errInjected)
	}
	return nil
}

func (f *fakeDocker) lookup(idOrName string) *fakeContainer {
	if c := f.containers[idOrName]; c != nil {
		return c
	}
	for _, c := range f.containers {
		if c.name == idOrName {
			return c
		}
	}
	return nil
}

func notFound(what string) error { return cerrdefs.ErrNotFound.WithMessage("no such " + what) }

// leaked returns the ids of containers that exist now.
func (f *fakeDocker) leaked() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	ids := append([]string(nil), f.late...)
	for id := range f.containers {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func (f *fakeDocker) count(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[method]
}

// addStray puts a container the Runner did not create on the engine.
func (f *fakeDocker) addStray(id string, labels map[string]string, created time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.containers[id] = &fakeContainer{id: id, name: "stray-" + id, labels: labels, created: created, running: true}
	f.created = append(f.created, id)
}

func (f *fakeDocker) ContainerCreate(ctx context.Context, o client.ContainerCreateOptions) (client.ContainerCreateResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.last.create = o
	if f.duringCreate != nil {
		f.duringCreate()
	}
	if ctx.Err() != nil && f.images[o.Config.Image] {
		// The client gave up, but the engine had the request: the container appears later.
		f.calls["ContainerCreate"]++
		id := fmt.Sprintf("%064x", len(f.created)+1)
		f.created = append(f.created, id)
		f.late = append(f.late, id)
		return client.ContainerCreateResult{}, ctx.Err()
	}
	if err := f.call(ctx, "ContainerCreate"); err != nil {
		return client.ContainerCreateResult{}, err
	}
	if !f.images[o.Config.Image] {
		return client.ContainerCreateResult{}, notFound("image: " + o.Config.Image)
	}
	if f.lookup(o.Name) != nil {
		return client.ContainerCreateResult{}, cerrdefs.ErrConflict.WithMessage("name in use")
	}
	id := fmt.Sprintf("%064x", len(f.created)+1)
	f.containers[id] = &fakeContainer{id: id, name: o.Name, labels: o.Config.Labels, created: f.now(), hc: o.HostConfig}
	f.created = append(f.created, id)
	if f.createThenFail == f.calls["ContainerCreate"] {
		return client.ContainerCreateResult{}, fmt.Errorf("ContainerCreate: %w", context.DeadlineExceeded)
	}
	return client.ContainerCreateResult{ID: id}, nil
}

func (f *fakeDocker) ContainerStart(ctx context.Context, id string, _ client.ContainerStartOptions) (client.ContainerStartResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call(ctx, "ContainerStart"); err != nil {
		return client.ContainerStartResult{}, err
	}
	c := f.lookup(id)
	if c == nil {
		return client.ContainerStartResult{}, notFound("container")
	}
	c.running = true
	return client.ContainerStartResult{}, nil
}

func (f *fakeDocker) ContainerKill(ctx context.Context, id string, _ client.ContainerKillOptions) (client.ContainerKillResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call(ctx, "ContainerKill"); err != nil {
		return client.ContainerKillResult{}, err
	}
	c := f.lookup(id)
	if c == nil {
		return client.ContainerKillResult{}, notFound("container")
	}
	c.running, c.exitCode = false, 137
	return client.ContainerKillResult{}, nil
}

func (f *fakeDocker) ContainerRemove(ctx context.Context, id string, o client.ContainerRemoveOptions) (client.ContainerRemoveResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call(ctx, "ContainerRemove"); err != nil {
		return client.ContainerRemoveResult{}, err
	}
	c := f.lookup(id)
	if c == nil {
		return client.ContainerRemoveResult{}, notFound("container")
	}
	if c.running && !o.Force {
		return client.ContainerRemoveResult{}, cerrdefs.ErrConflict.WithMessage("container is running")
	}
	delete(f.containers, c.id)
	f.removed[c.id] = true
	return client.ContainerRemoveResult{}, nil
}

func (f *fakeDocker) ContainerList(ctx context.Context, o client.ContainerListOptions) (client.ContainerListResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call(ctx, "ContainerList"); err != nil {
		return client.ContainerListResult{}, err
	}
	var out client.ContainerListResult
	for _, c := range f.containers {
		match := true
		for term := range o.Filters["label"] {
			k, v, hasV := strings.Cut(term, "=")
			got, ok := c.labels[k]
			if !ok || (hasV && got != v) {
				match = false
			}
		}
		if match {
			out.Items = append(out.Items, container.Summary{ID: c.id, Names: []string{"/" + c.name}, Labels: c.labels, Created: c.created.Unix()})
		}
	}
	slices.SortFunc(out.Items, func(a, b container.Summary) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

func (f *fakeDocker) ContainerInspect(ctx context.Context, id string, _ client.ContainerInspectOptions) (client.ContainerInspectResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call(ctx, "ContainerInspect"); err != nil {
		return client.ContainerInspectResult{}, err
	}
	c := f.lookup(id)
	if c == nil {
		return client.ContainerInspectResult{}, notFound("container")
	}
	return client.ContainerInspectResult{Container: container.InspectResponse{
		ID:         c.id,
		State:      &container.State{Running: c.running, OOMKilled: c.oom, ExitCode: c.exitCode},
		HostConfig: c.hc,
	}}, nil
}

func (f *fakeDocker) ExecCreate(ctx context.Context, id string, o client.ExecCreateOptions) (client.ExecCreateResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.last.exec = o
	if err := f.call(ctx, "ExecCreate"); err != nil {
		return client.ExecCreateResult{}, err
	}
	c := f.lookup(id)
	if c == nil {
		return client.ExecCreateResult{}, notFound("container")
	}
	if !c.running {
		return client.ExecCreateResult{}, cerrdefs.ErrConflict.WithMessage("container is not running")
	}
	eid := fmt.Sprintf("exec-%d", len(f.execs)+1)
	f.execs[eid] = &fakeExec{container: c, opts: o}
	return client.ExecCreateResult{ID: eid}, nil
}

func (f *fakeDocker) ExecAttach(ctx context.Context, execID string, _ client.ExecAttachOptions) (client.ExecAttachResult, error) {
	f.mu.Lock()
	if err := f.call(ctx, "ExecAttach"); err != nil {
		f.mu.Unlock()
		return client.ExecAttachResult{}, err
	}
	e := f.execs[execID]
	if e == nil {
		f.mu.Unlock()
		return client.ExecAttachResult{}, notFound("exec")
	}
	stdout, stderr, exit := "", "", 0
	if f.exec != nil {
		stdout, stderr, exit = f.exec(e.container, e.opts.Cmd)
	}
	e.exit, e.done = exit, true
	f.mu.Unlock()

	srv, cli := net.Pipe()
	go func() {
		go func() { _, _ = io.Copy(io.Discard, srv) }() // stdin
		writeFrame(srv, 1, stdout)
		writeFrame(srv, 2, stderr)
		_ = srv.Close()
	}()
	return client.ExecAttachResult{HijackedResponse: client.NewHijackedResponse(cli, "application/vnd.docker.multiplexed-stream")}, nil
}

// writeFrame writes one stdcopy frame.
func writeFrame(w io.Writer, stream byte, s string) {
	if s == "" {
		return
	}
	hdr := make([]byte, 8)
	hdr[0] = stream
	binary.BigEndian.PutUint32(hdr[4:], uint32(len(s)))
	_, _ = w.Write(append(hdr, s...))
}

func (f *fakeDocker) ExecInspect(ctx context.Context, execID string, _ client.ExecInspectOptions) (client.ExecInspectResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call(ctx, "ExecInspect"); err != nil {
		return client.ExecInspectResult{}, err
	}
	e := f.execs[execID]
	if e == nil {
		return client.ExecInspectResult{}, notFound("exec")
	}
	return client.ExecInspectResult{ID: execID, ExitCode: e.exit, Running: !e.done}, nil
}

func (f *fakeDocker) ImageInspect(ctx context.Context, image string, _ ...client.ImageInspectOption) (client.ImageInspectResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call(ctx, "ImageInspect"); err != nil {
		return client.ImageInspectResult{}, err
	}
	if !f.images[image] {
		return client.ImageInspectResult{}, notFound("image")
	}
	return client.ImageInspectResult{}, nil
}

func (f *fakeDocker) Info(ctx context.Context, _ client.InfoOptions) (client.SystemInfoResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call(ctx, "Info"); err != nil {
		return client.SystemInfoResult{}, err
	}
	return client.SystemInfoResult{Info: f.info}, nil
}

// fakeClock is a Clock under test control: timers fire on Advance, ticks on Tick, Sleep
// returns at once.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
	ticks  chan time.Time
}

type fakeTimer struct {
	at      time.Time
	f       func()
	stopped bool
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Unix(1_900_000_000, 0), ticks: make(chan time.Time)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		was := !t.stopped
		t.stopped = true
		return was
	}
}

func (c *fakeClock) NewTicker(time.Duration) (<-chan time.Time, func()) { return c.ticks, func() {} }

func (c *fakeClock) Sleep(ctx context.Context, _ time.Duration) error { return ctx.Err() }

// Advance moves time on and runs the timers that came due, synchronously.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*fakeTimer
	for _, t := range c.timers {
		if !t.stopped && !t.at.After(c.now) {
			t.stopped = true
			due = append(due, t)
		}
	}
	c.mu.Unlock()
	for _, t := range due {
		t.f()
	}
}

// Tick delivers one reaper tick and returns once the loop has taken it.
func (c *fakeClock) Tick() { c.ticks <- c.Now() }
