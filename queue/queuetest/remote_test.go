package queuetest_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillfleet/skillfleet/queue"
	"github.com/skillfleet/skillfleet/queue/queuetest"
)

const (
	testUser, testPassword = "tester", "tester-password"
	testStream             = "REMOTE_TEST"
)

// startRestricted starts a nats-server on a loopback port with JetStream, a stream on
// "stored.>" and one user who may publish on "allowed.>", "stored.>" and the JetStream API,
// and subscribe to "allowed.>" and its replies: the shape of deploy/nats/permissions.conf. An
// admin user, allowed everything, creates the stream.
func startRestricted(t *testing.T) queue.ConnectConfig {
	t.Helper()
	srv, err := server.NewServer(&server.Options{
		ServerName: "remote-test", Host: "127.0.0.1", Port: server.RANDOM_PORT,
		JetStream: true, StoreDir: t.TempDir(), NoSigs: true, DisableJetStreamBanner: true,
		Users: []*server.User{{Username: "admin", Password: "admin-password"}, {Username: testUser, Password: testPassword, Permissions: &server.Permissions{
			Publish:   &server.SubjectPermission{Allow: []string{"allowed.>", "stored.>", "$JS.API.>"}},
			Subscribe: &server.SubjectPermission{Allow: []string{"allowed.>", "_INBOX.>"}},
		}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(srv.Shutdown)
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	nc, err := nats.Connect(srv.ClientURL(), nats.UserInfo("admin", "admin-password"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: testStream, Subjects: []string{"stored.>"}, Storage: jetstream.MemoryStorage}); err != nil {
		t.Fatal(err)
	}
	return queue.ConnectConfig{URL: srv.ClientURL(), User: testUser, Password: testPassword}
}

func freeURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return "nats://" + l.Addr().String()
}

func TestJetStreamReady(t *testing.T) {
	user := startRestricted(t)
	wrong := user
	wrong.Password = "not-it"
	for _, tc := range []struct {
		name    string
		cfg     queue.ConnectConfig
		wantErr string
	}{
		{"the user", user, ""},
		{"a wrong password", wrong, "uthorization"},
		{"no server there", queue.ConnectConfig{URL: freeURL(t)}, "connect to"},
		{"settings that cannot connect", queue.ConnectConfig{URL: user.URL, User: testUser, Token: "t"}, "only one of"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := queuetest.JetStreamReady(ctx, tc.cfg)
			checkErr(t, err, tc.wantErr)
		})
	}
}

func TestPublishAndSubscribeAs(t *testing.T) {
	user := startRestricted(t)
	for _, tc := range []struct {
		name    string
		do      func(t *testing.T) error
		wantErr string
	}{
		{"an allowed publish", func(t *testing.T) error { return queuetest.PublishAs(t, user, "allowed.x", nil) }, ""},
		{"a refused publish", func(t *testing.T) error { return queuetest.PublishAs(t, user, "denied.x", nil) },
			`Permissions Violation for Publish to "denied.x"`},
		{"an allowed subscription", func(t *testing.T) error { return queuetest.SubscribeAs(t, user, "allowed.>") }, ""},
		{"a refused subscription", func(t *testing.T) error { return queuetest.SubscribeAs(t, user, "denied.>") },
			`Permissions Violation for Subscription to "denied.>"`},
	} {
		t.Run(tc.name, func(t *testing.T) { checkErr(t, tc.do(t), tc.wantErr) })
	}
}

func TestStoreAs(t *testing.T) {
	user := startRestricted(t)
	for _, tc := range []struct {
		name, subject, wantErr string
	}{
		{"a stream's subject", "stored.result", ""},
		{"no stream's subject", "allowed.x", "no response from stream"},
		{"a refused subject", "denied.x", `Permissions Violation for Publish to "denied.x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkErr(t, queuetest.StoreAs(t, user, tc.subject, []byte("data")), tc.wantErr)
		})
	}
}

func TestStreamPlacement(t *testing.T) {
	user := startRestricted(t)
	p := queuetest.StreamPlacement(t, user, testStream)
	// One server outside any cluster: one replica, no followers, whatever it calls its leader.
	if p.Replicas != 1 || len(p.Followers) != 0 || p.Cluster != "" {
		t.Errorf("placement %+v, want one replica, no followers, no cluster", p)
	}
}

func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("error %v, want none", err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Errorf("error %v, want one containing %q", err, want)
	}
}
