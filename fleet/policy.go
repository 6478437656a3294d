package fleet

import (
	"fmt"
	"net"
	"strconv"
)

// ConfigError is a daemon refusing its configuration: the operator fixes it by changing flags
// (a usage error, exit status 2), unlike a failure of what the configuration points at.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }

// Unwrap returns the refusal's reason.
func (e *ConfigError) Unwrap() error { return e.Err }

func refuse(format string, args ...any) error {
	return &ConfigError{Err: fmt.Errorf(format, args...)}
}

// CheckCoordinator returns why a coordinator must not start with cfg (a *ConfigError), and the
// warnings it starts with otherwise.
func CheckCoordinator(cfg CoordinatorConfig) (warnings []string, err error) {
	if cfg.EmbeddedNATS != "" {
		if err := CheckEmbeddedNATS(cfg); err != nil {
			return nil, err
		}
	}
	if err := checkViewerTokens(cfg); err != nil {
		return nil, err
	}
	if err := checkTokenLengths(cfg); err != nil {
		return nil, err
	}
	if len(cfg.API.Tokens) == 0 && cfg.API.Token == "" && !IsLoopback(cfg.HTTPAddr) {
		warnings = append(warnings, "the API listens beyond loopback without a bearer token: it serves only requests for a loopback Host; set --token, --token-file or $SKILLFLEET_TOKEN")
	}
	if len(cfg.Coordinator.KnownAgents) == 0 && len(cfg.Coordinator.Agents) == 0 {
		// Without the fleet's agent names, a run's agent names cannot be checked here; a name
		// no worker serves makes errored jobs, never passes.
		warnings = append(warnings, "runs may name any agent: set --known-agent (or --agent) to the agents the workers serve, so that a misspelt agent is refused at submission")
	}
	return warnings, nil
}

// checkViewerTokens refuses viewer tokens without API tokens (the viewer would then serve
// loopback callers without a login, and a viewer token would protect nothing) and a viewer
// token that is also an API token (its holder's role would be ambiguous).
func checkViewerTokens(cfg CoordinatorConfig) error {
	if len(cfg.Web.ViewerTokens) == 0 {
		return nil
	}
	api := webTokens(cfg.API)
	if len(api) == 0 {
		return refuse("--viewer-token-file needs API tokens (--token, --token-file or $SKILLFLEET_TOKEN): without them the viewer serves loopback callers without a login")
	}
	for _, v := range cfg.Web.ViewerTokens {
		for _, t := range api {
			if v.Secret == t.Secret {
				return refuse("viewer token %q is also the API token %q: a token is either read-only or not", v.Name, t.Name)
			}
		}
	}
	return nil
}

// MinTokenBytes is the shortest bearer token the daemons accept: a shorter one is within reach
// of guessing, budget of wrong tokens or not.
const MinTokenBytes = 16

// checkTokenLengths refuses an API, viewer or metrics token shorter than MinTokenBytes,
// naming it by its name, never by its value.
func checkTokenLengths(cfg CoordinatorConfig) error {
	for _, t := range webTokens(cfg.API) {
		if len(t.Secret) < MinTokenBytes {
			return refuse("API token %q is %d bytes: tokens must be at least %d bytes (e.g. openssl rand -hex 16)", t.Name, len(t.Secret), MinTokenBytes)
		}
	}
	for _, t := range cfg.Web.ViewerTokens {
		if len(t.Secret) < MinTokenBytes {
			return refuse("viewer token %q is %d bytes: tokens must be at least %d bytes (e.g. openssl rand -hex 16)", t.Name, len(t.Secret), MinTokenBytes)
		}
	}
	return checkMetricsToken(cfg.MetricsToken)
}

// checkMetricsToken refuses a /metrics token shorter than MinTokenBytes ("" is none).
func checkMetricsToken(token string) error {
	if token != "" && len(token) < MinTokenBytes {
		return refuse("the --metrics-token-file token is %d bytes: tokens must be at least %d bytes (e.g. openssl rand -hex 16)", len(token), MinTokenBytes)
	}
	return nil
}

// CheckEmbeddedNATS refuses an embedded nats-server that would be reachable without the
// token workers present, or that is asked for authentication it does not implement.
func CheckEmbeddedNATS(cfg CoordinatorConfig) error {
	if _, _, err := SplitHostPort(cfg.EmbeddedNATS); err != nil {
		return refuse("--embedded-nats: %w", err)
	}
	n := cfg.NATS
	if n.CredsFile != "" || n.NKeyFile != "" || n.User != "" || n.TLSCA != "" || n.TLSCert != "" {
		return refuse("--embedded-nats takes a NATS token only (--nats-token-file or $SKILLFLEET_NATS_TOKEN); for other authentication or TLS run a nats-server")
	}
	// Whoever reaches the queue can publish results, so forge a pass: beyond loopback the
	// embedded server never runs open.
	if n.Token == "" && !IsLoopback(cfg.EmbeddedNATS) {
		return refuse("--embedded-nats listens beyond loopback: set a NATS token (--nats-token-file or $SKILLFLEET_NATS_TOKEN) that workers must present")
	}
	return nil
}

// ImageMissing policies: what a worker does when the sandbox image is not on its engine.
const (
	ImageMissingFail  = "fail"
	ImageMissingPull  = "pull"
	ImageMissingBuild = "build"
)

// CheckWorker returns why a worker must not start with cfg (a *ConfigError).
func CheckWorker(cfg WorkerConfig) error {
	if cfg.ID == "" || cfg.Slots < 1 {
		return refuse("--id must be set and --slots at least 1")
	}
	switch cfg.Sandbox.ImageMissing {
	case "", ImageMissingFail, ImageMissingPull, ImageMissingBuild:
	default:
		return refuse("--image-missing must be fail, pull or build, not %q", cfg.Sandbox.ImageMissing)
	}
	return checkMetricsToken(cfg.MetricsToken)
}

// SplitHostPort parses host:port with a numeric port.
func SplitHostPort(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("bad port %q", p)
	}
	return host, port, nil
}

// IsLoopback reports whether a listen address stays on this machine.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
