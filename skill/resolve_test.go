package skill

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/diag"
)

// handSkill builds a skill as Parse would leave it, without a file.
func handSkill(name, version string, reqs ...Requirement) *Skill {
	for i := range reqs {
		reqs[i].Line = 10 + i
	}
	return &Skill{Name: name, Description: "d", Version: version, Requires: reqs, File: name + "/SKILL.md"}
}

func rules(ds diag.Diagnostics) []string {
	var out []string
	for _, d := range ds {
		out = append(out, string(d.Severity)+" "+d.Rule)
	}
	return out
}

// TestRFCVersionTable is the RFC's table of version checks, plus the SemVer cases a string
// comparison gets wrong.
func TestRFCVersionTable(t *testing.T) {
	const absent = "(not found)"
	tests := []struct {
		name     string
		present  string // metadata.version of the dependency; absent: no such skill
		required string // "" omits the version
		force    bool
		want     []string
	}{
		// The RFC's table.
		{name: "newer than required", present: "1.5.0", required: "1.2.0"},
		{name: "older than required", present: "1.0.0", required: "1.2.0", want: []string{"error requires.version"}},
		{name: "not found", present: absent, required: "1.2.0", want: []string{"error requires.missing"}},
		{name: "not found, ignored with force", present: absent, required: "1.2.0", force: true, want: []string{"warning requires.missing"}},
		{name: "version omitted", present: "1.5.0", required: ""},
		// SemVer, not strings.
		{name: "1.0 means 1.0.0", present: "1.0", required: "1.0.0"},
		{name: "1 means 1.0.0", present: "1.0.0", required: "1"},
		{name: "pre-release below its release", present: "1.2.0-rc.1", required: "1.2.0", want: []string{"error requires.version"}},
		{name: "release above its pre-release", present: "1.2.0", required: "1.2.0-rc.1"},
		{name: "numeric minor", present: "1.10.0", required: "1.9.0"},
		{name: "numeric major", present: "2.0.0", required: "10.0.0", want: []string{"error requires.version"}},
		{name: "equal", present: "1.2.0", required: "1.2.0"},
		{name: "build metadata ignored", present: "1.2.0+build.7", required: "1.2.0"},
		{name: "v prefix", present: "v1.3.0", required: "1.2.0"},
		{name: "dependency without version", present: "", required: "1.0.0", want: []string{"error requires.version"}},
		{name: "dependency version not SemVer", present: "beta", required: "1.0.0", want: []string{"error requires.invalidVersion"}},
		{name: "required version not SemVer", present: "1.0.0", required: "latest", want: []string{"error requires.invalidVersion"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			skills := []*Skill{handSkill("app", "1.0.0", Requirement{Skill: "dep", Version: tc.required})}
			if tc.present != absent {
				skills = append(skills, handSkill("dep", tc.present))
			}
			cat, ds := NewCatalog(skills...)
			if len(ds) > 0 {
				t.Fatalf("catalog: %v", ds)
			}
			_, got := Resolve(cat, Options{Force: tc.force})
			if !slices.Equal(rules(got), tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			for _, d := range got {
				if d.File != "app/SKILL.md" || d.Line != 10 {
					t.Errorf("diagnostic not at the requires entry: %v", d)
				}
			}
		})
	}
}

// TestRFCExample resolves the RFC's example skills and checks what the RFC says: the runner
// needs environment-selector >= 1.2.0 (present: 1.2.0) and any logging-standards.
func TestRFCExample(t *testing.T) {
	cat, ds := Discover([]string{filepath.Join("testdata", "rfc")}, Options{})
	for _, s := range cat.All() {
		ds = append(ds, Validate(s, Options{})...)
	}
	g, rds := Resolve(cat, Options{})
	ds = append(ds, rds...)
	if ds.HasErrors() {
		t.Fatalf("the RFC example does not resolve: %v", ds)
	}
	if got, want := g.Nodes(), []string{"environment-selector", "integration-test-runner", "logging-standards"}; !slices.Equal(got, want) {
		t.Errorf("nodes %v, want %v", got, want)
	}
	wantEdges := []Edge{
		{From: "integration-test-runner", To: "environment-selector", Version: "1.2.0"},
		{From: "integration-test-runner", To: "logging-standards"},
	}
	if !slices.Equal(g.Edges(), wantEdges) {
		t.Errorf("edges %v, want %v", g.Edges(), wantEdges)
	}
	var closure []string
	for _, s := range g.Closure("integration-test-runner") {
		closure = append(closure, s.Name)
	}
	if want := []string{"integration-test-runner", "environment-selector", "logging-standards"}; !slices.Equal(closure, want) {
		t.Errorf("closure %v, want %v", closure, want)
	}
	sel := cat.Lookup("environment-selector")
	if sel.Test == nil || sel.Test.Cases != "test/cases.yaml" || sel.Test.Timeout != 30*time.Second || !sel.Test.Parallel {
		t.Errorf("environment-selector test config = %+v, want cases test/cases.yaml, 30s, parallel", sel.Test)
	}
	runner := cat.Lookup("integration-test-runner")
	if runner.Version != "2.1.0" || runner.Test != nil {
		t.Errorf("runner version %q test %v", runner.Version, runner.Test)
	}

	// The RFC's failure modes on the same skills: an outdated dependency, a missing one.
	sel.Version = "1.0.0"
	_, rds = Resolve(cat, Options{})
	if got := rules(rds); !slices.Equal(got, []string{"error requires.version"}) {
		t.Errorf("outdated environment-selector: %v", rds)
	}
	sel.Version = "1.2.0"
	without, _ := NewCatalog(runner, cat.Lookup("logging-standards"))
	_, rds = Resolve(without, Options{})
	if got := rules(rds); !slices.Equal(got, []string{"error requires.missing"}) {
		t.Errorf("missing environment-selector: %v", rds)
	}
	_, rds = Resolve(without, Options{Force: true})
	if rds.HasErrors() || len(rds) != 1 {
		t.Errorf("--force should leave one warning: %v", rds)
	}
}

func TestCycles(t *testing.T) {
	req := func(names ...string) []Requirement {
		var out []Requirement
		for _, n := range names {
			out = append(out, Requirement{Skill: n})
		}
		return out
	}
	tests := []struct {
		name  string
		graph map[string][]string
		want  []string
	}{
		{name: "none", graph: map[string][]string{"a": {"b"}, "b": {"c"}, "c": nil}},
		{name: "pair", graph: map[string][]string{"a": {"b"}, "b": {"a"}}, want: []string{"a -> b -> a"}},
		{name: "triangle from any entry", graph: map[string][]string{"c": {"a"}, "a": {"b"}, "b": {"c"}}, want: []string{"a -> b -> c -> a"}},
		{name: "two cycles share a node", graph: map[string][]string{"a": {"b", "c"}, "b": {"a"}, "c": {"a"}},
			want: []string{"a -> b -> a", "a -> c -> a"}},
		{name: "two groups", graph: map[string][]string{"x": {"y"}, "y": {"x"}, "a": {"b"}, "b": {"a"}, "m": {"a", "x"}},
			want: []string{"a -> b -> a", "x -> y -> x"}},
		{name: "self is not a cycle", graph: map[string][]string{"a": {"a"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var skills []*Skill
			for n, deps := range tc.graph {
				skills = append(skills, handSkill(n, "1.0.0", req(deps...)...))
			}
			slices.SortFunc(skills, func(a, b *Skill) int { return strings.Compare(a.Name, b.Name) })
			cat, _ := NewCatalog(skills...)
			g, ds := Resolve(cat, Options{})
			var got []string
			for _, c := range g.Cycles() {
				got = append(got, strings.Join(c, " -> "))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("cycles %v, want %v", got, tc.want)
			}
			n := 0
			for _, d := range ds {
				if d.Rule == RuleRequiresCycle {
					n++
					if !strings.Contains(d.Message, " -> ") {
						t.Errorf("cycle message without a path: %v", d)
					}
				}
			}
			if n != len(tc.want) {
				t.Errorf("%d cycle diagnostics, want %d: %v", n, len(tc.want), ds)
			}
		})
	}
}

func TestCycleListingIsBounded(t *testing.T) {
	// A complete graph on 12 nodes has hundreds of millions of elementary cycles.
	var skills []*Skill
	for i := range 12 {
		var reqs []Requirement
		for j := range 12 {
			if j != i {
				reqs = append(reqs, Requirement{Skill: string(rune('a' + j))})
			}
		}
		skills = append(skills, handSkill(string(rune('a'+i)), "1.0.0", reqs...))
	}
	cat, _ := NewCatalog(skills...)
	g, ds := Resolve(cat, Options{})
	if len(g.Cycles()) != MaxReportedCycles {
		t.Errorf("%d cycles listed, want %d", len(g.Cycles()), MaxReportedCycles)
	}
	if !slices.ContainsFunc(ds, func(d diag.Diagnostic) bool { return strings.Contains(d.Message, "more dependency cycles") }) {
		t.Error("truncation not reported")
	}
}

func TestClosure(t *testing.T) {
	cat, _ := NewCatalog(
		handSkill("app", "1", Requirement{Skill: "web"}, Requirement{Skill: "db"}, Requirement{Skill: "ghost"}),
		handSkill("web", "1", Requirement{Skill: "log"}),
		handSkill("db", "1", Requirement{Skill: "log"}, Requirement{Skill: "app"}),
		handSkill("log", "1"),
		handSkill("unrelated", "1"),
	)
	g, _ := Resolve(cat, Options{})
	names := func(ss []*Skill) []string {
		var out []string
		for _, s := range ss {
			out = append(out, s.Name)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		want []string
	}{
		{"app", []string{"app", "db", "log", "web"}},
		{"db", []string{"db", "app", "log", "web"}},
		{"log", []string{"log"}},
		{"ghost", nil},
	} {
		if got := names(g.Closure(tc.name)); !slices.Equal(got, tc.want) {
			t.Errorf("Closure(%s) = %v, want %v", tc.name, got, tc.want)
		}
	}
	if got := g.Nodes(); !slices.Equal(got, []string{"app", "db", "log", "unrelated", "web"}) {
		t.Errorf("nodes %v", got)
	}
	if !slices.ContainsFunc(g.Edges(), func(e Edge) bool { return e.To == "ghost" }) || g.Has("ghost") {
		t.Error("edge to a missing skill should be listed, the skill not a node")
	}
}
