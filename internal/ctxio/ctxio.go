// Package ctxio ends reads when a context is done.
package ctxio

import (
	"context"
	"io"
)

// Reader returns a reader of r that fails with ctx's error once ctx is done, so a copy from a
// stalled source (an upload whose client is gone, a slow store) stops with its caller.
func Reader(ctx context.Context, r io.Reader) io.Reader { return reader{ctx, r} }

type reader struct {
	ctx context.Context
	r   io.Reader
}

func (c reader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
