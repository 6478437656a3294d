package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/spf13/cobra"

	"github.com/skillfleet/skillfleet/skill"
)

// InitialVersion is the metadata.version of a new skill.
const InitialVersion = "0.1.0"

func newInitCommand(e *env) *cobra.Command {
	root := "."
	var requires []string
	cmd := &cobra.Command{
		Use:   "init NAME [--root DIR] [--requires a,b]",
		Short: "Create a new skill directory with a valid SKILL.md",
		Long: `Init creates DIR/NAME/SKILL.md: a valid skill with a description to complete, a
"Use when" trigger clause, metadata.version 0.1.0 and a body that passes lint.

--requires lists skills this one depends on. Each must be present in the root and is
pinned to the version it has now (the RFC's "snapshot on creation"); adjust as needed.

Init refuses an invalid name, an existing directory, and a name already used in the root.`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			name := args[0]
			if problems := skill.NameProblems(name); len(problems) > 0 {
				return failf("invalid skill name %q: %s", name, strings.Join(problems, "; "))
			}
			if n := skill.NormalizeName(name); n != name {
				return failf("invalid skill name %q: write it as %q", name, n)
			}
			reqs, err := snapshotRequires(e, root, name, requires)
			if err != nil {
				return err
			}
			dir := filepath.Join(root, name)
			if err := os.MkdirAll(root, 0o755); err != nil {
				return failf("creating the root: %w", err)
			}
			if err := os.Mkdir(dir, 0o755); err != nil {
				if errors.Is(err, fs.ErrExist) {
					return failf("%s already exists; refusing to overwrite it", dir)
				}
				return failf("creating the skill directory: %w", err)
			}
			file := filepath.Join(dir, skill.FileName)
			f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			if err != nil {
				return failf("creating %s: %w", file, err)
			}
			_, werr := f.WriteString(scaffold(name, reqs))
			if cerr := f.Close(); werr == nil {
				werr = cerr
			}
			if werr != nil {
				return failf("writing %s: %w", file, werr)
			}
			fmt.Fprintf(e.stdout, "created %s\n", file)
			return nil
		},
	}
	cmd.Flags().StringVar(&root, "root", root, "skills root to create the skill in")
	cmd.Flags().StringSliceVar(&requires, "requires", nil, "comma-separated skills this one requires, pinned to their present versions")
	return cmd
}

// snapshotRequires looks the required skills up in root and pins each to its present version.
func snapshotRequires(e *env, root, name string, names []string) ([]skill.Requirement, error) {
	if _, err := os.Stat(root); errors.Is(err, fs.ErrNotExist) {
		if len(names) > 0 {
			return nil, failf("the root %s does not exist, so required skills %s cannot be found", root, strings.Join(names, ", "))
		}
		return nil, nil
	}
	cat, ds := skill.Discover([]string{root}, skill.Options{})
	for _, d := range ds {
		if d.Rule == skill.RuleDiscoveryRoot {
			return nil, failf("%s", d.String())
		}
	}
	if s := cat.Lookup(name); s != nil {
		return nil, failf("a skill named %q already exists in the root: %s", name, s.File)
	}
	var reqs []skill.Requirement
	var missing []string
	seen := map[string]bool{}
	for _, raw := range names {
		n := skill.NormalizeName(raw)
		if n == "" || seen[n] {
			continue
		}
		seen[n] = true
		if n == name {
			return nil, failf("a skill cannot require itself (%q)", n)
		}
		dep := cat.Lookup(n)
		if dep == nil {
			missing = append(missing, fmt.Sprintf("%q", n))
			continue
		}
		r := skill.Requirement{Skill: dep.Name}
		switch _, err := semver.NewVersion(dep.Version); {
		case dep.Version == "":
			fmt.Fprintf(e.stderr, "skillfleet: note: %s has no metadata.version; it is required without a minimum version\n", dep.File)
		case err != nil:
			fmt.Fprintf(e.stderr, "skillfleet: note: %s has metadata.version %q, which is not SemVer; it is required without a minimum version\n", dep.File, dep.Version)
		default:
			r.Version = dep.Version
		}
		reqs = append(reqs, r)
	}
	if len(missing) > 0 {
		return nil, failf("required skills not found in %s: %s", root, strings.Join(missing, ", "))
	}
	return reqs, nil
}

// scaffold is the SKILL.md of a new skill. Its body is deliberately short (no context-budget,
// progressive-disclosure or gotchas findings) and concrete enough to pass the linter.
func scaffold(name string, reqs []skill.Requirement) string {
	var b strings.Builder
	b.WriteString("---\n")
	fmt.Fprintf(&b, "name: %s\n", name)
	fmt.Fprintf(&b, "description: %s\n", yamlQuote(fmt.Sprintf(
		"TODO: say what %s does and what it produces. Use when the user asks to ...", name)))
	b.WriteString("metadata:\n")
	fmt.Fprintf(&b, "  version: %s\n", yamlQuote(InitialVersion))
	if len(reqs) > 0 {
		b.WriteString("requires:\n")
		for _, r := range reqs {
			fmt.Fprintf(&b, "  - skill: %s\n", r.Skill)
			if r.Version != "" {
				fmt.Fprintf(&b, "    version: %s\n", yamlQuote(r.Version))
			}
		}
	}
	b.WriteString("---\n\n")
	fmt.Fprintf(&b, "# %s\n\n", name)
	b.WriteString("Replace this text with the instructions an agent follows when it uses this skill.\n\n")
	b.WriteString("## Steps\n\n")
	b.WriteString("1. Name the first concrete action, with the exact command or tool to run.\n")
	b.WriteString("2. Say how to check that it worked, and what to do when it did not.\n\n")
	b.WriteString("## Gotchas\n\n")
	b.WriteString("- List the mistakes an agent is likely to make here, and how to avoid each one.\n")
	return b.String()
}

// yamlQuote writes s as a YAML double-quoted scalar; JSON string syntax is valid YAML.
func yamlQuote(s string) string {
	q, _ := json.Marshal(s)
	return string(q)
}
