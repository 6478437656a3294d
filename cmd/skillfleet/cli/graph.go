package cli

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/skillfleet/skillfleet/skill"
)

// graphNodes returns the nodes plus the names of missing dependencies (drawn dashed), sorted.
func graphNodes(g *skill.Graph) (nodes, missing []string) {
	nodes = slices.Clone(g.Nodes())
	for _, ed := range g.Edges() {
		if !g.Has(ed.To) && !slices.Contains(missing, ed.To) {
			missing = append(missing, ed.To)
		}
	}
	slices.Sort(missing)
	return nodes, missing
}

// writeDOT renders the graph for Graphviz: an edge points from a skill to what it requires,
// labelled with the minimum version; missing skills are dashed.
func writeDOT(w io.Writer, g *skill.Graph) error {
	nodes, missing := graphNodes(g)
	var b strings.Builder
	b.WriteString("digraph skills {\n  rankdir=LR;\n  node [shape=box];\n")
	for _, n := range nodes {
		fmt.Fprintf(&b, "  %s;\n", dotID(n))
	}
	for _, n := range missing {
		fmt.Fprintf(&b, "  %s [style=dashed, label=%s];\n", dotID(n), dotID(n+" (missing)"))
	}
	for _, ed := range g.Edges() {
		fmt.Fprintf(&b, "  %s -> %s", dotID(ed.From), dotID(ed.To))
		if ed.Version != "" {
			fmt.Fprintf(&b, " [label=%s]", dotID(">= "+ed.Version))
		}
		b.WriteString(";\n")
	}
	b.WriteString("}\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// dotID quotes a DOT identifier; only backslash and double quote need escaping.
func dotID(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}

// writeMermaid renders the graph as a Mermaid flowchart. Node ids are generated (n0, n1, ...)
// because skill names may hold characters Mermaid ids cannot; names are labels.
func writeMermaid(w io.Writer, g *skill.Graph) error {
	nodes, missing := graphNodes(g)
	ids := map[string]string{}
	var b strings.Builder
	b.WriteString("graph LR\n")
	for _, n := range nodes {
		ids[n] = "n" + strconv.Itoa(len(ids))
		fmt.Fprintf(&b, "  %s[%s]\n", ids[n], mermaidText(n))
	}
	for _, n := range missing {
		ids[n] = "n" + strconv.Itoa(len(ids))
		fmt.Fprintf(&b, "  %s[%s]:::missing\n", ids[n], mermaidText(n+" (missing)"))
	}
	for _, ed := range g.Edges() {
		if ed.Version != "" {
			fmt.Fprintf(&b, "  %s -->|%s| %s\n", ids[ed.From], mermaidText(">= "+ed.Version), ids[ed.To])
		} else {
			fmt.Fprintf(&b, "  %s --> %s\n", ids[ed.From], ids[ed.To])
		}
	}
	if len(missing) > 0 {
		b.WriteString("  classDef missing stroke-dasharray: 5 5\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// mermaidText quotes a label; Mermaid has no backslash escapes, only #quot; entities.
func mermaidText(s string) string {
	return `"` + strings.NewReplacer(`"`, "#quot;", "\n", " ").Replace(s) + `"`
}
