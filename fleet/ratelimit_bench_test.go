package fleet

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/config"
	"github.com/skillfleet/skillfleet/internal/testutil"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/sandbox"
	"github.com/skillfleet/skillfleet/skill"
	"github.com/skillfleet/skillfleet/suite"
	"github.com/skillfleet/skillfleet/worker"
)

// limitedEndpoint is an OpenAI-compatible endpoint that takes perSecond requests in any
// sliding second and refuses the rest with 429 and a Retry-After, as a provider's per-second
// limit does; every answer it gives is a final one ("READY"). With announce, every answer,
// refusals included, announces the limit as OpenAI does (x-ratelimit-limit-requests, per
// minute).
type limitedEndpoint struct {
	perSecond int
	announce  bool

	mu       sync.Mutex
	accepted []time.Time // the last perSecond answered requests' arrivals
	answered int
	refused  int
	first    time.Time
	last     time.Time
}

func (e *limitedEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	if e.announce {
		w.Header().Set("x-ratelimit-limit-requests", strconv.Itoa(e.perSecond*60))
	}
	e.mu.Lock()
	if n := len(e.accepted); n >= e.perSecond {
		if oldest := e.accepted[n-e.perSecond]; now.Sub(oldest) < time.Second {
			e.refused++
			e.mu.Unlock()
			wait := time.Second - now.Sub(oldest)
			w.Header().Set("Retry-After", strconv.Itoa(int((wait+time.Second-1)/time.Second)))
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"error":{"message":"rate limit reached: 2 requests per second","type":"requests","code":"rate_limit_exceeded","param":null}}`))
			return
		}
	}
	e.accepted = append(e.accepted, now)
	if len(e.accepted) > e.perSecond {
		e.accepted = e.accepted[1:]
	}
	if e.answered == 0 {
		e.first = now
	}
	e.answered++
	e.last = now
	e.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"id":"chatcmpl-bench","object":"chat.completion","created":0,"model":"bench-model",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"READY"},"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":120,"completion_tokens":2,"total_tokens":122}}`))
}

// figures are the answered and refused counts and the answered requests' rate, per second.
func (e *limitedEndpoint) figures() (answered, refused int, rate float64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.answered > 1 {
		rate = float64(e.answered-1) / e.last.Sub(e.first).Seconds()
	}
	return e.answered, e.refused, rate
}

// nullSandboxes hands out sandboxes in which every command succeeds silently: the prompt
// jobs' agent answers in one turn, so no command of its matters.
type nullSandboxes struct{}

type nullSandbox struct{}

func (nullSandbox) Exec(context.Context, sandbox.ExecRequest) (sandbox.ExecResult, error) {
	return sandbox.ExecResult{}, nil
}
func (nullSandbox) StartLatency() time.Duration { return 0 }

func (nullSandboxes) Acquire(context.Context, sandbox.Spec) (worker.Sandbox, error) {
	return nullSandbox{}, nil
}
func (nullSandboxes) Release(context.Context, worker.Sandbox) error { return nil }

// readySuite writes skills×cases prompt cases that ask for READY.
func readySuite(tb testing.TB, root string, skills, cases int) {
	for i := range skills {
		dir := filepath.Join(root, fmt.Sprintf("r%03d", i))
		writeFile(tb, filepath.Join(dir, "SKILL.md"), fmt.Sprintf("---\nname: r%03d\ndescription: Synthetic skill %d. Use when measuring rate limits.\ntest:\n  cases: cases.yaml\n---\n\nAnswer READY.\n", i, i))
		var b bytes.Buffer
		b.WriteString("cases:\n")
		for j := range cases {
			fmt.Fprintf(&b, "  - name: c%02d\n    input: \"Say READY\"\n    assertions:\n      output_contains: [\"READY\"]\n", j)
		}
		writeFile(tb, filepath.Join(dir, "cases.yaml"), b.String())
	}
}

// BenchmarkFleetRateLimit: three workers of 8 slots, as three processes would be (each its own
// models, client and concurrency limit, sharing only the NATS KV of one embedded server), run
// 100 one-turn prompt jobs against one endpoint that takes 2 requests a second. It reports the
// answered requests' rate as a share of the limit and the refused (429) requests per answered
// one: with a configured rate_limit of {requests_per_minute: 120}; without one, against an
// endpoint that announces its limit on every answer (x-ratelimit-limit-requests: 120); without
// one, against an endpoint that announces nothing (the fleet then shares only its 429s'
// Retry-After); and with no shared budget at all (each client backing off on its own).
func BenchmarkFleetRateLimit(b *testing.B) {
	const (
		workers, slots = 3, 8
		skills, cases  = 10, 10
		perSecond      = 2
	)
	root := b.TempDir()
	readySuite(b, root, skills, cases)
	s := suite.Load([]string{root}, skill.Options{})
	var bundle bytes.Buffer
	if _, err := suite.WriteBundle(&bundle, s.Graph, s.Catalog.Skills()); err != nil {
		b.Fatal(err)
	}
	for _, mode := range []struct {
		name     string
		rate     *config.RateLimit
		announce bool
		shared   bool // the workers share the budget in the KV bucket, as a fleet's do
		// paced says the fleet paces to the limit: every case must pass.
		paced bool
	}{
		{"configured", &config.RateLimit{RequestsPerMinute: perSecond * 60}, false, true, true},
		{"announced", nil, true, true, true},
		{"silent", nil, false, true, false},
		{"unshared", nil, false, false, false},
	} {
		b.Run(mode.name, func(b *testing.B) {
			var answered, refused, errored int
			var rates float64
			ctx := context.Background()
			for b.Loop() {
				b.StopTimer()
				ep := &limitedEndpoint{perSecond: perSecond, announce: mode.announce}
				srv := httptest.NewServer(ep)
				f, err := StartInProcess(ctx, InProcessConfig{DataDir: b.TempDir(), Slots: slots, Executor: noop{}, Log: zap.NewNop()}) // no worker of its own: three are added below
				if err != nil {
					b.Fatal(err)
				}
				var closers []func()
				for i := range workers {
					mc := ModelsConfig{}
					if mode.shared {
						// A process of its own: its own connection to NATS, and the budget in
						// the KV bucket its only link to the others.
						conn, err := f.Server.Connect(fmt.Sprintf("bench-worker-%d", i))
						if err != nil {
							b.Fatal(err)
						}
						closers = append(closers, conn.Close)
						topo, err := queue.OpenWorker(ctx, conn, queue.DefaultConfig())
						if err != nil {
							b.Fatal(err)
						}
						mc.RateStore = topo.Rates()
					}
					models, err := BuildModels(mc, &config.Settings{Agents: []config.Agent{{
						Name: "bench", BaseURL: srv.URL + "/v1", Model: "bench-model", MaxConcurrency: slots, RateLimit: mode.rate,
					}}}, nil, zap.NewNop())
					if err != nil {
						b.Fatal(err)
					}
					closers = append(closers, func() { _ = models.Close() })
					exec := worker.NewExecutor(nullSandboxes{}, zap.NewNop()).WithAgents(map[string]worker.AgentSpec{"": models.Agents["bench"]}, nil, 1)
					if err := f.startWorker(exec); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				st, err := f.Coordinator.Submit(ctx, bytes.NewReader(bundle.Bytes()), &pb.RunSpec{})
				if err != nil {
					b.Fatal(err)
				}
				testutil.Eventually(b, 10*time.Minute, 20*time.Millisecond, func() bool {
					cur, _ := f.Coordinator.Status(ctx, st.GetId())
					return cur.GetState() != pb.RunState_RUN_STATE_RUNNING && cur.GetState() != pb.RunState_RUN_STATE_PENDING
				}, "run %s still running", st.GetId())
				b.StopTimer()
				rep, err := f.Coordinator.Report(ctx, st.GetId())
				if err != nil {
					b.Fatal(err)
				}
				// Without the gate, a job whose requests are refused past its retries is errored:
				// that is what is measured, not a failure of the benchmark.
				if mode.paced && rep.Summary.Passed != skills*cases {
					b.Errorf("summary %+v: want every case passed", rep.Summary)
				}
				errored += rep.Summary.Errored
				a, r, rate := ep.figures()
				answered, refused, rates = answered+a, refused+r, rates+rate
				if err := f.Close(ctx); err != nil {
					b.Fatal(err)
				}
				for _, c := range closers {
					c()
				}
				srv.Close()
				b.StartTimer()
			}
			b.ReportMetric(rates/float64(b.N)/perSecond, "limit-share")
			b.ReportMetric(float64(refused)/float64(max(answered, 1)), "refused/answered")
			b.ReportMetric(float64(answered)/float64(b.N), "answered")
			b.ReportMetric(float64(refused)/float64(b.N), "refused")
			b.ReportMetric(float64(errored)/float64(b.N), "jobs-errored")
		})
	}
}
