package sandbox

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/client"
	"go.uber.org/zap"
)

// ImageMissingError says the sandbox image is not on the engine and how to get it.
type ImageMissingError struct {
	Image string
}

func (e *ImageMissingError) Error() string {
	return fmt.Sprintf("sandbox image %s is missing: run \"skillfleet sandbox build\"", e.Image)
}

// ImageClient is the slice of *client.Client that EnsureImage uses.
type ImageClient interface {
	ImageInspect(ctx context.Context, image string, options ...client.ImageInspectOption) (client.ImageInspectResult, error)
	ImagePull(ctx context.Context, ref string, options client.ImagePullOptions) (client.ImagePullResponse, error)
	ImageBuild(ctx context.Context, buildContext io.Reader, options client.ImageBuildOptions) (client.ImageBuildResult, error)
}

var _ ImageClient = (*client.Client)(nil)

// ImageConfig says which image EnsureImage makes and from what.
type ImageConfig struct {
	Name          string // "" = DefaultImage
	DockerfileDir string // build context with a Dockerfile (deploy/sandbox); "" skips the Dockerfile build
	OfflineScript string // build-offline.sh, for engines without a registry; "" skips it
	Force         bool   // rebuild even when the image exists
	// Pull pulls Name itself when it is missing, before building anything: for an image an
	// operator pushed to a registry the engine can reach.
	Pull        bool
	PullTimeout time.Duration // how long a pull may take before falling back; default 30s
}

// EnsureImage makes sure the sandbox image exists. If it does (and Force is off) it returns at
// once. Else it builds the Dockerfile through the engine when the Dockerfile's base image is
// present or can be pulled — a pull that fails (no registry) fails fast and falls through —
// and otherwise runs the offline script (debootstrap + docker import; needs root).
func EnsureImage(ctx context.Context, c ImageClient, cfg ImageConfig, log *zap.Logger) error {
	if log == nil {
		log = zap.NewNop()
	}
	if cfg.Name == "" {
		cfg.Name = DefaultImage
	}
	if cfg.PullTimeout <= 0 {
		cfg.PullTimeout = 30 * time.Second
	}
	if !cfg.Force {
		_, err := c.ImageInspect(ctx, cfg.Name)
		if err == nil {
			log.Debug("sandbox image present", zap.String("image", cfg.Name))
			return nil
		}
		if !cerrdefs.IsNotFound(err) {
			return fmt.Errorf("sandbox: inspect image %s: %w", cfg.Name, err)
		}
	}
	if cfg.DockerfileDir == "" && cfg.OfflineScript == "" && !cfg.Pull {
		return fmt.Errorf("sandbox: cannot build image %s: neither a Dockerfile dir nor an offline script is configured", cfg.Name)
	}
	var errs []error
	if cfg.Pull && !cfg.Force {
		err := pull(ctx, c, cfg.Name, cfg.PullTimeout, log)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		errs = append(errs, err)
	}
	if cfg.DockerfileDir != "" {
		err := buildDockerfile(ctx, c, cfg, log)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		errs = append(errs, err)
		log.Info("Dockerfile build not possible; trying the offline build", zap.Error(err))
	}
	if cfg.OfflineScript != "" {
		err := runOfflineScript(ctx, cfg, log)
		if err == nil {
			if _, err := c.ImageInspect(ctx, cfg.Name); err != nil {
				return fmt.Errorf("sandbox: the offline build finished but image %s is not there: %w", cfg.Name, err)
			}
			return nil
		}
		errs = append(errs, err)
	}
	return fmt.Errorf("sandbox: cannot get image %s: %w", cfg.Name, errors.Join(errs...))
}

func buildDockerfile(ctx context.Context, c ImageClient, cfg ImageConfig, log *zap.Logger) error {
	dockerfile := filepath.Join(cfg.DockerfileDir, "Dockerfile")
	base, err := baseImage(dockerfile)
	if err != nil {
		return err
	}
	if err := ensureBase(ctx, c, base, cfg.PullTimeout, log); err != nil {
		return err
	}
	buildCtx, err := tarDir(cfg.DockerfileDir)
	if err != nil {
		return err
	}
	log.Info("building sandbox image from Dockerfile", zap.String("image", cfg.Name), zap.String("dir", cfg.DockerfileDir))
	res, err := c.ImageBuild(ctx, buildCtx, client.ImageBuildOptions{
		Tags:        []string{cfg.Name},
		Dockerfile:  "Dockerfile",
		Remove:      true,
		ForceRemove: true,
		NoCache:     cfg.Force,
		Labels:      map[string]string{"org.skillfleet.sandbox.build": "dockerfile"},
	})
	if err != nil {
		return fmt.Errorf("sandbox: build %s: %w", dockerfile, err)
	}
	defer res.Body.Close()
	dec := json.NewDecoder(res.Body)
	for {
		var m jsonstream.Message
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("sandbox: build %s: reading progress: %w", dockerfile, err)
		}
		if m.Error != nil {
			return fmt.Errorf("sandbox: build %s: %s", dockerfile, m.Error.Message)
		}
		if s := strings.TrimSpace(m.Stream); s != "" {
			log.Debug("build", zap.String("out", s))
		}
	}
}

// ensureBase makes the Dockerfile's base image available locally, pulling it within timeout.
func ensureBase(ctx context.Context, c ImageClient, base string, timeout time.Duration, log *zap.Logger) error {
	if _, err := c.ImageInspect(ctx, base); err == nil {
		return nil
	}
	if err := pull(ctx, c, base, timeout, log); err != nil {
		return fmt.Errorf("sandbox: base image %s is not present and cannot be pulled: %w", base, err)
	}
	return nil
}

// pull pulls ref within timeout.
func pull(ctx context.Context, c ImageClient, ref string, timeout time.Duration, log *zap.Logger) error {
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	log.Info("pulling image", zap.String("image", ref))
	resp, err := c.ImagePull(pctx, ref, client.ImagePullOptions{})
	if err == nil {
		err = resp.Wait(pctx)
	}
	if err != nil {
		return fmt.Errorf("sandbox: pull %s: %w", ref, err)
	}
	return nil
}

// baseImage returns the image of the Dockerfile's first FROM (ARG-substituted FROMs are not
// supported: the sandbox Dockerfile does not use them).
func baseImage(dockerfile string) (string, error) {
	f, err := os.Open(dockerfile)
	if err != nil {
		return "", fmt.Errorf("sandbox: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	line := 0
	for sc.Scan() {
		line++
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || !strings.EqualFold(fields[0], "FROM") {
			continue
		}
		for _, f := range fields[1:] {
			if strings.HasPrefix(f, "--") {
				continue // --platform=...
			}
			if strings.Contains(f, "$") {
				return "", fmt.Errorf("sandbox: %s:%d: FROM uses a variable; cannot tell the base image", dockerfile, line)
			}
			return f, nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("sandbox: %s: %w", dockerfile, err)
	}
	return "", fmt.Errorf("sandbox: %s: no FROM line", dockerfile)
}

// tarDir packs a (small) build context.
func tarDir(dir string) (io.Reader, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if !info.Mode().IsRegular() && !info.IsDir() {
			return nil
		}
		hdr, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "", ""
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if info.IsDir() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("sandbox: pack build context %s: %w", dir, err)
	}
	return &buf, nil
}

// runOfflineScript runs build-offline.sh [--force] IMAGE, logging its output and keeping the
// tail for the error.
func runOfflineScript(ctx context.Context, cfg ImageConfig, log *zap.Logger) error {
	args := []string{}
	if cfg.Force {
		args = append(args, "--force")
	}
	args = append(args, cfg.Name)
	log.Info("building sandbox image offline (debootstrap; about a minute)", zap.String("script", cfg.OfflineScript), zap.String("image", cfg.Name))
	cmd := exec.CommandContext(ctx, cfg.OfflineScript, args...)
	out := &tailLog{log: log, max: 20}
	cmd.Stdout, cmd.Stderr = out, out
	// On cancellation ask the script to stop (its trap kills debootstrap and removes the
	// temp dir); SIGKILL would leave both behind. Kill only if it does not stop in time.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("sandbox: %s: %w\n%s", cfg.OfflineScript, err, out.tail())
	}
	return nil
}

// tailLog logs each line and keeps the last max lines.
type tailLog struct {
	mu      sync.Mutex
	log     *zap.Logger
	max     int
	partial []byte
	lines   []string
}

func (t *tailLog) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.partial = append(t.partial, p...)
	for {
		i := bytes.IndexByte(t.partial, '\n')
		if i < 0 {
			break
		}
		line := string(t.partial[:i])
		t.partial = t.partial[i+1:]
		t.log.Info("offline build", zap.String("out", line))
		t.lines = append(t.lines, line)
		if len(t.lines) > t.max {
			t.lines = t.lines[1:]
		}
	}
	return len(p), nil
}

func (t *tailLog) tail() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(append(t.lines, string(t.partial)), "\n")
}
