package skill

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/skillfleet/skillfleet/diag"
)

// Bounds on cycle reporting. Tarjan's algorithm finds every strongly-connected group in linear
// time; listing the individual cycles inside a group can take exponential time, so the listing
// stops after these many cycles or search steps and says that more exist.
const (
	MaxReportedCycles = 100
	maxCycleSteps     = 1_000_000
)

// Edge is one requires entry: From requires To at minimum version Version ("" for any).
type Edge struct {
	From    string `json:"from"`
	To      string `json:"to"`
	Version string `json:"version"`
}

// Graph is the dependency graph of a catalog's skills.
type Graph struct {
	nodes  []string
	edges  []Edge
	out    map[string][]string // edges to skills that exist, self-loops excluded
	skills map[string]*Skill
	cycles [][]string
	// index numbers the nodes in name order, adj is out by those numbers and list the skills
	// by them: Closure walks numbers, not names.
	index map[string]int32
	adj   [][]int32
	list  []*Skill
}

// Nodes returns the names of the catalog's skills, sorted.
func (g *Graph) Nodes() []string { return g.nodes }

// Edges returns every requires entry, sorted by From then To. An edge's To may name a skill
// that is not in the catalog (requires.missing); Has tells.
func (g *Graph) Edges() []Edge { return g.edges }

// Has reports whether name is a node.
func (g *Graph) Has(name string) bool { _, ok := g.skills[name]; return ok }

// Cycles returns the dependency cycles found, each as a path that starts and ends at its
// smallest name (a -> b -> a is ["a", "b", "a"]).
func (g *Graph) Cycles() [][]string { return g.cycles }

// Closure returns the skill called name followed by every skill it requires, directly or
// transitively, sorted by name; missing dependencies are left out (Resolve reports them) and
// cycles are harmless. It returns nil when name is not a node.
func (g *Graph) Closure(name string) []*Skill {
	start, ok := g.index[NormalizeName(name)]
	if !ok {
		return nil
	}
	// A plan takes the closure of every skill it bundles, so this is a walk over numbers: a bit
	// per node marks the visited, and numbers sort as the names do.
	seen := make([]uint64, (len(g.list)+63)/64)
	seen[start/64] |= 1 << (start % 64)
	queue := []int32{start}
	for h := 0; h < len(queue); h++ {
		for _, m := range g.adj[queue[h]] {
			if seen[m/64]&(1<<(m%64)) == 0 {
				seen[m/64] |= 1 << (m % 64)
				queue = append(queue, m)
			}
		}
	}
	slices.Sort(queue[1:])
	out := make([]*Skill, len(queue))
	for i, n := range queue {
		out[i] = g.list[n]
	}
	return out
}

// Resolve builds the dependency graph of c's skills and checks the RFC's rules: every required
// skill is present (requires.missing, a warning with Options.Force), meets the minimum version
// (requires.version), versions are SemVer (requires.invalidVersion), nobody requires itself
// (requires.self) and there are no cycles (requires.cycle). Each diagnostic is reported at the
// offending requires entry.
//
// Versions are compared as SemVer (Masterminds/semver): "1.0" and "1" mean 1.0.0, and a
// pre-release sorts before its release. A dependency without metadata.version does not
// satisfy a minimum: requires.version says so, rather than passing a constraint nobody checked.
// A metadata.version that is not SemVer is an error where a minimum depends on it, and a
// warning on the skill itself otherwise.
func Resolve(c *Catalog, opts Options) (*Graph, diag.Diagnostics) {
	g := &Graph{out: map[string][]string{}, skills: map[string]*Skill{}}
	var ds diag.Diagnostics
	for _, s := range c.Skills() {
		g.nodes = append(g.nodes, s.Name)
		g.skills[s.Name] = s
	}
	constrained := map[*Skill]bool{}
	entryLine := map[[2]string]int{}
	for _, s := range c.Skills() {
		for _, r := range s.Requires {
			if r.Skill == s.Name {
				ds = append(ds, diag.Error(RuleRequiresSelf, s.File, r.Line, fmt.Sprintf("skill %q requires itself", clip(s.Name))))
				continue
			}
			g.edges = append(g.edges, Edge{From: s.Name, To: r.Skill, Version: r.Version})
			entryLine[[2]string{s.Name, r.Skill}] = r.Line
			var minimum *semver.Version
			if r.Version != "" {
				v, err := semver.NewVersion(r.Version)
				if err != nil {
					ds = append(ds, diag.Error(RuleRequiresInvalidVersion, s.File, r.Line, fmt.Sprintf(
						"required version %q of %q is not a SemVer version (like \"1.2.0\")", clip(r.Version), clip(r.Skill))))
				} else {
					minimum = v
				}
			}
			t := c.Lookup(r.Skill)
			if t == nil {
				msg := fmt.Sprintf("requires %q, which is not in the skills root", clip(r.Skill))
				if opts.Force {
					ds = append(ds, diag.Warning(RuleRequiresMissing, s.File, r.Line, msg+" (allowed by --force)"))
				} else {
					ds = append(ds, diag.Error(RuleRequiresMissing, s.File, r.Line, msg))
				}
				continue
			}
			g.out[s.Name] = append(g.out[s.Name], t.Name)
			if minimum == nil {
				continue
			}
			constrained[t] = true
			if d, bad := checkMinimum(s, r, t, minimum); bad {
				ds = append(ds, d)
			}
		}
	}
	for _, s := range c.Skills() {
		if s.Version == "" || constrained[s] {
			continue
		}
		if _, err := semver.NewVersion(s.Version); err != nil {
			ds = append(ds, diag.Warning(RuleRequiresInvalidVersion, s.File, max(s.Line("metadata.version"), 1), fmt.Sprintf(
				"metadata.version %q is not a SemVer version (like \"1.2.0\"); skills that require a minimum version of %q cannot be checked", clip(s.Version), clip(s.Name))))
		}
	}
	slices.SortFunc(g.edges, func(a, b Edge) int { return cmp.Or(strings.Compare(a.From, b.From), strings.Compare(a.To, b.To)) })

	g.number()
	var truncated bool
	g.cycles, truncated = findCycles(g.nodes, g.out)
	for _, cyc := range g.cycles {
		from := g.skills[cyc[0]]
		path := make([]string, len(cyc))
		for i, n := range cyc {
			path[i] = clip(n)
		}
		ds = append(ds, diag.Error(RuleRequiresCycle, from.File, entryLine[[2]string{cyc[0], cyc[1]}],
			"dependency cycle: "+strings.Join(path, " -> ")))
	}
	if truncated {
		where := ""
		if len(g.cycles) > 0 {
			where = g.skills[g.cycles[0][0]].File
		}
		ds = append(ds, diag.Error(RuleRequiresCycle, where, 0, fmt.Sprintf(
			"more dependency cycles exist than the %d listed (the search stops early on very tangled graphs)", len(g.cycles))))
	}
	ds.Sort()
	return g, ds
}

// number fills index, adj and list from nodes (sorted by name) and out.
func (g *Graph) number() {
	g.index = make(map[string]int32, len(g.nodes))
	g.list = make([]*Skill, len(g.nodes))
	for i, n := range g.nodes {
		g.index[n] = int32(i)
		g.list[i] = g.skills[n]
	}
	g.adj = make([][]int32, len(g.nodes))
	for i, n := range g.nodes {
		for _, m := range g.out[n] {
			g.adj[i] = append(g.adj[i], g.index[m])
		}
	}
}

func checkMinimum(s *Skill, r Requirement, t *Skill, minimum *semver.Version) (diag.Diagnostic, bool) {
	if t.Version == "" {
		return diag.Error(RuleRequiresVersion, s.File, r.Line, fmt.Sprintf(
			"requires %q >= %s, but %s has no metadata.version", clip(r.Skill), r.Version, t.File)), true
	}
	present, err := semver.NewVersion(t.Version)
	if err != nil {
		return diag.Error(RuleRequiresInvalidVersion, s.File, r.Line, fmt.Sprintf(
			"requires %q >= %s, but its metadata.version %q (%s) is not a SemVer version", clip(r.Skill), r.Version, clip(t.Version), t.File)), true
	}
	if present.LessThan(minimum) {
		return diag.Error(RuleRequiresVersion, s.File, r.Line, fmt.Sprintf(
			"requires %q >= %s, but %s is version %s", clip(r.Skill), r.Version, t.File, t.Version)), true
	}
	return diag.Diagnostic{}, false
}

// findCycles lists elementary cycles: Tarjan's algorithm finds the strongly-connected groups,
// then, within each group, every cycle is listed once, starting from its smallest name (a
// cycle is found only from its smallest node, searching through larger ones). It stops after
// MaxReportedCycles cycles or maxCycleSteps search steps and then reports truncated.
func findCycles(nodes []string, out map[string][]string) (cycles [][]string, truncated bool) {
	comps := stronglyConnected(nodes, out)
	for _, comp := range comps {
		slices.Sort(comp)
	}
	slices.SortFunc(comps, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
	steps := 0
	for _, comp := range comps {
		if len(comp) < 2 {
			continue
		}
		rank := make(map[string]int, len(comp))
		for i, n := range comp {
			rank[n] = i
		}
		for i, start := range comp {
			path := []string{start}
			onPath := map[string]bool{start: true}
			var dfs func(n string) bool
			dfs = func(n string) bool {
				next := slices.Clone(out[n])
				slices.Sort(next)
				for _, m := range next {
					if steps++; steps > maxCycleSteps {
						return false
					}
					r, inComp := rank[m]
					switch {
					case !inComp || r < i:
					case m == start:
						if len(cycles) == MaxReportedCycles {
							return false
						}
						cycles = append(cycles, append(slices.Clone(path), start))
					case !onPath[m]:
						path = append(path, m)
						onPath[m] = true
						if !dfs(m) {
							return false
						}
						path = path[:len(path)-1]
						delete(onPath, m)
					}
				}
				return true
			}
			if !dfs(start) {
				return cycles, true
			}
		}
	}
	return cycles, false
}

// stronglyConnected is Tarjan's algorithm, iterating nodes in the given (sorted) order.
func stronglyConnected(nodes []string, out map[string][]string) [][]string {
	index := map[string]int{}
	low := map[string]int{}
	onStack := map[string]bool{}
	var stack []string
	var comps [][]string
	next := 0
	var visit func(n string)
	visit = func(n string) {
		index[n], low[n] = next, next
		next++
		stack = append(stack, n)
		onStack[n] = true
		for _, m := range out[n] {
			if _, seen := index[m]; !seen {
				visit(m)
				low[n] = min(low[n], low[m])
			} else if onStack[m] {
				low[n] = min(low[n], index[m])
			}
		}
		if low[n] == index[n] {
			var comp []string
			for {
				m := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[m] = false
				comp = append(comp, m)
				if m == n {
					break
				}
			}
			comps = append(comps, comp)
		}
	}
	for _, n := range nodes {
		if _, seen := index[n]; !seen {
			visit(n)
		}
	}
	return comps
}
