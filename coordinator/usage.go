package coordinator

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/internal/tenant"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/queue"
)

// What each team holds of the streams the fleet shares. A run's results and the documents its
// jobs stored apart are counted as they arrive; while the run goes they are the team's live
// bytes, bounded by its policy (over its bound, the team's new runs are refused and its runs
// are not fed). Once the run's final report is stored they are kept bytes: they no longer
// count against anyone's admission, and they are the first to go (evict.go) when the streams
// need room for running runs. So a team that fills the streams stops only itself, and
// yesterday's runs never block today's.

// usage keeps the bytes per team.
type usage struct {
	mu    sync.Mutex
	teams map[string]*teamBytes
	// kept are the finished runs whose results are still in the streams, by run id.
	kept map[string]*keptRun
}

// teamBytes is what one team holds.
type teamBytes struct {
	liveResults, liveArtifacts int64
	keptResults, keptArtifacts int64
	// over says which bound the team's live bytes are over ("": none).
	over string
}

// keptRun is a finished run whose results are still in the streams.
type keptRun struct {
	id, team          string
	finished          time.Time
	results, artifact int64
}

func newUsage() *usage {
	return &usage{teams: map[string]*teamBytes{}, kept: map[string]*keptRun{}}
}

func (u *usage) teamLocked(team string) *teamBytes {
	t := u.teams[team]
	if t == nil {
		t = &teamBytes{}
		u.teams[team] = t
	}
	return t
}

// apartBytes is what a result's documents stored apart take of the artifacts stream.
func apartBytes(res *pb.Result) int64 {
	var n int64
	for _, d := range []*pb.StoredDocument{res.GetTrajectory(), res.GetOutputsStored()} {
		if d.GetArtifact() != "" {
			n += max(d.GetSize(), 0)
		}
	}
	return n
}

// holds adds results and artifact bytes to what run r holds, and to its team's live bytes:
// a team that goes over a bound stops being fed (see overBound).
func (c *Coordinator) holds(r *run, results, artifacts int64) {
	if results == 0 && artifacts == 0 {
		return
	}
	r.mu.Lock()
	r.resultBytes += results
	r.artifactBytes += artifacts
	r.mu.Unlock()
	if r.readOnly {
		return
	}
	c.usage.mu.Lock()
	t := c.usage.teamLocked(r.team)
	t.liveResults += results
	t.liveArtifacts += artifacts
	changed := c.checkBoundsLocked(r.team, t)
	c.usage.mu.Unlock()
	if changed {
		c.feed.pause(r.team, t.over)
	}
}

// checkBoundsLocked sets t.over from the team's live bytes and its policy, and reports whether
// it changed.
func (c *Coordinator) checkBoundsLocked(team string, t *teamBytes) bool {
	p := c.policy(team)
	over := ""
	switch {
	case p.MaxResultBytes > 0 && t.liveResults >= p.MaxResultBytes:
		over = fmt.Sprintf("team %s's unfinished runs hold %s of results, over its bound of %s (max_result_bytes)", team, FormatSize(t.liveResults), FormatSize(p.MaxResultBytes))
	case p.MaxArtifactBytes > 0 && t.liveArtifacts >= p.MaxArtifactBytes:
		over = fmt.Sprintf("team %s's unfinished runs hold %s of documents stored apart, over its bound of %s (max_artifact_bytes)", team, FormatSize(t.liveArtifacts), FormatSize(p.MaxArtifactBytes))
	}
	if over == t.over {
		return false
	}
	if over != "" {
		c.log.Warn("a team is over its bound: its runs wait and its new runs are refused", zap.String("team", team), zap.String("why", over))
	} else {
		c.log.Info("a team is under its bounds again", zap.String("team", team))
	}
	t.over = over
	return true
}

// runFinished moves what a finished run holds from its team's live bytes to its kept bytes:
// evictable when its report is stored (else it stays until the streams' max age, since its
// report is rebuilt from its results).
func (c *Coordinator) runFinished(r *run, finished time.Time, reportStored bool) {
	if r.readOnly {
		return
	}
	r.mu.Lock()
	results, artifacts := r.resultBytes, r.artifactBytes
	r.mu.Unlock()
	c.usage.mu.Lock()
	t := c.usage.teamLocked(r.team)
	t.liveResults -= results
	t.liveArtifacts -= artifacts
	if reportStored {
		t.keptResults += results
		t.keptArtifacts += artifacts
		c.usage.kept[r.id] = &keptRun{id: r.id, team: r.team, finished: finished, results: results, artifact: artifacts}
	}
	changed := c.checkBoundsLocked(r.team, t)
	c.usage.mu.Unlock()
	if changed {
		c.feed.pause(r.team, t.over)
	}
}

// keep counts a finished run found at start whose results are still in the streams.
func (c *Coordinator) keep(st *pb.RunStatus) {
	if st.GetResultsEvictedAt() != nil || st.GetFinishedAt() == nil || !st.GetReportStored() {
		return
	}
	team := teamOfRun(st)
	c.usage.mu.Lock()
	defer c.usage.mu.Unlock()
	if c.usage.kept[st.GetId()] != nil {
		return
	}
	t := c.usage.teamLocked(team)
	t.keptResults += st.GetResultBytes()
	t.keptArtifacts += st.GetArtifactBytes()
	c.usage.kept[st.GetId()] = &keptRun{id: st.GetId(), team: team, finished: st.GetFinishedAt().AsTime(), results: st.GetResultBytes(), artifact: st.GetArtifactBytes()}
}

// forget drops a kept run (evicted, or past retention) from its team's kept bytes.
func (c *Coordinator) forget(id string) {
	c.usage.mu.Lock()
	defer c.usage.mu.Unlock()
	k := c.usage.kept[id]
	if k == nil {
		return
	}
	delete(c.usage.kept, id)
	t := c.usage.teamLocked(k.team)
	t.keptResults -= k.results
	t.keptArtifacts -= k.artifact
}

// keptBytes is what the kept runs hold of the results and the artifacts streams: room that
// eviction can give back.
func (c *Coordinator) keptBytes() (results, artifacts int64) {
	c.usage.mu.Lock()
	defer c.usage.mu.Unlock()
	for _, t := range c.usage.teams {
		results += t.keptResults
		artifacts += t.keptArtifacts
	}
	return results, artifacts
}

// teamBytesOf returns a copy of what team holds.
func (c *Coordinator) teamBytesOf(team string) teamBytes {
	c.usage.mu.Lock()
	defer c.usage.mu.Unlock()
	if t := c.usage.teams[team]; t != nil {
		return *t
	}
	return teamBytes{}
}

// evictionOrder lists the kept runs in the order eviction takes them: the team holding the
// most kept bytes for its weight gives its oldest run first, so a team that floods the streams
// loses its own history before anyone else's.
func (c *Coordinator) evictionOrder() []keptRun {
	c.usage.mu.Lock()
	byTeam := map[string][]keptRun{}
	held := map[string]int64{}
	for _, k := range c.usage.kept {
		byTeam[k.team] = append(byTeam[k.team], *k)
		held[k.team] += k.results + k.artifact
	}
	c.usage.mu.Unlock()
	for _, runs := range byTeam {
		sort.Slice(runs, func(i, j int) bool { return runs[i].finished.Before(runs[j].finished) })
	}
	weight := func(team string) int64 { return int64(c.policy(team).Weight) }
	var out []keptRun
	for len(byTeam) > 0 {
		best := ""
		for team := range byTeam {
			// held[team]/weight(team) > held[best]/weight(best), without division; ties by name.
			if best == "" || held[team]*weight(best) > held[best]*weight(team) || (held[team]*weight(best) == held[best]*weight(team) && team < best) {
				best = team
			}
		}
		k := byTeam[best][0]
		out = append(out, k)
		held[best] -= k.results + k.artifact
		if byTeam[best] = byTeam[best][1:]; len(byTeam[best]) == 0 {
			delete(byTeam, best)
		}
	}
	return out
}

// TeamUsage is one team's share of the fleet against its bounds: GET /v1/usage and
// skillfleet usage.
type TeamUsage struct {
	Team   string     `json:"team"`
	Policy TeamPolicy `json:"policy"`
	// Jobs are the jobs of the team's unfinished runs (against Policy.MaxJobs); Running the
	// jobs it holds of each lane now, queued or running (against Policy.MaxRunning).
	Jobs    int            `json:"jobs"`
	Running map[string]int `json:"running"`
	// Results and Artifacts are what the team's runs hold of the two streams: Live for
	// unfinished runs (against the policy's bound), Kept for finished runs whose results are
	// still there (given back when the streams need room).
	Results   Bytes `json:"results"`
	Artifacts Bytes `json:"artifacts"`
	// Bundles is what the team's kept runs and pushed suites hold of the bundle store.
	Bundles int64 `json:"bundles"`
	// Over says which bound the team is over, with its usage ("": none): its runs wait and
	// its new runs are refused until it is under again.
	Over string `json:"over,omitempty"`
}

// Bytes is what a team holds of a stream.
type Bytes struct {
	Live int64 `json:"live"`
	Kept int64 `json:"kept"`
}

// Usage returns the usage of the teams the caller of ctx may read: its own, or for an admin
// (and the process's own calls) every team that holds anything or has a policy, or only
// team when it is not "".
func (c *Coordinator) Usage(ctx context.Context, team string) ([]TeamUsage, error) {
	p, hasPrincipal := tenant.From(ctx)
	all := !hasPrincipal || p.Role == tenant.Admin
	names := map[string]bool{}
	switch {
	case team != "":
		if !all && team != tenant.Team(p.Team) {
			return nil, fmt.Errorf("no team %q among yours: %w", team, ErrNotFound)
		}
		names[team] = true
	case !all:
		names[tenant.Team(p.Team)] = true
	default:
		for t := range c.cfg.Teams {
			names[t] = true
		}
		c.usage.mu.Lock()
		for t := range c.usage.teams {
			names[t] = true
		}
		c.usage.mu.Unlock()
		c.mu.Lock()
		for t := range c.admitted.byTeam {
			names[t] = true
		}
		c.mu.Unlock()
	}
	shares := map[string]map[string]int{}
	for _, l := range queue.Lanes() {
		s, _ := c.feed.shares(l)
		for t, sh := range s {
			if shares[t] == nil {
				shares[t] = map[string]int{}
			}
			shares[t][string(l)] = sh.Outstanding
		}
	}
	bundles, err := c.held.total(ctx, c)
	if err != nil {
		return nil, err
	}
	out := make([]TeamUsage, 0, len(names))
	for t := range names {
		b := c.teamBytesOf(t)
		c.mu.Lock()
		jobs := c.admitted.byTeam[t]
		c.mu.Unlock()
		u := TeamUsage{
			Team: t, Policy: c.policy(t), Jobs: jobs, Running: shares[t],
			Results:   Bytes{Live: b.liveResults, Kept: b.keptResults},
			Artifacts: Bytes{Live: b.liveArtifacts, Kept: b.keptArtifacts},
			Over:      b.over,
		}
		if u.Running == nil {
			u.Running = map[string]int{}
		}
		u.Bundles = bundles[t]
		out = append(out, u)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Team < out[j].Team })
	return out, nil
}
