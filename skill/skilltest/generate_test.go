package skilltest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/skillfleet/skillfleet/skill"
)

func TestGenerateRoot(t *testing.T) {
	root := t.TempDir()
	if err := GenerateRoot(root, 250, 7); err != nil {
		t.Fatal(err)
	}
	cat, ds := skill.Discover([]string{root}, skill.Options{})
	for _, s := range cat.All() {
		ds = append(ds, skill.Validate(s, skill.Options{})...)
		ds = append(ds, skill.Lint(s)...)
	}
	g, rds := skill.Resolve(cat, skill.Options{})
	ds = append(ds, rds...)
	if len(ds) > 0 {
		t.Errorf("generated skills are not clean: %v", ds)
	}
	if len(cat.Skills()) != 250 || len(g.Edges()) == 0 || len(g.Cycles()) != 0 {
		t.Errorf("%d skills, %d edges, %d cycles", len(cat.Skills()), len(g.Edges()), len(g.Cycles()))
	}
	if s := cat.Lookup(Name(120)); s == nil || s.Dir != Dir(root, 120) {
		t.Errorf("skill 120 at %+v", s)
	}

	again := t.TempDir()
	if err := GenerateRoot(again, 250, 7); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 99, 100, 249} {
		a, _ := os.ReadFile(filepath.Join(Dir(root, i), "SKILL.md"))
		b, _ := os.ReadFile(filepath.Join(Dir(again, i), "SKILL.md"))
		if string(a) != string(b) || len(a) == 0 {
			t.Errorf("skill %d differs between runs with one seed", i)
		}
	}
}
