package agents

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/moby/buildkit/frontend/dockerfile/parser"
)

// sandboxImage is the image every agent image must derive from (deploy/sandbox).
const sandboxImage = "skillfleet/sandbox"

// sandboxUser is the sandbox's unprivileged user; the worker runs every command as it.
const sandboxUser = "10001:10001"

// imageFile is a file the image must carry, put there by a COPY from the build context, and
// the settings it must hold.
type imageFile struct {
	dest string
	// jsonValues are dotted paths into a JSON file and the values they must have.
	jsonValues map[string]any
	// tomlValues are dotted keys ("table.key") of a TOML file and the literal values they must
	// have, as written (e.g. `"disabled"`, `false`).
	tomlValues map[string]string
}

// imageSpec is what one agent image must contain to run offline and quietly.
type imageSpec struct {
	// pkg is the npm package the image installs; it must be pinned to an exact version.
	pkg string
	// env are the ENV settings the final image must have, with their values.
	env map[string]string
	// files are the settings files the image must carry.
	files []imageFile
}

// specs are the four agent images and the settings that keep each CLI off the network; every
// name is cited, with the file and commit it was checked in, in the Dockerfile's header.
var specs = map[string]imageSpec{
	"claude-code": {
		pkg: "@anthropic-ai/claude-code",
		env: map[string]string{
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
			"DISABLE_AUTOUPDATER":                      "1",
		},
		files: []imageFile{
			{dest: "/etc/claude-code/managed-settings.json", jsonValues: map[string]any{
				"env.CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
				"env.DISABLE_AUTOUPDATER":                      "1",
			}},
			{dest: "/etc/skillfleet/home/.claude.json", jsonValues: map[string]any{"hasCompletedOnboarding": true}},
			{dest: "/usr/local/bin/skillfleet-home"},
		},
	},
	"codex": {
		pkg: "@openai/codex",
		files: []imageFile{
			{dest: "/etc/codex/config.toml", tomlValues: map[string]string{
				"model_provider":                                 `"skillfleet"`,
				"web_search":                                     `"disabled"`,
				"check_for_update_on_startup":                    `false`,
				"analytics.enabled":                              `false`,
				"feedback.enabled":                               `false`,
				"model_providers.skillfleet.env_key":             `"CODEX_API_KEY"`,
				"model_providers.skillfleet.wire_api":            `"responses"`,
				"model_providers.skillfleet.supports_websockets": `false`,
			}},
		},
	},
	"gemini-cli": {
		pkg: "@google/gemini-cli",
		env: map[string]string{"GEMINI_CLI_TRUST_WORKSPACE": "true"},
		files: []imageFile{
			{dest: "/etc/gemini-cli/settings.json", jsonValues: map[string]any{
				"general.enableAutoUpdate":             false,
				"general.enableAutoUpdateNotification": false,
				"privacy.usageStatisticsEnabled":       false,
				"telemetry.enabled":                    false,
				// Required: without it Gemini CLI 0.56 picks its "gateway" auth type for
				// GOOGLE_GEMINI_BASE_URL and exits "Invalid auth method selected".
				"security.auth.selectedType": "gemini-api-key",
			}},
		},
	},
	"opencode": {
		pkg: "opencode-ai",
		env: map[string]string{
			"OPENCODE_CONFIG":               "/etc/opencode/opencode.json",
			"OPENCODE_DISABLE_MODELS_FETCH": "1",
			"OPENCODE_DISABLE_AUTOUPDATE":   "1",
		},
		files: []imageFile{
			{dest: "/etc/opencode/opencode.json", jsonValues: map[string]any{
				"$schema":                            "https://opencode.ai/config.json",
				"autoupdate":                         false,
				"share":                              "disabled",
				"provider.skillfleet.npm":            "@ai-sdk/openai-compatible",
				"provider.skillfleet.options.apiKey": "{env:SKILLFLEET_TOKEN}",
			}},
		},
	},
}

func TestAgentDockerfiles(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("*", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, d := range dirs {
		found = append(found, filepath.Dir(d))
	}
	var want []string
	for name := range specs {
		want = append(want, name)
	}
	slices.Sort(found)
	slices.Sort(want)
	if !slices.Equal(found, want) {
		t.Fatalf("agent Dockerfiles %v, but specs for %v: every image needs its network-off spec", found, want)
	}
	for _, name := range want {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(name, "Dockerfile"))
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range checkDockerfile(data, os.DirFS(name), specs[name]) {
				t.Errorf("%s/Dockerfile: %v", name, e)
			}
		})
	}
}

// demoSpec is the spec the inline Dockerfiles below are checked against.
var demoSpec = imageSpec{
	pkg:   "demo-cli",
	env:   map[string]string{"DEMO_OFFLINE": "1"},
	files: []imageFile{{dest: "/etc/demo/settings.json", jsonValues: map[string]any{"telemetry.enabled": false}}},
}

// demoGood is a Dockerfile that passes demoSpec; each case below breaks one rule.
const demoGood = `ARG BASE_IMAGE=skillfleet/sandbox:1
FROM ${BASE_IMAGE}
USER root
RUN apt-get update \
 && apt-get install -y --no-install-recommends nodejs npm \
 && npm install -g --no-audit demo-cli@1.2.3 \
 && find / -xdev -perm /6000 -type f -exec chmod a-s {} +
COPY settings.json /etc/demo/settings.json
ENV DEMO_OFFLINE=1
USER 10001:10001
`

func TestCheckDockerfileCatchesBreakage(t *testing.T) {
	goodSettings := &fstest.MapFile{Data: []byte(`{"telemetry": {"enabled": false}}`)}
	replace := func(old, new string) string {
		if !strings.Contains(demoGood, old) {
			t.Fatalf("test setup: %q is not in demoGood", old)
		}
		return strings.Replace(demoGood, old, new, 1)
	}
	cases := []struct {
		name       string
		dockerfile string
		settings   *fstest.MapFile
		wantErr    string // "" for no error
	}{
		{name: "good", dockerfile: demoGood},
		{name: "base named directly", dockerfile: replace("FROM ${BASE_IMAGE}", "FROM skillfleet/sandbox:1")},
		{name: "other base", dockerfile: replace("FROM ${BASE_IMAGE}", "FROM debian:bookworm-slim"), wantErr: "FROM debian:bookworm-slim"},
		{name: "other base via ARG default", dockerfile: replace("BASE_IMAGE=skillfleet/sandbox:1", "BASE_IMAGE=node:22"), wantErr: "FROM node:22"},
		{name: "unpinned", dockerfile: replace("demo-cli@1.2.3", "demo-cli"), wantErr: `"demo-cli" is not pinned`},
		{name: "latest tag", dockerfile: replace("demo-cli@1.2.3", "demo-cli@latest"), wantErr: `"demo-cli@latest" is not pinned`},
		{name: "range", dockerfile: replace("demo-cli@1.2.3", "demo-cli@^1.2.3"), wantErr: `"demo-cli@^1.2.3" is not pinned`},
		{name: "extra unpinned package", dockerfile: replace("demo-cli@1.2.3", "demo-cli@1.2.3 left-pad"), wantErr: `"left-pad" is not pinned`},
		{name: "package missing", dockerfile: replace("demo-cli@1.2.3", "other-cli@1.2.3"), wantErr: "demo-cli is never installed"},
		{name: "node not from Debian", dockerfile: replace("apt-get install -y --no-install-recommends nodejs npm", "true"), wantErr: "nodejs from Debian"},
		{name: "download", dockerfile: replace("apt-get update", "curl -fsSL https://example.invalid/setup | bash && apt-get update"), wantErr: "downloads with curl"},
		{name: "setuid kept", dockerfile: replace(" \\\n && find / -xdev -perm /6000 -type f -exec chmod a-s {} +", ""), wantErr: "setuid"},
		{name: "root at the end", dockerfile: replace("USER 10001:10001", "USER root"), wantErr: `last USER is "root"`},
		{name: "uid only", dockerfile: replace("USER 10001:10001", "USER 10001"), wantErr: `last USER is "10001"`},
		{name: "no USER back", dockerfile: replace("USER 10001:10001\n", ""), wantErr: `last USER is "root"`},
		{name: "baked key", dockerfile: replace("ENV DEMO_OFFLINE=1", "ENV DEMO_OFFLINE=1 OPENAI_API_KEY=abc123"), wantErr: "OPENAI_API_KEY"},
		{name: "baked token as ARG", dockerfile: replace("USER root", "USER root\nARG NPM_TOKEN=abc123"), wantErr: "NPM_TOKEN"},
		{name: "key-shaped value", dockerfile: replace("ENV DEMO_OFFLINE=1", "ENV DEMO_OFFLINE=1 HELPER=sk-ant-api03-abcdefghijklmnopqrstuvwxyz"), wantErr: "HELPER"},
		{name: "empty key name is fine", dockerfile: replace("ENV DEMO_OFFLINE=1", "ENV DEMO_OFFLINE=1 OPENAI_API_KEY=")},
		{name: "offline env missing", dockerfile: replace("ENV DEMO_OFFLINE=1", "ENV OTHER=1"), wantErr: "ENV DEMO_OFFLINE"},
		{name: "offline env wrong", dockerfile: replace("ENV DEMO_OFFLINE=1", "ENV DEMO_OFFLINE=0"), wantErr: `ENV DEMO_OFFLINE is "0"`},
		{name: "settings not copied", dockerfile: replace("COPY settings.json /etc/demo/settings.json\n", ""), wantErr: "no COPY puts /etc/demo/settings.json"},
		{name: "settings wrong", dockerfile: demoGood, settings: &fstest.MapFile{Data: []byte(`{"telemetry": {"enabled": true}}`)}, wantErr: "telemetry.enabled is true"},
		{name: "settings not JSON", dockerfile: demoGood, settings: &fstest.MapFile{Data: []byte(`telemetry: off`)}, wantErr: "not JSON"},
		{name: "not a Dockerfile", dockerfile: "FROM skillfleet/sandbox:1\nRUN <<EOF\n", wantErr: "parse"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			settings := tc.settings
			if settings == nil {
				settings = goodSettings
			}
			ctx := fstest.MapFS{"settings.json": settings}
			errs := checkDockerfile([]byte(tc.dockerfile), ctx, demoSpec)
			joined := errors.Join(errs...)
			switch {
			case tc.wantErr == "" && joined != nil:
				t.Fatalf("want no problem, got:\n%v", joined)
			case tc.wantErr != "" && joined == nil:
				t.Fatalf("want a problem mentioning %q, got none", tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(joined.Error(), tc.wantErr):
				t.Fatalf("want a problem mentioning %q, got:\n%v", tc.wantErr, joined)
			}
		})
	}
}

func TestTOMLValues(t *testing.T) {
	doc := `# comment
top = "a" # trailing
[t]
k = false
[t.sub]
url = "http://x/#frag"
`
	cases := []struct {
		key, want string
		ok        bool
	}{
		{"top", `"a"`, true},
		{"t.k", `false`, true},
		{"t.sub.url", `"http://x/#frag"`, true},
		{"k", "", false},
		{"t.sub.k", "", false},
	}
	values := tomlValues(doc)
	for _, tc := range cases {
		got, ok := values[tc.key]
		if ok != tc.ok || got != tc.want {
			t.Errorf("%s: got %q, %v; want %q, %v", tc.key, got, ok, tc.want, tc.ok)
		}
	}
}

var (
	// pinnedNPM is an npm spec with an exact version: name@x.y.z (a prerelease suffix allowed).
	pinnedNPM = regexp.MustCompile(`^(@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9][a-z0-9._~-]*@\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$`)
	// secretName is a variable name that holds a credential.
	secretName = regexp.MustCompile(`(?i)(^|_)(API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)$`)
	// secretValue is a value shaped like a well-known API key, whatever its variable's name.
	secretValue = regexp.MustCompile(`^(sk-[A-Za-z0-9_-]{16,}|AIza[0-9A-Za-z_-]{30,}|gh[pousr]_[A-Za-z0-9]{20,}|xox[abp]-[A-Za-z0-9-]{10,})`)
	// shellVar is $NAME or ${NAME} in an instruction's argument.
	shellVar = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)`)
)

// checkDockerfile parses an agent Dockerfile with BuildKit's parser and returns every rule it
// breaks: the base must be the sandbox image, npm packages pinned, Node from Debian, no
// downloads outside the package managers, setuid bits dropped, the last USER the sandbox user,
// no credential in ENV or ARG, and the spec's network-off ENV and settings files present.
func checkDockerfile(dockerfile []byte, context fs.FS, spec imageSpec) []error {
	res, err := parser.Parse(bytes.NewReader(dockerfile))
	if err != nil {
		return []error{fmt.Errorf("parse: %w", err)}
	}
	var (
		problems []error
		vars     = map[string]string{} // ARG defaults and ENV values, for expansion
		env      = map[string]string{}
		froms    []string
		user     = "root" // the sandbox image ends as 10001, but an agent image must say so itself
		runs     []string
		copies   = map[string]string{} // destination in the image -> source in the context
		installs []string
	)
	fail := func(line int, format string, args ...any) {
		problems = append(problems, fmt.Errorf("line %d: %s", line, fmt.Sprintf(format, args...)))
	}
	expand := func(s string) string {
		return shellVar.ReplaceAllStringFunc(s, func(m string) string {
			name := strings.Trim(m, "${}")
			return vars[name]
		})
	}
	checkSecret := func(line int, kind, name, value string) {
		if value == "" {
			return
		}
		if secretName.MatchString(name) || secretValue.MatchString(value) {
			fail(line, "%s %s holds a value that looks like a credential; images never carry keys (the job passes a per-job token as exec environment)", kind, name)
		}
	}
	for _, n := range res.AST.Children {
		args := nodeArgs(n)
		switch strings.ToLower(n.Value) {
		case "arg":
			for _, a := range args {
				name, value, _ := strings.Cut(a, "=")
				value = strings.Trim(value, `"'`)
				checkSecret(n.StartLine, "ARG", name, value)
				if _, set := vars[name]; !set {
					vars[name] = expand(value)
				}
			}
		case "env":
			for i := 0; i+1 < len(args); i += 2 {
				name, value := args[i], strings.Trim(args[i+1], `"'`)
				checkSecret(n.StartLine, "ENV", name, value)
				value = expand(value)
				vars[name], env[name] = value, value
			}
		case "from":
			if len(args) == 0 {
				fail(n.StartLine, "FROM without an image")
				continue
			}
			image := expand(args[0])
			froms = append(froms, image)
			if repo := imageRepo(image); repo != sandboxImage {
				fail(n.StartLine, "FROM %s: agent images derive from %s (directly or through an ARG default)", image, sandboxImage)
			}
		case "user":
			if len(args) > 0 {
				user = expand(args[0])
			}
		case "run":
			cmd := strings.Join(args, " ")
			for _, h := range n.Heredocs {
				cmd += "\n" + h.Content
			}
			runs = append(runs, cmd)
			for _, p := range npmInstalls(cmd) {
				installs = append(installs, p)
				if !pinnedNPM.MatchString(p) {
					fail(n.StartLine, "npm package %q is not pinned to an exact version (name@x.y.z)", p)
				}
			}
			for _, tool := range []string{"curl", "wget"} {
				if slices.Contains(shellWords(cmd), tool) {
					fail(n.StartLine, "RUN downloads with %s: install only from Debian's and npm's registries, so that every byte is pinned", tool)
				}
			}
		case "add":
			for _, a := range args {
				if strings.Contains(a, "://") {
					fail(n.StartLine, "ADD %s downloads at build time; COPY files from the build context instead", a)
				}
			}
			fallthrough
		case "copy":
			if len(args) < 2 {
				continue
			}
			dest := expand(args[len(args)-1])
			for _, src := range args[:len(args)-1] {
				d := dest
				if strings.HasSuffix(d, "/") {
					d = path.Join(d, path.Base(src))
				}
				copies[path.Clean(d)] = src
			}
		}
	}
	if len(froms) == 0 {
		problems = append(problems, errors.New("no FROM"))
	}
	if user != sandboxUser {
		problems = append(problems, fmt.Errorf("the last USER is %q: an agent image must end as the sandbox user %s", user, sandboxUser))
	}
	all := strings.Join(runs, "\n")
	if !regexp.MustCompile(`apt-get install[^\n]*\bnodejs\b`).MatchString(all) {
		problems = append(problems, errors.New("no RUN installs nodejs from Debian (apt-get install ... nodejs)"))
	}
	if !strings.Contains(all, "-perm /6000") || !strings.Contains(all, "chmod a-s") {
		problems = append(problems, errors.New("no RUN drops setuid/setgid bits (find / -xdev -perm /6000 ... chmod a-s)"))
	}
	if !slices.ContainsFunc(installs, func(p string) bool { return npmName(p) == spec.pkg }) {
		problems = append(problems, fmt.Errorf("%s is never installed with npm install", spec.pkg))
	}
	for _, name := range sortedKeys(spec.env) {
		switch got, ok := env[name]; {
		case !ok:
			problems = append(problems, fmt.Errorf("ENV %s is not set; it keeps the CLI off the network (want %q)", name, spec.env[name]))
		case got != spec.env[name]:
			problems = append(problems, fmt.Errorf("ENV %s is %q, want %q", name, got, spec.env[name]))
		}
	}
	for _, f := range spec.files {
		problems = append(problems, checkImageFile(context, copies, f)...)
	}
	return problems
}

// checkImageFile finds the COPY that puts f in the image and checks the settings it holds.
func checkImageFile(context fs.FS, copies map[string]string, f imageFile) []error {
	src, ok := copies[f.dest]
	if !ok {
		return []error{fmt.Errorf("no COPY puts %s in the image", f.dest)}
	}
	data, err := fs.ReadFile(context, path.Clean(src))
	if err != nil {
		return []error{fmt.Errorf("%s (for %s): %w", src, f.dest, err)}
	}
	var problems []error
	if f.jsonValues != nil {
		var doc any
		if err := json.Unmarshal(data, &doc); err != nil {
			return []error{fmt.Errorf("%s is not JSON: %w", src, err)}
		}
		for _, key := range sortedKeys(f.jsonValues) {
			got, ok := jsonPath(doc, key)
			switch {
			case !ok:
				problems = append(problems, fmt.Errorf("%s: %s is not set (want %v)", src, key, f.jsonValues[key]))
			case got != f.jsonValues[key]:
				problems = append(problems, fmt.Errorf("%s: %s is %v, want %v", src, key, got, f.jsonValues[key]))
			}
		}
	}
	if f.tomlValues != nil {
		values := tomlValues(string(data))
		for _, key := range sortedKeys(f.tomlValues) {
			got, ok := values[key]
			switch {
			case !ok:
				problems = append(problems, fmt.Errorf("%s: %s is not set (want %s)", src, key, f.tomlValues[key]))
			case got != f.tomlValues[key]:
				problems = append(problems, fmt.Errorf("%s: %s is %s, want %s", src, key, got, f.tomlValues[key]))
			}
		}
	}
	return problems
}

// nodeArgs are an instruction's arguments, in order.
func nodeArgs(n *parser.Node) []string {
	var args []string
	for a := n.Next; a != nil; a = a.Next {
		args = append(args, a.Value)
	}
	return args
}

// imageRepo is an image reference without its tag or digest.
func imageRepo(ref string) string {
	ref, _, _ = strings.Cut(ref, "@")
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		ref = ref[:i]
	}
	return ref
}

// shellWords splits a shell command into words, with the operators &&, ||, ;, | and newlines
// as words of their own. Quotes are not interpreted: the Dockerfiles here quote no npm spec.
func shellWords(cmd string) []string {
	r := strings.NewReplacer("&&", " && ", "||", " || ", ";", " ; ", "|", " | ", "\n", " ; ", "\\", " ")
	return strings.Fields(r.Replace(cmd))
}

// npmInstalls are the package specs of every `npm install|i|add` in a shell command. A bare
// `npm install` (from a package.json) is reported as "(package.json)", which is never pinned
// here: the images keep no lock file.
func npmInstalls(cmd string) []string {
	words := shellWords(cmd)
	var specs []string
	for i := 0; i+1 < len(words); i++ {
		if words[i] != "npm" || !slices.Contains([]string{"install", "i", "add", "isntall", "in"}, words[i+1]) {
			continue
		}
		n := 0
		for j := i + 2; j < len(words); j++ {
			w := words[j]
			if slices.Contains([]string{"&&", "||", ";", "|"}, w) {
				break
			}
			if strings.HasPrefix(w, "-") {
				continue
			}
			specs = append(specs, w)
			n++
		}
		if n == 0 {
			specs = append(specs, "(package.json)")
		}
	}
	return specs
}

// npmName is an npm spec's package name.
func npmName(spec string) string {
	if i := strings.LastIndex(spec, "@"); i > 0 {
		return spec[:i]
	}
	return spec
}

// jsonPath looks a dotted path up in a decoded JSON document.
func jsonPath(doc any, key string) (any, bool) {
	cur := doc
	for _, part := range strings.Split(key, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[part]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// tomlValues reads the `key = value` lines of a TOML document into dotted keys (table.key) and
// their values as written. It reads only what the Codex config uses: [table] headers, bare keys
// and one-line values, with # comments outside strings; that is enough to tell whether a
// setting is there and what it says.
func tomlValues(doc string) map[string]string {
	values := map[string]string{}
	table := ""
	for _, line := range strings.Split(doc, "\n") {
		line = strings.TrimSpace(stripTOMLComment(line))
		switch {
		case line == "":
		case strings.HasPrefix(line, "["):
			table = strings.TrimSpace(strings.Trim(line, "[]"))
		default:
			key, value, ok := strings.Cut(line, "=")
			if !ok {
				continue
			}
			key = strings.TrimSpace(key)
			if table != "" {
				key = table + "." + key
			}
			values[key] = strings.TrimSpace(value)
		}
	}
	return values
}

// stripTOMLComment drops a # comment that is not inside a quoted string.
func stripTOMLComment(line string) string {
	var quote rune
	for i, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote == 0 && (r == '"' || r == '\''):
			quote = r
		case quote == 0 && r == '#':
			return line[:i]
		}
	}
	return line
}

// sortedKeys are a map's keys in order, so that problems are reported deterministically.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
