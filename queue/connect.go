package queue

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/queue/internal/natsopts"
)

// ConnectConfig says where a NATS server is and how to authenticate. At most one of CredsFile,
// NKeyFile, Token and User may be set.
type ConnectConfig struct {
	// URL is one server URL or a comma-separated list; "" means nats://127.0.0.1:4222.
	URL string
	// Name identifies the client in server monitoring (e.g. "skillfleet-worker-<host>").
	Name string

	CredsFile string
	NKeyFile  string
	Token     string
	User      string
	Password  string

	// TLSCA is a PEM file of CAs to verify the server with; TLSCert and TLSKey a client
	// certificate, set together.
	TLSCA   string
	TLSCert string
	TLSKey  string

	// InboxPrefix, when set, replaces "_INBOX" in the subjects replies come back on, so that
	// NATS permissions can let each role subscribe to its own replies only.
	InboxPrefix string
}

// Connect connects to NATS for a long-running process: it reconnects forever (2 s apart with up
// to 1 s of jitter, so a restarted server is not hit by the whole fleet at once, and also after
// authorisation errors, so rotated credentials are picked up), pings every 20 s so that a dead
// peer is noticed within a minute, and logs disconnections, reconnections, asynchronous errors
// and the final close through log.
func Connect(cfg ConnectConfig, log *zap.Logger) (*Conn, error) {
	nc, err := connect(cfg, log)
	if err != nil {
		return nil, err
	}
	return newConn(nc)
}

// connect is Connect with the client library's options applied last, for this package's tests.
func connect(cfg ConnectConfig, log *zap.Logger, opts ...nats.Option) (*nats.Conn, error) {
	own, err := cfg.options()
	if err != nil {
		return nil, err
	}
	url := cfg.URL
	if url == "" {
		url = nats.DefaultURL
	}
	all := append(own, clientOptions(log)...)
	all = append(all,
		nats.MaxReconnects(-1),
		nats.ReconnectWait(2*time.Second),
		nats.ReconnectJitter(time.Second, 2*time.Second),
		nats.IgnoreAuthErrorAbort(),
		nats.PingInterval(20*time.Second),
		nats.MaxPingsOutstanding(3),
	)
	nc, err := nats.Connect(url, append(all, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("queue: connect to NATS at %s: %w", url, err)
	}
	return nc, nil
}

// RetryConfig paces ConnectRetry's first connection attempts.
type RetryConfig struct {
	// First is the pause after the first failure; it doubles up to Max. Zero means 1 s and 30 s.
	First, Max time.Duration
}

// ConnectRetry is Connect for a daemon that may start before its NATS server is reachable (a
// pod scheduled before the server's, a server being restarted): each failed first connection
// is logged and tried again after a pause that doubles up to cfg.Max, until it succeeds or ctx
// ends (SIGTERM). Settings that can never work (ConnectConfig.Validate) fail at once. Once
// connected, the connection reconnects by itself, as Connect says.
func ConnectRetry(ctx context.Context, cfg ConnectConfig, retry RetryConfig, log *zap.Logger) (*Conn, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if retry.First <= 0 {
		retry.First = time.Second
	}
	if retry.Max <= 0 {
		retry.Max = 30 * time.Second
	}
	wait := retry.First
	for attempt := 1; ; attempt++ {
		c, err := Connect(cfg, log)
		if err == nil {
			if attempt > 1 {
				log.Info("connected to NATS", zap.Int("attempts", attempt))
			}
			return c, nil
		}
		if Refused(err) {
			// The server is there and says no: waiting will not change its mind.
			return nil, err
		}
		log.Warn("cannot connect to NATS; retrying", zap.Error(err), zap.Int("attempt", attempt), zap.Duration("retry_in", wait))
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%w (gave up after %d attempts: %w)", err, attempt, ctx.Err())
		}
		wait = min(2*wait, retry.Max)
	}
}

// Refused reports whether a connection failed because a reachable server refused it (bad
// credentials, a TLS handshake that failed) rather than because none could be reached.
func Refused(err error) bool {
	if errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) || errors.Is(err, nats.ErrAuthRevoked) ||
		errors.Is(err, nats.ErrAccountAuthExpired) {
		return true
	}
	var unknownCA x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	var hostname x509.HostnameError
	var verify *tls.CertificateVerificationError
	var alert tls.AlertError
	if errors.As(err, &unknownCA) || errors.As(err, &invalid) || errors.As(err, &hostname) || errors.As(err, &verify) || errors.As(err, &alert) {
		return true
	}
	// nats.go does not always wrap what the server or the TLS layer said.
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "authorization violation") || strings.Contains(msg, "tls:") || strings.Contains(msg, "x509:")
}

// Validate reports a combination of settings that can never connect, before any connection
// is tried: the daemons turn it into a usage error.
func (cfg ConnectConfig) Validate() error {
	methods := 0
	for _, set := range []bool{cfg.CredsFile != "", cfg.NKeyFile != "", cfg.Token != "", cfg.User != ""} {
		if set {
			methods++
		}
	}
	if methods > 1 {
		return errors.New("queue: set only one of NATS creds file, nkey file, token and user")
	}
	if cfg.Password != "" && cfg.User == "" {
		return errors.New("queue: NATS password set without a user")
	}
	if (cfg.TLSCert == "") != (cfg.TLSKey == "") {
		return errors.New("queue: set both or neither of the NATS TLS client certificate and key")
	}
	if p := cfg.InboxPrefix; p != "" && (strings.ContainsAny(p, "*> \t") || strings.HasPrefix(p, ".") || strings.HasSuffix(p, ".") || strings.Contains(p, "..")) {
		return fmt.Errorf("queue: NATS inbox prefix %q must be a subject without wildcards, spaces or empty tokens", p)
	}
	return nil
}

// options are the client options that name and authenticate the connection; the translation
// lives in natsopts, which queuetest shares.
func (cfg ConnectConfig) options() ([]nats.Option, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return natsopts.Options(natsopts.Settings(cfg))
}

// clientOptions are the handlers every skillfleet connection has.
func clientOptions(log *zap.Logger) []nats.Option {
	return []nats.Option{
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			if err != nil {
				log.Warn("NATS disconnected", zap.String("server", nc.ConnectedUrlRedacted()), zap.Error(err))
				return
			}
			log.Info("NATS disconnected", zap.String("server", nc.ConnectedUrlRedacted()))
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info("NATS reconnected", zap.String("server", nc.ConnectedUrlRedacted()), zap.Uint64("reconnects", nc.Stats().Reconnects))
		}),
		nats.ReconnectErrHandler(func(_ *nats.Conn, err error) {
			log.Debug("NATS reconnect attempt failed", zap.Error(err))
		}),
		nats.ClosedHandler(func(nc *nats.Conn) {
			if err := nc.LastError(); err != nil {
				log.Warn("NATS connection closed", zap.Error(err))
				return
			}
			log.Info("NATS connection closed")
		}),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			fields := []zap.Field{zap.Error(err)}
			if sub != nil {
				fields = append(fields, zap.String("subject", sub.Subject))
			}
			log.Error("NATS asynchronous error", fields...)
		}),
	}
}
