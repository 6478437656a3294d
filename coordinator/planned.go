package coordinator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/skillfleet/skillfleet/bundle"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/skill"
	"github.com/skillfleet/skillfleet/suite"
)

// Planned is a suite loaded and planned in the submitter's own process, with its bundle
// written: what `skillfleet test` hands its in-process coordinator, so the suite is planned
// once.
type Planned struct {
	Suite *suite.Suite
	// Plan is the suite's plan; its jobs are expanded again for the run's agents (see
	// suite.Plan.Expand), so it may have been made before the agents were known.
	Plan *suite.Plan
	// Bundle is the file suite.WriteBundle wrote for the plan's selection: its digest must be
	// the plan's.
	Bundle string
}

// SubmitPlanned starts a run from a suite planned in this process. The caller is this
// process, so what Submit does against an untrusted upload (extract the bundle, load and plan
// it again) is skipped; the admission limits are not: the spec's checks (deadline, known
// agents), jobs per run and per principal, and job sizes apply as they do to Submit. The
// run's cases name their files as a run from the same bundle submitted over HTTP does
// (relative to the bundle), so reports do not depend on how the run came in.
func (c *Coordinator) SubmitPlanned(ctx context.Context, in Planned, spec *pb.RunSpec) (*pb.RunStatus, error) {
	if err := c.checkSpec(spec); err != nil {
		return nil, err
	}
	if in.Suite == nil || in.Plan == nil {
		return nil, fmt.Errorf("submit: a planned suite needs its suite and its plan")
	}
	st, err := os.Stat(in.Bundle)
	if err != nil {
		return nil, fmt.Errorf("submit: %w", err)
	}
	if st.Size() > c.cfg.MaxBundleBytes {
		return nil, &PlanError{Err: fmt.Errorf("the bundle is %d bytes, over this coordinator's limit of %d", st.Size(), c.cfg.MaxBundleBytes)}
	}
	digest, err := fileDigest(in.Bundle)
	if err != nil {
		return nil, fmt.Errorf("submit: %w", err)
	}
	if digest != in.Plan.SuiteDigest {
		// Written from another selection, it would give the workers other files than planned.
		return nil, &PlanError{Err: fmt.Errorf("the bundle (%s) is not the plan's (%s)", digest, in.Plan.SuiteDigest)}
	}
	if spec.GetBaseline() != string(in.Plan.Baseline) {
		// The bundle holds the old versions only when the plan was made with them.
		return nil, fmt.Errorf("submit: the run's baseline %q is not the plan's %q", spec.GetBaseline(), in.Plan.Baseline)
	}
	spec = proto.Clone(spec).(*pb.RunSpec)
	spec.Id = c.newID()
	spec.BundleDigest = in.Plan.SuiteDigest
	spec.CreatedAt = timestamppb.New(c.now())
	if spec.Priority == pb.Priority_PRIORITY_UNSPECIFIED {
		spec.Priority = pb.Priority_PRIORITY_ON_DEMAND
	}
	agents := spec.GetAgents()
	if len(agents) == 0 {
		agents = c.cfg.Agents
	}
	plan, err := in.Plan.Expand(agents, c.cfg.MaxJobsPerRun)
	if err := planError("", plan, err); err != nil {
		return nil, err
	}
	plan = inBundle(plan)
	skills := make([]*skill.Skill, 0, len(plan.Skills))
	for _, sd := range plan.Skills {
		s := in.Suite.Catalog.Lookup(sd.Name)
		if s == nil {
			return nil, fmt.Errorf("submit: skill %s of the plan is not in its suite", sd.Name)
		}
		skills = append(skills, s)
	}
	cat, err := catalogOf(skills, plan.Old)
	if err != nil {
		return nil, err
	}
	return c.admit(ctx, newRun(spec, plan, cat), in.Bundle, "")
}

// inBundle returns the plan with each case's file named as it is inside the bundle
// ("<skill>/<path in the skill>"), as planIn names the files of an extracted bundle. The
// cases are copied: the caller's plan is left as it was.
func inBundle(p *suite.Plan) *suite.Plan {
	out := *p
	moved := make(map[*suite.Case]*suite.Case, len(p.Cases))
	out.Cases = make([]*suite.Case, len(p.Cases))
	for i, c := range p.Cases {
		cc := *c
		if r, err := filepath.Rel(c.Skill.Dir, c.File); err == nil && filepath.IsLocal(r) {
			cc.File = path.Join(c.Skill.Name, filepath.ToSlash(r))
		}
		moved[c], out.Cases[i] = &cc, &cc
	}
	out.Jobs = make([]suite.Job, len(p.Jobs))
	for i, j := range p.Jobs {
		j.Case = moved[j.Case]
		out.Jobs[i] = j
	}
	return &out
}

// fileDigest is the content digest of a bundle file.
func fileDigest(name string) (string, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return bundle.DigestPrefix + hex.EncodeToString(h.Sum(nil)), nil
}
