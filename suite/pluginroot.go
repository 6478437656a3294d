package suite

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/skillfleet/skillfleet/diag"
	"github.com/skillfleet/skillfleet/skill"
)

// Claude Code keeps a plugin's `claude plugin eval` suite in evals/ at the plugin's root: beside
// plugin.json or .claude-plugin/plugin.json, or beside the skills/ folder of a skills-directory
// plugin (one without a manifest). pluginSuites finds those suites above the skills of a
// catalog, so that they are read with the same grader mapping and refusals as a skill's own
// evals/ instead of planning 0 jobs unseen.

// pluginSuite is the evals/ of one plugin root and the skills of that plugin.
type pluginSuite struct {
	root   string         // the plugin root, as a path the user reads (relative to what they gave)
	skills []*skill.Skill // the catalog's skills whose nearest plugin root it is
}

// pluginSuites returns, in the order of their first skill, the plugin roots above skills (up to
// each skill's discovery root) that hold an evals/ directory. A skill directory that is itself
// a plugin root is not one: its evals/ is the skill's own.
func pluginSuites(cat *skill.Catalog, skills []*skill.Skill) []*pluginSuite {
	byRoot := map[string]*pluginSuite{}
	var out []*pluginSuite
	for _, sk := range skills {
		root, ok := pluginRootOf(sk, cat.Root(sk))
		if !ok {
			continue
		}
		key, err := filepath.Abs(root)
		if err != nil {
			continue
		}
		ps := byRoot[key]
		if ps == nil {
			ps = &pluginSuite{root: root}
			byRoot[key] = ps
			out = append(out, ps)
		}
		ps.skills = append(ps.skills, sk)
	}
	return out
}

// pluginRootOf returns the nearest plugin root strictly above the skill directory, no higher
// than the discovery root it was found in, when that plugin root has an evals/ directory.
func pluginRootOf(sk *skill.Skill, discoveryRoot string) (string, bool) {
	if sk.Dir == "" || discoveryRoot == "" {
		return "", false
	}
	if info, err := os.Stat(discoveryRoot); err == nil && !info.IsDir() {
		discoveryRoot = filepath.Dir(discoveryRoot) // a SKILL.md given as the root
	}
	top, err := filepath.Abs(discoveryRoot)
	if err != nil {
		return "", false
	}
	abs, err := filepath.Abs(sk.Dir)
	if err != nil {
		return "", false
	}
	for dir := abs; dir != top && skill.InDir(dir, top); {
		child := dir
		dir = filepath.Dir(dir)
		if !isPluginRoot(dir, child) {
			continue
		}
		if info, err := os.Stat(filepath.Join(dir, "evals")); err != nil || !info.IsDir() {
			return "", false
		}
		// Spelled as the user spelled the skill's path, climbed to the plugin root.
		climb, err := filepath.Rel(abs, dir)
		if err != nil {
			return "", false
		}
		return filepath.Join(sk.Dir, climb), true
	}
	return "", false
}

// isPluginRoot reports whether dir is a plugin's root: it holds plugin.json or
// .claude-plugin/plugin.json, or it is a skills-directory plugin whose skills/ holds child (a
// directory on the way down to the skill).
func isPluginRoot(dir, child string) bool {
	for _, m := range []string{"plugin.json", filepath.Join(".claude-plugin", "plugin.json")} {
		if info, err := os.Stat(filepath.Join(dir, m)); err == nil && info.Mode().IsRegular() {
			return true
		}
	}
	return filepath.Base(child) == "skills"
}

// loadPluginSuites reads each plugin suite as the cases of the plugin's skill. A plugin of
// several skills is refused: Claude Code runs such a suite with every skill of the plugin
// installed, and a case here runs against one skill, so its verdicts would not be the ones the
// plugin's authors get.
func loadPluginSuites(suites []*pluginSuite, bad map[*skill.Skill]bool, sc *scratch) (map[*skill.Skill][]*Case, diag.Diagnostics) {
	out := map[*skill.Skill][]*Case{}
	var ds diag.Diagnostics
	for _, ps := range suites {
		n := pluginCaseCount(ps.root)
		if n == 0 {
			continue
		}
		if len(ps.skills) > 1 {
			var names []string
			for _, sk := range ps.skills {
				names = append(names, sk.Name)
			}
			slices.Sort(names)
			ds = append(ds, diag.Error(rulePEUnsupported, filepath.Join(ps.root, "evals"), 0, fmt.Sprintf(
				"this plugin's `claude plugin eval` suite (%d cases) runs its %d skills together (%s), and skillfleet runs a case against one skill: these cases are not planned; put each case in the evals/ of the skill it tests",
				n, len(names), strings.Join(names, ", "))))
			continue
		}
		sk := ps.skills[0]
		if bad[sk] {
			continue // its validation errors are reported; half-valid skills are not run
		}
		cases, cds := loadPluginEvalCasesAt(sk, ps.root, sc)
		out[sk] = append(out[sk], cases...)
		ds = append(ds, cds...)
	}
	return out, ds
}

// pluginCaseCount counts the case directories under root/evals.
func pluginCaseCount(root string) int {
	dir := filepath.Join(root, "evals")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		if e.IsDir() && isPluginEvalCase(filepath.Join(dir, e.Name())) {
			n++
		}
	}
	return n
}

// LoadPluginCases reads the suites of the plugins that hold skills (found in cat), as Load does,
// for a command that checks cases without planning them (validate). Skills in invalid are
// skipped, as Load skips a skill with validation errors.
func LoadPluginCases(cat *skill.Catalog, skills []*skill.Skill, invalid map[*skill.Skill]bool) ([]*Case, diag.Diagnostics) {
	byskill, ds := loadPluginSuites(pluginSuites(cat, skills), invalid, newScratch())
	var out []*Case
	for _, sk := range skills {
		out = append(out, byskill[sk]...)
	}
	return out, ds
}
