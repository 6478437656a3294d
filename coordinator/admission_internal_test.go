package coordinator

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/queue/queuetest"
	"github.com/skillfleet/skillfleet/skill"
	"github.com/skillfleet/skillfleet/suite"
)

// TestJobsPerPrincipalAreKeptApart: each caller has their own allowance: one token at its cap
// does not stop another, and a refused submission reserves nothing.
func TestJobsPerPrincipalAreKeptApart(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	// The example suite: 21 jobs; the cap lets one run per caller in, not two.
	c, err := New(Config{DataDir: t.TempDir(), MaxJobsPerPrincipal: 30}, Deps{Queue: topo, Runs: topo.Runs(), Bundles: topo})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	s := suite.Load([]string{"../examples/skills"}, skill.Options{})
	var bundle bytes.Buffer
	if _, err := suite.WriteBundle(&bundle, s.Graph, s.Catalog.Skills()); err != nil {
		t.Fatal(err)
	}
	submit := func(who string) error {
		_, err := c.Submit(withPrincipal(context.Background(), who), bytes.NewReader(bundle.Bytes()), &pb.RunSpec{})
		return err
	}
	for _, step := range []struct {
		who     string
		refused bool
	}{
		{"alice", false},
		{"alice", true},
		{"bob", false},
		{"", false}, // anonymous callers share one allowance of their own
		{"alice", true},
		{"bob", true},
	} {
		err := submit(step.who)
		var pe *PlanError
		switch {
		case step.refused && (!errors.As(err, &pe) || !strings.Contains(err.Error(), "over the limit of 30")):
			t.Errorf("%q: Submit = %v, want refused over the limit", step.who, err)
		case !step.refused && err != nil:
			t.Errorf("%q: Submit = %v, want admitted", step.who, err)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if got := c.admitted; len(got) != 3 || got["alice"] != 21 || got["bob"] != 21 || got[""] != 21 {
		t.Errorf("admitted = %v, want 21 jobs each for alice, bob and anonymous", got)
	}
}
