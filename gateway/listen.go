package gateway

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/internal/httpserve"
)

// ListenUnix serves the gateway on dir/gateway.sock until Close and returns the socket's path;
// from then on every session Open makes gets a socket of its own in dir. dir is created if
// needed and made 0711: the sandbox's user (not the worker's) must reach the sockets in it,
// but must not list them, so that a job cannot find another job's socket to crowd. The
// sockets are connectable by any user (0666): a token, not the socket, is the credential.
func (g *Gateway) ListenUnix(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return "", fmt.Errorf("gateway: %w", err)
	}
	if err := os.Chmod(dir, 0o711); err != nil {
		return "", fmt.Errorf("gateway: %w", err)
	}
	p := filepath.Join(dir, SocketName)
	srv, err := g.listen(p, g, 64)
	if err != nil {
		return "", err
	}
	g.mu.Lock()
	g.servers = append(g.servers, srv)
	g.dir = dir
	g.mu.Unlock()
	return p, nil
}

// listen serves h on a new Unix socket at p, with at most maxConns connections.
func (g *Gateway) listen(p string, h http.Handler, maxConns int) (*http.Server, error) {
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("gateway: stale socket: %w", err)
	}
	l, err := listenUnix(p)
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	if err := os.Chmod(p, 0o666); err != nil {
		_ = l.Close()
		return nil, fmt.Errorf("gateway: %w", err)
	}
	// The sandbox is the client here, and it may be hostile: it gets every timeout and a
	// connection cap. Answers may stream for as long as an upstream answer may take.
	hs := httpserve.New(l, h, httpserve.Config{
		ReadHeaderTimeout: 30 * time.Second, ReadTimeout: time.Minute,
		WriteTimeout: 11 * time.Minute, IdleTimeout: 2 * time.Minute,
		MaxConns: maxConns, MaxConnsPerIP: -1, // every peer of a unix socket has the same (no) address
		ErrorLog: zap.NewStdLog(g.log),
	})
	go func() {
		if err := hs.Serve(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			g.log.Error("model gateway stopped serving", zap.String("socket", p), zap.Error(err))
		}
	}()
	return hs.HTTP, nil
}

// maxSocketPath is the longest path a Unix socket can be bound at (sun_path is 108 bytes
// with its terminating NUL on Linux).
const maxSocketPath = 107

// listenUnix binds a Unix socket at p. A path longer than sun_path allows (a deep worker
// directory) is bound through /proc/self/fd/N/NAME, N the directory's descriptor: the socket
// is made in that directory all the same, and connectable by its real path. Such a listener
// does not remove its file when closed (the descriptor's path would be stale by then): the
// caller removes it by its real path.
func listenUnix(p string) (net.Listener, error) {
	if len(p) <= maxSocketPath {
		return net.Listen("unix", p)
	}
	d, err := os.Open(filepath.Dir(p))
	if err != nil {
		return nil, err
	}
	defer func() { _ = d.Close() }()
	l, err := net.Listen("unix", fmt.Sprintf("/proc/self/fd/%d/%s", d.Fd(), filepath.Base(p)))
	if err != nil {
		return nil, err
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	return l, nil
}

// Close stops the listeners and invalidates every open session.
func (g *Gateway) Close() error {
	g.mu.Lock()
	servers := g.servers
	g.servers = nil
	sessions := make([]*Session, 0, len(g.sessions))
	for _, s := range g.sessions {
		sessions = append(sessions, s)
	}
	clear(g.sessions)
	g.mu.Unlock()
	var errs []error
	for _, s := range sessions {
		s.closeSocket()
	}
	for _, s := range servers {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}
