package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/activation"
	"github.com/skillfleet/skillfleet/agent/agenttest"
)

const fixtureBody = `# Release notes

Collect every merged pull request since the last tag with git log.
Group the entries under Added, Changed and Fixed, newest first.
Write the result to CHANGELOG.md above the previous release's section.
`

// chatRequest is a Chat Completions body holding msgs after a system prompt.
func chatBodyOf(t *testing.T, msgs ...map[string]any) string {
	t.Helper()
	all := append([]map[string]any{{"role": "system", "content": "<available_skills><skill><name>release-notes</name><description>Writes release notes.</description></skill></available_skills>"}}, msgs...)
	b, err := json.Marshal(map[string]any{"model": "m", "messages": all})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestGatewayDetectsActivationByContent: an agent CLI that reads a SKILL.md with cat in its
// shell tool shows the body to the model in a tool message; the gateway records the skill at
// the request that first carried it, once, and not before.
func TestGatewayDetectsActivationByContent(t *testing.T) {
	f := newGatewayFixture(t, textReply(1, 1), nil)
	det := activation.New([]activation.Skill{{Name: "release-notes", Body: fixtureBody}, {Name: "other", Body: "An unrelated skill body line that is long.\nAnd its second line, long enough as well.\nAnd a third line that is never read here.\n"}})
	s, err := f.g.Open("job", Budget{}, det)
	if err != nil {
		t.Fatal(err)
	}
	user := map[string]any{"role": "user", "content": "write the release notes"}
	call := map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"id": "c1", "type": "function",
		"function": map[string]any{"name": "shell", "arguments": `{"command":"cat /skills/release-notes/SKILL.md"}`}}}}
	// What cat printed, frontmatter and all, as the CLI sends it back (JSON-escaped).
	result := map[string]any{"role": "tool", "tool_call_id": "c1", "content": "---\nname: release-notes\ndescription: Writes release notes.\n---\n" + fixtureBody}
	bodies := []string{
		chatBodyOf(t, user),
		chatBodyOf(t, user, call, result),
		chatBodyOf(t, user, call, result, map[string]any{"role": "assistant", "content": "done"}, map[string]any{"role": "user", "content": "again"}),
	}
	for i, b := range bodies {
		if r := f.do(t, http.MethodPost, "/v1/chat/completions", s.Token(), b); r.Status != http.StatusOK {
			t.Fatalf("request %d: %d %s", i+1, r.Status, r.Body)
		}
		if i == 0 && len(s.Activations()) != 0 {
			t.Fatalf("activated by the catalog alone: %v", s.Activations())
		}
	}
	want := []activation.Activation{{Skill: "release-notes", Turn: 2}}
	if got := s.Activations(); !slices.Equal(got, want) {
		t.Errorf("activations %v, want %v", got, want)
	}
}

// TestGatewayDetectsActivationInResponsesInput: the same through the Responses API, where the
// tool result is a function_call_output item.
func TestGatewayDetectsActivationInResponsesInput(t *testing.T) {
	up := newRecordingUpstream(t, "application/json", usageAnswers)
	f := serveGateway(t, up.URL+"/v1", nil)
	s, err := f.g.Open("job", Budget{}, activation.New([]activation.Skill{{Name: "release-notes", Body: fixtureBody}}))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(map[string]any{"model": "m", "instructions": "You are an agent.", "input": []any{
		map[string]any{"role": "user", "content": "notes please"},
		map[string]any{"type": "function_call_output", "call_id": "c1", "output": "     1\t# Release notes\n" + numberedLines(fixtureBody, 2)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if r := f.do(t, http.MethodPost, "/v1/responses", s.Token(), string(b)); r.Status != http.StatusOK {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if got := s.Activations(); len(got) != 1 || got[0].Skill != "release-notes" || got[0].Turn != 1 {
		t.Errorf("activations %v, want release-notes at turn 1", got)
	}
}

// numberedLines numbers text's lines from first as cat -n does.
func numberedLines(text string, first int) string {
	var b []byte
	for i, l := range splitLines(text) {
		b = fmt.Appendf(b, "%6d\t%s\n", first+i, l)
	}
	return string(b)
}

func splitLines(s string) []string { return strings.Split(strings.TrimSuffix(s, "\n"), "\n") }

// TestGatewayRetriedRequestIsNotATurn: a request the upstream rate-limits, which the CLI sends
// again, is forwarded twice but is one turn, as the built-in agent's client retries within a
// turn; the activation's turn counts turns, not requests.
func TestGatewayRetriedRequestIsNotATurn(t *testing.T) {
	f := newGatewayFixture(t, func(n int, _ agenttest.Request) agenttest.Reply {
		if n == 0 {
			return agenttest.Fail(http.StatusTooManyRequests)
		}
		return agenttest.Text("ok", 1, 1)
	}, nil)
	s, err := f.g.Open("job", Budget{}, activation.New([]activation.Skill{{Name: "release-notes", Body: fixtureBody}}))
	if err != nil {
		t.Fatal(err)
	}
	user := map[string]any{"role": "user", "content": "write the release notes"}
	call := map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"id": "c1", "type": "function",
		"function": map[string]any{"name": "shell", "arguments": `{"command":"cat /skills/release-notes/SKILL.md"}`}}}}
	result := map[string]any{"role": "tool", "tool_call_id": "c1", "content": fixtureBody}
	steps := []struct {
		body   string
		status int
	}{
		{chatBodyOf(t, user), http.StatusTooManyRequests},
		{chatBodyOf(t, user), http.StatusOK},
		{chatBodyOf(t, user, call, result), http.StatusOK},
	}
	for i, st := range steps {
		if r := f.do(t, http.MethodPost, "/v1/chat/completions", s.Token(), st.body); r.Status != st.status {
			t.Fatalf("request %d: %d %s, want %d", i+1, r.Status, r.Body, st.status)
		}
	}
	if s.Requests() != 3 || s.Turns() != 2 {
		t.Errorf("%d requests, %d turns; want 3 requests, 2 turns", s.Requests(), s.Turns())
	}
	want := []activation.Activation{{Skill: "release-notes", Turn: 2}}
	if got := s.Activations(); !slices.Equal(got, want) {
		t.Errorf("activations %v, want %v", got, want)
	}
}

// A conversation whose already scanned messages changed (a CLI that compacted its history
// into as many messages as before, or more) is scanned again: a skill's body that arrives in
// an earlier position is not missed because the conversation did not get shorter.
func TestGatewayScansARewrittenConversationAgain(t *testing.T) {
	f := newGatewayFixture(t, textReply(1, 1), nil)
	det := activation.New([]activation.Skill{{Name: "release-notes", Body: fixtureBody}})
	s, err := f.g.Open("job", Budget{}, det)
	if err != nil {
		t.Fatal(err)
	}
	bodies := []string{
		chatBodyOf(t, map[string]any{"role": "user", "content": "hi"}, map[string]any{"role": "assistant", "content": "hello"}),
		// The same length, the second message rewritten to hold the body.
		chatBodyOf(t, map[string]any{"role": "user", "content": "hi"}, map[string]any{"role": "assistant", "content": "Summary so far:\n" + fixtureBody}),
	}
	for i, b := range bodies {
		if r := f.do(t, http.MethodPost, "/v1/chat/completions", s.Token(), b); r.Status != http.StatusOK {
			t.Fatalf("request %d: %d %s", i+1, r.Status, r.Body)
		}
	}
	if a := s.Activations(); len(a) != 1 || a[0].Skill != "release-notes" || a[0].Turn != 2 {
		t.Errorf("activations %v, want release-notes at turn 2", a)
	}
}
