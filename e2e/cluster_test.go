package e2e

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/internal/testutil"
	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/queue/queuetest"
)

// natsCluster is three nats-server processes routed into one JetStream cluster.
type natsCluster struct {
	urls  []string
	nodes map[string]*proc // by server name
}

func startNATSCluster(t *testing.T) *natsCluster {
	t.Helper()
	c := &natsCluster{nodes: map[string]*proc{}}
	var clients, routes []string
	for range 3 {
		clients = append(clients, testutil.FreeAddr(t))
		routes = append(routes, "nats-route://"+testutil.FreeAddr(t))
	}
	for i := range 3 {
		dir := t.TempDir()
		name := fmt.Sprintf("n%d", i+1)
		conf := fmt.Sprintf(`listen: %q
server_name: %s
jetstream { store_dir: %q }
cluster {
  name: e2e
  listen: %q
  routes: [%s]
}
`, clients[i], name, filepath.Join(dir, "js"), strings.TrimPrefix(routes[i], "nats-route://"), strings.Join(quoteAll(routes), ", "))
		c.nodes[name] = start(t, "nats-server "+name, binary(t, "nats-server"), nil, "-c", writeFile(t, dir, "nats.conf", conf))
		c.urls = append(c.urls, "nats://"+clients[i])
	}
	// Ready when the cluster has a JetStream meta leader to answer.
	waitJetStream(t, c.client(), 60*time.Second, slices.Collect(maps.Values(c.nodes))...)
	return c
}

// client is how a test logs in to the cluster: any node will do.
func (c *natsCluster) client() queue.ConnectConfig {
	return queue.ConnectConfig{URL: strings.Join(c.urls, ",")}
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// streamLeader names the node that leads a stream now.
func (c *natsCluster) streamLeader(t *testing.T, stream string) string {
	t.Helper()
	p := queuetest.StreamPlacement(t, c.client(), stream)
	if p.Leader == "" || p.Replicas != 3 {
		t.Fatalf("stream %s: placement %+v; want a leader and 3 replicas", stream, p)
	}
	return p.Leader
}

// TestNATSClusterNodeLoss runs the example suite on a three-node JetStream cluster with every
// stream, bucket and object store replicated three times (--replicas 3), and kills the jobs
// stream's leader with SIGKILL in the middle of the run. The daemons fail over to the other
// nodes and the run ends with the same report as without the loss: nothing lost, nothing
// counted twice.
func TestNATSClusterNodeLoss(t *testing.T) {
	cluster := startNATSCluster(t)
	urls := strings.Join(cluster.urls, ",")
	dir := t.TempDir()
	api := testutil.FreeAddr(t)
	tokenFile := writeFile(t, dir, "api-token", "api-e2e-token-0123456789\n")
	coord := start(t, "coordinator", binary(t, "coordinator"), nil, "--http", api, "--token-file", tokenFile,
		"--data", filepath.Join(dir, "coordinator"), "--nats", urls, "--replicas", "3")
	waitHTTP(t, coord, "http://"+api+"/readyz")
	// One slot, so the run lasts long enough to lose a node in its middle.
	w := start(t, "worker", binary(t, "worker"), nil, "--id", fmt.Sprintf("e2e-cluster-%d", time.Now().UnixNano()%1e6),
		"--slots", "1", "--warm-pool", "1", "--metrics", "", "--cache", filepath.Join(dir, "bundles"), "--nats", urls)
	if leader := cluster.streamLeader(t, queue.JobsStream); cluster.nodes[leader] == nil {
		t.Fatalf("jobs stream led by unknown node %q", leader)
	}

	done := submitExamples(t, "http://"+api, tokenFile)
	n := midRun(t, "http://"+api, "api-e2e-token-0123456789")
	killed := cluster.streamLeader(t, queue.JobsStream)
	if err := cluster.nodes[killed].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed %s, the jobs stream's leader, after %d of %d jobs", killed, n, exampleJobs)
	checkExampleReport(t, <-done, "losing "+killed)
	if leader := cluster.streamLeader(t, queue.JobsStream); leader == killed {
		t.Errorf("the jobs stream is still led by the killed node %s", killed)
	}
	if !coord.running() || !w.running() {
		t.Errorf("a daemon died with the node: coordinator running %v, worker running %v", coord.running(), w.running())
	}
}
