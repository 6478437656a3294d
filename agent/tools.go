package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/skillfleet/skillfleet/internal/text"
)

// DefaultMaxToolOutput bounds what one tool call returns to the model when Limits leaves it 0.
const DefaultMaxToolOutput = 16 << 10

// maxRecordedArguments bounds a tool call's arguments in the transcript (write_file content
// can be large; the transcript travels on the wire).
const maxRecordedArguments = 4 << 10

// toolset is the tools one run offers, after the skill's allowed-tools.
type toolset struct {
	policy toolPolicy
	// skillsOnly: read_file is not in allowed-tools but the suite has skills, so read_file is
	// offered for the catalog's SKILL.md files only. Activation is the harness's mechanism,
	// not a tool permission: without it a skill whose allowed-tools omits Read could never be
	// activated (progressive disclosure would break).
	skillsOnly bool
	locations  map[string]string // clean absolute SKILL.md path → skill name
	workdir    string
	maxOut     int
	names      []string
}

func newToolset(req Request) (*toolset, error) {
	p, err := parseAllowedTools(req.AllowedTools)
	if err != nil {
		return nil, err
	}
	ts := &toolset{policy: p, workdir: req.WorkDir, maxOut: req.Limits.MaxToolOutput, locations: map[string]string{}}
	if ts.maxOut <= 0 {
		ts.maxOut = DefaultMaxToolOutput
	}
	for _, s := range req.Catalog {
		if loc := ts.resolve(s.Location); loc != "" {
			ts.locations[loc] = s.Name
		}
	}
	if !p.read && len(ts.locations) > 0 {
		ts.skillsOnly = true
	}
	if p.bash {
		ts.names = append(ts.names, toolBash)
	}
	if p.read || ts.skillsOnly {
		ts.names = append(ts.names, toolRead)
	}
	if p.write {
		ts.names = append(ts.names, toolWrite)
	}
	return ts, nil
}

// resolve makes p a clean absolute path (relative to the work dir); "" when it cannot.
func (ts *toolset) resolve(p string) string {
	if p == "" {
		return ""
	}
	if !path.IsAbs(p) {
		if ts.workdir == "" {
			return ""
		}
		p = ts.workdir + "/" + p
	}
	return path.Clean(p)
}

func (ts *toolset) offers(name string) bool {
	for _, n := range ts.names {
		if n == name {
			return true
		}
	}
	return false
}

func stringParam(desc string) map[string]any {
	return map[string]any{"type": "string", "description": desc}
}

func objectSchema(props map[string]any, required ...string) map[string]any {
	return map[string]any{"type": "object", "properties": props, "required": required,
		"additionalProperties": false}
}

// definitions are the offered tools, with the JSON schemas of their arguments.
func (ts *toolset) definitions() []ToolSpec {
	var out []ToolSpec
	for _, n := range ts.names {
		var def ToolSpec
		switch n {
		case toolBash:
			desc := "Run a command with bash -c in the sandbox and return its exit code, stdout and stderr."
			if !ts.policy.bashAll {
				var rs []string
				for _, r := range ts.policy.bashRules {
					rs = append(rs, "Bash("+r.text+")")
				}
				desc += " Restricted by the skill's allowed-tools to one simple command (no pipes, redirections, ; or $) matching: " + strings.Join(rs, " ") + "."
			}
			def = ToolSpec{Name: toolBash, Description: desc,
				Parameters: objectSchema(map[string]any{"command": stringParam("The command to run.")}, "command")}
		case toolRead:
			desc := "Read a file in the sandbox and return its content."
			if ts.skillsOnly {
				desc = "Read one of the SKILL.md files listed in <available_skills> (other files are not allowed by the skill's allowed-tools)."
			}
			def = ToolSpec{Name: toolRead, Description: desc,
				Parameters: objectSchema(map[string]any{"path": stringParam("Path of the file; absolute, or relative to the working directory.")}, "path")}
		case toolWrite:
			def = ToolSpec{Name: toolWrite,
				Description: "Write content to a file in the sandbox, creating or replacing it.",
				Parameters: objectSchema(map[string]any{
					"path":    stringParam("Path of the file; absolute, or relative to the working directory."),
					"content": stringParam("The complete new content of the file."),
				}, "path", "content")}
		}
		out = append(out, def)
	}
	return out
}

// toolError is a failure the model is told about; the loop goes on.
type toolError struct{ msg string }

func (e toolError) Error() string { return e.msg }

func toolErrorf(format string, args ...any) error { return toolError{fmt.Sprintf(format, args...)} }

// errSandboxTimedOut says the sandbox killed a command at the deadline: the container is gone.
var errSandboxTimedOut = errors.New("the sandbox timed out a command")

// toolResult is one executed (or refused) tool call.
type toolResult struct {
	content   string // what the model is told
	call      ToolCall
	activated string // the skill this call activated, if any
}

// run executes one tool call. A non-nil error is the sandbox failing (not the command): the
// run cannot go on. Everything the model did wrong comes back as a tool error in the result.
func (ts *toolset) run(ctx context.Context, sb Sandbox, name, args string) (toolResult, error) {
	res := toolResult{call: ToolCall{Name: name, Arguments: text.ClipBytes(args, maxRecordedArguments), ExitCode: -1}}
	content, activated, err := ts.dispatch(ctx, sb, name, args, &res.call)
	var te toolError
	switch {
	case errors.As(err, &te):
		res.call.Error = te.msg
		res.content = "error: " + te.msg
	case err != nil:
		res.call.Error = err.Error()
		return res, err
	default:
		res.content = content
		res.activated = activated
	}
	res.call.Output = res.content
	return res, nil
}

func (ts *toolset) dispatch(ctx context.Context, sb Sandbox, name, args string, rec *ToolCall) (string, string, error) {
	if !ts.offers(name) {
		if name == toolBash || name == toolRead || name == toolWrite {
			return "", "", toolErrorf("tool %s is not allowed by the skill's allowed-tools", name)
		}
		return "", "", toolErrorf("unknown tool %q; the tools are: %s", text.ClipBytes(name, 64), strings.Join(ts.names, ", "))
	}
	switch name {
	case toolBash:
		var a struct {
			Command *string `json:"command"`
		}
		if err := decodeArgs(args, &a); err != nil {
			return "", "", err
		}
		if a.Command == nil || strings.TrimSpace(*a.Command) == "" {
			return "", "", toolErrorf("bash needs a non-empty \"command\" string")
		}
		if ok, why := ts.policy.allowsBash(*a.Command); !ok {
			return "", "", toolErrorf("command refused: %s", why)
		}
		r, err := ts.exec(ctx, sb, []string{"bash", "-c", *a.Command}, nil)
		if err != nil {
			return "", "", err
		}
		rec.ExitCode = r.ExitCode
		activated := ""
		if r.ExitCode == 0 {
			activated = ts.catActivation(*a.Command)
		}
		return ts.cap(formatExec(r), r.Truncated), activated, nil
	case toolRead:
		var a struct {
			Path *string `json:"path"`
		}
		if err := decodeArgs(args, &a); err != nil {
			return "", "", err
		}
		if a.Path == nil || *a.Path == "" {
			return "", "", toolErrorf("read_file needs a non-empty \"path\" string")
		}
		abs := ts.resolve(*a.Path)
		skill, isSkill := ts.locations[abs]
		if ts.skillsOnly && !isSkill {
			return "", "", toolErrorf("read_file may only read the SKILL.md files listed in <available_skills>: the skill's allowed-tools does not include Read")
		}
		if !ts.skillsOnly && !isSkill && !allowsPath(ts.policy.readAll, ts.policy.readGlobs, abs, ts.workdir) {
			return "", "", toolErrorf("reading %s is not allowed by the skill's allowed-tools", *a.Path)
		}
		r, err := ts.exec(ctx, sb, []string{"cat", "--", *a.Path}, nil)
		if err != nil {
			return "", "", err
		}
		rec.ExitCode = r.ExitCode
		if r.ExitCode != 0 {
			return "", "", toolErrorf("cannot read %s: %s", *a.Path, text.ClipBytes(strings.TrimSpace(string(r.Stderr)), 512))
		}
		if !isSkill {
			skill = ""
		}
		return ts.cap(string(r.Stdout), r.Truncated), skill, nil
	case toolWrite:
		var a struct {
			Path    *string `json:"path"`
			Content *string `json:"content"`
		}
		if err := decodeArgs(args, &a); err != nil {
			return "", "", err
		}
		if a.Path == nil || *a.Path == "" || a.Content == nil {
			return "", "", toolErrorf("write_file needs a non-empty \"path\" string and a \"content\" string")
		}
		if !allowsPath(ts.policy.writeAll, ts.policy.writeGlob, ts.resolve(*a.Path), ts.workdir) {
			return "", "", toolErrorf("writing %s is not allowed by the skill's allowed-tools", *a.Path)
		}
		// The path is an argument ($1), never part of the script.
		r, err := ts.exec(ctx, sb, []string{"sh", "-c", `cat > "$1"`, "sh", *a.Path}, []byte(*a.Content))
		if err != nil {
			return "", "", err
		}
		rec.ExitCode = r.ExitCode
		if r.ExitCode != 0 {
			return "", "", toolErrorf("cannot write %s: %s", *a.Path, text.ClipBytes(strings.TrimSpace(string(r.Stderr)), 512))
		}
		return "wrote " + strconv.Itoa(len(*a.Content)) + " bytes to " + *a.Path, "", nil
	}
	return "", "", toolErrorf("unknown tool %q", name)
}

// exec runs cmd in the sandbox, bounded by what is left of ctx's deadline.
func (ts *toolset) exec(ctx context.Context, sb Sandbox, cmd []string, stdin []byte) (ExecResult, error) {
	if sb == nil {
		return ExecResult{}, errors.New("no sandbox to run tool calls in")
	}
	var timeout time.Duration
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
		if timeout <= 0 {
			return ExecResult{}, context.DeadlineExceeded
		}
	}
	r, err := sb.Exec(ctx, cmd, stdin, ts.workdir, timeout)
	if err != nil {
		return r, fmt.Errorf("sandbox exec %s: %w", cmd[0], err)
	}
	if r.TimedOut {
		return r, errSandboxTimedOut
	}
	return r, nil
}

// catActivation is the skill a successful `cat <SKILL.md>` read, if any.
func (ts *toolset) catActivation(command string) string {
	words, err := simpleCommand(command)
	if err != nil || len(words) < 2 || words[0] != "cat" {
		return ""
	}
	for _, w := range words[1:] {
		if name, ok := ts.locations[ts.resolve(w)]; ok {
			return name
		}
	}
	return ""
}

func decodeArgs(args string, dst any) error {
	if err := json.Unmarshal([]byte(args), dst); err != nil {
		return toolErrorf("the arguments are not a JSON object of the tool's parameters: %v", err)
	}
	return nil
}

func formatExec(r ExecResult) string {
	var b strings.Builder
	b.WriteString("exit_code: ")
	b.WriteString(strconv.Itoa(r.ExitCode))
	if len(r.Stdout) > 0 {
		b.WriteString("\nstdout:\n")
		b.Write(r.Stdout)
	}
	if len(r.Stderr) > 0 {
		b.WriteString("\nstderr:\n")
		b.Write(r.Stderr)
	}
	return b.String()
}

// cap bounds a tool's output to maxOut bytes (at a rune boundary) and says so.
func (ts *toolset) cap(s string, sandboxTruncated bool) string {
	if len(s) > ts.maxOut {
		cut := ts.maxOut
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + fmt.Sprintf("\n[output truncated: %d of %d bytes shown]", cut, len(s))
	}
	if sandboxTruncated {
		s += "\n[output truncated by the sandbox]"
	}
	return s
}
