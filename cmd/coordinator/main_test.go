package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/flaky"
	"github.com/skillfleet/skillfleet/fleet"
	"github.com/skillfleet/skillfleet/internal/cmdutil"
	"github.com/skillfleet/skillfleet/internal/testutil"
)

func TestConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		// usage is what the usage error says; empty: none.
		usage string
		// perIP and minRate are the API's limits the flags come to.
		perIP   int
		minRate int64
	}{
		{name: "defaults", perIP: 128, minRate: coordinator.DefaultMinUploadRate},
		{name: "no per-address cap", args: []string{"--max-conns-per-ip", "0"}, perIP: -1, minRate: coordinator.DefaultMinUploadRate},
		{name: "no minimum upload rate", args: []string{"--min-upload-rate", "0"}, perIP: 128, minRate: -1},
		{name: "a bad queue setting", args: []string{"--max-deliver", "0"}, usage: "MaxDeliver must be at least 1"},
		{name: "a NATS token twice", args: []string{"--nats-token", "t", "--nats-token-file", "f"}, usage: "not both"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("SKILLFLEET_NATS_TOKEN", "")
			o, cfg, ok := configOf(t, tc.args, tc.usage)
			if !ok {
				return
			}
			if cfg.MaxConnsPerIP != tc.perIP || cfg.API.MinUploadRate != tc.minRate {
				t.Errorf("per-address cap %d, minimum upload rate %d; want %d, %d", cfg.MaxConnsPerIP, cfg.API.MinUploadRate, tc.perIP, tc.minRate)
			}
			if cfg.HTTPAddr != "127.0.0.1:8080" || cfg.Queue.MaxDeliver != o.queue.MaxDeliver || cfg.Coordinator.MaxJobsPerRun != 100_000 {
				t.Errorf("config %+v does not carry the flags", cfg)
			}
		})
	}
}

// TestMetricsTokenFile: --metrics-token-file's first line is the /metrics token; an empty or
// missing file is a usage error, and a short token is refused at start.
func TestMetricsTokenFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string { return testutil.WriteFile(t, dir, name, text) }
	good, empty, short := write("good", "metrics-token-0123456789\n"), write("empty", "\n"), write("short", "shorttok\n")
	t.Setenv("SKILLFLEET_NATS_TOKEN", "")
	_, cfg, ok := configOf(t, []string{"--metrics-token-file", good}, "")
	if ok && cfg.MetricsToken != "metrics-token-0123456789" {
		t.Errorf("metrics token %q, want the file's first line", cfg.MetricsToken)
	}
	configOf(t, []string{"--metrics-token-file", empty}, "the first line is empty")
	configOf(t, []string{"--metrics-token-file", filepath.Join(dir, "missing")}, "--metrics-token-file")
	if _, cfg, ok := configOf(t, []string{"--metrics-token-file", short}, ""); ok {
		_, err := fleet.NewCoordinatorDaemon(cfg, zap.NewNop())
		if !cmdutil.IsUsage(err) || !strings.Contains(err.Error(), "--metrics-token-file token is 8 bytes") || strings.Contains(err.Error(), "shorttok") {
			t.Errorf("a short metrics token: %v, want a usage error naming --metrics-token-file without the token", err)
		}
	}
}

func TestTrustedProxies(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		want  []string
		usage string
	}{
		{name: "none", want: nil},
		{name: "a CIDR and an address", args: []string{"--trusted-proxy", "10.0.0.0/8", "--trusted-proxy", "fd00::7"}, want: []string{"10.0.0.0/8", "fd00::7/128"}},
		{name: "a CIDR with host bits is its network", args: []string{"--trusted-proxy", "10.1.2.3/16"}, want: []string{"10.1.0.0/16"}},
		{name: "a host name", args: []string{"--trusted-proxy", "ingress.local"}, usage: "want an address or a CIDR"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("SKILLFLEET_NATS_TOKEN", "")
			_, cfg, ok := configOf(t, tc.args, tc.usage)
			if !ok {
				return
			}
			var got []string
			for _, p := range cfg.TrustedProxies {
				got = append(got, p.String())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("trusted proxies %v, want %v", got, tc.want)
			}
		})
	}
}

func TestHistoryConfig(t *testing.T) {
	pwFile := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pwFile, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const pg = "postgres://skillfleet@db:5432/history"
	for _, tc := range []struct {
		name             string
		args             []string
		env              string
		target, password string
		usage            string
	}{
		{name: "default", target: ""},
		{name: "a file", args: []string{"--history", "/var/lib/h.db"}, env: "ignored", target: "/var/lib/h.db"},
		{name: "off", args: []string{"--history", "off"}, target: "off"},
		{name: "postgres, password from the environment", args: []string{"--history", pg}, env: "from-env", target: pg, password: "from-env"},
		{name: "postgres, password from a file", args: []string{"--history", pg, "--history-password-file", pwFile}, env: "from-env", target: pg, password: "from-file"},
		{name: "a missing password file", args: []string{"--history", pg, "--history-password-file", pwFile + ".missing"}, usage: "--history-password-file"},
		{name: "a password file without postgres", args: []string{"--history-password-file", pwFile}, usage: "needs a postgres://"},
		// A password on the command line is seen by whoever lists processes: refused, and the
		// refusal names where it goes instead, without repeating it.
		{name: "a password in the URL", args: []string{"--history", "postgres://skillfleet:hunter2pw@db:5432/history"}, usage: "$SKILLFLEET_HISTORY_PASSWORD or a file named by --history-password-file"},
		{name: "a password in the URL's query", args: []string{"--history", pg + "?sslmode=require&password=hunter2pw"}, usage: "$SKILLFLEET_HISTORY_PASSWORD or a file named by --history-password-file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("SKILLFLEET_NATS_TOKEN", "")
			t.Setenv("SKILLFLEET_HISTORY_PASSWORD", tc.env)
			_, cfg, ok := configOf(t, tc.args, tc.usage)
			if !ok {
				return
			}
			if cfg.History.Target != tc.target || cfg.History.Password != tc.password {
				t.Errorf("history %q with password %q; want %q, %q", cfg.History.Target, cfg.History.Password, tc.target, tc.password)
			}
		})
	}
}

func TestQuarantineConfig(t *testing.T) {
	list := filepath.Join(t.TempDir(), "quarantine")
	if err := os.WriteFile(list, []byte("# flaky upstream\npdf/fills form@claude\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "bad")
	if err := os.WriteFile(bad, []byte("no-slash\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		args  []string
		want  flaky.Policy
		usage string
	}{
		{name: "none"},
		{name: "flaky", args: []string{"--quarantine", "flaky"}, want: flaky.Policy{Flaky: true}},
		{name: "a list", args: []string{"--quarantine-file", list}, want: flaky.Policy{Cells: []flaky.Cell{{Skill: "pdf", Case: "fills form", Agent: "claude"}}}},
		{name: "an unknown policy", args: []string{"--quarantine", "all"}, usage: "--quarantine must be"},
		{name: "a missing list", args: []string{"--quarantine-file", list + ".missing"}, usage: "--quarantine-file"},
		{name: "a malformed list", args: []string{"--quarantine-file", bad}, usage: "line 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("SKILLFLEET_NATS_TOKEN", "")
			_, cfg, ok := configOf(t, tc.args, tc.usage)
			if !ok {
				return
			}
			if cfg.Quarantine.Flaky != tc.want.Flaky || !slices.Equal(cfg.Quarantine.Cells, tc.want.Cells) {
				t.Errorf("quarantine %+v, want %+v", cfg.Quarantine, tc.want)
			}
		})
	}
}

// configOf parses args as the coordinator's flags and returns what config makes of them. With
// usage set it expects a usage error saying it, and ok is false.
func configOf(t *testing.T, args []string, usage string) (o options, cfg fleet.CoordinatorConfig, ok bool) {
	t.Helper()
	if err := newCommand(&o).ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	cfg, err := o.config()
	if usage != "" {
		if !cmdutil.IsUsage(err) || !strings.Contains(err.Error(), usage) {
			t.Fatalf("err = %v, want a usage error saying %q", err, usage)
		}
		if strings.Contains(err.Error(), "hunter2pw") {
			t.Fatalf("the usage error repeats the password: %v", err)
		}
		return o, cfg, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return o, cfg, true
}
