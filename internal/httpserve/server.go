// Package httpserve builds the hardened HTTP servers of every skillfleet process: the
// coordinator's API, its metrics listener, a worker's metrics server and the model gateway's
// socket a sandbox reaches. Each gets every timeout, a header size cap and a connection cap, so
// that silent or slow clients cannot hold file descriptors until the process starves.
package httpserve

import (
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"time"
)

// Config is one server's limits; zero fields get the defaults of Defaults.
type Config struct {
	// ReadHeaderTimeout bounds a request's header phase: a new connection's first request must
	// be in whole this long after the accept, and a kept-alive connection's next one this long
	// after its first byte. It is what closes silent and trickling connections; the connection
	// caps evict the ones in it longest first.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request. Handlers that take long bodies extend their
	// own deadline with http.ResponseController.
	ReadTimeout time.Duration
	// WriteTimeout bounds writing a response. Long streams (server-sent events) set a write
	// deadline per write instead.
	WriteTimeout time.Duration
	// IdleTimeout closes a kept-alive connection that sends no next request.
	IdleTimeout time.Duration
	// MaxHeaderBytes caps a request's headers.
	MaxHeaderBytes int
	// MaxConns caps the connections open at once. Over it, a connection that is not serving a
	// request is closed to make room: first the one that has been sending its headers longest
	// (over a second: a trickle, or silence), then a new one that has sent nothing, then the
	// longest-idle kept-alive one, and last a request arriving now. When every connection is
	// serving, the new one is closed at once. It never queues: a queued connection holds a
	// descriptor and the client waits without an answer.
	MaxConns int
	// MaxConnsPerIP caps one remote address's connections, evicting the same way among that
	// address's connections, so one host's flood cannot take the whole MaxConns. Negative
	// disables it (unix sockets).
	MaxConnsPerIP int
	// ErrorLog gets the server's own errors (nil: the standard logger).
	ErrorLog *log.Logger
}

// Defaults are the limits of an API server: a client gets 5 s to send its headers, 1 min
// for a request and for a response, and 2 min of idle keep-alive. The connection caps are the
// coordinator's defaults (--max-conns, --max-conns-per-ip).
var Defaults = Config{
	ReadHeaderTimeout: 5 * time.Second,
	ReadTimeout:       time.Minute,
	WriteTimeout:      time.Minute,
	IdleTimeout:       2 * time.Minute,
	MaxHeaderBytes:    64 << 10,
	MaxConns:          1024,
	MaxConnsPerIP:     128,
}

// withDefaults fills the zero fields from Defaults.
func (c Config) withDefaults() Config {
	d := Defaults
	if c.ReadHeaderTimeout <= 0 {
		c.ReadHeaderTimeout = d.ReadHeaderTimeout
	}
	if c.ReadTimeout <= 0 {
		c.ReadTimeout = d.ReadTimeout
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = d.WriteTimeout
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = d.IdleTimeout
	}
	if c.MaxHeaderBytes <= 0 {
		c.MaxHeaderBytes = d.MaxHeaderBytes
	}
	if c.MaxConns <= 0 {
		c.MaxConns = d.MaxConns
	}
	if c.MaxConnsPerIP == 0 {
		c.MaxConnsPerIP = d.MaxConnsPerIP
	}
	return c
}

// Server is a hardened http.Server with its capped listener.
type Server struct {
	// HTTP is the server; Shutdown and Close it as usual.
	HTTP     *http.Server
	listener net.Listener
}

// Listen opens network/addr ("tcp" or "unix") and builds a hardened server for h on it.
func Listen(network, addr string, h http.Handler, cfg Config) (*Server, error) {
	l, err := net.Listen(network, addr)
	if err != nil {
		return nil, fmt.Errorf("httpserve: %w", err)
	}
	return New(l, h, cfg), nil
}

// New builds a hardened server for h on l; it takes l over.
func New(l net.Listener, h http.Handler, cfg Config) *Server {
	cfg = cfg.withDefaults()
	cl := newCapListener(l, cfg.MaxConns, cfg.MaxConnsPerIP, cfg.ReadHeaderTimeout)
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		ReadTimeout:       cfg.ReadTimeout,
		WriteTimeout:      cfg.WriteTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    cfg.MaxHeaderBytes,
		ErrorLog:          cfg.ErrorLog,
		ConnState:         cl.setState,
	}
	return &Server{HTTP: srv, listener: cl}
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.listener.Addr() }

// Serve serves until Shutdown or Close; it returns nil after those, unlike http.Server.Serve.
func (s *Server) Serve() error {
	if err := s.HTTP.Serve(s.listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("httpserve: %w", err)
	}
	return nil
}

// Conns is the number of connections the server holds open now.
func (s *Server) Conns() int { return s.listener.(*capListener).open() }
