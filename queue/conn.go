package queue

import (
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Conn is one client connection to NATS with its JetStream context: what Ensure, Open and
// OpenWorker bind a topology on. It keeps the client library's types inside this package.
type Conn struct {
	nc *nats.Conn
	js jetstream.JetStream
}

func newConn(nc *nats.Conn) (*Conn, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("queue: JetStream context: %w", err)
	}
	return &Conn{nc: nc, js: js}, nil
}

// Close closes the connection; calling it twice is harmless.
func (c *Conn) Close() { c.nc.Close() }

// IsConnected reports whether the connection is up now (it reconnects by itself when not).
func (c *Conn) IsConnected() bool { return c.nc.IsConnected() }

// MaxPayload is the largest message the server takes, headers included.
func (c *Conn) MaxPayload() int64 { return c.nc.MaxPayload() }

// Status names the connection's state ("CONNECTED", "RECONNECTING", ...), for diagnostics.
func (c *Conn) Status() string { return c.nc.Status().String() }

// ServerURL is the URL of the server the connection is on now, without credentials; "" while
// disconnected.
func (c *Conn) ServerURL() string { return c.nc.ConnectedUrlRedacted() }
