package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/skillfleet/skillfleet/diag"
	"github.com/skillfleet/skillfleet/internal/text"
	"github.com/skillfleet/skillfleet/skill"
)

// depsReport is the JSON document of `deps`: the report plus the graph.
type depsReport struct {
	*report
	Nodes []string     `json:"nodes"`
	Edges []skill.Edge `json:"edges"`
}

func newDepsCommand(e *env) *cobra.Command {
	var opts skill.Options
	var checkCircular bool
	format, graph := "text", ""
	cmd := &cobra.Command{
		Use:   "deps [--check-circular] [--force] [--graph dot|mermaid] [--format text|json] ROOT",
		Short: "Show and check the requires graph of a skills root",
		Long: `Deps resolves the requires of every skill in ROOT and prints the graph: in text, one
line per skill and dependency; with --graph, as Graphviz dot or Mermaid on stdout (the
diagnostics then go to stderr, so the graph can be piped); with --format json, as nodes
and edges next to the diagnostics.

It reports what breaks the graph: files that do not parse, malformed requires, missing
dependencies (warnings with --force), versions below the minimum, and cycles.
--check-circular reports cycles only.

Exit status: 0 no errors (warnings allowed), 1 errors, 2 usage error.`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			switch graph {
			case "", "dot", "mermaid":
			default:
				return usageErrorf("unknown --graph %q (want dot or mermaid)", graph)
			}
			if graph != "" && format == "json" {
				return usageErrorf("--graph and --format json are exclusive: the JSON document already has nodes and edges")
			}
			t := loadTarget(args[0], opts, nil)
			g, rds := skill.Resolve(t.catalog, opts)
			var ds diag.Diagnostics
			if checkCircular {
				// A path that holds no skill (or none at all) fails here too, or a mistyped
				// path would pass the check.
				for _, d := range t.diags {
					if d.Rule == skill.RuleDiscoveryRoot || d.Rule == skill.RuleDiscoveryEmpty {
						ds = append(ds, d)
					}
				}
				for _, d := range rds {
					// A skill that requires itself is the shortest cycle there is.
					if d.Rule == skill.RuleRequiresCycle || d.Rule == skill.RuleRequiresSelf {
						ds = append(ds, d)
					}
				}
			} else {
				ds = append(ds, t.diags...)
				for _, s := range t.skills {
					for _, d := range skill.Validate(s, opts) {
						if strings.HasPrefix(d.Rule, "requires.") {
							ds = append(ds, d)
						}
					}
				}
				ds = append(ds, rds...)
			}
			r := &report{}
			r.add(t.skills, ds)
			r.finish()
			edges := text.Count(len(g.Edges()), "dependency", "dependencies")

			var err error
			switch {
			case format == "json":
				err = writeJSON(e.stdout, depsReport{report: r, Nodes: nonNil(g.Nodes()), Edges: nonNil(g.Edges())})
			case graph != "":
				if graph == "dot" {
					err = writeDOT(e.stdout, g)
				} else {
					err = writeMermaid(e.stdout, g)
				}
				if err == nil {
					err = r.writeText(e.stderr, edges)
				}
			default:
				if !checkCircular {
					err = writeListing(e.stdout, g)
				}
				if err == nil {
					err = r.writeText(e.stdout, edges)
				}
			}
			if err != nil {
				return failf("writing output: %w", err)
			}
			return r.exit()
		},
	}
	cmd.Flags().BoolVar(&checkCircular, "check-circular", false, "report dependency cycles only")
	cmd.Flags().BoolVar(&opts.Force, "force", false, "report missing dependencies as warnings")
	cmd.Flags().StringVar(&graph, "graph", "", "print the graph as dot or mermaid")
	cmd.Flags().StringVar(&format, "format", format, "output format: text or json")
	return cmd
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// writeListing prints one line per skill and dependency: "a -> b >= 1.2.0", a skill without
// dependencies alone, and "(missing)" after a dependency that is not in the root.
func writeListing(w io.Writer, g *skill.Graph) error {
	var b strings.Builder
	from := map[string][]skill.Edge{}
	for _, ed := range g.Edges() {
		from[ed.From] = append(from[ed.From], ed)
	}
	for _, n := range g.Nodes() {
		if len(from[n]) == 0 {
			fmt.Fprintf(&b, "%s\n", n)
			continue
		}
		for _, ed := range from[n] {
			fmt.Fprintf(&b, "%s -> %s", ed.From, ed.To)
			if ed.Version != "" {
				fmt.Fprintf(&b, " >= %s", ed.Version)
			}
			if !g.Has(ed.To) {
				b.WriteString(" (missing)")
			}
			b.WriteByte('\n')
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
