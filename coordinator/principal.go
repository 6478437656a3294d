package coordinator

import "context"

// principalKey keys the authenticated caller in a request's context.
type principalKey struct{}

// withPrincipal returns ctx carrying the name of the caller the API authenticated: the name of
// the bearer token it presented, or "" for an anonymous caller on a token-less coordinator.
// Per-caller limits (concurrent event streams, jobs per submitter) key on it; it is never the
// token itself, so it can be logged.
func withPrincipal(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, principalKey{}, name)
}

// principalFrom is the caller withPrincipal recorded, or "" when none was.
func principalFrom(ctx context.Context) string {
	name, _ := ctx.Value(principalKey{}).(string)
	return name
}
