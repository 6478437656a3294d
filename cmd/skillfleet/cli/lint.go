package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/skillfleet/skillfleet/diag"
	"github.com/skillfleet/skillfleet/skill"
)

func newLintCommand(e *env) *cobra.Command {
	format := "text"
	rules := "" // "list" for a bare --rules; else the opt-in rules to run
	cmd := &cobra.Command{
		Use:   "lint [--format text|json] [--rules=RULE,...] PATH... | --rules",
		Short: "Check skills against best practices",
		Long: `Lint parses each skill and checks it against best practices: context budget,
description trigger clause, vague instructions, progressive disclosure, defaults over
menus, a gotchas section, and broken references to files in the skill.

Lint findings are warnings (and info); only files that cannot be parsed are errors.
PATH is a skill directory (or its SKILL.md) or a skills root searched at any depth.

Every finding names its rule id: "skills/a/SKILL.md:12: warning references.broken: ..."
in text, "rule" in JSON. --rules lists the lint rules and exits.

Rules marked opt-in in that list run only when named: --rules=gotchas-present,description-quality
(with the "=", and a comma between rules; --rules=opt-in names them all). Measured on
public skills nobody tuned them on, they were wrong more than once in ten findings
(docs/lint-precision.md), so they are not run by default.

A skill silences lint rules with HTML comments in its body, which do not render:

  <!-- skillfleet-lint-disable-next-line RULE[,RULE...] -->   the line after the comment
  <!-- skillfleet-lint-disable RULE[,RULE...] -->             the whole file

The file form may stand anywhere in the body; it is the only way to silence findings about
the frontmatter or the body as a whole (description-quality, context-budget,
progressive-disclosure, gotchas-present). A comment must fit on one line; one inside a code
block or inline code is an example and silences nothing. Silenced findings are neither
shown nor counted. Only lint rules can be silenced: validation and parse errors cannot. A
comment that names an unknown rule (a typo), a rule that is not a lint rule, or no rule is
itself a warning, lint.suppression, on the comment's line; it cannot be silenced.

` + discoveryHelp() + `
Exit status: 0 no errors (warnings allowed), 1 errors, 2 usage error.`,
		Args: func(_ *cobra.Command, args []string) error {
			listRules := rules == "list"
			if listRules && len(args) > 0 {
				return usageErrorf("--rules takes no PATH")
			}
			if !listRules && len(args) == 0 {
				return usageErrorf("lint needs at least one PATH")
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			if rules == "list" {
				return writeLintRules(e, format)
			}
			optIn, err := selectOptIn(rules)
			if err != nil {
				return err
			}
			r := &report{}
			for _, path := range args {
				t := loadTarget(path, skill.Options{}, nil)
				ds := append(diag.Diagnostics{}, t.diags...)
				for _, s := range t.skills {
					ds = append(ds, skill.Lint(s, optIn...)...)
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
	cmd.Flags().StringVar(&rules, "rules", "", "alone: list the lint rules (the ids a suppression comment may name) and exit; --rules=RULE,... also runs these opt-in rules (opt-in: all of them)")
	cmd.Flags().Lookup("rules").NoOptDefVal = "list"
	return cmd
}

// selectOptIn reads --rules=RULE,...: opt-in rules to run besides the default ones. A default
// rule named there already runs; a name that is no lint rule is a usage error.
func selectOptIn(list string) ([]string, error) {
	if list == "" {
		return nil, nil
	}
	if list == "opt-in" {
		return skill.OptInRules(), nil
	}
	lint := map[string]bool{}
	for _, r := range skill.Rules() {
		if r.Stage == "lint" {
			lint[r.ID] = true
		}
	}
	var out []string
	for _, id := range strings.Split(list, ",") {
		id = strings.TrimSpace(id)
		if !lint[id] {
			return nil, usageErrorf("--rules: %q is not a lint rule (lint --rules lists them)", id)
		}
		out = append(out, id)
	}
	return out, nil
}

// lintRule is one line of `lint --rules`; its JSON shape is part of the CLI's contract.
type lintRule struct {
	Rule        string        `json:"rule"`
	Severity    diag.Severity `json:"severity"`
	Silenceable bool          `json:"silenceable"`
	Summary     string        `json:"summary"`
}

// writeLintRules lists the rules lint can report.
func writeLintRules(e *env, format string) error {
	silenceable := map[string]bool{}
	for _, id := range skill.SilenceableRules() {
		silenceable[id] = true
	}
	var rules []lintRule
	for _, r := range skill.Rules() {
		if r.Stage == "lint" {
			rules = append(rules, lintRule{Rule: r.ID, Severity: r.Severity, Silenceable: silenceable[r.ID], Summary: r.Summary})
		}
	}
	var err error
	if format == "json" {
		err = writeJSON(e.stdout, rules)
	} else {
		var b strings.Builder
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		for _, r := range rules {
			summary := r.Summary
			if !r.Silenceable {
				summary += " (cannot be silenced)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Rule, r.Severity, summary)
		}
		_ = tw.Flush()
		_, err = fmt.Fprint(e.stdout, b.String())
	}
	if err != nil {
		return failf("writing output: %w", err)
	}
	return nil
}
