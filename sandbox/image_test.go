package sandbox

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"io"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/client"
	"go.uber.org/zap/zaptest"
)

func TestImageMissingError(t *testing.T) {
	err := error(&ImageMissingError{Image: DefaultImage})
	if want := `sandbox image skillfleet/sandbox:1 is missing: run "skillfleet sandbox build"`; err.Error() != want {
		t.Fatalf("message = %q; want %q", err, want)
	}
}

func TestBaseImage(t *testing.T) {
	got, err := baseImage("../deploy/sandbox/Dockerfile")
	if err != nil || got != "debian:bookworm-slim" {
		t.Fatalf("base of deploy/sandbox/Dockerfile = %q, %v; want debian:bookworm-slim", got, err)
	}
	cases := []struct {
		name, content, want string
	}{
		{"platform flag and stage name", "# c\nFROM --platform=linux/amd64 debian:12 AS base\nFROM scratch\n", "debian:12"},
		{"lower case", "from alpine:3\n", "alpine:3"},
		{"variable", "ARG B=x\nFROM ${B}\n", ""},
		{"no FROM", "RUN true\n", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "Dockerfile")
			if err := os.WriteFile(p, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := baseImage(p)
			if (err != nil) != (tc.want == "") || got != tc.want {
				t.Fatalf("baseImage = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// fakeImages is an ImageClient: images appear when the offline script writes its marker.
type fakeImages struct {
	mu      sync.Mutex
	images  map[string]bool
	marker  string // the script's marker file; when it exists, the target image exists
	target  string
	pullErr error
	build   []jsonstream.Message
	pulls   int
	builds  int
	context map[string]string // files in the last build context
}

func (f *fakeImages) ImageInspect(_ context.Context, image string, _ ...client.ImageInspectOption) (client.ImageInspectResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.images[image] {
		return client.ImageInspectResult{}, nil
	}
	if image == f.target && f.marker != "" {
		if _, err := os.Stat(f.marker); err == nil {
			return client.ImageInspectResult{}, nil
		}
	}
	return client.ImageInspectResult{}, notFound("image")
}

func (f *fakeImages) ImagePull(_ context.Context, ref string, _ client.ImagePullOptions) (client.ImagePullResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pulls++
	if f.pullErr != nil {
		return nil, f.pullErr
	}
	f.images[ref] = true
	return pulled{io.NopCloser(strings.NewReader(""))}, nil
}

// pulled is a finished, successful pull.
type pulled struct{ io.ReadCloser }

func (pulled) JSONMessages(context.Context) iter.Seq2[jsonstream.Message, error] {
	return func(func(jsonstream.Message, error) bool) {}
}

func (pulled) Wait(context.Context) error { return nil }

func (f *fakeImages) ImageBuild(_ context.Context, body io.Reader, o client.ImageBuildOptions) (client.ImageBuildResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.builds++
	f.context = map[string]string{}
	tr := tar.NewReader(body)
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		b, _ := io.ReadAll(tr)
		f.context[h.Name] = string(b)
	}
	var sb strings.Builder
	failed := false
	for _, m := range f.build {
		b, _ := json.Marshal(m)
		sb.Write(b)
		sb.WriteString("\n")
		failed = failed || m.Error != nil
	}
	if !failed {
		f.images[o.Tags[0]] = true
	}
	return client.ImageBuildResult{Body: io.NopCloser(strings.NewReader(sb.String()))}, nil
}

func TestEnsureImage(t *testing.T) {
	dockerfileDir := "../deploy/sandbox"
	cases := []struct {
		name       string
		present    []string
		pullErr    error
		build      []jsonstream.Message
		force      bool
		pull       bool
		script     string // body of the fake offline script; "" = none configured
		noDir      bool
		wantErr    string
		wantScript string // the script's recorded arguments, "" = not run
		wantBuilds int
		wantPulls  int
	}{
		{name: "image present: nothing to do", present: []string{"x/sb:1"}, script: "exit 1", wantBuilds: 0},
		{name: "no registry: pull fails fast, offline script runs", pullErr: errors.New("dial tcp: lookup registry-1.docker.io: no such host"),
			script: "echo \"$@\" > $ARGS; touch $MARKER", wantScript: "x/sb:1", wantPulls: 1},
		{name: "force rebuild offline", present: []string{"x/sb:1"}, pullErr: errors.New("no registry"), force: true,
			script: "echo \"$@\" > $ARGS; touch $MARKER", wantScript: "--force x/sb:1", wantPulls: 1},
		{name: "base present: Dockerfile build", present: []string{"debian:bookworm-slim"},
			build: []jsonstream.Message{{Stream: "Step 1/6 : FROM debian:bookworm-slim\n"}}, script: "exit 1", wantBuilds: 1},
		{name: "base pulled: Dockerfile build", build: []jsonstream.Message{{Stream: "ok\n"}}, script: "exit 1", wantBuilds: 1, wantPulls: 1},
		{name: "Dockerfile build fails: offline fallback", present: []string{"debian:bookworm-slim"},
			build:  []jsonstream.Message{{Error: &jsonstream.Error{Message: "apt-get: network unreachable"}}},
			script: "echo \"$@\" > $ARGS; touch $MARKER", wantScript: "x/sb:1", wantBuilds: 1},
		{name: "offline script fails: its output is in the error", pullErr: errors.New("no registry"),
			script: "echo 'build-offline.sh: must run as root' >&2; exit 1", wantErr: "must run as root", wantPulls: 1},
		{name: "script succeeds but no image", pullErr: errors.New("no registry"), script: "exit 0", wantErr: "is not there", wantPulls: 1},
		{name: "nothing configured", noDir: true, wantErr: "neither a Dockerfile dir nor an offline script"},
		{name: "pull only: the image comes from its registry", pull: true, noDir: true, wantPulls: 1},
		{name: "pull only: no registry", pull: true, noDir: true, pullErr: errors.New("no such host"), wantErr: "pull x/sb:1: no such host", wantPulls: 1},
		{name: "pull fails: Dockerfile build", pull: true, pullErr: errors.New("not found"), present: []string{"debian:bookworm-slim"},
			build: []jsonstream.Message{{Stream: "ok\n"}}, wantBuilds: 1, wantPulls: 1},
		{name: "pull and image present: nothing to do", pull: true, present: []string{"x/sb:1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			marker, args := filepath.Join(dir, "built"), filepath.Join(dir, "args")
			f := &fakeImages{images: map[string]bool{}, marker: marker, target: "x/sb:1", pullErr: tc.pullErr, build: tc.build}
			for _, p := range tc.present {
				f.images[p] = true
			}
			cfg := ImageConfig{Name: "x/sb:1", DockerfileDir: dockerfileDir, Force: tc.force, Pull: tc.pull, PullTimeout: time.Second}
			if tc.noDir {
				cfg.DockerfileDir = ""
			}
			if tc.script != "" {
				cfg.OfflineScript = filepath.Join(dir, "build.sh")
				body := "#!/bin/sh\nARGS=" + args + "\nMARKER=" + marker + "\n" + tc.script + "\n"
				if err := os.WriteFile(cfg.OfflineScript, []byte(body), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			err := EnsureImage(context.Background(), f, cfg, zaptest.NewLogger(t))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("EnsureImage = %v; want an error containing %q", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatalf("EnsureImage: %v", err)
			}
			got, _ := os.ReadFile(args)
			if strings.TrimSpace(string(got)) != tc.wantScript {
				t.Errorf("offline script args = %q; want %q", strings.TrimSpace(string(got)), tc.wantScript)
			}
			if f.builds != tc.wantBuilds || f.pulls != tc.wantPulls {
				t.Errorf("builds %d pulls %d; want %d, %d", f.builds, f.pulls, tc.wantBuilds, tc.wantPulls)
			}
			if f.builds > 0 && !strings.Contains(f.context["Dockerfile"], "FROM debian:bookworm-slim") {
				t.Errorf("build context lacks the Dockerfile: %v", keys(f.context))
			}
		})
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// On the real engine the image built by build-offline.sh is found at once; the script (here
// one that would fail) is not run.
func TestEnsureImageDocker(t *testing.T) {
	c := realDocker(t)
	script := filepath.Join(t.TempDir(), "fail.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := EnsureImage(context.Background(), c, ImageConfig{Name: DefaultImage, DockerfileDir: "../deploy/sandbox", OfflineScript: script}, zaptest.NewLogger(t)); err != nil {
		t.Fatal(err)
	}
}

// Cancelling EnsureImage stops the offline script with SIGTERM, so its trap can clean up.
func TestEnsureImageCancelStopsScript(t *testing.T) {
	dir := t.TempDir()
	term := filepath.Join(dir, "got-term")
	script := filepath.Join(dir, "build.sh")
	body := "#!/bin/bash\ntrap 'touch " + term + "; kill $child; exit 143' TERM\nsleep 60 & child=$!\nwait\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	f := &fakeImages{images: map[string]bool{}, pullErr: errors.New("no registry")}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	err := EnsureImage(ctx, f, ImageConfig{Name: "x/sb:1", OfflineScript: script}, zaptest.NewLogger(t))
	if err == nil {
		t.Fatal("EnsureImage succeeded after cancel")
	}
	if _, statErr := os.Stat(term); statErr != nil {
		t.Fatalf("the script did not get SIGTERM (err %v)", err)
	}
}
