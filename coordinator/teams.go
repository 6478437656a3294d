package coordinator

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/skillfleet/skillfleet/internal/tenant"
)

// TeamPolicy is a team's share of the fleet and its bounds. A zero field takes the
// coordinator's default (Config.TeamDefaults); the bounds hold per team, whatever its tokens.
type TeamPolicy struct {
	// Weight is the team's share of the workers within a lane against the other teams with
	// jobs queued there (1: an equal share).
	Weight int `json:"weight"`
	// MaxRunning caps the team's jobs queued and running at once in a lane (0: none beyond
	// the share).
	MaxRunning int `json:"max_running,omitempty"`
	// MaxJobs caps the jobs of the team's unfinished runs, a submission's included.
	MaxJobs int `json:"max_jobs"`
	// MaxResultBytes and MaxArtifactBytes cap what the team's unfinished runs hold of the
	// results and artifacts streams; over either, the team's new runs are refused and its
	// running ones are not fed until they are under again.
	MaxResultBytes   int64 `json:"max_result_bytes"`
	MaxArtifactBytes int64 `json:"max_artifact_bytes"`
	// MaxBundleBytes caps the bundles the team's kept runs and pushed suites hold in the
	// bundle store; an upload over it is refused.
	MaxBundleBytes int64 `json:"max_bundle_bytes"`
}

// withDefaults is p with its zero fields taken from def.
func (p TeamPolicy) withDefaults(def TeamPolicy) TeamPolicy {
	if p.Weight <= 0 {
		p.Weight = max(def.Weight, 1)
	}
	if p.MaxRunning <= 0 {
		p.MaxRunning = def.MaxRunning
	}
	if p.MaxJobs <= 0 {
		p.MaxJobs = def.MaxJobs
	}
	if p.MaxResultBytes <= 0 {
		p.MaxResultBytes = def.MaxResultBytes
	}
	if p.MaxArtifactBytes <= 0 {
		p.MaxArtifactBytes = def.MaxArtifactBytes
	}
	if p.MaxBundleBytes <= 0 {
		p.MaxBundleBytes = def.MaxBundleBytes
	}
	return p
}

// teamKeys are the keys a teams file line may give, in the order the error names them.
var teamKeys = []string{"weight", "max_running", "max_jobs", "max_result_bytes", "max_artifact_bytes", "max_bundle_bytes"}

// ParseTeams reads a teams file: one team per line, `TEAM [weight=N] [max_running=N]
// [max_jobs=N] [max_result_bytes=SIZE] [max_artifact_bytes=SIZE] [max_bundle_bytes=SIZE]`,
// SIZE a number of bytes with an optional unit (KiB, MiB, GiB, KB, MB, GB); blank lines and
// lines starting with # are ignored. A key not among these, a key given twice, a team named
// twice or a value that is not a positive number stops the start, naming source and the line:
// a typo must not silently give a team the defaults.
func ParseTeams(text, source string) (map[string]TeamPolicy, error) {
	out := map[string]TeamPolicy{}
	lines := map[string]int{}
	for i, line := range strings.Split(text, "\n") {
		n := i + 1
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		team := f[0]
		if err := tenant.CheckTeam(team); err != nil {
			return nil, fmt.Errorf("%s:%d: teams.name: %w", source, n, err)
		}
		if prev, ok := lines[team]; ok {
			return nil, fmt.Errorf("%s:%d: teams.duplicate: team %s is already on line %d", source, n, team, prev)
		}
		lines[team] = n
		p, err := parseTeamOptions(f[1:])
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", source, n, err)
		}
		out[team] = p
	}
	return out, nil
}

func parseTeamOptions(fields []string) (TeamPolicy, error) {
	var p TeamPolicy
	seen := map[string]bool{}
	for _, field := range fields {
		k, v, ok := strings.Cut(field, "=")
		known := false
		for _, key := range teamKeys {
			known = known || k == key
		}
		if !ok || !known {
			return p, fmt.Errorf("teams.key: %q: want KEY=VALUE with KEY one of %s", field, strings.Join(teamKeys, ", "))
		}
		if seen[k] {
			return p, fmt.Errorf("teams.key: %s= given twice", k)
		}
		seen[k] = true
		switch k {
		case "weight", "max_running", "max_jobs":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 1_000_000_000 {
				return p, fmt.Errorf("teams.value: %s=%q: want a whole number from 1", k, v)
			}
			switch k {
			case "weight":
				p.Weight = n
			case "max_running":
				p.MaxRunning = n
			default:
				p.MaxJobs = n
			}
		default:
			n, err := ParseSize(v)
			if err != nil {
				return p, fmt.Errorf("teams.value: %s=%q: %w", k, v, err)
			}
			switch k {
			case "max_result_bytes":
				p.MaxResultBytes = n
			case "max_artifact_bytes":
				p.MaxArtifactBytes = n
			default:
				p.MaxBundleBytes = n
			}
		}
	}
	return p, nil
}

// ParseSize reads a positive number of bytes with an optional unit: KiB, MiB, GiB, TiB
// (powers of 1024) or KB, MB, GB, TB (powers of 1000).
func ParseSize(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}}
	num, mult := s, int64(1)
	for _, u := range units {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			num, mult = rest, u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 1 || n > (1<<62)/mult {
		return 0, fmt.Errorf("want a positive number of bytes, optionally with a unit (KiB, MiB, GiB, TiB, KB, MB, GB, TB)")
	}
	return n * mult, nil
}

// FormatSize writes n bytes for people: 1.5 GiB, 300 MiB, 12 KiB, 900 B.
func FormatSize(n int64) string {
	switch {
	case n >= 1<<30:
		return strconv.FormatFloat(float64(n)/(1<<30), 'f', 1, 64) + " GiB"
	case n >= 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
	case n >= 1<<10:
		return strconv.FormatFloat(float64(n)/(1<<10), 'f', 1, 64) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " B"
}

// policy is team's policy: its line of the teams file over the defaults.
func (c *Coordinator) policy(team string) TeamPolicy {
	return c.cfg.Teams[tenant.Team(team)].withDefaults(c.cfg.TeamDefaults)
}
