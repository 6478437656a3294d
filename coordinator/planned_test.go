package coordinator_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/skillfleet/skillfleet/coordinator"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/queue/queuetest"
	"github.com/skillfleet/skillfleet/skill"
	"github.com/skillfleet/skillfleet/suite"
)

// plannedSuite is a suite with a second skill (so the catalog has two entries) whose
// allowed-tools the job must carry.
func plannedSuite(t *testing.T) string {
	return writeFiles(t, map[string]string{
		"s/SKILL.md": strings.Replace(okSkill, "metadata:", "allowed-tools: bash read_file\nmetadata:", 1),
		"s/cases.yaml": `cases:
  - name: a
    input: hi
    assertions:
      output_contains: ["x"]
`,
		"t/SKILL.md": "---\nname: t\ndescription: Another fixture skill. Use when the catalog needs two.\n---\n\n# T\n",
	})
}

// planLocally loads and plans root as skillfleet test does, without agents, and writes its
// bundle.
func planLocally(t *testing.T, root string) coordinator.Planned {
	t.Helper()
	s := suite.Load([]string{root}, skill.Options{})
	if s.Diagnostics.HasErrors() {
		t.Fatalf("suite: %v", s.Diagnostics)
	}
	p, err := s.Plan(suite.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(t.TempDir(), "bundle.tar")
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := suite.WriteBundle(f, s.Graph, s.Catalog.Skills()); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return coordinator.Planned{Suite: s, Plan: p, Bundle: name}
}

// TestSubmitPlannedSendsTheJobsSubmitDoes: a suite planned in process gives the workers the
// very job a submitted bundle gives them, catalog and allowed-tools included, but for the run
// and its secret.
func TestSubmitPlannedSendsTheJobsSubmitDoes(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	ctx := context.Background()
	c, _ := startCoordinator(t, topo, t.TempDir())
	root := plannedSuite(t)

	if _, err := c.Submit(ctx, bytes.NewReader(bundleOf(t, root)), &pb.RunSpec{}); err != nil {
		t.Fatal(err)
	}
	viaHTTP := takeJob(t, topo)
	if _, err := c.SubmitPlanned(ctx, planLocally(t, root), &pb.RunSpec{}); err != nil {
		t.Fatal(err)
	}
	inProcess := takeJob(t, topo)

	// The catalog travels by digest, stored once per run; it is the bundle's every skill.
	if len(inProcess.GetCatalog()) != 0 || inProcess.GetCatalogDigest() == "" {
		t.Fatalf("catalog %v inline, digest %q: want it by digest only", inProcess.GetCatalog(), inProcess.GetCatalogDigest())
	}
	var stored bytes.Buffer
	if err := topo.GetBundle(ctx, inProcess.GetCatalogDigest(), &stored); err != nil {
		t.Fatalf("the catalog the job names is not stored: %v", err)
	}
	cat := &pb.Catalog{}
	if err := proto.Unmarshal(stored.Bytes(), cat); err != nil {
		t.Fatal(err)
	}
	if got := cat.GetEntries(); len(got) != 2 || got[0].GetName() != "s" || got[1].GetPath() != "t/SKILL.md" || !strings.Contains(got[1].GetDescription(), "Another fixture") {
		t.Fatalf("catalog %v", got)
	}
	if inProcess.GetAllowedTools() != "bash read_file" || inProcess.GetFile() != "s/cases.yaml" {
		t.Fatalf("allowed-tools %q, file %q", inProcess.GetAllowedTools(), inProcess.GetFile())
	}
	for _, j := range []*pb.Job{viaHTTP, inProcess} {
		j.RunId, j.Secret, j.QueuedAt = "", nil, nil
	}
	if !proto.Equal(viaHTTP, inProcess) {
		t.Fatalf("the jobs differ:\nsubmitted %v\nplanned   %v", viaHTTP, inProcess)
	}
}

// TestSubmitPlannedKeepsTheAdmissionChecks: what Submit refuses, SubmitPlanned refuses too,
// and a bundle that is not the plan's is refused.
func TestSubmitPlannedKeepsTheAdmissionChecks(t *testing.T) {
	_, _, topo := queuetest.Start(t)
	c, _ := startCoordinator(t, topo, t.TempDir())
	root := plannedSuite(t)
	other := planLocally(t, writeFiles(t, map[string]string{"s/SKILL.md": okSkill, "s/cases.yaml": "cases:\n  - name: z\n    input: hi\n    assertions:\n      output_contains: [\"y\"]\n"}))
	tests := []struct {
		name   string
		in     func() coordinator.Planned
		spec   *pb.RunSpec
		reason string
	}{
		{"unknown agent", func() coordinator.Planned { return planLocally(t, root) }, &pb.RunSpec{Agents: []string{"nobody"}}, "unknown agent"},
		{"deadline over the maximum", func() coordinator.Planned { return planLocally(t, root) }, &pb.RunSpec{DeadlineMs: 100 * 24 * 3600 * 1000}, "deadline"},
		{"another bundle", func() coordinator.Planned { p := planLocally(t, root); p.Bundle = other.Bundle; return p }, &pb.RunSpec{}, "not the plan's"},
		{"no cases", func() coordinator.Planned {
			p := planLocally(t, root)
			p.Plan.Cases = nil
			return p
		}, &pb.RunSpec{}, "no test cases matched"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.SubmitPlanned(context.Background(), tt.in(), tt.spec)
			var pe *coordinator.PlanError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), tt.reason) {
				t.Fatalf("err = %v, want a PlanError saying %q", err, tt.reason)
			}
		})
	}
}
