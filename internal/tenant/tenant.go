// Package tenant is who a caller is on a fleet many teams share: a principal (the name of its
// token or proxy user), its team and its role, and the two questions every API route and
// viewer page asks of it — may it read a team's objects, may it change them.
//
// A team's objects are its runs, pushed suites, schedules, history rows, flaky labels and
// reuse sources. Another team's object is answered as if it did not exist (404): its
// existence is not disclosed. A viewer's change is refused (403).
package tenant

import (
	"context"
	"fmt"
	"regexp"
)

// DefaultTeam is the team of a token with no team= and of every object made before teams:
// a one-team fleet configured before them keeps working unchanged.
const DefaultTeam = "default"

// Role is what a principal may do within its team (or, for an admin, everywhere).
type Role int

// The roles, least to most.
const (
	// Viewer reads its team's objects and changes nothing.
	Viewer Role = iota + 1
	// Member submits, pushes, schedules, reads and cancels within its team.
	Member
	// Admin does everything, in every team.
	Admin
)

// String is the role as token files and logs write it.
func (r Role) String() string {
	switch r {
	case Viewer:
		return "viewer"
	case Member:
		return "member"
	case Admin:
		return "admin"
	}
	return "none"
}

// ParseRole reads a role as token files and proxy headers write it.
func ParseRole(s string) (Role, error) {
	switch s {
	case "viewer":
		return Viewer, nil
	case "member":
		return Member, nil
	case "admin":
		return Admin, nil
	}
	return 0, fmt.Errorf("role %q: want admin, member or viewer", s)
}

var teamPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)

// CheckTeam refuses a team name that is not 1-64 characters of [A-Za-z0-9_-] starting with a
// letter or digit: team names become parts of store keys and URLs, and must not hold the
// separators those use.
func CheckTeam(team string) error {
	if !teamPattern.MatchString(team) {
		return fmt.Errorf("team %q: want 1-64 characters of [A-Za-z0-9_-], starting with a letter or digit", team)
	}
	return nil
}

// Team is team with "" read as DefaultTeam: objects stored before teams name none.
func Team(team string) string {
	if team == "" {
		return DefaultTeam
	}
	return team
}

// Principal is an authenticated caller. Its Name is the token's or the proxy user's name,
// never a secret, so it can be logged and recorded.
type Principal struct {
	Name string
	Team string
	Role Role
}

// Anonymous is the caller of a coordinator with no token: it serves loopback, non-browser
// callers only, who are the machine's own user and may do everything.
var Anonymous = Principal{Team: DefaultTeam, Role: Admin}

// CanRead reports whether p may read an object of team.
func (p Principal) CanRead(team string) bool {
	return p.Role == Admin || (p.Role >= Viewer && Team(p.Team) == Team(team))
}

// CanChange reports whether p may change an object of team, or make one in it.
func (p Principal) CanChange(team string) bool {
	return p.CanRead(team) && p.Role >= Member
}

// Who is p as logs and error messages name it.
func (p Principal) Who() string {
	if p.Name == "" {
		return "the anonymous caller"
	}
	return fmt.Sprintf("%s (team %s, %s)", p.Name, Team(p.Team), p.Role)
}

// Share is whose share of a per-caller cap p's requests take (its team and name): names are
// unique among tokens, not between a token and a proxy's user of another team.
func (p Principal) Share() string { return Team(p.Team) + "/" + p.Name }

type principalKey struct{}

// With returns ctx carrying p.
func With(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// From returns the principal With recorded in ctx. A context without one is the process's
// own call (a local run, the scheduler firing a schedule as its creator's, a test): ok is
// false, and Of admits it everywhere. The API and the viewer attach a principal to every
// request they serve.
func From(ctx context.Context) (p Principal, ok bool) {
	p, ok = ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// Of is the principal of ctx, Anonymous (every team, every change) when it carries none.
func Of(ctx context.Context) Principal {
	if p, ok := From(ctx); ok {
		return p
	}
	return Anonymous
}
