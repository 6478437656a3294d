//go:build helm

package helm

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/skillfleet/skillfleet/internal/testutil"
)

const kubeVersion = "1.30.0"

// helmBin is the helm to test with: $HELM, else helm on PATH.
func helmBin(t *testing.T) string {
	t.Helper()
	if h := os.Getenv("HELM"); h != "" {
		return h
	}
	h, err := exec.LookPath("helm")
	if err != nil {
		t.Fatal("these tests need helm (make check-helm installs it): ", err)
	}
	return h
}

func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(helmBin(t), args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), errors.New(strings.TrimSpace(errb.String()) + ": " + err.Error())
	}
	return out.String(), nil
}

func TestChartLints(t *testing.T) {
	for _, values := range valuesFiles(t) {
		if out, err := helm(t, "lint", "--strict", "--kube-version", kubeVersion, "-f", values, "skillfleet"); err != nil {
			t.Errorf("helm lint with %s: %v\n%s", values, err, out)
		}
	}
}

func valuesFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("testdata/values-*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no values files: %v", err)
	}
	return files
}

// generatedToken is the API token the chart makes when none is given: random, so left out of
// the goldens.
var generatedToken = regexp.MustCompile(`(?m)^(  token: ).+$`)

type manifest struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Spec struct {
		Replicas *int `yaml:"replicas"`
		Strategy struct {
			Type string `yaml:"type"`
		} `yaml:"strategy"`
		Template struct {
			Spec podSpec `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type podSpec struct {
	TerminationGracePeriodSeconds int         `yaml:"terminationGracePeriodSeconds"`
	InitContainers                []container `yaml:"initContainers"`
	Containers                    []container `yaml:"containers"`
	Volumes                       []struct {
		Name     string `yaml:"name"`
		HostPath *struct {
			Path string `yaml:"path"`
		} `yaml:"hostPath"`
	} `yaml:"volumes"`
}

type container struct {
	Name            string   `yaml:"name"`
	Command         []string `yaml:"command"`
	Args            []string `yaml:"args"`
	SecurityContext struct {
		Privileged               bool  `yaml:"privileged"`
		ReadOnlyRootFilesystem   bool  `yaml:"readOnlyRootFilesystem"`
		AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
		Capabilities             struct {
			Drop []string `yaml:"drop"`
		} `yaml:"capabilities"`
	} `yaml:"securityContext"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
}

func (c container) mount(volume string) string {
	for _, m := range c.VolumeMounts {
		if m.Name == volume {
			return m.MountPath
		}
	}
	return ""
}

func (c container) arg(flag string) (string, bool) {
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v, true
		}
	}
	return "", false
}

// daemonFlags returns the flags each daemon's --help lists.
func daemonFlags(t *testing.T) map[string][]string {
	t.Helper()
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "./cmd/coordinator", "./cmd/worker")
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	flag := regexp.MustCompile(`(?m)^\s+(?:-\w, )?(--[a-z0-9-]+)`)
	out := map[string][]string{}
	for _, d := range []string{"coordinator", "worker"} {
		help, err := exec.Command(filepath.Join(dir, d), "--help").CombinedOutput()
		if err != nil {
			t.Fatalf("%s --help: %v\n%s", d, err, help)
		}
		for _, m := range flag.FindAllStringSubmatch(string(help), -1) {
			out[d] = append(out[d], m[1])
		}
	}
	return out
}

// TestChartRenders renders the chart for each values file, compares it with its golden file
// and checks what every rendering must hold.
func TestChartRenders(t *testing.T) {
	flags := daemonFlags(t)
	for _, values := range valuesFiles(t) {
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(values), "values-"), ".yaml")
		t.Run(name, func(t *testing.T) {
			out, err := helm(t, "template", "sf", "skillfleet", "--namespace", "ci", "--kube-version", kubeVersion, "-f", values)
			if err != nil {
				t.Fatal(err)
			}
			out = generatedToken.ReplaceAllString(out, "${1}GENERATED")
			testutil.Golden(t, filepath.Join("testdata", name+".golden.yaml"), []byte(out))

			dec := yaml.NewDecoder(strings.NewReader(out))
			var deployments []manifest
			for {
				var m manifest
				err := dec.Decode(&m)
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatalf("rendered YAML: %v", err)
				}
				if m.Kind == "Deployment" {
					deployments = append(deployments, m)
				}
			}
			if len(deployments) != 2 {
				t.Fatalf("%d Deployments, want the coordinator's and the workers'", len(deployments))
			}
			for _, d := range deployments {
				checkPod(t, d, flags)
			}
		})
	}
}

func checkPod(t *testing.T, d manifest, flags map[string][]string) {
	t.Helper()
	pod := d.Spec.Template.Spec
	volumes := map[string]bool{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = true
	}
	var worker, engine *container
	for _, c := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
		for _, m := range c.VolumeMounts {
			if !volumes[m.Name] {
				t.Errorf("%s/%s mounts volume %q, which the pod does not have", d.Metadata.Name, c.Name, m.Name)
			}
		}
		if c.SecurityContext.Privileged && c.Name != "docker" {
			t.Errorf("%s/%s is privileged; only the Docker-in-Docker sidecar may be", d.Metadata.Name, c.Name)
		}
		if c.Name == "docker" {
			engine = &c
			continue
		}
		sc := c.SecurityContext
		if !sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || !slices.Equal(sc.Capabilities.Drop, []string{"ALL"}) {
			t.Errorf("%s/%s: securityContext %+v, want a read-only root, no escalation, no capabilities", d.Metadata.Name, c.Name, sc)
		}
		if len(c.Command) != 1 {
			t.Fatalf("%s/%s: command %v", d.Metadata.Name, c.Name, c.Command)
		}
		known := flags[c.Command[0]]
		for _, a := range c.Args {
			f, _, _ := strings.Cut(a, "=")
			if !slices.Contains(known, f) {
				t.Errorf("%s/%s: %s has no flag %s", d.Metadata.Name, c.Name, c.Command[0], f)
			}
			// Secrets are files: a flag that takes one inline must never be used.
			if f == "--token" || f == "--nats-token" || f == "--nats-password" {
				t.Errorf("%s/%s passes a secret as an argument: %s", d.Metadata.Name, c.Name, f)
			}
			if strings.HasSuffix(f, "-file") || strings.HasPrefix(f, "--nats-tls-") || f == "--nats-creds" {
				if _, v, _ := strings.Cut(a, "="); !strings.HasPrefix(v, "/etc/skillfleet/") {
					t.Errorf("%s/%s: %s should name a mounted file, not %q", d.Metadata.Name, c.Name, f, v)
				}
			}
		}
		if c.Name == "worker" {
			worker = &c
		}
	}
	switch {
	case strings.HasSuffix(d.Metadata.Name, "-coordinator"):
		if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != "Recreate" {
			t.Errorf("coordinator: replicas %v, strategy %q; want exactly one at a time", d.Spec.Replicas, d.Spec.Strategy.Type)
		}
	case worker == nil:
		t.Fatalf("%s has no worker container", d.Metadata.Name)
	default:
		cache, _ := worker.arg("--cache")
		shared, _ := worker.arg("--shared-dir")
		grace, _ := worker.arg("--drain-grace")
		if g := strings.TrimSuffix(grace, "s"); g == "" || pod.TerminationGracePeriodSeconds <= atoi(t, g) {
			t.Errorf("worker: terminationGracePeriodSeconds %d does not outlast --drain-grace=%s", pod.TerminationGracePeriodSeconds, grace)
		}
		// The engine bind-mounts bundles by the worker's path: it must see the same files there.
		root := worker.mount("cache")
		if engine != nil {
			if root == "" || !strings.HasPrefix(cache, root+"/") || shared != "" {
				t.Fatalf("worker: --cache=%s is not on the cache volume (mounted at %q), or --shared-dir=%q is set for a pod's own engine", cache, root, shared)
			}
			if got := engine.mount("cache"); got != root {
				t.Errorf("the engine mounts the cache at %q, the worker at %q: bundles would not be found", got, root)
			}
		} else {
			// The node's engine, shared with the node's other worker pods: each worker keeps
			// its directory under the node path and prunes those of gone pods.
			if root == "" || shared != root || cache != "" {
				t.Fatalf("host engine: want --shared-dir on the cache volume (mounted at %q) and no --cache; got --shared-dir=%q --cache=%q", root, shared, cache)
			}
			for _, v := range pod.Volumes {
				if v.Name == "cache" && (v.HostPath == nil || v.HostPath.Path != root) {
					t.Errorf("host engine: the cache volume must be the node path %s itself", root)
				}
			}
		}
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n := 0
	for _, r := range s {
		if r < '0' || r > '9' {
			t.Fatalf("not a number: %q", s)
		}
		n = n*10 + int(r-'0')
	}
	return n
}

// TestChartRefusesBadValues: values that cannot work stop the install with the reason.
func TestChartRefusesBadValues(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  []string
		want string
	}{
		{"unknown engine mode", []string{"worker.docker.mode=podman"}, "worker.docker.mode must be dind or host"},
		{"two NATS auth methods", []string{"nats.token.existingSecret=a", "nats.creds.existingSecret=b"}, "not both"},
		{"unknown image-missing", []string{"worker.imageMissing=guess"}, "worker.imageMissing must be fail, pull or build"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"template", "sf", "skillfleet", "--kube-version", kubeVersion}
			for _, s := range tc.set {
				args = append(args, "--set", s)
			}
			_, err := helm(t, args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("helm template: %v; want a refusal saying %q", err, tc.want)
			}
		})
	}
}
