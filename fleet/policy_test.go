package fleet

import (
	"errors"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/queue"
)

func TestCheckCoordinator(t *testing.T) {
	const noToken, anyAgent = "without a bearer token", "runs may name any agent"
	known := coordinator.Config{KnownAgents: []string{"a"}}
	for _, tc := range []struct {
		name string
		cfg  CoordinatorConfig
		// refusal is in the *ConfigError; warnings are the warnings' texts, in order.
		refusal  string
		warnings []string
	}{
		{name: "loopback API without tokens", cfg: CoordinatorConfig{HTTPAddr: "127.0.0.1:8080", Coordinator: known}},
		{name: "localhost API without tokens", cfg: CoordinatorConfig{HTTPAddr: "localhost:8080", Coordinator: known}},
		{name: "IPv6 loopback API without tokens", cfg: CoordinatorConfig{HTTPAddr: "[::1]:8080", Coordinator: known}},
		{name: "public API without tokens", cfg: CoordinatorConfig{HTTPAddr: ":8080", Coordinator: known}, warnings: []string{noToken}},
		{name: "public API with tokens", cfg: CoordinatorConfig{HTTPAddr: "0.0.0.0:8080", Coordinator: known, API: coordinator.APIConfig{Tokens: []coordinator.Token{{Name: "ci", Secret: "ci-token-0123456789"}}}}},
		{name: "no agent names", cfg: CoordinatorConfig{HTTPAddr: "127.0.0.1:8080"}, warnings: []string{anyAgent}},
		{name: "default agents name the fleet's", cfg: CoordinatorConfig{HTTPAddr: "127.0.0.1:8080", Coordinator: coordinator.Config{Agents: []string{"a"}}}},
		{name: "both warnings", cfg: CoordinatorConfig{HTTPAddr: "10.0.0.1:8080"}, warnings: []string{noToken, anyAgent}},
		{name: "embedded NATS on loopback, open", cfg: CoordinatorConfig{HTTPAddr: "127.0.0.1:8080", Coordinator: known, EmbeddedNATS: "127.0.0.1:4222"}},
		{name: "embedded NATS beyond loopback with a token", cfg: CoordinatorConfig{HTTPAddr: "127.0.0.1:8080", Coordinator: known, EmbeddedNATS: "0.0.0.0:4222", NATS: queue.ConnectConfig{Token: "t"}}},
		{name: "embedded NATS beyond loopback, open", cfg: CoordinatorConfig{EmbeddedNATS: "0.0.0.0:4222"}, refusal: "--embedded-nats listens beyond loopback"},
		{name: "embedded NATS on all interfaces, open", cfg: CoordinatorConfig{EmbeddedNATS: ":4222"}, refusal: "--embedded-nats listens beyond loopback"},
		{name: "embedded NATS without a port", cfg: CoordinatorConfig{EmbeddedNATS: "127.0.0.1"}, refusal: "--embedded-nats:"},
		{name: "embedded NATS with a bad port", cfg: CoordinatorConfig{EmbeddedNATS: "127.0.0.1:99999"}, refusal: `bad port "99999"`},
		{name: "embedded NATS with credentials", cfg: CoordinatorConfig{EmbeddedNATS: "127.0.0.1:4222", NATS: queue.ConnectConfig{CredsFile: "x.creds"}}, refusal: "takes a NATS token only"},
		{name: "embedded NATS with an NKey", cfg: CoordinatorConfig{EmbeddedNATS: "127.0.0.1:4222", NATS: queue.ConnectConfig{NKeyFile: "x.nk"}}, refusal: "takes a NATS token only"},
		{name: "embedded NATS with a user", cfg: CoordinatorConfig{EmbeddedNATS: "127.0.0.1:4222", NATS: queue.ConnectConfig{User: "u"}}, refusal: "takes a NATS token only"},
		{name: "embedded NATS with TLS", cfg: CoordinatorConfig{EmbeddedNATS: "127.0.0.1:4222", NATS: queue.ConnectConfig{TLSCA: "ca.pem"}}, refusal: "takes a NATS token only"},
		{name: "viewer tokens with API tokens", cfg: CoordinatorConfig{HTTPAddr: "0.0.0.0:8080", Coordinator: known,
			API: coordinator.APIConfig{Token: "op-token-0123456789"}, Web: WebConfig{ViewerTokens: []coordinator.Token{{Name: "reader", Secret: "view-token-0123456789"}}}}},
		{name: "viewer tokens without API tokens", cfg: CoordinatorConfig{HTTPAddr: "127.0.0.1:8080", Coordinator: known,
			Web: WebConfig{ViewerTokens: []coordinator.Token{{Name: "reader", Secret: "view-token-0123456789"}}}}, refusal: "--viewer-token-file needs API tokens"},
		{name: "a viewer token that is an API token", cfg: CoordinatorConfig{HTTPAddr: "127.0.0.1:8080", Coordinator: known,
			API: coordinator.APIConfig{Tokens: []coordinator.Token{{Name: "ci", Secret: "same-token-0123456789"}}}, Web: WebConfig{ViewerTokens: []coordinator.Token{{Name: "reader", Secret: "same-token-0123456789"}}}},
			refusal: `viewer token "reader" is also the API token "ci"`},
		// Short tokens are refused by name, never by value.
		{name: "a short API token", cfg: CoordinatorConfig{HTTPAddr: "127.0.0.1:8080", Coordinator: known,
			API: coordinator.APIConfig{Tokens: []coordinator.Token{{Name: "ci", Secret: "ci-token-0123456789"}, {Name: "deploy", Secret: "shortsecret"}}}},
			refusal: `API token "deploy" is 11 bytes: tokens must be at least 16 bytes`},
		{name: "a short --token", cfg: CoordinatorConfig{HTTPAddr: "127.0.0.1:8080", Coordinator: known, API: coordinator.APIConfig{Token: "shortsecret"}},
			refusal: `API token "default" is 11 bytes`},
		{name: "a short viewer token", cfg: CoordinatorConfig{HTTPAddr: "127.0.0.1:8080", Coordinator: known,
			API: coordinator.APIConfig{Token: "op-token-0123456789"}, Web: WebConfig{ViewerTokens: []coordinator.Token{{Name: "reader", Secret: "shortsecret"}}}},
			refusal: `viewer token "reader" is 11 bytes`},
		{name: "a token of 16 bytes", cfg: CoordinatorConfig{HTTPAddr: "127.0.0.1:8080", Coordinator: known, API: coordinator.APIConfig{Token: "0123456789abcdef"}, MetricsToken: "0123456789abcdef"}},
		{name: "a short metrics token", cfg: CoordinatorConfig{HTTPAddr: "127.0.0.1:8080", Coordinator: known, MetricsToken: "shortsecret"},
			refusal: "the --metrics-token-file token is 11 bytes"},
		{name: "embedded NATS with a client certificate", cfg: CoordinatorConfig{EmbeddedNATS: "127.0.0.1:4222", NATS: queue.ConnectConfig{TLSCert: "c.pem"}}, refusal: "takes a NATS token only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			warnings, err := CheckCoordinator(tc.cfg)
			checkRefusal(t, err, tc.refusal)
			if len(warnings) != len(tc.warnings) {
				t.Fatalf("warnings %q, want ones saying %q", warnings, tc.warnings)
			}
			for i, w := range tc.warnings {
				if !strings.Contains(warnings[i], w) {
					t.Errorf("warning %d is %q, want one saying %q", i, warnings[i], w)
				}
			}
		})
	}
}

func TestCheckWorker(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     WorkerConfig
		refusal string
	}{
		{name: "defaults", cfg: WorkerConfig{ID: "w1", Slots: 1}},
		{name: "pull a missing image", cfg: WorkerConfig{ID: "w1", Slots: 2, Sandbox: SandboxConfig{ImageMissing: ImageMissingPull}}},
		{name: "build a missing image", cfg: WorkerConfig{ID: "w1", Slots: 2, Sandbox: SandboxConfig{ImageMissing: ImageMissingBuild}}},
		{name: "fail on a missing image", cfg: WorkerConfig{ID: "w1", Slots: 2, Sandbox: SandboxConfig{ImageMissing: ImageMissingFail}}},
		{name: "no id", cfg: WorkerConfig{Slots: 1}, refusal: "--id must be set"},
		{name: "no slots", cfg: WorkerConfig{ID: "w1"}, refusal: "--slots at least 1"},
		{name: "negative slots", cfg: WorkerConfig{ID: "w1", Slots: -1}, refusal: "--slots at least 1"},
		{name: "a metrics token", cfg: WorkerConfig{ID: "w1", Slots: 1, MetricsToken: "0123456789abcdef"}},
		{name: "a short metrics token", cfg: WorkerConfig{ID: "w1", Slots: 1, MetricsToken: "shortsecret"}, refusal: "the --metrics-token-file token is 11 bytes"},
		{name: "unknown image policy", cfg: WorkerConfig{ID: "w1", Slots: 1, Sandbox: SandboxConfig{ImageMissing: "download"}}, refusal: `--image-missing must be fail, pull or build, not "download"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkRefusal(t, CheckWorker(tc.cfg), tc.refusal)
		})
	}
}

// checkRefusal fails unless err is a *ConfigError saying want, or nil when want is empty.
func checkRefusal(t *testing.T, err error, want string) {
	t.Helper()
	var ce *ConfigError
	switch {
	case want == "" && err != nil:
		t.Fatalf("refused: %v", err)
	case want == "":
	case !errors.As(err, &ce):
		t.Fatalf("err = %v (%T), want a *ConfigError saying %q", err, err, want)
	case !strings.Contains(err.Error(), want):
		t.Fatalf("refused with %q, want %q", err, want)
	case strings.Contains(err.Error(), "shortsecret"):
		t.Fatalf("the refusal repeats the token: %v", err)
	}
}
