package coordinator

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/internal/tenant"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/queue/queuetest"
	"github.com/skillfleet/skillfleet/skill"
	"github.com/skillfleet/skillfleet/suite"
)

// TestJobsPerPrincipalAreKeptApart: each caller has their own allowance: one token at its cap
// does not stop another, and a refused submission reserves nothing.
func TestJobsPerPrincipalAreKeptApart(t *testing.T) {
	// The example suite: 21 jobs; the cap lets one run per caller in, not two.
	c, bundle := quotaCoordinator(t, Config{MaxJobsPerPrincipal: 30})
	submit := func(who string) error {
		_, err := c.Submit(as(who, "teamA", tenant.Member), bytes.NewReader(bundle.Bytes()), &pb.RunSpec{})
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
	if got := c.admitted.byName; len(got) != 3 || got["alice"] != 21 || got["bob"] != 21 || got[""] != 21 {
		t.Errorf("admitted = %v, want 21 jobs each for alice, bob and anonymous", got)
	}
	if got := c.admitted.byTeam; len(got) != 1 || got["teamA"] != 63 {
		t.Errorf("admitted per team = %v, want teamA's 63", got)
	}
}

// as is a context of a principal.
func as(name, team string, role tenant.Role) context.Context {
	return tenant.With(context.Background(), tenant.Principal{Name: name, Team: team, Role: role})
}

// TestJobsPerTeam: a team's tokens share its allowance; another team's is its own; a viewer
// submits nothing, and the run is the submitter's team's whatever the spec said.
func TestJobsPerTeam(t *testing.T) {
	c, bundle := quotaCoordinator(t, Config{MaxJobsPerPrincipal: 100, MaxJobsPerTeam: 50})
	for _, step := range []struct {
		who, team string
		role      tenant.Role
		want      string // "" admitted, else a word of the refusal
	}{
		{"a1", "teamA", tenant.Member, ""},
		{"a2", "teamA", tenant.Member, ""},
		{"a3", "teamA", tenant.Member, "team teamA would have 63 jobs"},
		{"b1", "teamB", tenant.Member, ""},
		{"bv", "teamB", tenant.Viewer, "may not change"},
	} {
		st, err := c.Submit(as(step.who, step.team, step.role), bytes.NewReader(bundle.Bytes()), &pb.RunSpec{Team: "teamZ"})
		switch {
		case step.want == "" && err != nil:
			t.Errorf("%s: %v, want admitted", step.who, err)
		case step.want == "" && st.GetSpec().GetTeam() != step.team:
			t.Errorf("%s: run of team %q, want %q", step.who, st.GetSpec().GetTeam(), step.team)
		case step.want != "" && (err == nil || !strings.Contains(err.Error(), step.want)):
			t.Errorf("%s: %v, want refused with %q", step.who, err, step.want)
		}
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
	st, err := c.Submit(as("alice", "teamA", tenant.Member), bytes.NewReader(bundle.Bytes()), &pb.RunSpec{})
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
	got, team := c2.admitted.byName["alice"], c2.admitted.byTeam["teamA"]
	c2.mu.Unlock()
	if got != 21 || team != 21 {
		t.Errorf("after a restart alice holds %d jobs and teamA %d, want the 21 of her unfinished run", got, team)
	}
	var pe *PlanError
	if _, err := c2.Submit(as("alice", "teamA", tenant.Member), bytes.NewReader(bundle.Bytes()), &pb.RunSpec{}); !errors.As(err, &pe) {
		t.Errorf("a second run of alice after a restart: %v, want refused over her limit", err)
	}
}

// quotaCoordinator is a coordinator of cfg on an embedded server, and the example suite's
// bundle (21 jobs) to submit to it.
func quotaCoordinator(t *testing.T, cfg Config) (*Coordinator, *bytes.Buffer) {
	t.Helper()
	_, _, topo := queuetest.Start(t)
	cfg.DataDir = t.TempDir()
	c, err := New(cfg, Deps{Queue: topo, Runs: topo.Runs(), Bundles: topo})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	s := suite.Load([]string{"../examples/skills"}, skill.Options{})
	var bundle bytes.Buffer
	if _, err := suite.WriteBundle(&bundle, s.Graph, s.Catalog.Skills()); err != nil {
		t.Fatal(err)
	}
	return c, &bundle
}
