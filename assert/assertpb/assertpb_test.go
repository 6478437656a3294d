package assertpb

import (
	"encoding/json"
	"testing"

	"github.com/skillfleet/skillfleet/assert"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// example is one compilable assertion of each kind, with an observation it passes on and one it
// fails on.
func example(t *testing.T, typ assert.Type) (assert.Assertion, assert.Observation, assert.Observation) {
	t.Helper()
	switch typ {
	case assert.OutputContains:
		return assert.Assertion{Type: typ, Value: "Ready"}, assert.Observation{Output: "all READY"}, assert.Observation{Output: "no"}
	case assert.OutputNotContains:
		return assert.Assertion{Type: typ, Value: "error"}, assert.Observation{Output: "fine"}, assert.Observation{Output: "an ERROR"}
	case assert.OutputMatches:
		return assert.Assertion{Type: typ, Value: `^\d+$`}, assert.Observation{Output: "42"}, assert.Observation{Output: "x42"}
	case assert.SemanticMatch:
		return assert.Assertion{Type: typ, Value: "says hello"}, assert.Observation{}, assert.Observation{}
	case assert.ExitCode:
		return assert.Assertion{Type: typ, ExitCode: 2}, assert.Observation{ExitCode: 2}, assert.Observation{ExitCode: 0}
	case assert.StdoutContains:
		return assert.Assertion{Type: typ, Value: "ok"}, assert.Observation{Stdout: "ok\n"}, assert.Observation{Stdout: "OK\n"}
	case assert.StderrContains:
		return assert.Assertion{Type: typ, Value: "warn"}, assert.Observation{Stderr: "warn: x"}, assert.Observation{Stdout: "warn"}
	case assert.NotContains:
		return assert.Assertion{Type: typ, Value: "secret"}, assert.Observation{Stdout: "x"}, assert.Observation{Stdout: "a secret"}
	case assert.StdoutJSON:
		return assert.Assertion{Type: typ, JSON: map[string]any{"n": json.Number("10000000000000000001"), "a": []any{json.Number("1"), nil}}},
			assert.Observation{Stdout: `{"n": 10000000000000000001, "a": [1, null], "x": 1}`},
			// Big integers survive the wire without losing precision: one off does not match.
			assert.Observation{Stdout: `{"n": 10000000000000000000, "a": [1, null]}`}
	case assert.SkillActivated:
		return assert.Assertion{Type: typ, Value: "deploy"}, seen(assert.Trajectory{Activated: []assert.Activation{{Skill: "deploy", Turn: 1}}}), seen(assert.Trajectory{})
	case assert.SkillNotActivated:
		return assert.Assertion{Type: typ, Value: "deploy"}, seen(assert.Trajectory{}), seen(assert.Trajectory{Activated: []assert.Activation{{Skill: "deploy", Turn: 1}}})
	case assert.ToolCalled:
		// Every field of tool_called travels: the pattern, min and max.
		bash := func(args ...string) assert.Observation {
			tr := assert.Trajectory{}
			for _, a := range args {
				tr.ToolCalls = append(tr.ToolCalls, assert.ToolCall{Name: "bash", Arguments: a})
			}
			return seen(tr)
		}
		return assert.Assertion{Type: typ, Value: "bash", ArgsMatch: `"make`, Min: 2, Max: 2, MaxSet: true},
			bash(`{"command":"make"}`, `{"command":"ls"}`, `{"command":"make x"}`),
			bash(`{"command":"make"}`, `{"command":"make"}`, `{"command":"make"}`)
	case assert.ToolNotCalled:
		return assert.Assertion{Type: typ, Value: "bash"}, seen(assert.Trajectory{}), seen(assert.Trajectory{ToolCalls: []assert.ToolCall{{Name: "bash"}}})
	case assert.ToolOrder:
		a, b := assert.ToolCall{Name: "read_file"}, assert.ToolCall{Name: "bash"}
		return assert.Assertion{Type: typ, Names: []string{"read_file", "bash"}},
			seen(assert.Trajectory{ToolCalls: []assert.ToolCall{a, b}}), seen(assert.Trajectory{ToolCalls: []assert.ToolCall{b, a}})
	case assert.MaxTurns:
		return assert.Assertion{Type: typ, Max: 2}, seen(assert.Trajectory{Turns: 2}), seen(assert.Trajectory{Turns: 3})
	case assert.MaxToolCalls:
		return assert.Assertion{Type: typ, Max: 1}, seen(assert.Trajectory{ToolCalls: []assert.ToolCall{{Name: "x"}}}),
			seen(assert.Trajectory{ToolCalls: []assert.ToolCall{{Name: "x"}, {Name: "x"}}})
	case assert.MaxTokens:
		// Beyond int32: the wire carries 64-bit counts.
		return assert.Assertion{Type: typ, Max: 5_000_000_000}, seen(assert.Trajectory{Tokens: 5_000_000_000}), seen(assert.Trajectory{Tokens: 5_000_000_001})
	case assert.FileExists:
		return assert.Assertion{Type: typ, Path: "out/a.txt"}, files("out/a.txt", "x"), files("other", "x")
	case assert.FileNotExists:
		return assert.Assertion{Type: typ, Path: "tmp.log"}, files("other", ""), files("tmp.log", "")
	case assert.FileContains:
		return assert.Assertion{Type: typ, Path: "a.md", Value: "Done"}, files("a.md", "# Done"), files("a.md", "# done")
	case assert.FileMatches:
		return assert.Assertion{Type: typ, Path: "a.md", Value: `^v\d+$`}, files("a.md", "v12"), files("a.md", "v12\n")
	case assert.FileJSON:
		return assert.Assertion{Type: typ, Path: "r.json", JSON: map[string]any{"n": json.Number("10000000000000000001")}},
			files("r.json", `{"n": 10000000000000000001}`), files("r.json", `{"n": 10000000000000000000}`)
	}
	t.Fatalf("no example of assertion type %s: add one with the kind", typ)
	return assert.Assertion{}, assert.Observation{}, assert.Observation{}
}

// files is an observation in which path is a regular file holding content and every other
// path is missing.
func files(path, content string) assert.Observation {
	fs := map[string]assert.File{path: {State: assert.FileRegular, Size: int64(len(content)), Content: []byte(content)}}
	for _, p := range []string{"out/a.txt", "other", "tmp.log", "a.md", "r.json"} {
		if p != path {
			fs[p] = assert.File{State: assert.FileMissing}
		}
	}
	return assert.Observation{Files: fs}
}

// seen is an observation of an agent whose tool calls were all seen.
func seen(tr assert.Trajectory) assert.Observation {
	tr.ToolsSeen, tr.ActivationsSeen = true, true
	return assert.Observation{Trajectory: &tr}
}

// TestRoundTrip: every kind assert knows decodes from what Encode wrote to an assertion that
// decides as the planned one does.
func TestRoundTrip(t *testing.T) {
	for _, typ := range assert.Types() {
		t.Run(string(typ), func(t *testing.T) {
			a, good, bad := example(t, typ)
			if err := assert.Compile(&a); err != nil {
				t.Fatal(err)
			}
			pa, err := Encode(a, "s/test/cases.yaml", 7, 3)
			if err != nil {
				t.Fatal(err)
			}
			if pa.GetFile() != "s/test/cases.yaml" || pa.GetLine() != 7 || pa.GetVotes() != 3 {
				t.Fatalf("place or votes lost: %v", pa)
			}
			got, err := DecodeAll([]*pb.Assertion{pa})
			if err != nil {
				t.Fatal(err)
			}
			if typ == assert.SemanticMatch {
				if got[0].Type != typ || got[0].Value != a.Value {
					t.Fatalf("decoded %+v, want %+v", got[0], a)
				}
				return
			}
			for _, c := range []struct {
				obs  assert.Observation
				want bool
			}{{good, true}, {bad, false}} {
				r, err := assert.Evaluate(got[0], c.obs)
				if err != nil || r.Passed != c.want {
					t.Fatalf("after the wire on %+v: %+v, %v; want passed %v", c.obs, r, err, c.want)
				}
			}
		})
	}
}

func TestDecodeAllRefusesABadJob(t *testing.T) {
	for name, bad := range map[string][]*pb.Assertion{
		"no assertions": nil,
		"bad pattern":   {{Type: "output_matches", Value: "("}},
		"bad json":      {{Type: "stdout_json", Json: []byte("{not json")}},
		"unknown type":  {{Type: "no_such_type", Value: "x"}},
		"empty value":   {{Type: "stdout_contains"}},
		"min over max":  {{Type: "tool_called", Value: "bash", Min: 3, Max: 1, MaxSet: true}},
		"bad args":      {{Type: "tool_called", Value: "bash", Min: 1, ArgsMatch: "("}},
		"short order":   {{Type: "tool_order", Names: []string{"bash"}}},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := DecodeAll(bad); err == nil {
				t.Fatalf("DecodeAll(%v) accepted a bad job", bad)
			}
		})
	}
}

func TestResults(t *testing.T) {
	in := []assert.Result{{Type: assert.StdoutJSON, Passed: false, Expected: "1", Actual: "2", Message: "m", Path: "$.a", Errored: true}}
	got := Results(in)
	want := &pb.AssertionResult{Type: "stdout_json", Expected: "1", Actual: "2", Message: "m", Path: "$.a", Errored: true}
	if len(got) != 1 || got[0].String() != want.String() {
		t.Fatalf("Results = %v, want %v", got, want)
	}
}
