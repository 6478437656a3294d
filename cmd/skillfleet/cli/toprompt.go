package cli

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/skillfleet/skillfleet/diag"
	"github.com/skillfleet/skillfleet/skill"
)

func newToPromptCommand(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "to-prompt PATH...",
		Short: "Print the <available_skills> block for an agent's system prompt",
		Long: `To-prompt prints the <available_skills> XML block of the reference tool (skills-ref):
for each skill its name, description and the absolute path of its SKILL.md, escaped,
each tag and value on its own line.

PATH is a skill directory (or its SKILL.md) or a skills root, whose skills are listed
by name. A skill without a parseable name and description is an error, and then
nothing is printed.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			var skills []*skill.Skill
			var bad diag.Diagnostics
			for _, path := range args {
				if dir, ok := skillDir(path); ok {
					file, _ := skill.SkillFile(dir)
					s, ds := skill.ParseFile(file)
					bad = append(bad, errorsOnly(ds)...)
					bad = append(bad, requireNameAndDescription(s)...)
					skills = append(skills, s)
					continue
				}
				cat, ds := skill.Discover([]string{path}, skill.Options{})
				bad = append(bad, errorsOnly(ds)...)
				for _, s := range cat.All() {
					bad = append(bad, requireNameAndDescription(s)...)
				}
				skills = append(skills, cat.Skills()...)
			}
			if len(bad) > 0 {
				bad.Sort()
				for _, d := range bad {
					fmt.Fprintln(e.stderr, d.String())
				}
				return errorsFound()
			}
			var b strings.Builder
			if err := writePrompt(&b, skills); err != nil {
				return failf("%w", err)
			}
			if _, err := io.WriteString(e.stdout, b.String()); err != nil {
				return failf("writing output: %w", err)
			}
			return nil
		},
	}
}

func errorsOnly(ds diag.Diagnostics) diag.Diagnostics {
	var out diag.Diagnostics
	for _, d := range ds {
		if d.Severity == diag.SeverityError {
			out = append(out, d)
		}
	}
	return out
}

// requireNameAndDescription applies the reference tool's only checks before prompting: both
// fields present and non-empty strings.
func requireNameAndDescription(s *skill.Skill) diag.Diagnostics {
	var out diag.Diagnostics
	for _, d := range skill.Validate(s, skill.Options{}) {
		switch d.Rule {
		case skill.RuleNameRequired, skill.RuleNameType, skill.RuleDescriptionRequired, skill.RuleDescriptionType:
			out = append(out, d)
		}
	}
	return out
}

// writePrompt writes the block exactly as skills-ref's to_prompt does, plus the final newline
// its CLI prints.
func writePrompt(w io.Writer, skills []*skill.Skill) error {
	lines := []string{"<available_skills>"}
	for _, s := range skills {
		loc, err := location(s)
		if err != nil {
			return err
		}
		lines = append(lines,
			"<skill>",
			"<name>", xmlEscape(s.Name), "</name>",
			"<description>", xmlEscape(s.Description), "</description>",
			"<location>", loc, "</location>",
			"</skill>")
	}
	lines = append(lines, "</available_skills>")
	_, err := io.WriteString(w, strings.Join(lines, "\n")+"\n")
	return err
}

// location is the absolute path of the skill's file with the directory's symlinks resolved, as
// skills-ref's Path.resolve() gives it. Like skills-ref, the path itself is not escaped.
func location(s *skill.Skill) (string, error) {
	dir, err := filepath.Abs(s.Dir)
	if err != nil {
		return "", fmt.Errorf("resolving %s: %w", s.Dir, err)
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	return filepath.Join(dir, filepath.Base(s.File)), nil // SKILL.md, or skill.md
}

// xmlEscape is Python's html.escape(s, quote=True), which skills-ref uses: & < > " and '.
func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#x27;").Replace(s)
}
