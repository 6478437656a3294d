// Package natsopts turns a queue.ConnectConfig into the client library's options. It is its own
// package so that queue and queue/queuetest share one translation: a test helper logs in
// exactly as a daemon with the same settings does.
package natsopts

import (
	"fmt"

	"github.com/nats-io/nats.go"
)

// Settings has queue.ConnectConfig's fields in its order, so that queue converts one into the
// other; a field added there and not here breaks the build instead of being ignored.
type Settings struct {
	URL  string
	Name string

	CredsFile string
	NKeyFile  string
	Token     string
	User      string
	Password  string

	TLSCA   string
	TLSCert string
	TLSKey  string

	InboxPrefix string
}

// Options are the client options that name and authenticate a connection as s says. The
// caller has validated s (queue.ConnectConfig.Validate); URL is the caller's to use.
func Options(s Settings) ([]nats.Option, error) {
	var opts []nats.Option
	if s.Name != "" {
		opts = append(opts, nats.Name(s.Name))
	}
	switch {
	case s.CredsFile != "":
		opts = append(opts, nats.UserCredentials(s.CredsFile))
	case s.NKeyFile != "":
		o, err := nats.NkeyOptionFromSeed(s.NKeyFile)
		if err != nil {
			return nil, fmt.Errorf("queue: NATS nkey file %s: %w", s.NKeyFile, err)
		}
		opts = append(opts, o)
	case s.Token != "":
		opts = append(opts, nats.Token(s.Token))
	case s.User != "":
		opts = append(opts, nats.UserInfo(s.User, s.Password))
	}
	if s.InboxPrefix != "" {
		opts = append(opts, nats.CustomInboxPrefix(s.InboxPrefix))
	}
	if s.TLSCA != "" {
		opts = append(opts, nats.RootCAs(s.TLSCA))
	}
	if s.TLSCert != "" {
		opts = append(opts, nats.ClientCert(s.TLSCert, s.TLSKey))
	}
	return opts, nil
}
