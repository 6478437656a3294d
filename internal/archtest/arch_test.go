package archtest

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/skillfleet/skillfleet"

var update = flag.Bool("update", false, "rewrite the edge table of docs/architecture.md")

// pkg is what `go list -json` says of one package, as far as these tests need it.
type pkg struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
	Deps         []string
}

// short names a package of this module by its path inside it.
func short(p string) string { return strings.TrimPrefix(strings.TrimPrefix(p, module), "/") }

// list runs `go list -json` over the module from its root.
func list(t *testing.T, args ...string) []pkg {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-json"}, args...)...)
	cmd.Dir = filepath.Join("..", "..")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		t.Fatal("go list listed no package")
	}
	return pkgs
}

func inQueue(p string) bool { return p == module+"/queue" || strings.HasPrefix(p, module+"/queue/") }

// testOnly reports whether the package at path exists for tests and benchmarks only: the
// module's test helpers and generators (a name ending in "test" or "bench", and
// internal/testutil), and the browser driver the web tests use (chromedp, and its protocol
// types).
func testOnly(path string) bool {
	for _, ext := range []string{"github.com/chromedp"} {
		if path == ext || strings.HasPrefix(path, ext+"/") {
			return true
		}
	}
	if !strings.HasPrefix(path, module+"/") {
		return false
	}
	last := path[strings.LastIndex(path, "/")+1:]
	return strings.HasSuffix(last, "test") || strings.HasSuffix(last, "bench") || last == "testutil"
}

// TestTestOnly checks the rule's classifier on the packages it must catch and on ones it must
// let through, so that the rule cannot pass by matching nothing.
func TestTestOnly(t *testing.T) {
	for path, want := range map[string]bool{
		module + "/internal/browsertest":   true,
		module + "/skill/skilltest":        true,
		module + "/suite/suitetest":        true,
		module + "/queue/queuebench":       true,
		module + "/internal/testutil":      true,
		module + "/fleet/fleettest":        true,
		"github.com/chromedp/chromedp":     true,
		"github.com/chromedp/cdproto/page": true,
		module + "/coordinator":            false,
		module + "/internal/text":          false,
		module + "/cmd/skillfleet/cli":     false,
		"net/http/httptest":                false, // the standard library's is not ours to police
		"github.com/chromedpx/other":       false,
	} {
		if got := testOnly(path); got != want {
			t.Errorf("testOnly(%s) = %v, want %v", path, got, want)
		}
	}
}

// TestRules checks the dependency rules the architecture document states.
func TestRules(t *testing.T) {
	pkgs := list(t, "./...")
	byPath := map[string]pkg{}
	for _, p := range pkgs {
		byPath[p.ImportPath] = p
	}
	// The binaries users and fleets run, by their path in the module.
	shipped := []string{"cmd/skillfleet", "cmd/coordinator", "cmd/worker"}
	type rule struct {
		name   string
		broken func(p pkg) []string // the offending imports of p, if any
	}
	importsAny := func(imports []string, banned ...string) []string {
		var out []string
		for _, i := range imports {
			for _, b := range banned {
				if i == b || strings.HasPrefix(i, b+"/") {
					out = append(out, i)
				}
			}
		}
		return out
	}
	rules := []rule{
		{"no package outside queue imports the NATS client, tests included", func(p pkg) []string {
			if inQueue(p.ImportPath) {
				return nil
			}
			all := slices.Concat(p.Imports, p.TestImports, p.XTestImports)
			return importsAny(all, "github.com/nats-io/nats.go")
		}},
		{"worker reads no SKILL.md and no case file, and knows no broker: it imports neither skill, suite nor queue", func(p pkg) []string {
			if p.ImportPath != module+"/worker" {
				return nil
			}
			return importsAny(p.Imports, module+"/skill", module+"/suite", module+"/queue")
		}},
		{"the web viewer reads the coordinator through its own small interfaces: web imports neither coordinator nor queue", func(p pkg) []string {
			if p.ImportPath != module+"/web" {
				return nil
			}
			return importsAny(p.Imports, module+"/coordinator", module+"/queue")
		}},
		{"the shipped binaries link no test helper, test generator, benchmark harness or browser driver", func(p pkg) []string {
			if !slices.Contains(shipped, short(p.ImportPath)) {
				return nil
			}
			var out []string
			for _, d := range p.Deps {
				if !testOnly(d) {
					continue
				}
				if !strings.HasPrefix(d, module+"/") {
					d = strings.Join(strings.SplitN(d, "/", 3)[:2], "/") + "/..." // one line, not one per package
				}
				out = append(out, d)
			}
			return out
		}},
		{"leaves stay leaves: assert, sandbox, queue and proto import no other package of the module but their own", func(p pkg) []string {
			for _, leaf := range []string{"assert", "sandbox", "queue", "proto"} {
				if p.ImportPath == module+"/"+leaf {
					var out []string
					for _, i := range p.Imports {
						own := strings.HasPrefix(i, module+"/"+leaf+"/") // its own sub-packages
						if strings.HasPrefix(i, module+"/") && !own && !strings.HasPrefix(i, module+"/internal/") && !strings.HasPrefix(i, module+"/proto/") {
							out = append(out, i)
						}
					}
					return out
				}
			}
			return nil
		}},
	}
	for _, r := range rules {
		t.Run(r.name, func(t *testing.T) {
			for _, p := range pkgs {
				if bad := r.broken(p); len(bad) > 0 {
					slices.Sort(bad)
					t.Errorf("%s imports %s", short(p.ImportPath), strings.Join(slices.Compact(bad), ", "))
				}
			}
		})
	}
	// The rules must look at packages that exist: a renamed package would make them vacuous.
	for _, want := range slices.Concat([]string{"worker", "web", "queue", "assert", "sandbox", "internal/browsertest", "skill/skilltest", "suite/suitetest", "queue/queuebench"}, shipped) {
		if _, ok := byPath[module+"/"+want]; !ok {
			t.Errorf("package %s is gone: update the rules and docs/architecture.md", want)
		}
	}
}

// TestQueueAPIIsSealed checks that no broker type crosses queue's exported API: importing
// nothing from nats.go is not enough when an exported field hands out a *nats.Conn.
func TestQueueAPIIsSealed(t *testing.T) {
	cmd := exec.Command("go", "doc", "-all", "./queue")
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go doc: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "package queue") {
		t.Fatalf("go doc printed no package:\n%s", out)
	}
	for n, line := range strings.Split(string(out), "\n") {
		// Doc prose (indented by spaces) may name broker types; declarations may not.
		if strings.HasPrefix(line, " ") || strings.HasPrefix(strings.TrimSpace(line), "//") {
			continue
		}
		if strings.Contains(line, "nats.") || strings.Contains(line, "jetstream.") {
			t.Errorf("queue's exported API names a broker type (go doc line %d): %s", n+1, strings.TrimSpace(line))
		}
	}
}

// edges renders the module's internal import edges (non-test code, test helpers and examples
// left out), one line per package, as the architecture document shows them.
func edges(pkgs []pkg) string {
	var b strings.Builder
	for _, p := range pkgs {
		name := short(p.ImportPath)
		if name == "" || strings.HasPrefix(name, "e2e") || strings.HasPrefix(name, "internal/archtest") || strings.HasPrefix(name, "deploy/") {
			continue
		}
		var deps []string
		for _, i := range p.Imports {
			if strings.HasPrefix(i, module+"/") {
				deps = append(deps, short(i))
			}
		}
		slices.Sort(deps)
		if len(deps) == 0 {
			deps = []string{"(none)"}
		}
		fmt.Fprintf(&b, "%-28s → %s\n", name, strings.Join(deps, ", "))
	}
	return b.String()
}

const (
	docPath    = "../../docs/architecture.md"
	beginEdges = "<!-- edges: generated by go test ./internal/archtest -update; checked by go test -->\n```\n"
	endEdges   = "```\n<!-- end of edges -->"
)

// TestDocumentEdges checks the document's table of package edges against the code, so the map
// cannot drift from the territory; -update rewrites the table.
func TestDocumentEdges(t *testing.T) {
	doc, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	i := strings.Index(text, beginEdges)
	j := strings.Index(text, endEdges)
	if i < 0 || j < i {
		t.Fatalf("%s has no generated edge table (markers %q … %q)", docPath, beginEdges, endEdges)
	}
	got := edges(list(t, "./..."))
	have := text[i+len(beginEdges) : j]
	if have == got {
		return
	}
	if *update {
		if err := os.WriteFile(docPath, []byte(text[:i+len(beginEdges)]+got+text[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("docs/architecture.md's edge table is out of date (go test ./internal/archtest -update):\n--- document\n%s--- code\n%s", have, got)
}
