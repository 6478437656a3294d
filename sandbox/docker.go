package sandbox

import (
	"context"
	"fmt"

	"github.com/moby/moby/client"
)

// Docker is the slice of *client.Client the sandbox uses. A counting fake implements it in
// tests; the worker passes a real client from NewDockerClient.
type Docker interface {
	ContainerCreate(ctx context.Context, options client.ContainerCreateOptions) (client.ContainerCreateResult, error)
	ContainerStart(ctx context.Context, containerID string, options client.ContainerStartOptions) (client.ContainerStartResult, error)
	ContainerKill(ctx context.Context, containerID string, options client.ContainerKillOptions) (client.ContainerKillResult, error)
	ContainerRemove(ctx context.Context, containerID string, options client.ContainerRemoveOptions) (client.ContainerRemoveResult, error)
	ContainerList(ctx context.Context, options client.ContainerListOptions) (client.ContainerListResult, error)
	ContainerInspect(ctx context.Context, containerID string, options client.ContainerInspectOptions) (client.ContainerInspectResult, error)
	ExecCreate(ctx context.Context, containerID string, options client.ExecCreateOptions) (client.ExecCreateResult, error)
	ExecAttach(ctx context.Context, execID string, options client.ExecAttachOptions) (client.ExecAttachResult, error)
	ExecInspect(ctx context.Context, execID string, options client.ExecInspectOptions) (client.ExecInspectResult, error)
	ImageInspect(ctx context.Context, image string, options ...client.ImageInspectOption) (client.ImageInspectResult, error)
	Info(ctx context.Context, options client.InfoOptions) (client.SystemInfoResult, error)
}

var _ Docker = (*client.Client)(nil)

// NewDockerClient connects to the engine named by the environment (DOCKER_HOST etc.) and
// negotiates the API version up front, so an engine the client cannot talk to fails here with
// a clear error instead of at the first container.
func NewDockerClient(ctx context.Context) (*client.Client, error) {
	c, err := client.New(client.FromEnv)
	if err != nil {
		return nil, fmt.Errorf("sandbox: docker client: %w", err)
	}
	ping, err := c.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true})
	if err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("sandbox: cannot reach the Docker engine at %s: %w", c.DaemonHost(), err)
	}
	if ping.OSType != "" && ping.OSType != "linux" {
		_ = c.Close()
		return nil, fmt.Errorf("sandbox: the Docker engine runs %s containers; linux is required", ping.OSType)
	}
	return c, nil
}
