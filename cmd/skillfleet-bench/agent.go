package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/skillfleet/skillfleet/activation"
	"github.com/skillfleet/skillfleet/agent"
	"github.com/skillfleet/skillfleet/judge"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/worker"
)

// The agent benchmark: the built-in agent (a scripted 3-turn conversation: read SKILL.md, run
// bash, answer) and one judge verdict against an in-process endpoint that answers at once, so
// what is measured is skillfleet's own cost per job beyond the model's latency. The raw
// baseline posts the same four request bodies with net/http.

type instantTools struct{}

// envSkillFile is the SKILL.md the scripted agent reads: a body of a few instruction lines, as
// a real skill has, so that activation detection has a fingerprint to find.
var envSkillFile = []byte("---\nname: env-selector\ndescription: Selects the environment.\n---\n# Environment selection\n\nRun scripts/select.py with the environment the user named.\nAnswer with the environment name in capitals, and nothing else.\nRefuse PROD unless the user confirmed it in the same message.\n")

func (instantTools) Exec(_ context.Context, cmd []string, _ []byte, _ string, _ time.Duration) (agent.ExecResult, error) {
	if cmd[0] == "cat" {
		return agent.ExecResult{Stdout: envSkillFile}, nil
	}
	return agent.ExecResult{Stdout: []byte("DEV\n")}, nil
}

func completionJSON(msg map[string]any, finish string, prompt, compl int) []byte {
	b, _ := json.Marshal(map[string]any{
		"id": "c", "object": "chat.completion", "created": 1, "model": "m",
		"choices": []map[string]any{{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": prompt, "completion_tokens": compl, "total_tokens": prompt + compl},
	})
	return b
}

func toolCall(id, name, args string) map[string]any {
	return map[string]any{"role": "assistant", "content": nil, "tool_calls": []map[string]any{
		{"id": id, "type": "function", "function": map[string]any{"name": name, "arguments": args}}}}
}

func (b *bencher) agentOverhead(ctx context.Context) ([]benchResult, error) {
	read := completionJSON(toolCall("c1", "read_file", `{"path":"/skills/env-selector/SKILL.md"}`), "tool_calls", 800, 20)
	bash := completionJSON(toolCall("c2", "bash", `{"command":"echo DEV"}`), "tool_calls", 1200, 20)
	final := completionJSON(map[string]any{"role": "assistant", "content": "Selected the DEV environment."}, "stop", 1500, 30)
	verdict := completionJSON(map[string]any{"role": "assistant", "content": `{"passed": true, "evidence": "It selects DEV."}`}, "stop", 400, 20)
	var bodies [][]byte // the agent's and judge's requests, recorded once for the raw baseline
	record := true
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if record {
			bodies = append(bodies, body)
		}
		w.Header().Set("Content-Type", "application/json")
		switch {
		case bytes.Contains(body, []byte(`"response_format"`)):
			_, _ = w.Write(verdict)
		case bytes.Count(body, []byte(`"role":"tool"`)) == 0:
			_, _ = w.Write(read)
		case bytes.Count(body, []byte(`"role":"tool"`)) == 1:
			_, _ = w.Write(bash)
		default:
			_, _ = w.Write(final)
		}
	}))
	defer srv.Close()
	client, err := agent.NewClient(agent.Endpoint{Name: "bench", BaseURL: srv.URL + "/v1", APIKey: "sk-bench", Model: "agent-model"}, agent.ClientDeps{})
	if err != nil {
		return nil, err
	}
	jc, err := agent.NewClient(agent.Endpoint{Name: "bench-judge", BaseURL: srv.URL + "/v1", APIKey: "sk-bench", Model: "judge-model"}, agent.ClientDeps{})
	if err != nil {
		return nil, err
	}
	builtin := agent.NewBuiltIn(client, b.log)
	j, err := judge.New(judge.Config{Model: "judge-model"}, judge.Deps{Client: jc, Log: b.log})
	if err != nil {
		return nil, err
	}
	catalog := []agent.SkillRef{{Name: "env-selector", Description: "Selects the environment.", Location: "/skills/env-selector/SKILL.md"}}
	var trajectories worker.TrajectoryEncoder
	job := func() error {
		// What a worker does around the agent: the catalog's bodies fingerprinted for activation
		// (from files already read; the worker reads the catalog's SKILL.md files from the
		// extracted bundle), and the trajectory encoded for the result.
		skills := activation.New([]activation.Skill{{Name: "env-selector", Body: activation.BodyOf(string(envSkillFile))}})
		out, tr, err := builtin.Run(ctx, instantTools{}, agent.Request{Input: "Select DEV", Catalog: catalog, WorkDir: "/work", Skills: skills})
		if err != nil {
			return err
		}
		if len(tr.Activated) != 1 || trajectories.Encode(tr.Trajectory, &pb.Job{Id: "bench"}).GetSize() == 0 {
			return fmt.Errorf("no activation or no trajectory recorded: %+v", tr.Activated)
		}
		if r, _, err := j.Evaluate(ctx, "Selects DEV", "Select DEV", out, 1); err != nil || !r.Passed {
			return fmt.Errorf("judge: %v %+v", err, r)
		}
		return nil
	}
	if err := job(); err != nil { // warm up, and record the request bodies
		return nil, err
	}
	record = false
	const n = 300
	ours := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		if err := job(); err != nil {
			return nil, err
		}
		ours = append(ours, time.Since(start))
	}
	hc := &http.Client{}
	raw := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		for _, body := range bodies {
			resp, err := hc.Post(srv.URL+"/v1/chat/completions", "application/json", bytes.NewReader(body))
			if err != nil {
				return nil, err
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		raw = append(raw, time.Since(start))
	}
	o, r := percentiles(ours), percentiles(raw)
	us := func(d time.Duration) string { return fmt.Sprintf("%.0f µs", float64(d)/1e3) }
	return []benchResult{{
		name:   "agent + judge overhead per job",
		figure: fmt.Sprintf("p50 %s, p95 %s beyond the raw HTTP exchanges (job total p50 %s, p95 %s)", us(o.P50-r.P50), us(o.P95-r.P95), us(o.P50), us(o.P95)),
		target: "(no target: recorded)",
		detail: fmt.Sprintf("n=%d jobs of a 3-turn built-in agent conversation (read SKILL.md, run bash, answer) plus one judge verdict, against an in-process endpoint answering at once and a sandbox stand-in answering at once, so only skillfleet's own cost is left. The raw baseline posts the same %d request bodies with net/http: p50 %s, p95 %s. Model latency, which this excludes, is typically hundreds of milliseconds per turn.",
			n, len(bodies), us(r.P50), us(r.P95)),
	}}, nil
}
