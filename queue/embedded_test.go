package queue_test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/queue/queuetest"
)

// TestRestartKeepsJobsAndClientsReconnect restarts the server on the same port and store
// directory under a network client (Connect) and an in-process one (Embedded.Connect): both
// reconnect by themselves, publishing carries on, and nothing stored before is lost.
func TestRestartKeepsJobsAndClientsReconnect(t *testing.T) {
	for _, tc := range []struct {
		name string
		port int
	}{
		{"network client", -1},
		{"in-process client", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := queue.StartEmbedded(queue.EmbeddedConfig{StoreDir: t.TempDir(), Port: tc.port}, testLog(t))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(e.Shutdown)
			reconnected := make(chan struct{}, 1)
			onReconnect := nats.ReconnectHandler(func(*nats.Conn) { reconnected <- struct{}{} })
			var nc *nats.Conn
			if tc.port == 0 {
				nc, err = e.ConnectRaw(onReconnect)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(nc.Close)
			} else {
				if e.ClientURL() == "" {
					t.Fatal("listening server has no client URL")
				}
				nc, err = queue.ConnectRaw(queue.ConnectConfig{URL: e.ClientURL(), Name: "test"}, testLog(t),
					nats.ReconnectWait(50*time.Millisecond), nats.ReconnectJitter(0, 0), onReconnect)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(nc.Close)
			}
			conn, err := queue.ConnOf(nc)
			if err != nil {
				t.Fatal(err)
			}
			ctx := testCtx(t)
			topo, err := queue.Ensure(ctx, conn, queue.DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			for i := range 5 {
				if err := topo.PublishJob(ctx, queue.LaneOnDemand, "run1", fmt.Sprintf("before%d", i), nil); err != nil {
					t.Fatal(err)
				}
			}

			if err := e.Restart(); err != nil {
				t.Fatal(err)
			}
			select {
			case <-reconnected:
			case <-ctx.Done():
				t.Fatal("client did not reconnect")
			}
			if _, err := queue.Ensure(ctx, conn, queue.DefaultConfig()); err != nil {
				t.Fatalf("Ensure after restart: %v", err)
			}
			for i := range 5 {
				if err := topo.PublishJob(ctx, queue.LaneScheduled, "run1", fmt.Sprintf("after%d", i), nil); err != nil {
					t.Fatal(err)
				}
			}
			p, err := topo.NewJobPublisher(queue.DefaultJobPublisherConfig())
			if err != nil {
				t.Fatal(err)
			}
			for i := range 5 {
				if err := p.Publish(ctx, queue.LaneScheduled, "run1", fmt.Sprintf("async%d", i), nil); err != nil {
					t.Fatal(err)
				}
			}
			if err := p.Close(ctx); err != nil {
				t.Fatal(err)
			}
			if got := streamMsgs(t, topo.RawJobs(), ""); got != 15 {
				t.Errorf("jobs stored = %d, want 15", got)
			}
			// The durable consumers survived too.
			got := 0
			for range 15 {
				m, _, err := topo.NextJob(ctx, time.Second)
				if err != nil {
					t.Fatal(err)
				}
				_ = m.Ack()
				got++
			}
			if got != 15 {
				t.Errorf("fetched %d jobs, want 15", got)
			}
		})
	}
}

// TestJobPublisherRidesOutADrop drops every client connection while async publishes are in
// flight: the ones lost in transit are resent under the same message id, so each job is stored
// exactly once.
func TestJobPublisherRidesOutADrop(t *testing.T) {
	e, _, topo := queuetest.Start(t)
	ctx := testCtx(t)
	p, err := topo.NewJobPublisher(queue.DefaultJobPublisherConfig())
	if err != nil {
		t.Fatal(err)
	}
	const jobs = 2000
	for i := range jobs {
		if i == jobs/2 {
			n, err := e.DropClients()
			if err != nil || n == 0 {
				t.Fatalf("DropClients = %d, %v", n, err)
			}
		}
		if err := p.Publish(ctx, queue.LaneOnDemand, "run1", fmt.Sprintf("j%d", i), []byte("job")); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := streamMsgs(t, topo.RawJobs(), ""); got != jobs {
		t.Errorf("jobs stored = %d, want %d", got, jobs)
	}
	st := p.Stats()
	if st.Stored+st.Duplicates != jobs || st.Failed != 0 {
		t.Errorf("stats = %+v", st)
	}
	t.Logf("publisher stats across the drop: %+v; reconnects %d", st, topo.RawJS().Conn().Stats().Reconnects)
}

func TestStartEmbeddedErrors(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, tc := range []struct {
		name string
		cfg  queue.EmbeddedConfig
		want string
	}{
		{"no store dir", queue.EmbeddedConfig{}, "store directory"},
		{"port taken", queue.EmbeddedConfig{StoreDir: t.TempDir(), Port: busy.Addr().(*net.TCPAddr).Port, ReadyTimeout: time.Second}, "not ready"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := queue.StartEmbedded(tc.cfg, testLog(t))
			if err == nil {
				e.Shutdown()
				t.Fatal("StartEmbedded succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want one about %q", err, tc.want)
			}
		})
	}
}

func TestShutdownTwiceIsHarmless(t *testing.T) {
	e, err := queue.StartEmbedded(queue.EmbeddedConfig{StoreDir: t.TempDir()}, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	e.Shutdown()
	e.Shutdown()
	if _, err := e.InProcessConn(); err == nil {
		t.Error("InProcessConn after Shutdown succeeded")
	}
}

func TestConnectConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  queue.ConnectConfig
		want string
	}{
		{"two auth methods", queue.ConnectConfig{Token: "t", User: "u"}, "only one"},
		{"password without user", queue.ConnectConfig{Password: "p"}, "without a user"},
		{"cert without key", queue.ConnectConfig{TLSCert: "c.pem"}, "both or neither"},
		{"wildcard inbox prefix", queue.ConnectConfig{InboxPrefix: "_INBOX.*"}, "inbox prefix"},
		{"inbox prefix ending in a dot", queue.ConnectConfig{InboxPrefix: "_INBOX_w."}, "inbox prefix"},
		{"missing nkey file", queue.ConnectConfig{NKeyFile: "/nonexistent/seed.nk"}, "nkey file"},
		{"nothing listening", queue.ConnectConfig{URL: "nats://127.0.0.1:1"}, "connect to NATS at nats://127.0.0.1:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc, err := queue.Connect(tc.cfg, testLog(t))
			if err == nil {
				nc.Close()
				t.Fatal("Connect succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want one about %q", err, tc.want)
			}
		})
	}
}

// A token on the embedded server is required of network clients, and Connect brings it along.
func TestEmbeddedTokenIsRequired(t *testing.T) {
	e, err := queue.StartEmbedded(queue.EmbeddedConfig{StoreDir: t.TempDir(), Port: -1, Token: "s3cret"}, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Shutdown)
	for _, tc := range []struct {
		name, token string
		ok          bool
	}{
		{"no token", "", false},
		{"wrong token", "guess", false},
		{"the token", "s3cret", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc, err := queue.Connect(queue.ConnectConfig{URL: e.ClientURL(), Token: tc.token}, testLog(t))
			if err == nil {
				nc.Close()
			}
			if tc.ok != (err == nil) {
				t.Fatalf("Connect: %v, want success %v", err, tc.ok)
			}
			if !tc.ok && !strings.Contains(strings.ToLower(err.Error()), "authorization") {
				t.Errorf("error %q does not say authorization failed", err)
			}
		})
	}
	nc, err := e.Connect("test")
	if err != nil {
		t.Fatalf("the server's own Connect: %v", err)
	}
	nc.Close()
}

// TestEmbeddedConfigFile starts the embedded server from a nats-server config file: the users
// and permissions of deploy/nats/permissions.conf hold, and the file's errors name it.
func TestEmbeddedConfigFile(t *testing.T) {
	dir := t.TempDir()
	conf := queuetest.PermissionsConfig(t, "../deploy/nats/permissions.conf", "")
	t.Setenv("SKILLFLEET_COORDINATOR_PASSWORD", "coordinator-password")
	t.Setenv("SKILLFLEET_WORKER_PASSWORD", "worker-password")
	e, err := queue.StartEmbedded(queue.EmbeddedConfig{StoreDir: filepath.Join(dir, "js"), Port: -1, ConfigFile: conf}, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Shutdown)
	if nc, err := queue.Connect(queue.ConnectConfig{URL: e.ClientURL()}, testLog(t)); err == nil {
		nc.Close()
		t.Fatal("a client without a user was let in")
	}
	coord, err := queue.Connect(queue.ConnectConfig{URL: e.ClientURL(), User: "skillfleet-coordinator", Password: "coordinator-password",
		InboxPrefix: "_INBOX_skillfleet_coordinator"}, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(coord.Close)
	if _, err := queue.Ensure(testCtx(t), coord, queue.DefaultConfig()); err != nil {
		t.Fatalf("the coordinator's user cannot create the topology: %v", err)
	}
	worker := queue.ConnectConfig{URL: e.ClientURL(), User: "skillfleet-worker", Password: "worker-password", InboxPrefix: "_INBOX_skillfleet_worker"}
	if err := queuetest.PublishAs(t, worker, "skillfleet.jobs.ondemand.r1", []byte("{}")); err == nil || !strings.Contains(err.Error(), "Permissions Violation") {
		t.Fatalf("the worker's user published a job: %v", err)
	}

	bad := filepath.Join(dir, "bad.conf")
	if err := os.WriteFile(bad, []byte("authorization {\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if e, err := queue.StartEmbedded(queue.EmbeddedConfig{StoreDir: filepath.Join(dir, "js2"), ConfigFile: bad}, testLog(t)); err == nil {
		e.Shutdown()
		t.Fatal("a broken config file was taken")
	} else if !strings.Contains(err.Error(), bad) {
		t.Fatalf("error %q does not name the file", err)
	}
}
