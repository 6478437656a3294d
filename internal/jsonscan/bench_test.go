package jsonscan

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// chatRequest builds a chat-completions request body of about size bytes, shaped like what
// a sandboxed agent sends after some turns: a system prompt, tool definitions with JSON
// schemas, and a conversation of user text, assistant tool calls (arguments as escaped JSON
// strings), and tool results holding file contents and command output, some non-ASCII.
func chatRequest(size int) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields(`the skill reads a file and runs the tests; résumé naïve 日本語 🙂 ` +
		`func main() { fmt.Println("hello") } if err != nil { return fmt.Errorf("open: %w", err) } ` +
		`path/to/workspace/main.go --- PASS: TestCheck (0.00s) ok github.com/x/y 0.123s \ tab	end`)
	text := func(n int) string {
		var b strings.Builder
		for b.Len() < n {
			b.WriteString(words[rng.IntN(len(words))])
			if rng.IntN(12) == 0 {
				b.WriteString("\n")
			} else {
				b.WriteString(" ")
			}
		}
		return b.String()
	}
	type m = map[string]any
	schema := m{"type": "object", "properties": m{
		"path":    m{"type": "string", "description": "file to read, relative to the workspace"},
		"command": m{"type": "string", "description": "shell command"},
		"timeout": m{"type": "integer", "minimum": 1, "maximum": 600},
		"env":     m{"type": "object", "additionalProperties": m{"type": "string"}},
	}, "required": []string{"command"}, "additionalProperties": false}
	var tools []m
	for _, name := range []string{"bash", "read_file", "write_file", "list_dir", "search", "web_fetch"} {
		tools = append(tools, m{"type": "function", "function": m{"name": name, "description": text(200), "parameters": schema}})
	}
	messages := []m{{"role": "system", "content": text(3000)}, {"role": "user", "content": []m{
		{"type": "text", "text": text(400)}, {"type": "text", "text": text(100)}}}}
	req := m{"model": "gpt-4.1", "temperature": 0.2, "max_tokens": 4096, "stream": false, "tools": tools,
		"tool_choice": "auto", "messages": messages}
	for turn := 0; ; turn++ {
		body, err := json.Marshal(req)
		if err != nil {
			panic(err)
		}
		if len(body) >= size {
			return body
		}
		args, _ := json.Marshal(m{"command": text(80), "timeout": 60})
		id := fmt.Sprintf("call_%d", turn)
		messages = append(messages,
			m{"role": "assistant", "content": nil, "tool_calls": []m{{"id": id, "type": "function",
				"function": m{"name": "bash", "arguments": string(args)}}}},
			m{"role": "tool", "tool_call_id": id, "content": text(200 + rng.IntN(2000))},
			m{"role": "assistant", "content": text(150)},
			m{"role": "user", "content": text(60)},
		)
		req["messages"] = messages
	}
}

// BenchmarkCheck compares Check with the two readings a gateway might otherwise do of
// every request: json.Valid (syntax only, the target to be within 2x of) and a decode into
// map[string]any (which would also see keys, and is what a naive duplicate check costs).
func BenchmarkCheck(b *testing.B) {
	for _, size := range []struct {
		name string
		n    int
	}{{"200KiB", 200 << 10}, {"4MiB", 4 << 20}} {
		body := chatRequest(size.n)
		if err := Check(body, Options{}); err != nil {
			b.Fatal(err)
		}
		b.Run(size.name+"/Check", func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if err := Check(body, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(size.name+"/json.Valid", func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if !json.Valid(body) {
					b.Fatal("invalid")
				}
			}
		})
		b.Run(size.name+"/json.Unmarshal", func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				var v map[string]any
				if err := json.Unmarshal(body, &v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
