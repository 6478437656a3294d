package cli

import (
	"github.com/spf13/cobra"

	"github.com/skillfleet/skillfleet/diag"
	"github.com/skillfleet/skillfleet/skill"
)

func newLintCommand(e *env) *cobra.Command {
	format := "text"
	cmd := &cobra.Command{
		Use:   "lint [--format text|json] PATH...",
		Short: "Check skills against best practices",
		Long: `Lint parses each skill and checks it against best practices: context budget,
description trigger clause, vague instructions, progressive disclosure, defaults over
menus, a gotchas section, and broken references to files in the skill.

Lint findings are warnings (and info); only files that cannot be parsed are errors.
PATH is a skill directory (or its SKILL.md) or a skills root searched at any depth.

` + discoveryHelp() + `
Exit status: 0 no errors (warnings allowed), 1 errors, 2 usage error.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			r := &report{}
			for _, path := range args {
				t := loadTarget(path, skill.Options{}, nil)
				ds := append(diag.Diagnostics{}, t.diags...)
				for _, s := range t.skills {
					ds = append(ds, skill.Lint(s)...)
				}
				r.add(t.skills, ds)
			}
			r.finish()
			if err := render(e, format, r, r); err != nil {
				return err
			}
			return r.exit()
		},
	}
	cmd.Flags().StringVar(&format, "format", format, "output format: text or json")
	return cmd
}
