package coordinator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/skillfleet/skillfleet/bundle"
	"github.com/skillfleet/skillfleet/diag"
	"github.com/skillfleet/skillfleet/internal/ctxio"
	"github.com/skillfleet/skillfleet/internal/tenant"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/suite"
)

// jobHeaderRoom is what a job message's subject and headers (message id, expected stream) may
// take of the server's max payload, which counts them with the data.
const jobHeaderRoom = 1024

// checkSpec refuses what the run's options alone make inadmissible, before the upload is read.
func (c *Coordinator) checkSpec(spec *pb.RunSpec) error {
	if ms := spec.GetDeadlineMs(); ms > c.cfg.MaxDeadline.Milliseconds() {
		// In hours: a deadline of years overflows a Duration.
		return &PlanError{Err: fmt.Errorf("the deadline of %dh exceeds this coordinator's maximum of %s (--max-deadline)", ms/int64(time.Hour/time.Millisecond), c.cfg.MaxDeadline)}
	}
	if _, err := suite.ParseArm(spec.GetBaseline()); err != nil {
		return &PlanError{Err: err}
	}
	if x := spec.GetMaxCost(); x < 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return &PlanError{Err: fmt.Errorf("a cost cap must be a positive number of US dollars, got %v", x)}
	}
	if ms := spec.GetReuseWithinMs(); ms < 0 || (ms > 0 && !spec.GetChangedOnly()) {
		return &PlanError{Err: fmt.Errorf("a reuse window (%dms) must be positive and belongs to a changed-only run", ms)}
	}
	for i, a := range spec.GetAgents() {
		// The same agent twice would plan every prompt job twice under one id.
		if slices.Contains(spec.GetAgents()[:i], a) {
			return &PlanError{Err: fmt.Errorf("agent %q is named twice", a)}
		}
	}
	if known := c.cfg.KnownAgents; len(known) > 0 {
		for _, a := range spec.GetAgents() {
			if !slices.Contains(known, a) {
				return &PlanError{Err: fmt.Errorf("unknown agent %q: this fleet runs %s", a, strings.Join(known, ", "))}
			}
		}
	}
	return nil
}

// spool copies an upload to path, at most limit bytes of it, and returns its digest. An upload
// over the limit is an *http.MaxBytesError (413), whatever reader it came through.
func spool(ctx context.Context, r io.Reader, path string, limit int64) (string, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return "", fmt.Errorf("spool upload: %w", err)
	}
	defer func() { _ = f.Close() }()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(ctxio.Reader(ctx, r), limit+1))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return "", err
	case err != nil:
		return "", fmt.Errorf("read upload: %w", err)
	case n > limit:
		return "", &http.MaxBytesError{Limit: limit}
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("spool upload: %w", err)
	}
	return bundle.DigestPrefix + hex.EncodeToString(h.Sum(nil)), nil
}

// extract checks the spooled tar and unpacks it into tree. The check reads the file once more
// before anything is written, so a refused bundle (20,000 files and a bad manifest, say) costs
// no write; ExtractBundle repeats every check as it writes.
func extract(tarPath, tree string) error {
	f, err := os.Open(tarPath)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	if _, err := bundle.CheckBundle(f); err != nil {
		return fmt.Errorf("check bundle: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	// An empty bundle is still a directory (with no skills to plan), not a missing one.
	if err := os.Mkdir(tree, 0o755); err != nil {
		return err
	}
	if err := bundle.ExtractBundle(f, tree); err != nil {
		return fmt.Errorf("extract bundle: %w", err)
	}
	return nil
}

// checkJobSizes refuses a plan holding a case whose job message would exceed the server's max
// payload: such a publish is refused every time, so the run could never complete. The biggest
// job of a case is the one with its longest agent name and its last epoch; the rest differ
// from it only in those.
func (c *Coordinator) checkJobSizes(r *run) error {
	limit := c.maxJobBytes()
	longest := ""
	for _, a := range r.plan.Jobs {
		if len(a.Agent) > len(longest) {
			longest = a.Agent
		}
	}
	var diags diag.Diagnostics
	for _, pc := range r.plan.Cases {
		agent, arm := longest, suite.ArmWithSkill
		if pc.Kind == suite.KindCommand {
			agent = ""
		} else if r.plan.Baseline != "" {
			arm = r.plan.Baseline // a baseline job carries its arm: a few bytes more
		}
		j := suite.Job{ID: suite.ArmJobID(pc.Skill.Name, pc.Name, pc.Kind, pc.Runs, agent, arm), Case: pc, Epoch: pc.Runs, Agent: agent, Arm: arm}
		msg, err := jobMessage(r.spec, r.plan, r.catalog, j, c.cfg.MaxAttempts, r.spec.GetCreatedAt())
		if err != nil {
			return &PlanError{Err: err}
		}
		// Published, it carries its secret too (the run's key is made only once admitted).
		msg.Secret = jobSecret(make([]byte, 32), msg.GetId())
		if n := proto.Size(msg); n > limit {
			diags = append(diags, diag.Diagnostic{
				Rule: "job.tooLarge", Severity: diag.SeverityError, File: pc.File, Line: pc.Line,
				Message: fmt.Sprintf("case %s: its job message is %d bytes, over the %d the queue takes (its input, command, stdin, env and assertions are too big)", pc.Name, n, limit),
			})
			if len(diags) == 100 {
				break
			}
		}
	}
	if len(diags) > 0 {
		return &PlanError{Diagnostics: diags}
	}
	return nil
}

// maxJobBytes is the largest job message the queue takes: the connection's max payload (the
// server's) less room for the headers, or the jobs stream's max message size if smaller.
func (c *Coordinator) maxJobBytes() int {
	limit := int(c.queue.MaxPayload()) - jobHeaderRoom
	if m := int(c.queue.JobsMaxMsgSize()); m > 0 {
		limit = min(limit, m-jobHeaderRoom)
	}
	return limit
}

// quotas are the jobs of unfinished runs this process counts, per submitter (a token's or
// proxy user's name, "" anonymous) and per team.
type quotas struct {
	byName, byTeam map[string]int
}

func newQuotas() quotas { return quotas{byName: map[string]int{}, byTeam: map[string]int{}} }

// over says how a submission of jobs by name in team would go over a limit ("" if it would
// not), ending with then.
func (c *Coordinator) overLocked(name, team string, jobs int, then string) error {
	if have := c.admitted.byName[name] + jobs; have > c.cfg.MaxJobsPerPrincipal {
		who := "anonymous callers"
		if name != "" {
			who = "token " + name
		}
		return &PlanError{Err: fmt.Errorf("%s would have %d jobs in unfinished runs, over the limit of %d: %s", who, have, c.cfg.MaxJobsPerPrincipal, then)}
	}
	if have, limit := c.admitted.byTeam[team]+jobs, c.policy(team).MaxJobs; have > limit {
		return &PlanError{Err: fmt.Errorf("team %s would have %d jobs in unfinished runs, over the limit of %d: %s", team, have, limit, then)}
	}
	total := jobs
	for _, n := range c.admitted.byTeam {
		total += n
	}
	if total > c.cfg.MaxJobs {
		return &PlanError{Err: fmt.Errorf("the fleet would have %d jobs in unfinished runs, over this coordinator's limit of %d (--max-jobs): %s", total, c.cfg.MaxJobs, then)}
	}
	return nil
}

// reserve counts jobs against the limits of name and of team, refusing them if either would
// be exceeded.
func (c *Coordinator) reserve(name, team string, jobs int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.overLocked(name, team, jobs, "wait for runs to finish or cancel some"); err != nil {
		return err
	}
	c.admitted.byName[name] += jobs
	c.admitted.byTeam[team] += jobs
	return nil
}

// quotaHolds says whether the limits of name and team can take jobs more, without booking
// them.
func (c *Coordinator) quotaHolds(name, team string, jobs int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.overLocked(name, team, jobs, "the fire is skipped without planning")
}

// unreserve gives a run's jobs back to its submitter's and team's limits; it is safe to call
// twice.
func (c *Coordinator) unreserve(r *run) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.reserved == 0 {
		return
	}
	team := tenant.Team(r.spec.GetTeam())
	if c.admitted.byName[r.principal] -= r.reserved; c.admitted.byName[r.principal] <= 0 {
		delete(c.admitted.byName, r.principal)
	}
	if c.admitted.byTeam[team] -= r.reserved; c.admitted.byTeam[team] <= 0 {
		delete(c.admitted.byTeam, team)
	}
	r.reserved = 0
}
