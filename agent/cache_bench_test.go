package agent_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/agent"
)

// cachingAnthropic is an Anthropic Messages endpoint that caches prompts the way Anthropic
// documents it: the prefix of a request up to and including a block marked with
// cache_control (tools, then system) is written to the cache the first time it is seen, if it
// is at least minCacheTokens long, and read from it on every later request with the same
// prefix. Tokens are counted at 4 bytes each. It knows nothing of skillfleet: what it reports
// depends only on what the requests mark and whether their prefixes are byte-identical.
type cachingAnthropic struct {
	mu     sync.Mutex
	cached map[[32]byte]bool
}

// minCacheTokens is the shortest prefix Anthropic caches for Sonnet and Opus models.
const minCacheTokens = 1024

func (c *cachingAnthropic) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Tools    json.RawMessage `json:"tools"`
		System   []json.RawMessage
		Messages json.RawMessage `json:"messages"`
	}
	var raw map[string]json.RawMessage
	_ = json.Unmarshal(body, &raw)
	req.Tools, req.Messages = raw["tools"], raw["messages"]
	_ = json.Unmarshal(raw["system"], &req.System)
	prefix, marked := []byte(req.Tools), false
	for _, b := range req.System {
		prefix = append(prefix, b...)
		if strings.Contains(string(b), `"cache_control"`) {
			marked = true
			break
		}
	}
	total := int64(len(body)) / 4
	var read, write int64
	if n := int64(len(prefix)) / 4; marked && n >= minCacheTokens {
		key := sha256.Sum256(prefix)
		c.mu.Lock()
		if c.cached[key] {
			read = n
		} else {
			c.cached[key], write = true, n
		}
		c.mu.Unlock()
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = fmt.Fprintf(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-bench","content":[{"type":"text","text":"done"}],"stop_reason":"end_turn","usage":{"input_tokens":%d,"cache_read_input_tokens":%d,"cache_creation_input_tokens":%d,"output_tokens":5}}`,
		total-read-write, read, write)
}

type nopSandbox struct{}

func (nopSandbox) Exec(context.Context, []string, []byte, string, time.Duration) (agent.ExecResult, error) {
	return agent.ExecResult{}, nil
}

// BenchmarkPromptCache runs 100 jobs of one run (the same 40-skill catalog in every system
// prompt) through the built-in agent on Anthropic's protocol, against an endpoint that caches
// what a request marks cacheable, and reports the prompt tokens read from the cache, of all the
// prompt tokens; without the mark (or on a provider without caching) none are. The cost is at
// Claude Sonnet's prices: $3 per million prompt tokens, $0.30 for cache reads, $3.75 for cache
// writes. Run: go test -run '^$' -bench PromptCache -benchtime 1x ./agent
func BenchmarkPromptCache(b *testing.B) {
	srv := httptest.NewServer(&cachingAnthropic{cached: map[[32]byte]bool{}})
	b.Cleanup(srv.Close)
	catalog := make([]agent.SkillRef, 40)
	for i := range catalog {
		catalog[i] = agent.SkillRef{Name: fmt.Sprintf("skill-%02d", i),
			Description: fmt.Sprintf("Skill %d of the suite: %s. Use when the user asks for task %d.", i, strings.Repeat("handles a kind of request with care ", 4), i),
			Location:    fmt.Sprintf("/skills/skill-%02d/SKILL.md", i)}
	}
	price := agent.Price{PromptPerMTok: 3, CompletionPerMTok: 15, CacheReadPerMTok: 0.3, CacheWritePerMTok: 3.75}
	for range b.N {
		c, err := agent.NewClient(agent.Endpoint{Name: "bench", API: agent.APIAnthropic, BaseURL: srv.URL, APIKey: "k", Model: "claude-bench", Price: price}, agent.ClientDeps{})
		if err != nil {
			b.Fatal(err)
		}
		a := agent.NewBuiltIn(c, nil)
		var total agent.Usage
		for j := range 100 {
			_, tr, err := a.Run(context.Background(), nopSandbox{}, agent.Request{Input: fmt.Sprintf("job %d: do the task", j), Catalog: catalog, WorkDir: "/work"})
			if err != nil {
				b.Fatal(err)
			}
			total.Add(tr.Usage)
		}
		uncached := price.CostOf(agent.Usage{PromptTokens: total.PromptTokens, CompletionTokens: total.CompletionTokens})
		b.ReportMetric(float64(total.PromptTokens), "prompt-tokens")
		b.ReportMetric(float64(total.CacheReadTokens), "cache-read-tokens")
		b.ReportMetric(float64(total.CacheWriteTokens), "cache-write-tokens")
		b.ReportMetric(total.Cost, "cost-$")
		b.ReportMetric(uncached, "cost-uncached-$")
		if total.CacheReadTokens == 0 {
			b.Fatal("no prompt token was read from the cache: the system prompt is not cacheable across jobs")
		}
	}
}
