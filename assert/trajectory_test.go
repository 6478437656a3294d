package assert

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestCompileTrajectory(t *testing.T) {
	long := strings.Repeat("x", MaxNameBytes+1)
	tests := []struct {
		name string
		a    Assertion
		err  string // "" for success
	}{
		{name: "skill_activated", a: Assertion{Type: SkillActivated, Value: "deploy"}},
		{name: "empty skill name", a: Assertion{Type: SkillActivated, Value: " "}, err: "the name is empty"},
		{name: "skill name with spaces", a: Assertion{Type: SkillNotActivated, Value: "deploy "},
			err: `the name "deploy " has leading or trailing spaces`},
		{name: "name too long", a: Assertion{Type: ToolNotCalled, Value: long},
			err: "the name is 257 bytes, more than 256"},
		{name: "name not UTF-8", a: Assertion{Type: ToolNotCalled, Value: "b\xffash"},
			err: `the name "b\xffash" is not valid UTF-8`},
		{name: "tool_called defaults", a: New(ToolCalled), err: "the name is empty"},
		{name: "tool_called", a: Assertion{Type: ToolCalled, Value: "bash", Min: 1}},
		{name: "tool_called with a range", a: Assertion{Type: ToolCalled, Value: "bash", Min: 0, Max: 2, MaxSet: true}},
		{name: "tool_called never with a pattern", a: Assertion{Type: ToolCalled, Value: "bash", ArgsMatch: `rm -rf`, Max: 0, MaxSet: true}},
		{name: "tool_called bad pattern", a: Assertion{Type: ToolCalled, Value: "bash", ArgsMatch: `a(`, Min: 1},
			err: "error parsing regexp: missing closing ): `a(`"},
		{name: "tool_called costly pattern", a: Assertion{Type: ToolCalled, Value: "bash", ArgsMatch: `x{1000}`, Min: 1},
			err: "the pattern compiles to 1002 instructions, more than 1000: matching it would cost the worker too much time"},
		{name: "tool_called negative min", a: Assertion{Type: ToolCalled, Value: "bash", Min: -1},
			err: "min -1 is negative"},
		{name: "tool_called negative max", a: Assertion{Type: ToolCalled, Value: "bash", Max: -1, MaxSet: true},
			err: "max -1 is negative"},
		{name: "tool_called min over max", a: Assertion{Type: ToolCalled, Value: "bash", Min: 3, Max: 2, MaxSet: true},
			err: "min 3 is more than max 2: no number of calls can pass"},
		{name: "tool_called that cannot fail", a: Assertion{Type: ToolCalled, Value: "bash"},
			err: "min 0 without a max accepts any number of calls: the assertion can never fail"},
		{name: "tool_order", a: Assertion{Type: ToolOrder, Names: []string{"read_file", "bash"}}},
		{name: "tool_order of one", a: Assertion{Type: ToolOrder, Names: []string{"bash"}},
			err: "at least two tool names are needed, got 1"},
		{name: "tool_order twice", a: Assertion{Type: ToolOrder, Names: []string{"bash", "read_file", "bash"}},
			err: `tool "bash" is listed twice: only first calls are ordered`},
		{name: "tool_order empty name", a: Assertion{Type: ToolOrder, Names: []string{"bash", ""}},
			err: "the name is empty"},
		{name: "max_turns", a: Assertion{Type: MaxTurns, Max: 5}},
		{name: "max_turns 0", a: Assertion{Type: MaxTurns}, err: "a limit of 0 turns can never pass: an answer takes at least one turn"},
		{name: "max_tokens 0", a: Assertion{Type: MaxTokens}, err: "a limit of 0 tokens can never pass: an answer takes tokens"},
		{name: "max_tool_calls 0", a: Assertion{Type: MaxToolCalls}},
		{name: "negative max_tool_calls", a: Assertion{Type: MaxToolCalls, Max: -1}, err: "the limit -1 is negative"},
		{name: "negative max_tokens", a: Assertion{Type: MaxTokens, Max: -5}, err: "the limit -5 is negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := tt.a
			err := Compile(&a)
			if tt.err == "" {
				if err != nil {
					t.Fatalf("Compile: %v", err)
				}
				if (a.ArgsMatch != "") != (a.Regexp != nil) {
					t.Fatalf("Regexp %v for args_match %q", a.Regexp, a.ArgsMatch)
				}
				return
			}
			if err == nil || err.Error() != tt.err {
				t.Fatalf("Compile error = %v, want %q", err, tt.err)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v does not match ErrInvalid", err)
			}
		})
	}
}

// traj is a trajectory of a run that read a skill, looked around and deployed.
func traj() *Trajectory {
	return &Trajectory{
		Activated: []Activation{{Skill: "deploy", Turn: 1}, {Skill: "lint", Turn: 3}},
		ToolCalls: []ToolCall{
			{Name: "read_file", Arguments: `{"path":"skills/deploy/SKILL.md"}`},
			{Name: "read_file", Arguments: `{"path":"config.yaml"}`},
			{Name: "bash", Arguments: `{"command":"make build"}`},
			{Name: "read_file", Arguments: `{"path":"skills/lint/SKILL.md"}`},
			{Name: "bash", Arguments: `{"command":"make deploy ENV=dev"}`},
		},
		Turns: 4, Tokens: 1234, ToolsSeen: true, ActivationsSeen: true,
	}
}

func TestEvaluateTrajectory(t *testing.T) {
	const calls = "calls: read_file×3, bash×2"
	tests := []struct {
		name string
		a    Assertion
		tr   *Trajectory
		want Result
	}{
		{
			name: "skill activated", a: Assertion{Type: SkillActivated, Value: "lint"}, tr: traj(),
			want: Result{Passed: true, Expected: `skill "lint" is activated`, Actual: "deploy (turn 1), lint (turn 3)",
				Message: `skill "lint" was activated at turn 3`},
		},
		{
			name: "skill not activated fails", a: Assertion{Type: SkillActivated, Value: "release"}, tr: traj(),
			want: Result{Expected: `skill "release" is activated`, Actual: "deploy (turn 1), lint (turn 3)",
				Message: `skill "release" was not activated; activated: deploy (turn 1), lint (turn 3)`},
		},
		{
			name: "no skill activated", a: Assertion{Type: SkillActivated, Value: "deploy"}, tr: &Trajectory{ToolsSeen: true, ActivationsSeen: true},
			want: Result{Expected: `skill "deploy" is activated`, Actual: "none",
				Message: `skill "deploy" was not activated; no skill was activated`},
		},
		{
			name: "skill_not_activated passes", a: Assertion{Type: SkillNotActivated, Value: "release"}, tr: traj(),
			want: Result{Passed: true, Expected: `skill "release" is not activated`, Actual: "deploy (turn 1), lint (turn 3)",
				Message: `skill "release" was not activated; activated: deploy (turn 1), lint (turn 3)`},
		},
		{
			name: "skill_not_activated fails", a: Assertion{Type: SkillNotActivated, Value: "deploy"}, tr: traj(),
			want: Result{Expected: `skill "deploy" is not activated`, Actual: "deploy (turn 1), lint (turn 3)",
				Message: `skill "deploy" was activated at turn 1`},
		},
		{
			name: "activation turn unknown", a: Assertion{Type: SkillActivated, Value: "deploy"},
			tr: &Trajectory{Activated: []Activation{{Skill: "deploy"}}, ToolsSeen: true, ActivationsSeen: true},
			want: Result{Passed: true, Expected: `skill "deploy" is activated`, Actual: "deploy",
				Message: `skill "deploy" was activated`},
		},
		{
			name: "tool called", a: Assertion{Type: ToolCalled, Value: "bash", Min: 1}, tr: traj(),
			want: Result{Passed: true, Expected: `tool "bash" is called at least 1 time`, Actual: `{"command":"make build"}`,
				Message: `tool "bash" was called 2 times, first at call 3 of 5; ` + calls},
		},
		{
			name: "tool called with matching arguments", a: Assertion{Type: ToolCalled, Value: "bash", ArgsMatch: `deploy ENV=\w+`, Min: 1}, tr: traj(),
			want: Result{Passed: true, Expected: `tool "bash" is called at least 1 time with arguments matching /deploy ENV=\w+/`,
				Actual:  `{"command":"make deploy ENV=dev"}`,
				Message: `tool "bash" was called 1 time whose arguments match /deploy ENV=\w+/, first at call 5 of 5; ` + calls},
		},
		{
			name: "no call's arguments match", a: Assertion{Type: ToolCalled, Value: "bash", ArgsMatch: `rm -rf`, Min: 1}, tr: traj(),
			want: Result{Expected: `tool "bash" is called at least 1 time with arguments matching /rm -rf/`,
				Actual:  `{"command":"make build"}`,
				Message: `tool "bash" was called 0 times whose arguments match /rm -rf/; want at least 1 time; ` + calls},
		},
		{
			name: "tool never called", a: Assertion{Type: ToolCalled, Value: "write_file", Min: 1}, tr: traj(),
			want: Result{Expected: `tool "write_file" is called at least 1 time`, Actual: "read_file×3, bash×2",
				Message: `tool "write_file" was called 0 times; want at least 1 time; ` + calls},
		},
		{
			name: "too many calls", a: Assertion{Type: ToolCalled, Value: "read_file", Min: 1, Max: 2, MaxSet: true}, tr: traj(),
			want: Result{Expected: `tool "read_file" is called between 1 and 2 times`, Actual: `{"path":"skills/deploy/SKILL.md"}`,
				Message: `tool "read_file" was called 3 times, first at call 1 of 5; want between 1 and 2 times; ` + calls},
		},
		{
			name: "exactly", a: Assertion{Type: ToolCalled, Value: "bash", Min: 2, Max: 2, MaxSet: true}, tr: traj(),
			want: Result{Passed: true, Expected: `tool "bash" is called exactly 2 times`, Actual: `{"command":"make build"}`,
				Message: `tool "bash" was called 2 times, first at call 3 of 5; ` + calls},
		},
		{
			name: "never with a pattern fails", a: Assertion{Type: ToolCalled, Value: "bash", ArgsMatch: `deploy`, MaxSet: true}, tr: traj(),
			want: Result{Expected: `tool "bash" is called never with arguments matching /deploy/`, Actual: `{"command":"make deploy ENV=dev"}`,
				Message: `tool "bash" was called 1 time whose arguments match /deploy/, first at call 5 of 5; want never; ` + calls},
		},
		{
			name: "at most", a: Assertion{Type: ToolCalled, Value: "bash", Max: 3, MaxSet: true}, tr: traj(),
			want: Result{Passed: true, Expected: `tool "bash" is called at most 3 times`, Actual: `{"command":"make build"}`,
				Message: `tool "bash" was called 2 times, first at call 3 of 5; ` + calls},
		},
		{
			name: "tool not called passes", a: Assertion{Type: ToolNotCalled, Value: "write_file"}, tr: traj(),
			want: Result{Passed: true, Expected: `tool "write_file" is not called`, Actual: "read_file×3, bash×2",
				Message: `tool "write_file" was not called; ` + calls},
		},
		{
			name: "tool not called fails", a: Assertion{Type: ToolNotCalled, Value: "bash"}, tr: traj(),
			want: Result{Expected: `tool "bash" is not called`, Actual: `{"command":"make build"}`,
				Message: `tool "bash" was called 2 times, first at call 3 of 5; ` + calls},
		},
		{
			name: "no calls at all", a: Assertion{Type: ToolNotCalled, Value: "bash"}, tr: &Trajectory{ToolsSeen: true, ActivationsSeen: true},
			want: Result{Passed: true, Expected: `tool "bash" is not called`, Actual: "none",
				Message: `tool "bash" was not called; calls: none`},
		},
		{
			name: "tool order", a: Assertion{Type: ToolOrder, Names: []string{"read_file", "bash"}}, tr: traj(),
			want: Result{Passed: true, Expected: `first calls in order: "read_file" before "bash"`, Actual: "read_file×3, bash×2",
				Message: `first calls in order: "read_file" (call 1), "bash" (call 3)`},
		},
		{
			name: "tool order reversed", a: Assertion{Type: ToolOrder, Names: []string{"bash", "read_file"}}, tr: traj(),
			want: Result{Expected: `first calls in order: "bash" before "read_file"`, Actual: "read_file×3, bash×2",
				Message: `the first call of "read_file" (call 1) comes before the first call of "bash" (call 3); ` + calls},
		},
		{
			name: "tool order with a missing tool", a: Assertion{Type: ToolOrder, Names: []string{"read_file", "write_file", "bash"}}, tr: traj(),
			want: Result{Expected: `first calls in order: "read_file" before "write_file" before "bash"`, Actual: "read_file×3, bash×2",
				Message: `tool "write_file" was never called; ` + calls},
		},
		{
			name: "max turns", a: Assertion{Type: MaxTurns, Max: 4}, tr: traj(),
			want: Result{Passed: true, Expected: "at most 4 turns", Actual: "4 turns", Message: "the agent took 4 turns, at most 4"},
		},
		{
			name: "max turns exceeded", a: Assertion{Type: MaxTurns, Max: 1}, tr: traj(),
			want: Result{Expected: "at most 1 turn", Actual: "4 turns", Message: "the agent took 4 turns, more than 1"},
		},
		{
			name: "max tool calls exceeded", a: Assertion{Type: MaxToolCalls, Max: 3}, tr: traj(),
			want: Result{Expected: "at most 3 tool calls", Actual: "5 tool calls",
				Message: "the agent made 5 tool calls, more than 3; " + calls},
		},
		{
			name: "max tool calls 0", a: Assertion{Type: MaxToolCalls}, tr: &Trajectory{Turns: 1, ToolsSeen: true},
			want: Result{Passed: true, Expected: "at most 0 tool calls", Actual: "0 tool calls", Message: "the agent made 0 tool calls, at most 0"},
		},
		{
			name: "max tokens", a: Assertion{Type: MaxTokens, Max: 2000}, tr: traj(),
			want: Result{Passed: true, Expected: "at most 2000 tokens", Actual: "1234 tokens", Message: "the agent used 1234 tokens, at most 2000"},
		},
		{
			name: "max tokens exceeded", a: Assertion{Type: MaxTokens, Max: 1000}, tr: traj(),
			want: Result{Expected: "at most 1000 tokens", Actual: "1234 tokens", Message: "the agent used 1234 tokens, more than 1000"},
		},
		{
			name: "max tokens without seen tools", a: Assertion{Type: MaxTokens, Max: 1000}, tr: &Trajectory{Turns: 2, Tokens: 10},
			want: Result{Passed: true, Expected: "at most 1000 tokens", Actual: "10 tokens", Message: "the agent used 10 tokens, at most 1000"},
		},
		{
			// Never a false pass: an agent that does not report its tool calls has not shown
			// it made none.
			name: "tools not seen", a: Assertion{Type: ToolNotCalled, Value: "bash"}, tr: &Trajectory{Turns: 2},
			want: Result{Errored: true,
				Message: "tool_not_called was not decided: the agent runs its tools itself and does not report its tool calls"},
		},
		{
			name: "skills not seen", a: Assertion{Type: SkillNotActivated, Value: "deploy"}, tr: &Trajectory{Turns: 2, ToolsSeen: true},
			want: Result{Errored: true,
				Message: "skill_not_activated was not decided: nothing watched what entered the agent's context, so its skill activations are unknown"},
		},
		{
			// A command agent behind the gateway: its activations are known, its tool calls not.
			name: "activations seen without tools", a: Assertion{Type: SkillNotActivated, Value: "deploy"}, tr: &Trajectory{Turns: 2, ActivationsSeen: true},
			want: Result{Passed: true, Expected: "skill \"deploy\" is not activated", Actual: "none", Message: "skill \"deploy\" was not activated; no skill was activated"},
		},
		{
			name: "no trajectory", a: Assertion{Type: MaxTurns, Max: 3},
			want: Result{Errored: true, Message: "max_turns was not decided: no trajectory was recorded for this job"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Evaluate(tt.a, Observation{Output: "done", Trajectory: tt.tr})
			if err != nil {
				t.Fatalf("Evaluate: %v", err)
			}
			tt.want.Type = tt.a.Type
			if got != tt.want {
				t.Errorf("got  %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

func TestEvaluateTrajectoryInvalid(t *testing.T) {
	got, err := Evaluate(Assertion{Type: ToolCalled, Value: "bash", Min: 2, Max: 1, MaxSet: true}, Observation{Trajectory: traj()})
	if !errors.Is(err, ErrInvalid) || got.Passed || !got.Errored {
		t.Fatalf("got %+v, %v; want an errored result and ErrInvalid", got, err)
	}
	if want := "invalid tool_called assertion: min 2 is more than max 1: no number of calls can pass"; got.Message != want {
		t.Errorf("Message = %q, want %q", got.Message, want)
	}
}

func TestEvaluateToolCalledStopsAtTheDeadline(t *testing.T) {
	calls := make([]ToolCall, 200)
	for i := range calls {
		calls[i] = ToolCall{Name: "bash", Arguments: `{"command":"ls"}`}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	results, _ := EvaluateAllContext(ctx, []Assertion{{Type: ToolCalled, Value: "bash", ArgsMatch: "ls", Min: 1}},
		Observation{Trajectory: &Trajectory{ToolCalls: calls, ToolsSeen: true}})
	if r := results[0]; r.Passed || !r.Errored {
		t.Fatalf("a tool_called decided after the deadline: %+v", r)
	}
}

func TestForms(t *testing.T) {
	for _, typ := range Types() {
		if typ.Form() == 0 {
			t.Errorf("%s has no form", typ)
		}
	}
	if Type("nope").Form() != 0 {
		t.Error("an unknown type has a form")
	}
	if a := New(ToolCalled); a.Min != 1 || a.MaxSet {
		t.Errorf("New(tool_called) = %+v, want at least one call", a)
	}
}
