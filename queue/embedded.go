package queue

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"go.uber.org/zap"
)

// EmbeddedConfig configures an in-process nats-server with JetStream.
type EmbeddedConfig struct {
	// StoreDir is the JetStream file store; required. What is in it survives Restart.
	StoreDir string
	// Host is the interface to listen on; "" means 127.0.0.1.
	Host string
	// Port is the client port: -1 picks a free one, 0 does not listen at all (clients connect
	// in-process only, through Embedded.Connect).
	Port int
	// ReadyTimeout bounds the wait for the server to accept connections; 0 means 10 s.
	ReadyTimeout time.Duration
	// Token, when set, is required of every client, Connect's own included: a server that
	// listens beyond loopback must not take jobs, results or bundles from anyone who can reach
	// it.
	Token string
	// ConfigFile, when set, is a nats-server configuration file the server starts from: its
	// users and permissions (deploy/nats/permissions.conf), limits and monitoring port. The
	// fields above override what it says of the store, the address and the token; JetStream
	// is on whatever it says.
	ConfigFile string
}

// Embedded is a nats-server running in this process, for local mode and tests.
type Embedded struct {
	cfg EmbeddedConfig
	log *zap.Logger

	mu  sync.Mutex
	srv *server.Server
}

// StartEmbedded starts a nats-server with JetStream on cfg.StoreDir and waits until it accepts
// connections.
func StartEmbedded(cfg EmbeddedConfig, log *zap.Logger) (*Embedded, error) {
	if cfg.StoreDir == "" {
		return nil, errors.New("queue: embedded NATS server needs a store directory")
	}
	if cfg.Host == "" {
		cfg.Host = "127.0.0.1"
	}
	if cfg.ReadyTimeout <= 0 {
		cfg.ReadyTimeout = 10 * time.Second
	}
	e := &Embedded{cfg: cfg, log: log}
	srv, err := e.start()
	if err != nil {
		return nil, err
	}
	if cfg.Port < 0 {
		// Pin the port it got, so that Restart comes back where clients reconnect to.
		e.cfg.Port = srv.Addr().(*net.TCPAddr).Port
	}
	e.srv = srv
	return e, nil
}

func (e *Embedded) start() (*server.Server, error) {
	opts := &server.Options{}
	if e.cfg.ConfigFile != "" {
		var err error
		if opts, err = server.ProcessConfigFile(e.cfg.ConfigFile); err != nil {
			return nil, fmt.Errorf("queue: embedded NATS server config %s: %w", e.cfg.ConfigFile, err)
		}
	}
	if opts.ServerName == "" {
		opts.ServerName = "skillfleet-embedded"
	}
	opts.Host, opts.Port, opts.DontListen = e.cfg.Host, e.cfg.Port, e.cfg.Port == 0
	opts.JetStream, opts.StoreDir = true, e.cfg.StoreDir
	opts.NoSigs = true // the host process owns its signals
	opts.DisableJetStreamBanner = true
	if e.cfg.Token != "" {
		opts.Authorization = e.cfg.Token
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("queue: embedded NATS server: %w", err)
	}
	srv.SetLoggerV2(serverLogger{e.log.Named("nats-server").Sugar()}, false, false, false)
	srv.Start()
	if !srv.ReadyForConnections(e.cfg.ReadyTimeout) {
		srv.Shutdown()
		srv.WaitForShutdown()
		return nil, fmt.Errorf("queue: embedded NATS server (store %s, %s) not ready within %s; see its log",
			e.cfg.StoreDir, e.where(), e.cfg.ReadyTimeout)
	}
	if !srv.JetStreamEnabled() {
		srv.Shutdown()
		srv.WaitForShutdown()
		return nil, fmt.Errorf("queue: embedded NATS server (store %s) started without JetStream; see its log", e.cfg.StoreDir)
	}
	return srv, nil
}

func (e *Embedded) where() string {
	if e.cfg.Port == 0 {
		return "in-process only"
	}
	return "listening on " + net.JoinHostPort(e.cfg.Host, strconv.Itoa(e.cfg.Port))
}

// ClientURL is the URL network clients connect to, or "" when the server does not listen.
func (e *Embedded) ClientURL() string {
	if e.cfg.Port == 0 {
		return ""
	}
	return "nats://" + net.JoinHostPort(e.cfg.Host, strconv.Itoa(e.cfg.Port))
}

// Connect returns a client connection named name in server monitoring: over the network when
// the server listens, in-process otherwise. Either way it reconnects forever (100 ms apart), so
// it survives Restart, and logs like Connect.
func (e *Embedded) Connect(name string) (*Conn, error) {
	nc, err := e.connect(nats.Name(name))
	if err != nil {
		return nil, err
	}
	return newConn(nc)
}

// connect is Connect with the client library's options applied last, for this package's tests.
func (e *Embedded) connect(opts ...nats.Option) (*nats.Conn, error) {
	all := append(clientOptions(e.log),
		nats.Name("skillfleet-local"),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(100*time.Millisecond),
		nats.ReconnectJitter(50*time.Millisecond, 50*time.Millisecond),
	)
	if e.cfg.Token != "" {
		all = append(all, nats.Token(e.cfg.Token))
	}
	url := e.ClientURL()
	if url == "" {
		// The provider is e, not the server, so that a reconnection reaches the server that
		// Restart started.
		all = append(all, nats.InProcessServer(e))
	}
	nc, err := nats.Connect(url, append(all, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("queue: connect to embedded NATS server: %w", err)
	}
	return nc, nil
}

// InProcessConn implements nats.InProcessConnProvider with whichever server is current.
func (e *Embedded) InProcessConn() (net.Conn, error) {
	e.mu.Lock()
	srv := e.srv
	e.mu.Unlock()
	if srv == nil {
		return nil, errors.New("queue: embedded NATS server is not running")
	}
	return srv.InProcessConn()
}

// Restart shuts the server down and starts a new one on the same port and store directory, as
// a crash and restart would (JetStream recovers its file store). Clients from Connect
// reconnect by themselves.
func (e *Embedded) Restart() error {
	e.mu.Lock()
	old := e.srv
	e.srv = nil
	e.mu.Unlock()
	if old != nil {
		old.Shutdown()
		old.WaitForShutdown()
	}
	srv, err := e.start()
	if err != nil {
		return err
	}
	e.mu.Lock()
	e.srv = srv
	e.mu.Unlock()
	return nil
}

// DropClients closes every client connection from the server side, as a network blip would,
// and returns how many it closed. Clients from Connect reconnect by themselves.
func (e *Embedded) DropClients() (int, error) {
	e.mu.Lock()
	srv := e.srv
	e.mu.Unlock()
	if srv == nil {
		return 0, errors.New("queue: embedded NATS server is not running")
	}
	connz, err := srv.Connz(&server.ConnzOptions{Limit: 1 << 20})
	if err != nil {
		return 0, fmt.Errorf("queue: list embedded NATS clients: %w", err)
	}
	n := 0
	for _, c := range connz.Conns {
		if srv.DisconnectClientByID(c.Cid) == nil {
			n++
		}
	}
	return n, nil
}

// DisableJetStream turns JetStream off while clients stay connected, as nats-server does
// itself on a storage failure: every stream, bucket and store then refuses reads and writes.
func (e *Embedded) DisableJetStream() error {
	e.mu.Lock()
	srv := e.srv
	e.mu.Unlock()
	if srv == nil {
		return errors.New("queue: embedded NATS server is not running")
	}
	if err := srv.DisableJetStream(); err != nil {
		return fmt.Errorf("queue: disable JetStream: %w", err)
	}
	return nil
}

// Shutdown stops the server and waits until it has. Close clients first: a client still
// connected starts reconnecting. Calling it twice is harmless.
func (e *Embedded) Shutdown() {
	e.mu.Lock()
	srv := e.srv
	e.srv = nil
	e.mu.Unlock()
	if srv != nil {
		srv.Shutdown()
		srv.WaitForShutdown()
	}
}

// serverLogger routes the server's log through zap. Fatalf is logged as an error rather than
// ending the process: the server's own start-up checks report what it could not do.
type serverLogger struct{ s *zap.SugaredLogger }

func (l serverLogger) Noticef(format string, v ...any) { l.s.Infof(format, v...) }
func (l serverLogger) Warnf(format string, v ...any)   { l.s.Warnf(format, v...) }
func (l serverLogger) Fatalf(format string, v ...any)  { l.s.Errorf(format, v...) }
func (l serverLogger) Errorf(format string, v ...any)  { l.s.Errorf(format, v...) }
func (l serverLogger) Debugf(format string, v ...any)  { l.s.Debugf(format, v...) }
func (l serverLogger) Tracef(format string, v ...any)  { l.s.Debugf(format, v...) }
