// Package standin holds what the stand-in agent CLIs under it share: the two tools they run
// themselves, the skills catalog they read the way the real CLIs' loaders do, and a test
// helper that builds them. The stand-ins are minimal agent loops on the official SDKs, used
// where a test needs a real CLI's wire behaviour but cannot run the real CLI.
package standin

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// MaxTurns bounds a stand-in's agent loop, like loopCLI's in the fleet tests.
const MaxTurns = 8

// ExitRefused is a stand-in's exit code when the model refused (a refusal or safety stop):
// not an answer, so not 0, and told apart from other failures (1).
const ExitRefused = 2

// ErrRefused marks the model's refusal; Main exits with ExitRefused on it.
var ErrRefused = errors.New("the model refused")

// RunFunc is a stand-in's whole program, with its process's arguments, streams and
// environment passed in so tests can call it directly.
type RunFunc func(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer, getenv func(string) string) error

// Main runs a stand-in as a process: an error goes to stderr under the stand-in's name and
// exits ExitRefused for a refusal, 1 for anything else.
func Main(name string, run RunFunc) {
	err := run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, name+" stand-in:", err)
		if errors.Is(err, ErrRefused) {
			os.Exit(ExitRefused)
		}
		os.Exit(1)
	}
}

// Tool is one tool a stand-in offers; all its parameters are required strings.
type Tool struct {
	Name, Description string
	Params            []string
}

// Tools are the tools every stand-in offers, the same as loopCLI's.
func Tools() []Tool {
	return []Tool{
		{Name: "bash", Description: "Run a command with bash -c in the working directory.", Params: []string{"command"}},
		{Name: "write_file", Description: "Write a file, relative to the working directory.", Params: []string{"path", "content"}},
	}
}

// Schema is a tool's parameters as a JSON schema object.
func (t Tool) Schema() map[string]any {
	props := map[string]any{}
	for _, p := range t.Params {
		props[p] = map[string]any{"type": "string"}
	}
	return map[string]any{"type": "object", "properties": props, "required": t.Params}
}

// RunTool runs a tool call in dir and returns what the model is shown, in loopCLI's format.
// A failure of the tool is part of its result, never an error of the loop: the model sees it.
func RunTool(ctx context.Context, dir, name string, args []byte) string {
	var a map[string]string
	if err := json.Unmarshal(args, &a); err != nil {
		return fmt.Sprintf("error: arguments of %s: %v", name, err)
	}
	switch name {
	case "bash":
		cmd := exec.CommandContext(ctx, "bash", "-c", a["command"])
		cmd.Dir = dir
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if exit := (*exec.ExitError)(nil); errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			return "error: " + err.Error()
		}
		out := fmt.Sprintf("exit_code: %d\nstdout:\n%s", code, stdout.String())
		if stderr.Len() > 0 {
			out += "\nstderr:\n" + stderr.String()
		}
		return out
	case "write_file":
		p := a["path"]
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "error: " + err.Error()
		}
		if err := os.WriteFile(p, []byte(a["content"]), 0o644); err != nil {
			return "error: " + err.Error()
		}
		return fmt.Sprintf("wrote %d bytes to %s", len(a["content"]), a["path"])
	}
	return "error: unknown tool " + name
}

// Skill is one entry of the skills catalog.
type Skill struct {
	Name, Description string
	Path              string // the SKILL.md, absolute
}

// SkillDirs are the directories a stand-in looks for skills in, in order: project (relative
// to the working directory wd), user (relative to home), then $SKILLS_DIR when set.
func SkillDirs(wd, home string, project, user []string, getenv func(string) string) []string {
	var dirs []string
	for _, p := range project {
		dirs = append(dirs, filepath.Join(wd, p))
	}
	if home != "" {
		for _, u := range user {
			dirs = append(dirs, filepath.Join(home, u))
		}
	}
	if d := getenv("SKILLS_DIR"); d != "" {
		if !filepath.IsAbs(d) {
			d = filepath.Join(wd, d)
		}
		dirs = append(dirs, d)
	}
	return dirs
}

// LoadSkills reads the skills in dirs: each subdirectory with a SKILL.md. A missing directory
// has none; a name seen in an earlier directory wins, as a project skill shadows a user one.
func LoadSkills(dirs []string) ([]Skill, error) {
	var skills []Skill
	seen := map[string]bool{}
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("skills: %w", err)
		}
		for _, e := range entries {
			path := filepath.Join(dir, e.Name(), "SKILL.md")
			data, err := os.ReadFile(path)
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("skills: %w", err)
			}
			fm := Frontmatter(string(data))
			s := Skill{Name: fm["name"], Description: fm["description"], Path: path}
			if s.Name == "" {
				s.Name = e.Name()
			}
			if seen[s.Name] {
				continue
			}
			seen[s.Name] = true
			skills = append(skills, s)
		}
	}
	return skills, nil
}

// Frontmatter reads the plain keys of a SKILL.md's YAML frontmatter: scalars, quoted or not,
// and block scalars (| and >, folded into one line: a catalog shows one line per skill).
// It is not a YAML parser; name and description are all a catalog needs.
func Frontmatter(doc string) map[string]string {
	out := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(doc))
	if !sc.Scan() || strings.TrimSpace(sc.Text()) != "---" {
		return out
	}
	key, block := "", []string(nil)
	flush := func() {
		if key != "" && block != nil {
			out[key] = strings.Join(block, " ")
		}
		key, block = "", nil
	}
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), " \t\r")
		if line == "---" {
			break
		}
		if block != nil && (line == "" || line[0] == ' ' || line[0] == '\t') {
			if t := strings.TrimSpace(line); t != "" {
				block = append(block, t)
			}
			continue
		}
		flush()
		k, v, ok := strings.Cut(line, ":")
		if !ok || k == "" || k[0] == ' ' || k[0] == '#' {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch {
		case v == "|" || v == ">" || v == "|-" || v == ">-":
			key, block = k, []string{}
		case len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0]:
			out[k] = strings.ReplaceAll(v[1:len(v)-1], `\"`, `"`)
		default:
			out[k] = v
		}
	}
	flush()
	return out
}

// SystemPrompt is a stand-in's system prompt: who it is and, when there are skills, their
// catalog, one "name: description (path)" line each, and how to read one.
func SystemPrompt(skills []Skill) string {
	var b strings.Builder
	b.WriteString("You are a coding agent. Use the bash and write_file tools to do the task in the working directory.\n")
	if len(skills) == 0 {
		return b.String()
	}
	b.WriteString("\nAvailable skills:\n")
	for _, s := range skills {
		fmt.Fprintf(&b, "- %s: %s (%s)\n", s.Name, s.Description, s.Path)
	}
	b.WriteString("\nBefore using a skill, read its SKILL.md with bash (cat <path>) and follow it.\n")
	return b.String()
}

// Prompt is the task: the first argument, or standard input when there is none.
func Prompt(args []string, stdin io.Reader) (string, error) {
	if len(args) > 0 {
		return args[0], nil
	}
	b, err := io.ReadAll(stdin)
	if err != nil {
		return "", fmt.Errorf("reading the prompt from stdin: %w", err)
	}
	if strings.TrimSpace(string(b)) == "" {
		return "", errors.New("no prompt: give it as the first argument or on stdin")
	}
	return string(b), nil
}

// Catalog loads the skills from dirs and renders the system prompt with them.
func Catalog(dirs []string) (string, error) {
	skills, err := LoadSkills(dirs)
	if err != nil {
		return "", err
	}
	return SystemPrompt(skills), nil
}

// Env reads the first of keys that is set, for variables with an older and a newer name.
func Env(getenv func(string) string, keys ...string) string {
	for _, k := range keys {
		if v := getenv(k); v != "" {
			return v
		}
	}
	return ""
}

// Names are the stand-ins Build can build: the directories under this package.
func Names() []string { return []string{"anthropic", "gemini", "openai"} }

// Build compiles the stand-in name (one of Names) into a static Linux binary in a temporary
// directory of t and returns its path. CGO_ENABLED=0 makes it run in any Linux container;
// GOARCH is the host's, as the containers a test starts are.
func Build(t testing.TB, name string) string {
	t.Helper()
	if !slices.Contains(Names(), name) {
		t.Fatalf("standin: no stand-in %q (have %v)", name, Names())
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("standin: no go command to build the %s stand-in: %v", name, err)
	}
	out := filepath.Join(t.TempDir(), name)
	cmd := exec.Command(gobin, "build", "-trimpath", "-o", out,
		"github.com/skillfleet/skillfleet/agent/agenttest/standin/"+name)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("standin: go build %s: %v\n%s", name, err, b)
	}
	return out
}
