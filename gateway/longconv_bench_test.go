package gateway

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/agent/agenttest"
)

// grow turns a golden first turn into a turn-n conversation of about perTurn bytes a turn.
func grow(tb testing.TB, g cliGolden, n, perTurn int) cliGolden {
	var body map[string]any
	if err := json.Unmarshal(g.Body, &body); err != nil {
		tb.Fatal(err)
	}
	out := strings.Repeat("ok  \tgithub.com/acme/app/pkg/sub\t0.012s\n", perTurn/40)
	switch {
	case body["input"] != nil:
		in := body["input"].([]any)
		for i := range n {
			id := fmt.Sprintf("call_%d", i)
			in = append(in,
				map[string]any{"type": "reasoning", "summary": []any{map[string]any{"type": "summary_text", "text": "**Reading**"}}, "encrypted_content": "gAAAAABp" + strings.Repeat("x", 400)},
				map[string]any{"type": "function_call", "name": "shell", "arguments": `{"command":["bash","-lc","go test ./pkg/..."],"workdir":"/workspace"}`, "call_id": id},
				map[string]any{"type": "function_call_output", "call_id": id, "output": out})
		}
		body["input"] = in
	case body["messages"] != nil:
		ms := body["messages"].([]any)
		for i := range n {
			id := fmt.Sprintf("toolu_%024d", i)
			ms = append(ms,
				map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "I'll run it."}, map[string]any{"type": "tool_use", "id": id, "name": "Bash", "input": map[string]any{"command": "go test ./..."}}}},
				map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": out}}})
		}
		body["messages"] = ms
	case body["contents"] != nil:
		cs := body["contents"].([]any)
		for i := range n {
			cs = append(cs,
				map[string]any{"role": "model", "parts": []any{map[string]any{"functionCall": map[string]any{"id": fmt.Sprint("c", i), "name": "run_shell_command", "args": map[string]any{"command": "go test ./..."}}}}},
				map[string]any{"role": "user", "parts": []any{map[string]any{"functionResponse": map[string]any{"id": fmt.Sprint("c", i), "name": "run_shell_command", "response": map[string]any{"output": out}}}}})
		}
		body["contents"] = cs
	}
	var err error
	if g.Body, err = json.Marshal(body); err != nil {
		tb.Fatal(err)
	}
	return g
}

func BenchmarkGatewayLongConversation(b *testing.B) {
	up := agenttest.NewAny(b, agenttest.Scripted(func(int, agenttest.Conv) (agenttest.Turn, *agenttest.Reply) {
		return agenttest.Turn{Text: "The notes are written.", Usage: agenttest.Tokens{Prompt: 900, Completion: 12}}, nil
	}), agenttest.NoRecord())
	for _, br := range benchRequests {
		g := grow(b, loadGolden(b, br.golden), 40, 6000)
		base := up.URL
		if br.api == APIOpenAI {
			base = up.BaseURL()
		}
		b.Run(br.api+"/gateway", func(b *testing.B) {
			f := serveGateway(b, base, func(c *Config) { c.API = br.api })
			s, err := f.g.Open("bench", Budget{}, nil)
			if err != nil {
				b.Fatal(err)
			}
			c := unixClient(b, f.socket)
			ds := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				send(b, c, g, s.Token())
				ds = append(ds, time.Since(start))
			}
			b.StopTimer()
			percentiles(b, ds)
			b.ReportMetric(float64(len(g.Body)), "body-bytes")
		})
		b.Run(br.api+"/raw-proxy", func(b *testing.B) {
			c := rawProxy(b, up.URL)
			ds := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				send(b, c, g, "raw")
				ds = append(ds, time.Since(start))
			}
			b.StopTimer()
			percentiles(b, ds)
		})
	}
}
