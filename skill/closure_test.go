package skill

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestClosureRandomGraphs compares Closure with the walk it replaced (names in a map, the
// dependencies sorted by name) on random graphs with cycles, self-requires and missing skills,
// more than 64 nodes so that the visited bits span words.
func TestClosureRandomGraphs(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for range 50 {
		n := 1 + r.IntN(150)
		var skills []*Skill
		for i := range n {
			var reqs []Requirement
			for range r.IntN(4) {
				reqs = append(reqs, Requirement{Skill: fmt.Sprintf("s%03d", r.IntN(n+5))}) // some missing
			}
			skills = append(skills, handSkill(fmt.Sprintf("s%03d", (i*37)%n), "1", reqs...))
		}
		cat, _ := NewCatalog(skills...)
		g, _ := Resolve(cat, Options{Force: true})
		for _, name := range append(g.Nodes(), "absent") {
			got, want := g.Closure(name), referenceClosure(g, name)
			if !slices.Equal(got, want) {
				t.Fatalf("Closure(%s) = %v, want %v", name, skillNames(got), skillNames(want))
			}
		}
	}
}

// referenceClosure is Closure as it was first written.
func referenceClosure(g *Graph, name string) []*Skill {
	start, ok := g.skills[NormalizeName(name)]
	if !ok {
		return nil
	}
	seen := map[string]bool{start.Name: true}
	queue := []string{start.Name}
	var deps []*Skill
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, m := range g.out[n] {
			if !seen[m] {
				seen[m] = true
				queue = append(queue, m)
				deps = append(deps, g.skills[m])
			}
		}
	}
	slices.SortFunc(deps, func(a, b *Skill) int { return strings.Compare(a.Name, b.Name) })
	return append([]*Skill{start}, deps...)
}

func skillNames(ss []*Skill) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Name)
	}
	return out
}
