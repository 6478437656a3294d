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

// TestJobsPerPrincipalSurviveARestart: the run records who submitted it, so a restarted
// coordinator counts the unfinished jobs against the same token: before, its counts started
// from zero and a token could double its allowance by waiting for a restart.
func TestJobsPerPrincipalSurviveARestart(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	dataDir := t.TempDir()
	start := func() *Coordinator {
		c, err := New(Config{DataDir: dataDir, MaxJobsPerPrincipal: 30}, Deps{Queue: topo, Runs: topo.Runs(), Bundles: topo})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		return c
	}
	s := suite.Load([]string{"../examples/skills"}, skill.Options{})
	var bundle bytes.Buffer
	if _, err := suite.WriteBundle(&bundle, s.Graph, s.Catalog.Skills()); err != nil {
		t.Fatal(err)
	}
	c := start()
	st, err := c.Submit(withPrincipal(context.Background(), "alice"), bytes.NewReader(bundle.Bytes()), &pb.RunSpec{})
	if err != nil {
		t.Fatal(err)
	}
	if st.GetSubmittedBy() != "alice" {
		t.Errorf("submitted_by %q, want alice", st.GetSubmittedBy())
	}
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	c2 := start()
	t.Cleanup(func() { _ = c2.Close(context.Background()) })
	c2.mu.Lock()
	got := c2.admitted["alice"]
	c2.mu.Unlock()
	if got != 21 {
		t.Errorf("after a restart alice holds %d jobs, want the 21 of her unfinished run", got)
	}
	var pe *PlanError
	if _, err := c2.Submit(withPrincipal(context.Background(), "alice"), bytes.NewReader(bundle.Bytes()), &pb.RunSpec{}); !errors.As(err, &pe) {
		t.Errorf("a second run of alice after a restart: %v, want refused over her limit", err)
	}
}
