package judge

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skillfleet/skillfleet/agent"
	"github.com/skillfleet/skillfleet/agent/agenttest"
)

// instantSandbox answers every command at once.
type instantSandbox struct{}

func (instantSandbox) Exec(_ context.Context, cmd []string, _ []byte, _ string, _ time.Duration) (agent.ExecResult, error) {
	if cmd[0] == "cat" {
		return agent.ExecResult{Stdout: []byte(benchSkill)}, nil
	}
	return agent.ExecResult{Stdout: []byte("DEV\n")}, nil
}

const benchSkill = "---\nname: env-selector\ndescription: Selects deployment environment (DEV, UAT, PROD).\n---\n# Environment selector\n\nAnswer with the environment name in capitals. Ask for confirmation before PROD.\n"

var benchCatalog = []agent.SkillRef{
	{Name: "env-selector", Description: "Selects deployment environment (DEV, UAT, PROD).", Location: "/skills/env-selector/SKILL.md"},
	{Name: "logging-standards", Description: "Logging conventions for services.", Location: "/skills/logging-standards/SKILL.md"},
}

// benchServer answers instantly with a scripted 3-turn agent conversation (read the SKILL.md,
// run bash, answer) and a verdict for judge requests. It is stateless, deciding from the
// request body, and records nothing.
func benchServer(b *testing.B) *agenttest.Server {
	read := agenttest.ToolCalls(800, 20, agenttest.Call{ID: "c1", Name: "read_file", Arguments: `{"path":"/skills/env-selector/SKILL.md"}`})
	bash := agenttest.ToolCalls(1200, 20, agenttest.Call{ID: "c2", Name: "bash", Arguments: `{"command":"echo DEV"}`})
	final := agenttest.Text("Selected the DEV environment for deployment.", 1500, 30)
	verdict := agenttest.Text(`{"passed": true, "evidence": "It selects DEV as asked."}`, 400, 20)
	return agenttest.NewFunc(b, func(_ int, r agenttest.Request) agenttest.Reply {
		if bytes.Contains(r.Body, []byte(`"response_format"`)) {
			return verdict
		}
		switch bytes.Count(r.Body, []byte(`"role":"tool"`)) {
		case 0:
			return read
		case 1:
			return bash
		}
		return final
	}, agenttest.NoRecord())
}

func benchClient(b *testing.B, srv *agenttest.Server, name string) *agent.Client {
	c, err := agent.NewClient(agent.Endpoint{Name: name, BaseURL: srv.BaseURL(), APIKey: "sk-bench", Model: name + "-model",
		Price: agent.Price{PromptPerMTok: 1, CompletionPerMTok: 4}}, agent.ClientDeps{Registry: prometheus.NewRegistry()})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// benchJudge is a judge on srv; cache may be nil.
func benchJudge(b *testing.B, srv *agenttest.Server, cache Cache) *Judge {
	j, err := New(Config{}, Deps{Client: benchClient(b, srv, "judge"), Cache: cache})
	if err != nil {
		b.Fatal(err)
	}
	return j
}

const benchInput = "Select the DEV environment for deployment"

// BenchmarkJobOverhead is one prompt case end to end against a model that answers instantly:
// the agent's 3 turns (2 tool calls in the sandbox) and one uncached judge verdict, i.e. 4
// model requests over loopback HTTP. Compare with BenchmarkBaselineHTTP (the same 4 requests
// posted raw) to get the agent's and the judge's own overhead.
func BenchmarkJobOverhead(b *testing.B) {
	srv := benchServer(b)
	a := agent.NewBuiltIn(benchClient(b, srv, "agent"), nil)
	j := benchJudge(b, srv, nil)
	ctx := context.Background()
	req := agent.Request{Input: benchInput, Catalog: benchCatalog, WorkDir: "/work"}
	b.ReportAllocs()
	for b.Loop() {
		out, _, err := a.Run(ctx, instantSandbox{}, req)
		if err != nil {
			b.Fatal(err)
		}
		res, _, err := j.Evaluate(ctx, criterion, benchInput, out, 1)
		if err != nil || !res.Passed {
			b.Fatalf("%+v %v", res, err)
		}
	}
}

// BenchmarkAgentRun is the agent's part alone (3 model requests).
func BenchmarkAgentRun(b *testing.B) {
	srv := benchServer(b)
	a := agent.NewBuiltIn(benchClient(b, srv, "agent"), nil)
	req := agent.Request{Input: benchInput, Catalog: benchCatalog, WorkDir: "/work"}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := a.Run(context.Background(), instantSandbox{}, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkJudgeEvaluate is one uncached verdict (1 model request).
func BenchmarkJudgeEvaluate(b *testing.B) {
	srv := benchServer(b)
	j := benchJudge(b, srv, nil)
	b.ReportAllocs()
	for b.Loop() {
		if res, _, err := j.Evaluate(context.Background(), criterion, benchInput, "Selected DEV.", 1); err != nil || !res.Passed {
			b.Fatal(res, err)
		}
	}
}

// BenchmarkJudgeCached is a verdict from the cache (no request).
func BenchmarkJudgeCached(b *testing.B) {
	srv := benchServer(b)
	j := benchJudge(b, srv, NewLRU(100))
	b.ReportAllocs()
	for b.Loop() {
		if res, _, err := j.Evaluate(context.Background(), criterion, benchInput, "Selected DEV.", 1); err != nil || !res.Passed {
			b.Fatal(res, err)
		}
	}
}

// BenchmarkBaselineHTTP posts the 4 request bodies of one job, as captured, to the same
// instant server with a plain http.Client: the cost of the exchanges themselves, which a real
// model's latency would dwarf.
func BenchmarkBaselineHTTP(b *testing.B) {
	// Capture one job's requests from a recording server that answers like benchServer.
	srv := benchServer(b)
	capture := agenttest.NewFunc(b, func(n int, r agenttest.Request) agenttest.Reply {
		resp, err := http.Post(srv.BaseURL()+"/chat/completions", "application/json", bytes.NewReader(r.Body))
		if err != nil {
			b.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		body, _ := io.ReadAll(resp.Body)
		return agenttest.Reply{Header: map[string]string{"Content-Type": "application/json"}, Body: string(body)}
	})
	a := agent.NewBuiltIn(benchClient(b, capture, "agent"), nil)
	j := benchJudge(b, capture, nil)
	out, _, err := a.Run(context.Background(), instantSandbox{}, agent.Request{Input: benchInput, Catalog: benchCatalog, WorkDir: "/work"})
	if err != nil {
		b.Fatal(err)
	}
	if _, _, err := j.Evaluate(context.Background(), criterion, benchInput, out, 1); err != nil {
		b.Fatal(err)
	}
	reqs := capture.Requests()
	if len(reqs) != 4 {
		b.Fatalf("captured %d requests, want 4", len(reqs))
	}
	hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	url := srv.BaseURL() + "/chat/completions"
	b.ReportAllocs()
	for b.Loop() {
		for _, r := range reqs {
			resp, err := hc.Post(url, "application/json", bytes.NewReader(r.Body))
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
	}
}
