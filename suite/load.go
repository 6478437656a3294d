package suite

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/skillfleet/skillfleet/assert"
	"github.com/skillfleet/skillfleet/diag"
	"github.com/skillfleet/skillfleet/internal/yamlstrict"
	"github.com/skillfleet/skillfleet/skill"
)

// Suite is the skills of one or more layered roots with their validated test cases.
type Suite struct {
	Roots   []string
	Catalog *skill.Catalog
	Graph   *skill.Graph
	// Cases holds every valid case, ordered by skill name, then prompt cases in file order,
	// then evals in file order, then `claude plugin eval` cases by directory name, then command
	// cases by file name, then the cases of the suite of the plugin that holds the skill.
	Cases []*Case
	// Diagnostics covers discovery, validation, requires and case files, sorted.
	Diagnostics diag.Diagnostics
}

// Load discovers the skills under roots, validates them and their `requires`, and reads every
// case file. A root that is a skill lists the skills below it too; a root without any skill is
// a discovery.empty error. A skill with validation errors contributes no cases: its errors are in the
// diagnostics, and running half-valid skills would hide them.
func Load(roots []string, opts skill.Options) *Suite {
	s := &Suite{Roots: roots}
	cat, diags := skill.Discover(roots, opts)
	s.Catalog = cat
	s.Diagnostics = append(s.Diagnostics, diags...)
	// A root without a skill is an error, as in validate: a mistyped path must not plan,
	// run or submit "0 jobs" and pass.
	s.Diagnostics = append(s.Diagnostics, cat.EmptyRoots(diags)...)
	skills := cat.Skills()

	bad := make(map[*skill.Skill]bool)
	for _, sk := range skills {
		d := skill.Validate(sk, opts)
		if d.HasErrors() {
			bad[sk] = true
		}
		s.Diagnostics = append(s.Diagnostics, d...)
	}
	g, gd := skill.Resolve(cat, opts)
	s.Graph = g
	s.Diagnostics = append(s.Diagnostics, gd...)

	perSkill := make([][]*Case, len(skills))
	perDiags := make([]diag.Diagnostics, len(skills))
	work := make(chan int)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := newScratch()
			for i := range work {
				perSkill[i], perDiags[i] = loadCases(skills[i], sc)
			}
		}()
	}
	for i, sk := range skills {
		if !bad[sk] {
			work <- i
		}
	}
	close(work)
	wg.Wait()
	// A plugin's own suite, in evals/ at its root, is its skill's too (see pluginroot.go).
	plugin, pd := loadPluginSuites(pluginSuites(cat, skills), bad, newScratch())
	s.Diagnostics = append(s.Diagnostics, pd...)
	for i, sk := range skills {
		s.Cases = append(s.Cases, perSkill[i]...)
		s.Diagnostics = append(s.Diagnostics, perDiags[i]...)
		if pc := plugin[sk]; len(pc) > 0 {
			cases, dd := joinCases(sk, perSkill[i], pc)
			s.Cases = append(s.Cases, cases...)
			s.Diagnostics = append(s.Diagnostics, dd...)
		}
	}
	var nd diag.Diagnostics
	s.Cases, nd = checkSkillNames(g, s.Cases)
	s.Diagnostics = append(s.Diagnostics, nd...)
	s.Diagnostics.Sort()
	return s
}

// LoadCases reads every case format of one skill and rejects duplicate case names, within a
// file or across them, which would make two report rows indistinguishable.
func LoadCases(sk *skill.Skill) ([]*Case, diag.Diagnostics) {
	return loadCases(sk, newScratch())
}

// scratch is what one loading goroutine reuses from skill to skill: the checker that
// remembers patterns (one written on many cases is compiled once), and the memory of the
// last cases file and of its tree.
type scratch struct {
	check *assert.Checker
	trees *yamlstrict.Reader
	file  []byte
}

func newScratch() *scratch {
	return &scratch{check: assert.NewChecker(), trees: yamlstrict.NewReader()}
}

// loadCases is LoadCases with sc.
func loadCases(sk *skill.Skill, sc *scratch) ([]*Case, diag.Diagnostics) {
	prompt, diags := loadPromptCases(sk, sc)
	evals, ed := loadEvalCases(sk, sc)
	diags = append(diags, ed...)
	pluginEvals, pd := loadPluginEvalCases(sk, sc)
	diags = append(diags, pd...)
	command, cd := loadCommandCases(sk, sc)
	diags = append(diags, cd...)
	all := append(append(append(prompt, evals...), pluginEvals...), command...)
	out, dd := joinCases(sk, nil, all)
	return out, append(diags, dd...)
}

// joinCases returns the cases of more that are not named like a case of have or an earlier
// case of more, reporting those that are: two cases of one name would make two report rows
// indistinguishable.
func joinCases(sk *skill.Skill, have, more []*Case) ([]*Case, diag.Diagnostics) {
	var diags diag.Diagnostics
	seen := make(map[string]*Case, len(have)+len(more))
	for _, c := range have {
		seen[c.Name] = c
	}
	out := more[:0]
	for _, c := range more {
		c.Assertions = exactAssertions(c.Assertions)
		if first, dup := seen[c.Name]; dup {
			diags = append(diags, diag.Diagnostic{
				Rule: "case.duplicateName", Severity: diag.SeverityError, File: c.File, Line: c.Line,
				Message: fmt.Sprintf("skill %s already has a case named %q (%s:%d)", sk.Name, c.Name, first.File, first.Line),
			})
			continue
		}
		seen[c.Name] = c
		out = append(out, c)
	}
	return out, diags
}
