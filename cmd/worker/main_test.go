package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/internal/cmdutil"
	"github.com/skillfleet/skillfleet/internal/testutil"
	"github.com/skillfleet/skillfleet/sandbox"
)

func TestConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string { return testutil.WriteFile(t, dir, name, text) }
	profile := write("seccomp.json", `{"defaultAction":"SCMP_ACT_ERRNO"}`)
	agents := write("agents.yaml", "agents:\n  - name: a\n    model: m\n")
	badAgents := write("bad.yaml", "agents: [\n")
	for _, tc := range []struct {
		name string
		args []string
		// usage is what the usage error says; empty: none.
		usage string
	}{
		{name: "defaults"},
		{name: "a shared directory", args: []string{"--shared-dir", dir}},
		{name: "a cache and a gateway directory", args: []string{"--cache", dir, "--gateway-dir", dir}},
		{name: "a shared directory and a cache", args: []string{"--shared-dir", dir, "--cache", dir}, usage: "--shared-dir replaces --cache and --gateway-dir"},
		{name: "a shared directory and a gateway directory", args: []string{"--shared-dir", dir, "--gateway-dir", dir}, usage: "--shared-dir replaces --cache and --gateway-dir"},
		{name: "a seccomp profile", args: []string{"--seccomp-profile", profile}},
		{name: "a missing seccomp profile", args: []string{"--seccomp-profile", filepath.Join(dir, "none.json")}, usage: "--seccomp-profile"},
		{name: "an agents config", args: []string{"--agents-config", agents}},
		{name: "a broken agents config", args: []string{"--agents-config", badAgents}, usage: "--agents-config"},
		{name: "a missing NATS token file", args: []string{"--nats-token-file", filepath.Join(dir, "none")}, usage: "NATS token"},
		{name: "a NATS token twice", args: []string{"--nats-token", "t", "--nats-token-file", profile}, usage: "not both"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("SKILLFLEET_NATS_TOKEN", "")
			var o options
			cmd := newCommand(&o)
			if err := cmd.ParseFlags(tc.args); err != nil {
				t.Fatal(err)
			}
			o.dirsGiven = cmd.Flags().Changed("cache") || cmd.Flags().Changed("gateway-dir")
			cfg, err := o.config()
			if tc.usage != "" {
				if !cmdutil.IsUsage(err) || !strings.Contains(err.Error(), tc.usage) {
					t.Fatalf("err = %v, want a usage error saying %q", err, tc.usage)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.ID != o.id || cfg.Slots != 2 || cfg.Sandbox.ImageMissing != "fail" || cfg.Sandbox.Runner.Image != sandbox.DefaultImage {
				t.Errorf("config %+v does not carry the flags' defaults", cfg)
			}
			if cfg.Sandbox.Runner.Max != sandbox.DefaultLimits() {
				t.Errorf("sandbox maximum %+v, want the defaults %+v", cfg.Sandbox.Runner.Max, sandbox.DefaultLimits())
			}
			if (cfg.Sandbox.Runner.SeccompProfile != "") != (o.seccomp != "") {
				t.Errorf("seccomp profile %q from --seccomp-profile %q", cfg.Sandbox.Runner.SeccompProfile, o.seccomp)
			}
			if (cfg.Agents != nil) != (o.agentsConfig != "") {
				t.Errorf("agents %+v from --agents-config %q", cfg.Agents, o.agentsConfig)
			}
		})
	}
}
