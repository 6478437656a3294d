package suite

import (
	"testing"

	"github.com/skillfleet/skillfleet/skill"
)

// TestCasesHoldExactAssertions: a loaded case's assertions take no more room than they need.
// A plan keeps every case for as long as its run lasts, and a slice grown one assertion at a
// time holds up to twice its length (three assertions in the room of four).
func TestCasesHoldExactAssertions(t *testing.T) {
	for _, root := range []string{"../examples/skills", "testdata/evals", "testdata/plugineval", "testdata/files", "testdata/trajectory"} {
		s := Load([]string{root}, skill.Options{})
		if len(s.Cases) == 0 {
			t.Fatalf("%s: no cases", root)
		}
		for _, c := range s.Cases {
			if cap(c.Assertions) != len(c.Assertions) {
				t.Errorf("%s: case %s/%s holds %d assertions in room for %d", root, c.Skill.Name, c.Name, len(c.Assertions), cap(c.Assertions))
			}
		}
	}
}
