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
	judged := completionJSON(map[string]any{"role": "assistant", "content": `{"passed": true, "evidence": "It selects DEV."}`}, "stop", 400, 20)
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
			_, _ = w.Write(judged)
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
	// job runs one job; skillAware adds what a worker does around the agent for skill-aware
	// evaluation: activation detection over what enters the model's context, and the
	// trajectory encoded for the result. Without it the agent still records its trajectory in its loop: that part
	// cannot be switched off, so the comparison below leaves it out of the difference.
	// The worker builds a run's detector once and shares it among the run's jobs.
	detector := activation.New([]activation.Skill{{Name: "env-selector", Body: activation.BodyOf(string(envSkillFile))}})
	job := func(skillAware bool) error {
		req := agent.Request{Input: "Select DEV", Catalog: catalog, WorkDir: "/work"}
		if skillAware {
			req.Skills = detector
		}
		out, tr, err := builtin.Run(ctx, instantTools{}, req)
		if err != nil {
			return err
		}
		if skillAware && (len(tr.Activations) != 1 || trajectories.Encode(tr.Trajectory, &pb.Job{Id: "bench"}).GetSize() == 0) {
			return fmt.Errorf("no activation or no trajectory recorded: %+v", tr.Activations)
		}
		if r, _, err := j.Evaluate(ctx, "Selects DEV", "Select DEV", out, 1); err != nil || !r.Passed {
			return fmt.Errorf("judge: %v %+v", err, r)
		}
		return nil
	}
	if err := job(true); err != nil { // warm up, and record the request bodies
		return nil, err
	}
	record = false
	const n = 1000
	// The two kinds of job alternate, so that the machine's noise hits both alike.
	ours := make([]time.Duration, 0, n)
	plain := make([]time.Duration, 0, n)
	for range n {
		for _, aware := range []bool{true, false} {
			start := time.Now()
			if err := job(aware); err != nil {
				return nil, err
			}
			if aware {
				ours = append(ours, time.Since(start))
			} else {
				plain = append(plain, time.Since(start))
			}
		}
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
	o, r, pl := percentiles(ours), percentiles(raw), percentiles(plain)
	us := func(d time.Duration) string { return fmt.Sprintf("%.0f µs", float64(d)/1e3) }
	pct := func(with, without, raw time.Duration) string {
		return fmt.Sprintf("%+.1f%%", 100*(float64(with-raw)/float64(without-raw)-1))
	}
	return []benchResult{{
		name:   "agent + judge overhead per job",
		figure: fmt.Sprintf("p50 %s, p95 %s beyond the raw HTTP exchanges (job total p50 %s, p95 %s)", us(o.P50-r.P50), us(o.P95-r.P95), us(o.P50), us(o.P95)),
		target: "(no target: recorded)",
		detail: fmt.Sprintf("n=%d jobs of a 3-turn built-in agent conversation (read SKILL.md, run bash, answer) plus one judge verdict, against an in-process endpoint answering at once and a sandbox stand-in answering at once, so only skillfleet's own cost is left. The raw baseline posts the same %d request bodies with net/http: p50 %s, p95 %s. Model latency, which this excludes, is typically hundreds of milliseconds per turn.",
			n, len(bodies), us(r.P50), us(r.P95)),
	}, {
		name: "skill-aware evaluation cost per job (activation detection, trajectory encoding)",
		figure: fmt.Sprintf("overhead p50 %s vs %s without (%s), p95 %s vs %s (%s)",
			us(o.P50-r.P50), us(pl.P50-r.P50), pct(o.P50, pl.P50, r.P50), us(o.P95-r.P95), us(pl.P95-r.P95), pct(o.P95, pl.P95, r.P95)),
		target: "< 5% of the agent overhead per job (p50, p95)",
		met:    verdict(o.P50-r.P50 < (pl.P50-r.P50)*105/100 && o.P95-r.P95 < (pl.P95-r.P95)*105/100),
		detail: fmt.Sprintf("The same n=%d jobs as the row above, alternating with jobs that skip activation detection and trajectory encoding, in one run. What the agent's loop records of its trajectory as it goes is in both (it cannot be switched off); the worker's reads of the catalog's SKILL.md files are not in either (once per run and worker, cached). A 50-turn job's result stays small whatever its trajectory: above 64 KiB the trajectory goes to the artifacts stream and the result keeps its digest (worker TestStoreDocuments).", n),
	}}, nil
}
