package atif

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestDocument builds a two-turn trajectory and compares it with a document written by hand
// from the RFC's field tables (testdata/two-turns.json).
func TestDocument(t *testing.T) {
	tr := Trajectory{SchemaVersion: SchemaVersion, SessionID: "job-1", Agent: Agent{Name: "skillfleet-builtin", Version: "1", ModelName: "m"}}
	tr.Add(SourceSystem, "You are an agent.")
	tr.Add(SourceUser, "What time is it?")
	s := tr.Add(SourceAgent, "")
	s.ModelName = "m"
	s.ToolCalls = []ToolCall{{ToolCallID: "c1", FunctionName: "bash", Arguments: Arguments(`{"command":"date"}`)}}
	s.Observation = &Observation{Results: []Result{{SourceCallID: "c1", Content: "exit_code: 0\nstdout:\n12:00\n"}}}
	s.Metrics = &Metrics{PromptTokens: 120, CompletionTokens: 18}
	s = tr.Add(SourceAgent, "It is noon.")
	s.ModelName = "m"
	s.Metrics = &Metrics{PromptTokens: 150, CompletionTokens: 5}
	tr.Finish()
	if err := tr.Validate(); err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/two-turns.json")
	if err != nil {
		t.Fatal(err)
	}
	var g, w bytes.Buffer
	if err := json.Compact(&g, got); err != nil {
		t.Fatal(err)
	}
	if err := json.Compact(&w, want); err != nil {
		t.Fatal(err)
	}
	if g.String() != w.String() {
		t.Errorf("document differs:\n got %s\nwant %s", g.String(), w.String())
	}
}

func TestValidate(t *testing.T) {
	ok := func() Trajectory {
		tr := Trajectory{SchemaVersion: SchemaVersion, Agent: Agent{Name: "a", Version: "1"}}
		tr.Add(SourceUser, "hi")
		s := tr.Add(SourceAgent, "")
		s.ToolCalls = []ToolCall{{ToolCallID: "c1", FunctionName: "f", Arguments: Arguments(`{}`)}}
		s.Observation = &Observation{Results: []Result{{SourceCallID: "c1", Content: "x"}}}
		return tr
	}
	tests := []struct {
		name   string
		mutate func(*Trajectory)
		want   string
	}{
		{"valid", func(*Trajectory) {}, ""},
		{"version", func(t *Trajectory) { t.SchemaVersion = "ATIF-v1.4" }, "schema_version"},
		{"agent", func(t *Trajectory) { t.Agent.Version = "" }, "agent.name and agent.version"},
		{"ids", func(t *Trajectory) { t.Steps[1].StepID = 5 }, "step_id 5, want 2"},
		{"source", func(t *Trajectory) { t.Steps[0].Source = "tool" }, `source "tool"`},
		{"agent field on user step", func(t *Trajectory) { t.Steps[0].Metrics = &Metrics{PromptTokens: 1} }, "belong to agent steps"},
		{"orphan result", func(t *Trajectory) { t.Steps[1].Observation.Results[0].SourceCallID = "c9" }, `"c9" names no tool call`},
		{"arguments not an object", func(t *Trajectory) { t.Steps[1].ToolCalls[0].Arguments = json.RawMessage(`"x"`) }, "arguments must be a JSON object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := ok()
			tc.mutate(&tr)
			err := tr.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("unexpected %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestArguments(t *testing.T) {
	for in, want := range map[string]string{
		`{"a":1}`:    `{"a":1}`,
		`not json`:   `{"_raw":"not json"}`,
		`"a string"`: `{"_raw":"\"a string\""}`,
		`null`:       `{"_raw":"null"}`,
		``:           `{"_raw":""}`,
	} {
		if got := string(Arguments(in)); got != want {
			t.Errorf("Arguments(%q) = %s, want %s", in, got, want)
		}
	}
}
