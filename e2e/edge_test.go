package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/skillfleet/skillfleet/internal/httpserve/httpservetest"
	"github.com/skillfleet/skillfleet/internal/testutil"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/queue"
)

// The edge fleet's tokens: a member of each of two teams.
const (
	edgeTokA = "edge-e2e-alice-teamA-0123456789"
	edgeTokB = "edge-e2e-bob-teamB-0123456789"
)

// edgeFleet is a built coordinator on a nats-server of deploy/nats/permissions.conf, trusting
// an authenticating proxy on 127.0.0.1, and the worker user's credentials, which the test
// uses to play a worker.
type edgeFleet struct {
	api   string
	coord *proc
	// worker logs in as the worker user of permissions.conf.
	worker queue.ConnectConfig
}

func startEdgeFleet(t *testing.T) *edgeFleet {
	t.Helper()
	dir := t.TempDir()
	ns := startPermsNATS(t)
	tokens := writeFile(t, dir, "tokens", "alice "+edgeTokA+" team=teamA\nbob "+edgeTokB+" team=teamB\n")
	httpAddr := testutil.FreeAddr(t)
	f := &edgeFleet{api: "http://" + httpAddr, worker: ns.worker}
	// The connection caps are the defaults (--max-conns, --max-conns-per-ip), as the
	// operator who sets none runs them.
	f.coord = start(t, "coordinator", binary(t, "coordinator"), []string{"SKILLFLEET_NATS_PASSWORD=" + ns.coordinator.Password},
		"--http", httpAddr, "--token-file", tokens, "--data", filepath.Join(dir, "coordinator"), "--agent", "fixture-agent",
		"--nats", ns.url, "--nats-user", "skillfleet-coordinator", "--nats-inbox-prefix", "_INBOX_skillfleet_coordinator",
		"--trusted-proxy", "127.0.0.1/32", "--proxy-user-header", proxyUser, "--proxy-team-header", proxyTeam, "--proxy-role-header", proxyRole)
	waitHTTP(t, f.coord, f.api+"/readyz")
	return f
}

// get sends a GET of path with tok (and headers hdr) from a fresh connection of the local
// address from (nil: any), and returns the status and the length of the answer.
func (f *edgeFleet) get(path, tok string, from net.IP, hdr http.Header) (int, int64, error) {
	d := &net.Dialer{Timeout: 5 * time.Second}
	if from != nil {
		d.LocalAddr = &net.TCPAddr{IP: from}
	}
	c := &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{DisableKeepAlives: true, DialContext: d.DialContext}}
	req, err := http.NewRequest(http.MethodGet, f.api+path, nil)
	if err != nil {
		return 0, 0, err
	}
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, n, err
}

// submit uploads a suite of n prompt cases named name as the holder of tok, and returns the
// run's id.
func (f *edgeFleet) submit(t *testing.T, tok, name string, n int) string {
	t.Helper()
	var cases strings.Builder
	cases.WriteString("cases:\n")
	for i := range n {
		fmt.Fprintf(&cases, "  - {name: c%d, input: hi, assertions: {output_contains: [x]}}\n", i)
	}
	code, body := postBundle(t, f.api+"/v1/runs?name="+name, tok, bundleOf(t, promptSkill(t, name, cases.String())))
	if code != http.StatusCreated {
		t.Fatalf("submit %s: %d %s", name, code, body)
	}
	var st struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(body), &st); err != nil || st.ID == "" {
		t.Fatalf("submit %s: %v %s", name, err, body)
	}
	return st.ID
}

// work plays the worker for n jobs, with the worker user's credentials: each job's result
// carries a trajectory of size bytes once decoded, stored apart as a worker stores a long one.
func (f *edgeFleet) work(t *testing.T, n, size int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	nc, err := queue.Connect(f.worker, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	topo, err := queue.OpenWorker(ctx, nc, queue.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	// A long conversation: the same tool output over and over, which gzip stores small.
	var doc bytes.Buffer
	doc.WriteString(`{"schema_version":"ATIF-v1.7","agent":{"name":"a","version":"1"},"steps":[{"step_id":1,"source":"user","message":"`)
	for doc.Len() < size {
		doc.WriteString("the tool printed the same long line again. ")
	}
	doc.WriteString(`"}]}`)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(doc.Bytes())
	_ = zw.Close()
	for range n {
		d, _, err := topo.NextJob(ctx, 500*time.Millisecond)
		if err != nil {
			t.Fatalf("waiting for a job: %v", err)
		}
		job := &pb.Job{}
		if err := proto.Unmarshal(d.Data(), job); err != nil {
			t.Fatal(err)
		}
		ref, err := topo.PutArtifact(ctx, job.GetRunId(), gz.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		data, err := proto.Marshal(&pb.Result{
			JobId: job.GetId(), RunId: job.GetRunId(), Skill: job.GetSkill(), CaseName: job.GetCaseName(),
			Epoch: job.GetEpoch(), Kind: job.GetKind(), Agent: job.GetAgent(), Attempt: 1,
			Verdict: pb.Verdict_VERDICT_FAILED, Secret: job.GetSecret(),
			Trajectory: &pb.StoredDocument{Artifact: ref.Digest, Size: ref.Size, Encoding: "gzip"},
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := topo.PublishResult(ctx, job.GetRunId(), job.GetResultKey(), job.GetId(), 1, data); err != nil {
			t.Fatal(err)
		}
		if err := d.Ack(); err != nil {
			t.Fatal(err)
		}
	}
}

// waitDone waits for run id to finish, as the holder of tok sees it.
func (f *edgeFleet) waitDone(t *testing.T, id, tok string) {
	t.Helper()
	testutil.Eventually(t, time.Minute, 100*time.Millisecond, func() bool {
		req, _ := http.NewRequest(http.MethodGet, f.api+"/v1/runs/"+id, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var st struct {
			FinishedAt string `json:"finished_at"`
		}
		return json.NewDecoder(resp.Body).Decode(&st) == nil && st.FinishedAt != ""
	}, "run %s did not finish", id)
}

// TestEdge plays issue 30's abusive clients against the built coordinator: a token-file typo,
// a proxy's repeated identity header, 200 readers of a large export that never read it, and a
// slowloris of 1,030 connections from ten addresses.
func TestEdge(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a nats-server and coordinators")
	}
	t.Run("token-file typo", testEdgeTokenFileTypo)
	f := startEdgeFleet(t)
	t.Run("repeated proxy header", func(t *testing.T) { testEdgeProxyHeader(t, f) })
	t.Run("stalled readers of a large export", func(t *testing.T) { testEdgeStalledReaders(t, f) })
	t.Run("slowloris", func(t *testing.T) { testEdgeSlowloris(t, f) })
	if !f.coord.running() {
		t.Fatalf("the coordinator exited with %d", f.coord.code)
	}
}

// testEdgeTokenFileTypo: a token file whose line 2 forgot its token stops the coordinator
// before it serves (exit 2), naming the file, the line and the rule, and not what the line
// held; the viewer token file the same.
func testEdgeTokenFileTypo(t *testing.T) {
	dir := t.TempDir()
	good := writeFile(t, dir, "good", "alice "+edgeTokA+" team=teamA\n")
	typo := writeFile(t, dir, "typo", "alice "+edgeTokA+" team=teamA\nci-x team=platform-engineering\n")
	for _, tc := range []struct {
		name, file string
		args       []string
	}{
		{"--token-file", typo, []string{"--token-file", typo}},
		{"--viewer-token-file", typo, []string{"--token-file", good, "--viewer-token-file", typo}},
	} {
		args := append([]string{"--http", testutil.FreeAddr(t), "--embedded-nats", testutil.FreeAddr(t), "--data", filepath.Join(dir, "data")}, tc.args...)
		c := start(t, "coordinator "+tc.name, binary(t, "coordinator"), nil, args...)
		if code := c.wait(t, time.Minute); code != 2 {
			t.Errorf("%s with a forgotten token: exit %d, want 2\n%s", tc.name, code, c.out.String())
		}
		out := c.out.String()
		if want := tc.file + ":2: error tokens.token-missing"; !strings.Contains(out, want) {
			t.Errorf("%s: the refusal does not say %q:\n%s", tc.name, want, out)
		}
		if strings.Contains(out, "platform-engineering") || strings.Contains(out, edgeTokA) {
			t.Errorf("%s: the refusal shows what the line held:\n%s", tc.name, out)
		}
	}
}

// testEdgeProxyHeader: a request from the trusted proxy whose role header came twice (the
// client's admin first, as a proxy that appends passes it on) is refused by the API and the
// viewer, and logged naming the header without its values.
func testEdgeProxyHeader(t *testing.T, f *edgeFleet) {
	one := http.Header{proxyUser: {"carol"}, proxyTeam: {"teamA"}, proxyRole: {"viewer"}}
	if code, _, err := f.get("/v1/runs", "", nil, one); err != nil || code != http.StatusOK {
		t.Fatalf("the proxy's user with one of each header: %d %v, want 200", code, err)
	}
	for _, roles := range [][]string{{"admin", "viewer"}, {"admin, viewer"}} {
		twice := http.Header{proxyUser: {"carol"}, proxyTeam: {"teamA"}, proxyRole: roles}
		for _, path := range []string{"/v1/runs", "/"} {
			if code, _, err := f.get(path, "", nil, twice); err != nil || code != http.StatusUnauthorized {
				t.Errorf("GET %s with the role header %q: %d %v, want 401", path, roles, code, err)
			}
		}
	}
	testutil.Eventually(t, 10*time.Second, 50*time.Millisecond, func() bool {
		return strings.Contains(f.coord.out.String(), "the proxy's "+proxyRole+" header is present 2 times")
	}, "the coordinator's log does not record the refusal:\n%s", f.coord.out.String())
	for line := range strings.Lines(f.coord.out.String()) {
		if strings.Contains(line, proxyRole) && strings.Contains(line, "admin") && strings.Contains(line, "refused") {
			t.Errorf("the refusal's log line shows the header's values: %s", line)
		}
	}
}

// testEdgeStalledReaders: 200 connections ask for the export of team A's run, whose eight
// results carry trajectories of 4 MiB each (over 32 MiB in all), and never read the answer. The coordinator's resident
// memory stays within 200 MB of what it was idle, and team B is answered throughout.
func testEdgeStalledReaders(t *testing.T, f *edgeFleet) {
	runA := f.submit(t, edgeTokA, "large", 8)
	f.work(t, 8, 4<<20)
	runB := f.submit(t, edgeTokB, "small", 1)
	f.work(t, 1, 1<<10)
	f.waitDone(t, runA, edgeTokA)
	f.waitDone(t, runB, edgeTokB)
	pid := f.coord.cmd.Process.Pid
	idle := procMemory(t, pid, "VmRSS")
	code, size, err := f.get("/v1/runs/"+runA+"/results", edgeTokA, nil, nil)
	if err != nil || code != http.StatusOK || size < 32<<20 {
		t.Fatalf("team A's export: %d, %d bytes, %v; want 200 and over 32 MiB", code, size, err)
	}

	// From two addresses, so that the per-address cap on connections (128) is not what
	// bounds them. The test stops as soon as the bound is broken, rather than let an
	// unbounded coordinator take the machine's memory.
	const readers = 200
	counts := map[int]int{}
	peak := idle
	for i := range readers {
		from := net.IPv4(127, 0, 0, byte(1+i%2*11))
		counts[httpservetest.Stall(t, from, f.api+"/v1/runs/"+runA+"/results", http.Header{"Authorization": {"Bearer " + edgeTokA}})]++
		if peak = max(peak, procMemory(t, pid, "VmRSS")); peak-idle > 200<<20 {
			t.Fatalf("coordinator RSS grew from %d MiB to %d MiB with %d stalled readers (answers %v), want at most 200 MiB more", idle>>20, peak>>20, i+1, counts)
		}
	}
	// While they stall (their slots are held until the write deadline, a minute), memory is
	// sampled, and team B keeps asking.
	for range 30 {
		peak = max(peak, procMemory(t, pid, "VmRSS"))
		for _, path := range []string{"/v1/runs", "/v1/runs/" + runB + "/results"} {
			if code, _, err := f.get(path, edgeTokB, nil, nil); err != nil || code != http.StatusOK {
				t.Fatalf("team B's GET %s during the stall: %d %v, want 200", path, code, err)
			}
		}
		peak = max(peak, procMemory(t, pid, "VmRSS"))
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("%d stalled readers of a %d MiB export (answers %v): coordinator RSS idle %d MiB, peak %d MiB", readers, size>>20, counts, idle>>20, peak>>20)
	if peak-idle > 200<<20 {
		t.Errorf("coordinator RSS grew by %d MiB under %d stalled readers, want at most 200 MiB", (peak-idle)>>20, readers)
	}
	if counts[http.StatusTooManyRequests] == 0 {
		t.Errorf("no stalled reader was refused (answers %v): the readers were not bounded", counts)
	}
}

// testEdgeSlowloris: 1,030 connections from ten addresses trickle their headers, a byte every
// 0.5 s, against the default connection caps; an authenticated client from another address,
// each request on a new connection, is served every time.
func testEdgeSlowloris(t *testing.T, f *edgeFleet) {
	addr := strings.TrimPrefix(f.api, "http://")
	const tricklers, hosts = 1030, 10
	httpservetest.Flood(t, addr, tricklers, httpservetest.Loopback(2, hosts), 0, httpservetest.Trickling(500*time.Millisecond))
	// The requests are spread over 8 s, past the header timeout, so that they meet the flood
	// fresh, aged, and redialling after the coordinator cut it.
	failed := 0
	for i := range 20 {
		if i > 0 {
			time.Sleep(400 * time.Millisecond)
		}
		code, _, err := f.get("/v1/runs", edgeTokA, net.IPv4(127, 0, 0, 1), nil)
		if err != nil || code != http.StatusOK {
			failed++
			t.Errorf("request %d of 20 during the slowloris: %d %v", i+1, code, err)
		}
	}
	t.Logf("%d of 20 authenticated requests failed under %d trickling connections from %d addresses", failed, tricklers, hosts)
}
