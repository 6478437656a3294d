package fleet

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/moby/moby/client"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	sandboxfiles "github.com/skillfleet/skillfleet/deploy/sandbox"
	"github.com/skillfleet/skillfleet/sandbox"
	"github.com/skillfleet/skillfleet/worker"
)

// SandboxConfig is the sandbox runner of a worker or of `skillfleet test`.
type SandboxConfig struct {
	Runner sandbox.Config
	// ImageMissing is what to do when Runner.Image is not on the engine (ImageMissingFail,
	// Pull or Build; empty is Fail): engines that start empty (a Docker-in-Docker sidecar)
	// need one of the others.
	ImageMissing string
	// BuildDir holds the build context of ImageMissingBuild while it builds.
	BuildDir string
}

// Sandboxes is a started sandbox runner and the Docker client it uses.
type Sandboxes struct {
	Runner *sandbox.Runner
	docker *client.Client
}

// StartSandboxes connects to Docker, gets the image as cfg.ImageMissing says and starts the
// runner, which fails closed: a missing image or a required runtime that is absent stops here
// (an image that is missing is a *sandbox.ImageMissingError).
func StartSandboxes(ctx context.Context, cfg SandboxConfig, log *zap.Logger, reg prometheus.Registerer) (s *Sandboxes, err error) {
	docker, err := sandbox.NewDockerClient(ctx)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = docker.Close()
		}
	}()
	if err := ensureImage(ctx, docker, cfg, log); err != nil {
		return nil, err
	}
	runner, err := sandbox.New(cfg.Runner, docker, log.Named("sandbox"), reg)
	if err != nil {
		return nil, err
	}
	if err := runner.Start(ctx); err != nil {
		return nil, err
	}
	return &Sandboxes{Runner: runner, docker: docker}, nil
}

// Close removes the runner's containers (within 30 s) and closes the Docker client.
func (s *Sandboxes) Close(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	err := s.Runner.Close(cctx)
	_ = s.docker.Close()
	return err
}

// ensureImage gets the sandbox image as cfg.ImageMissing says; "fail" leaves it to the
// runner, which refuses to start without it.
func ensureImage(ctx context.Context, docker *client.Client, cfg SandboxConfig, log *zap.Logger) error {
	image := cfg.Runner.Image
	if image == "" {
		image = sandbox.DefaultImage
	}
	ic := sandbox.ImageConfig{Name: image, PullTimeout: 10 * time.Minute}
	switch cfg.ImageMissing {
	case "", ImageMissingFail:
		return nil
	case ImageMissingPull:
		ic.Pull = true
	case ImageMissingBuild:
		// Under the worker's cache, not /tmp: the worker's image has no /tmp.
		if err := os.MkdirAll(cfg.BuildDir, 0o755); err != nil {
			return fmt.Errorf("--cache: %w", err)
		}
		dir, err := os.MkdirTemp(cfg.BuildDir, ".tmp-sandbox-build-") // the cache removes .tmp- leftovers
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		if err := sandboxfiles.WriteTo(dir); err != nil {
			return err
		}
		ic.DockerfileDir = dir
	default:
		return refuse("--image-missing must be fail, pull or build, not %q", cfg.ImageMissing)
	}
	return sandbox.EnsureImage(ctx, docker, ic, log.Named("image"))
}

// Executor runs jobs in these sandboxes, prompt cases with m's agents and judge.
func (s *Sandboxes) Executor(m Models, log *zap.Logger) *worker.SandboxExecutor {
	return worker.NewSandboxExecutor(s.Runner, log.Named("executor")).WithAgents(m.Agents, m.Judge, m.Votes)
}
