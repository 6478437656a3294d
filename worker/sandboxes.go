package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/skillfleet/skillfleet/sandbox"
)

// Sandbox is a job's container as the executor uses it: a place to run commands. Tests give
// the executor fakes, so every verdict rule is checked without Docker.
type Sandbox interface {
	Exec(ctx context.Context, req sandbox.ExecRequest) (sandbox.ExecResult, error)
	// StartLatency is what the job paid to get a running sandbox.
	StartLatency() time.Duration
}

// Sandboxes hands out and takes back job containers.
type Sandboxes interface {
	Acquire(ctx context.Context, spec sandbox.Spec) (Sandbox, error)
	Release(ctx context.Context, s Sandbox) error
}

// Pool is a pool of Docker sandboxes, as sandbox.Runner is one.
type Pool interface {
	Acquire(ctx context.Context, spec sandbox.Spec) (*sandbox.Sandbox, error)
	Release(ctx context.Context, s *sandbox.Sandbox) error
}

// Containers adapts a pool of Docker sandboxes to Sandboxes.
func Containers(p Pool) Sandboxes { return containers{p} }

type containers struct{ pool Pool }

func (c containers) Acquire(ctx context.Context, spec sandbox.Spec) (Sandbox, error) {
	sb, err := c.pool.Acquire(ctx, spec)
	if err != nil {
		return nil, err
	}
	return sb, nil
}

func (c containers) Release(ctx context.Context, s Sandbox) error {
	sb, ok := s.(*sandbox.Sandbox)
	if !ok {
		return fmt.Errorf("release: %T is not a sandbox of this pool", s)
	}
	return c.pool.Release(ctx, sb)
}
