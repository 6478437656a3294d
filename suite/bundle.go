package suite

import (
	"io"

	"github.com/skillfleet/skillfleet/bundle"
	"github.com/skillfleet/skillfleet/skill"
)

// WriteBundle writes the skills and their dependency closures as a suite bundle to w (see
// bundle.WriteBundle): the graph decides what a skill needs, the bundle package how it is
// written.
func WriteBundle(w io.Writer, g *skill.Graph, skills []*skill.Skill) (*bundle.Bundle, error) {
	return WriteBundleWith(w, g, skills, nil)
}

// WriteBundleWith is WriteBundle for a run with an old_skill baseline: the bundle also holds
// the old versions of the skills old has (and of their closures in old) under
// bundle.BaselineDir, so the run's workers find both versions in the one bundle. A nil old is
// WriteBundle.
func WriteBundleWith(w io.Writer, g *skill.Graph, skills []*skill.Skill, old *skill.Graph) (*bundle.Bundle, error) {
	dirs := make(map[string]bundle.Dir)
	for _, s := range skills {
		if _, ok := dirs[s.Name]; ok {
			continue // bundled as another's dependency, and with it its closure
		}
		closure := g.Closure(s.Name)
		for _, dep := range closure {
			if _, ok := dirs[dep.Name]; ok {
				continue
			}
			deps := closure // a skill's own closure is at hand; a dependency's is computed
			if dep != closure[0] {
				deps = g.Closure(dep.Name)
			}
			d := bundle.Dir{Name: dep.Name, Path: dep.Dir, Closure: make([]string, len(deps))}
			for i, c := range deps {
				d.Closure[i] = c.Name
			}
			dirs[dep.Name] = d
		}
	}
	out := make([]bundle.Dir, 0, len(dirs))
	for _, d := range dirs {
		out = append(out, d)
	}
	olds, _ := oldDirs(old, skills)
	out = append(out, olds...)
	return bundle.WriteBundle(w, out)
}
