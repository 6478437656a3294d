package natsopts

import (
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
)

func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Settings
		want func(o nats.Options) bool
	}{
		{"name", Settings{Name: "w1"}, func(o nats.Options) bool { return o.Name == "w1" }},
		{"user and password", Settings{User: "u", Password: "p"}, func(o nats.Options) bool { return o.User == "u" && o.Password == "p" }},
		{"token", Settings{Token: "tok"}, func(o nats.Options) bool { return o.Token == "tok" && o.User == "" }},
		{"inbox prefix", Settings{InboxPrefix: "_INBOX_w"}, func(o nats.Options) bool { return o.InboxPrefix == "_INBOX_w" }},
		{"nothing", Settings{}, func(o nats.Options) bool {
			return o.User == "" && o.Token == "" && o.UserJWT == nil && o.TLSConfig == nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts, err := Options(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			o := nats.GetDefaultOptions()
			for _, opt := range opts {
				if err := opt(&o); err != nil {
					t.Fatal(err)
				}
			}
			if !tc.want(o) {
				t.Errorf("options of %+v: %+v", tc.in, o)
			}
		})
	}
}

// The credential files are read by the client library, here or when the options apply: a
// missing one must show up, naming the file, rather than leave the connection anonymous.
func TestOptionsReadTheCredentialFiles(t *testing.T) {
	for _, in := range []Settings{{NKeyFile: "/nonexistent/seed.nk"}, {CredsFile: "/nonexistent/user.creds"}, {TLSCA: "/nonexistent/ca.pem"}} {
		opts, err := Options(in)
		o := nats.GetDefaultOptions()
		for _, opt := range opts {
			if err == nil {
				err = opt(&o)
			}
		}
		if err == nil || !strings.Contains(err.Error(), "/nonexistent/") {
			t.Errorf("options of %+v: error %v, want one naming the file", in, err)
		}
	}
}
