package coordinator

import (
	"testing"

	"google.golang.org/protobuf/proto"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/skill"
)

// TestCatalogOf: the entries name each skill's own file inside the bundle, and the digest is
// the same for the same skills, so a resumed run names the catalog it stored.
func TestCatalogOf(t *testing.T) {
	skills := []*skill.Skill{
		{Name: "upper", Description: "u", File: "/x/upper/SKILL.md", AllowedTools: "bash"},
		{Name: "lower", Description: "l", File: "/x/lower/skill.md"},
		{Name: "built", Description: "b"}, // made by hand: no file
	}
	c, err := catalogOf(skills, nil)
	if err != nil {
		t.Fatal(err)
	}
	cat := &pb.Catalog{}
	if err := proto.Unmarshal(c.data, cat); err != nil {
		t.Fatal(err)
	}
	want := []string{"upper/SKILL.md", "lower/skill.md", "built/SKILL.md"}
	if len(cat.GetEntries()) != len(want) {
		t.Fatalf("%d entries, want %d", len(cat.GetEntries()), len(want))
	}
	for i, e := range cat.GetEntries() {
		if e.GetPath() != want[i] || e.GetName() != skills[i].Name {
			t.Errorf("entry %d: %s at %s, want %s at %s", i, e.GetName(), e.GetPath(), skills[i].Name, want[i])
		}
	}
	if c.allowed["upper"] != "bash" {
		t.Errorf("allowed-tools of upper: %q", c.allowed["upper"])
	}
	again, err := catalogOf(skills, nil)
	if err != nil {
		t.Fatal(err)
	}
	if again.digest != c.digest || len(c.digest) != len("sha256:")+64 {
		t.Errorf("digests %q and %q: want one sha256 digest for the same skills", c.digest, again.digest)
	}
}
