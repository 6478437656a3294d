package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/internal/httpserve/httpservetest"
	"github.com/skillfleet/skillfleet/internal/testutil"
	"github.com/skillfleet/skillfleet/skill"
	"github.com/skillfleet/skillfleet/suite"
)

// Bounds the hostile submitter must not push the coordinator past: what "within a few hundred
// MB" means for a coordinator that idles at about 30 MB.
const (
	maxCoordinatorRSS  = 400 << 20
	maxCoordinatorDisk = 64 << 20
)

// TestHostileSubmitter sends a hostile submitter's uploads to a real coordinator process
// (embedded JetStream, a bearer token) and checks that each is refused with a 4xx naming what
// is wrong, that the coordinator's peak memory and its data directory stay bounded throughout,
// and that nothing refused was stored. It logs the figures of each attack (status, time, peak
// RSS) for the record.
func TestHostileSubmitter(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a coordinator process")
	}
	dir := t.TempDir()
	const token = "attacks-api-token"
	tokenFile := writeFile(t, dir, "api-token", token+"\n")
	api := "http://" + testutil.FreeAddr(t)
	data := filepath.Join(dir, "data")
	coord := start(t, "coordinator", binary(t, "coordinator"), nil,
		"--http", strings.TrimPrefix(api, "http://"), "--embedded-nats", testutil.FreeAddr(t),
		"--token-file", tokenFile, "--data", data, "--known-agent", "gpt")
	waitHTTP(t, coord, api+"/readyz")
	pid := coord.cmd.Process.Pid
	t.Logf("idle coordinator: peak RSS %d MiB, data dir %d KiB", peakRSS(t, pid)>>20, dirSize(t, data)>>10)
	diskBefore := dirSize(t, data)

	attacks := []struct {
		name  string
		query string
		body  func(t *testing.T) []byte
		want  []string // substrings of the error body, any case
	}{
		{"alias bomb in a cases file", "", func(t *testing.T) []byte { return bundleOf(t, aliasBomb(t, 200<<10, 300)) },
			[]string{"cases.yaml:"}},
		{"ten million jobs", "", func(t *testing.T) []byte { return bundleOf(t, manyJobs(t, 10_000, 1000)) },
			[]string{"jobs"}},
		{"a 160 KB output_matches pattern", "", func(t *testing.T) []byte { return bundleOf(t, hugePattern(t, 160<<10)) },
			[]string{"cases.yaml:"}},
		{"a deadline of ten years", "deadline=87600h", func(t *testing.T) []byte { return bundleOf(t, copyExamples(t)) },
			[]string{"deadline"}},
		{"an agent nobody configured", "agent=no-such-agent", func(t *testing.T) []byte { return bundleOf(t, copyExamples(t)) },
			[]string{"no-such-agent"}},
		{"an empty body", "", func(*testing.T) []byte { return nil },
			[]string{"empty"}},
		{"a bundle cut at an entry boundary", "", func(t *testing.T) []byte { return cutAtEntry(t, bundleOf(t, copyExamples(t))) },
			[]string{"bundle"}},
		{"a bundle cut inside an entry", "", func(t *testing.T) []byte { b := bundleOf(t, copyExamples(t)); return b[:len(b)/2+7] },
			[]string{"bundle"}},
		{"25,000 empty files", "", func(t *testing.T) []byte { return manyEntries(t, 25_000) },
			[]string{"entries"}},
	}
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			body := a.body(t)
			began := time.Now()
			code, msg := postBundle(t, api+"/v1/runs?"+a.query, token, body)
			took := time.Since(began)
			rss := peakRSS(t, pid)
			t.Logf("%d KiB upload: HTTP %d in %s; coordinator peak RSS so far %d MiB; %s", len(body)>>10, code, took.Round(time.Millisecond), rss>>20, firstLine(msg))
			if code < 400 || code >= 500 {
				t.Errorf("HTTP %d, want a 4xx refusal; body:\n%s", code, msg)
			}
			for _, w := range a.want {
				if !strings.Contains(strings.ToLower(msg), strings.ToLower(w)) {
					t.Errorf("error body does not mention %q:\n%s", w, msg)
				}
			}
			if strings.Contains(msg, data) || strings.Contains(msg, os.TempDir()+"/") {
				t.Errorf("error body shows a server path:\n%s", msg)
			}
			if rss > maxCoordinatorRSS {
				t.Errorf("coordinator peak RSS %d MiB, want at most %d MiB", rss>>20, maxCoordinatorRSS>>20)
			}
		})
	}
	if grown := dirSize(t, data) - diskBefore; grown > maxCoordinatorDisk {
		t.Errorf("the refused uploads left %d MiB in the coordinator's data directory, want at most %d MiB", grown>>20, maxCoordinatorDisk>>20)
	} else {
		t.Logf("data directory grew by %d KiB over the refused uploads", grown>>10)
	}
	if !coord.running() {
		t.Fatalf("coordinator exited with %d", coord.code)
	}
}

// TestConnectionFlood holds more silent connections open against a real coordinator than it
// has file descriptors, and checks that a client at another address is still served, first
// time, and the store still takes writes. The coordinator runs under prlimit with 1,024
// descriptors, so the flood that took 20,000 connections on the machine takes 1,500
// here. The flood comes from 127.0.0.1, the client from 127.0.0.2: the per-address cap keeps
// one host's flood to its share. A client at the flooding address itself is served only as fast
// as it sends its request, before the redialling flood makes its connection the oldest idle one;
// internal/httpserve tests that case with a flood that holds still.
func TestConnectionFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a coordinator process")
	}
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Fatal("prlimit (util-linux) is needed to give the coordinator a small descriptor limit")
	}
	dir := t.TempDir()
	const token = "flood-api-token-0123456789"
	tokenFile := writeFile(t, dir, "api-token", token+"\n")
	addr := testutil.FreeAddr(t)
	api := "http://" + addr
	coord := start(t, "coordinator", prlimit, nil, "--nofile=1024:1024", binary(t, "coordinator"),
		"--http", addr, "--embedded-nats", testutil.FreeAddr(t), "--token-file", tokenFile, "--data", filepath.Join(dir, "data"))
	waitHTTP(t, coord, api+"/readyz")

	// Each silent connection is redialled 50 ms after the server drops it, as an attacker
	// would: a header timeout alone only makes the flood breathe.
	const silent = 1500
	httpservetest.Flood(t, addr, silent, httpservetest.Loopback(1, 1), 50*time.Millisecond, httpservetest.Silent)
	clientDialer := &net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: clientDialer.DialContext}}
	do := func(method, path string, body []byte) (int, time.Duration) {
		t.Helper()
		began := time.Now()
		req, _ := http.NewRequest(method, api+path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/x-tar")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s during the flood failed after %s: %v", method, path, time.Since(began).Round(time.Millisecond), err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode, time.Since(began)
	}
	code, took := do(http.MethodGet, "/v1/runs", nil)
	t.Logf("%d silent connections kept open: authenticated GET /v1/runs: HTTP %d in %s", silent, code, took.Round(time.Millisecond))
	if code != http.StatusOK {
		t.Fatalf("HTTP %d during the flood, want 200", code)
	}
	// A submission writes the bundle, the run record and the jobs: the store must take them.
	code, took = do(http.MethodPost, "/v1/runs?skill=env-selector&case=selects-dev", bundleOf(t, copyExamples(t)))
	t.Logf("submission during the flood: HTTP %d in %s", code, took.Round(time.Millisecond))
	if code != http.StatusCreated {
		t.Fatalf("submission during the flood: HTTP %d, want 201", code)
	}
	if code, _ = do(http.MethodGet, "/readyz", nil); code != http.StatusOK {
		t.Fatalf("/readyz answered %d during the flood", code)
	}
}

// TestTokenlessCoordinator checks what a coordinator without a bearer token serves: loopback
// Hosts only, no browser (Origin) requests, uploads only as tar.
func TestTokenlessCoordinator(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a coordinator process")
	}
	dir := t.TempDir()
	addr := testutil.FreeAddr(t)
	api := "http://" + addr
	coord := start(t, "coordinator", binary(t, "coordinator"), nil,
		"--http", addr, "--embedded-nats", testutil.FreeAddr(t), "--data", filepath.Join(dir, "data"))
	waitHTTP(t, coord, api+"/readyz")
	bundle := bundleOf(t, copyExamples(t))
	tests := []struct {
		name    string
		header  map[string]string
		ctype   string
		refused bool
	}{
		{"a cross-origin browser form post", map[string]string{"Origin": "https://evil.example"}, "text/plain", true},
		{"a browser post with the tar type", map[string]string{"Origin": "https://evil.example"}, "application/x-tar", true},
		{"a rebinding DNS name as Host", map[string]string{"Host": "evil.example:80"}, "application/x-tar", true},
		{"not a tar content type", nil, "text/plain", true},
		{"what skillfleet submit sends", nil, "application/x-tar", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, api+"/v1/runs?skill=env-selector&case=selects-dev", bytes.NewReader(bundle))
			req.Header.Set("Content-Type", tc.ctype)
			for k, v := range tc.header {
				if k == "Host" {
					req.Host = v
				} else {
					req.Header.Set(k, v)
				}
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			msg, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if tc.refused && resp.StatusCode < 400 {
				t.Errorf("HTTP %d, want a refusal; body: %s", resp.StatusCode, msg)
			}
			if !tc.refused && resp.StatusCode >= 300 {
				t.Errorf("HTTP %d, want accepted; body: %s", resp.StatusCode, msg)
			}
		})
	}

	empty := writeFile(t, dir, "empty-token", "\n")
	c := start(t, "coordinator-empty-token", binary(t, "coordinator"), nil,
		"--http", testutil.FreeAddr(t), "--embedded-nats", testutil.FreeAddr(t), "--token-file", empty, "--data", filepath.Join(dir, "data2"))
	if code := c.wait(t, 30*time.Second); code != 2 {
		t.Errorf("an empty token file: exit %d, want 2 (a usage error)\n%s", code, c.out.String())
	}
}

// postBundle uploads body as `skillfleet submit` does and returns the status and body.
func postBundle(t *testing.T, url, token string, body []byte) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/x-tar")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("upload: %v", err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, string(msg)
}

// bundleOf packs the skills under root as `skillfleet submit` would, without reading their
// case files: the coordinator is the one under test.
func bundleOf(t *testing.T, root string) []byte {
	t.Helper()
	cat, ds := skill.Discover([]string{root}, skill.Options{})
	if ds.HasErrors() {
		t.Fatalf("test suite does not discover: %v", ds)
	}
	g, _ := skill.Resolve(cat, skill.Options{})
	var b bytes.Buffer
	if _, err := suite.WriteBundle(&b, g, cat.Skills()); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// promptSkill writes a skill whose RFC cases file is cases, and returns its root.
func promptSkill(t *testing.T, name, cases string) string {
	t.Helper()
	root := t.TempDir()
	d := filepath.Join(root, name)
	if err := os.MkdirAll(filepath.Join(d, "test"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, d, "SKILL.md", fmt.Sprintf("---\nname: %s\ndescription: A hostile suite. Use when testing the coordinator.\ntest:\n  cases: test/cases.yaml\n---\n# %s\n", name, name))
	writeFile(t, filepath.Join(d, "test"), "cases.yaml", cases)
	return root
}

// aliasBomb is one anchored string of size bytes referenced aliases times.
func aliasBomb(t *testing.T, size, aliases int) string {
	var b strings.Builder
	b.WriteString("cases:\n  - name: bomb\n    input: &big \"" + strings.Repeat("x", size) + "\"\n    assertions:\n      output_contains:\n")
	for range aliases {
		b.WriteString("        - *big\n")
	}
	return promptSkill(t, "alias-bomb", b.String())
}

// manyJobs is cases prompt cases of runs epochs each.
func manyJobs(t *testing.T, cases, runs int) string {
	var b strings.Builder
	b.WriteString("cases:\n")
	for i := range cases {
		fmt.Fprintf(&b, "  - {name: c%d, input: hi, runs: %d, assertions: {output_contains: [x]}}\n", i, runs)
	}
	return promptSkill(t, "many-jobs", b.String())
}

// hugePattern is one output_matches pattern of about size bytes.
func hugePattern(t *testing.T, size int) string {
	p := strings.Repeat("(a|b)*c", size/7)
	return promptSkill(t, "huge-pattern", "cases:\n  - name: slow\n    input: hi\n    assertions:\n      output_matches:\n        - '"+p+"'\n")
}

// copyExamples copies the example suite, so that every attack uploads its own bundle.
func copyExamples(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS(examples)); err != nil {
		t.Fatal(err)
	}
	return root
}

// cutAtEntry keeps the first half of a bundle's entries and ends the archive properly there:
// a well-formed, smaller tar, as a connection cut at an entry boundary delivers it.
func cutAtEntry(t *testing.T, bundle []byte) []byte {
	t.Helper()
	var hdrs []*tar.Header
	var bodies [][]byte
	tr := tar.NewReader(bytes.NewReader(bundle))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		hdrs, bodies = append(hdrs, h), append(bodies, b)
	}
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	for i := range len(hdrs) / 2 {
		if err := tw.WriteHeader(hdrs[i]); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(bodies[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// manyEntries is a tar of n empty files.
func manyEntries(t *testing.T, n int) []byte {
	t.Helper()
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	for i := range n {
		if err := tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("s/f%06d", i), Mode: 0o644, Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// peakRSS is a process's high-water mark of resident memory (VmHWM), in bytes.
func peakRSS(t *testing.T, pid int) int64 { return procMemory(t, pid, "VmHWM") }

// procMemory is one of the memory figures of /proc/PID/status (VmHWM, VmRSS), in bytes.
func procMemory(t *testing.T, pid int, field string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("%s: %v", field, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc status", field)
	return 0
}

// dirSize is the bytes of the regular files under dir.
func dirSize(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			n += info.Size()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	if len(line) > 160 {
		line = line[:160] + "…"
	}
	return line
}
