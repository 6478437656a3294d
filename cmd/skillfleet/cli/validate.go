package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/skillfleet/skillfleet/diag"
	"github.com/skillfleet/skillfleet/skill"
	"github.com/skillfleet/skillfleet/suite"
)

func newValidateCommand(e *env) *cobra.Command {
	var opts skill.Options
	format := "text"
	cmd := &cobra.Command{
		Use:   "validate [--strict] [--force] [--format text|json] PATH...",
		Short: "Check skills against the specification and resolve their requires",
		Long: `Validate parses each skill, checks its frontmatter against the Agent Skills
specification and the RFC's requires and test fields, resolves requires, and checks the test
cases (the test field's cases file, evals/evals.json and tests/cases/*.yaml) of every valid
skill.

PATH is a skill directory (or its SKILL.md) or a skills root searched at any depth. A skill
directory with skills below it is their root too: it is listed with them. Dependencies
resolve within the root; for a skill directory, among the skills below it, then among the
skill directories next to it. A PATH that yields no skill is an error (discovery.empty).

` + discoveryHelp() + `
--strict enforces the specification alone, as the reference validator (skills-ref) does:
every field outside the specification's six is an error, requires, test and platform
extensions included. It agrees with skills-ref except on these shapes, where it follows
the specification's text:
` + strictHelp() + `
--force turns missing dependencies into warnings.

Exit status: 0 no errors (warnings allowed), 1 errors, 2 usage error.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			r := &report{}
			sib := skill.NewSiblings(opts)
			for _, path := range args {
				t := loadTarget(path, opts, sib)
				ds := append(diag.Diagnostics{}, t.diags...)
				invalid := map[*skill.Skill]bool{}
				for _, s := range t.skills {
					vds := skill.Validate(s, opts)
					ds = append(ds, vds...)
					if vds.HasErrors() {
						invalid[s] = true
						continue
					}
					// A skill is only as valid as its test cases: check them too.
					_, cds := suite.LoadCases(s)
					ds = append(ds, cds...)
				}
				if t.catalog != nil {
					// And as the suite of the plugin that holds it, which plan reads.
					_, pds := suite.LoadPluginCases(t.catalog, t.skills, invalid)
					ds = append(ds, pds...)
				}
				ds = append(ds, t.requires(opts)...)
				r.add(t.skills, ds)
			}
			r.finish()
			if err := render(e, format, r, r); err != nil {
				return err
			}
			return r.exit()
		},
	}
	cmd.Flags().BoolVar(&opts.Strict, "strict", false, "reject every field outside the specification (see --help for how it differs from skills-ref)")
	cmd.Flags().BoolVar(&opts.Force, "force", false, "report missing dependencies as warnings")
	cmd.Flags().StringVar(&format, "format", format, "output format: text or json")
	return cmd
}

// render writes doc as JSON or r as text.
func render(e *env, format string, r *report, doc any, extra ...string) error {
	var err error
	if format == "json" {
		err = writeJSON(e.stdout, doc)
	} else {
		err = r.writeText(e.stdout, extra...)
	}
	if err != nil {
		return failf("writing output: %w", err)
	}
	return nil
}

// strictHelp lists skill.StrictDifferences for validate's --help, one bullet each.
func strictHelp() string {
	var b strings.Builder
	for _, d := range skill.StrictDifferences() {
		b.WriteString(wrapWords(fmt.Sprintf("- %s: skills-ref %s; --strict %s.", d.Shape, d.SkillsRef, d.Strict), 88, "  "))
		b.WriteString("\n")
	}
	return b.String()
}

// wrapWords breaks s into lines of at most width bytes where it can, indenting the lines after
// the first with indent.
func wrapWords(s string, width int, indent string) string {
	var b strings.Builder
	col := 0
	for i, w := range strings.Fields(s) {
		switch {
		case i == 0:
		case col+1+len(w) > width:
			b.WriteString("\n" + indent)
			col = len(indent)
		default:
			b.WriteByte(' ')
			col++
		}
		b.WriteString(w)
		col += len(w)
	}
	return b.String()
}
