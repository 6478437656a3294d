package main

import (
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/fleet"
	"github.com/skillfleet/skillfleet/internal/cmdutil"
	"github.com/skillfleet/skillfleet/internal/testutil"
)

// TestEmptyTokenIsAUsageError: an empty token, from the flag, a file or the environment, stops
// the coordinator with exit 2 and names its source, instead of serving without authentication.
func TestEmptyTokenIsAUsageError(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string { return testutil.WriteFile(t, dir, name, text) }
	empty, blank, two := write("empty", ""), write("blank", "\n  \n# no token yet\n"), write("two", "ci c1-secret-0123456789\nops-secret-0123456789\n")
	typo := write("typo", "ci c1-secret-0123456789 team=platform-engineering\nci-x team=platform-engineering\n")
	for _, tc := range []struct {
		name    string
		args    []string
		env     *string
		want    string // in the error; "" wants none
		secrets []string
	}{
		{"empty flag", []string{"--token="}, nil, "--token is empty", nil},
		{"empty file", []string{"--token-file", empty}, nil, "--token-file " + empty + ": error tokens.empty: the file holds no token", nil},
		{"comments only", []string{"--token-file", blank}, nil, "holds no token", nil},
		{"empty variable", nil, ptr(""), "$SKILLFLEET_TOKEN is set but empty", nil},
		{"flag and file", []string{"--token", "x-token-0123456789", "--token-file", two}, nil, "not both", nil},
		{"a token forgotten", []string{"--token-file", typo}, nil, "--token-file " + typo + ":2: error tokens.token-missing", nil},
		{"several tokens", []string{"--token-file", two}, nil, "", []string{"c1-secret-0123456789", "ops-secret-0123456789"}},
		{"variable", nil, ptr("v-token-0123456789"), "", []string{"v-token-0123456789"}},
		{"none", nil, nil, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != nil {
				t.Setenv("SKILLFLEET_TOKEN", *tc.env)
			} else {
				t.Setenv("SKILLFLEET_TOKEN", "")
				os.Unsetenv("SKILLFLEET_TOKEN")
			}
			var o options
			cmd := newCommand(&o)
			cmd.RunE = func(cmd *cobra.Command, _ []string) error { return resolveTokens(cmd, &o) }
			cmd.SetArgs(tc.args)
			err := cmd.Execute()
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, tok := range o.tokens {
					got = append(got, tok.Secret)
				}
				if strings.Join(got, ",") != strings.Join(tc.secrets, ",") {
					t.Fatalf("tokens %v, want %v", got, tc.secrets)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			cmd = newCommand(&options{})
			cmd.RunE = func(cmd *cobra.Command, _ []string) error { return resolveTokens(cmd, &o) }
			cmd.SetArgs(tc.args)
			if code := cmdutil.Execute(cmd); code != 2 {
				t.Fatalf("exit %d, want 2", code)
			}
		})
	}
}

func ptr(s string) *string { return &s }

// TestViewerTokens: --viewer-token-file takes the token file's format into the viewer's
// configuration; an empty or missing file is a usage error (exit 2).
func TestViewerTokens(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string { return testutil.WriteFile(t, dir, name, text) }
	viewers, empty := write("viewers", "# read-only\nreader r-secret-0123456789\nauditor a-secret-0123456789\n"), write("empty", "\n")
	typo := write("typo", "reader r-secret-0123456789\nwendy team=teamA\n")
	for _, tc := range []struct {
		name  string
		args  []string
		want  string // in the error; "" wants none
		names []string
	}{
		{"none", nil, "", nil},
		{"two viewers", []string{"--token", "op-token-0123456789", "--viewer-token-file", viewers}, "", []string{"reader", "auditor"}},
		{"an empty file", []string{"--token", "op-token-0123456789", "--viewer-token-file", empty}, "holds no token", nil},
		{"a missing file", []string{"--token", "op-token-0123456789", "--viewer-token-file", viewers + ".missing"}, "--viewer-token-file", nil},
		{"a token forgotten", []string{"--token", "op-token-0123456789", "--viewer-token-file", typo}, "--viewer-token-file " + typo + ":2: error tokens.token-missing", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("SKILLFLEET_TOKEN", "")
			os.Unsetenv("SKILLFLEET_TOKEN")
			t.Setenv("SKILLFLEET_NATS_TOKEN", "")
			var o options
			cmd := newCommand(&o)
			cmd.RunE = func(cmd *cobra.Command, _ []string) error { return resolveTokens(cmd, &o) }
			cmd.SetArgs(tc.args)
			err := cmd.Execute()
			if tc.want != "" {
				if !cmdutil.IsUsage(err) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("error %v, want a usage error saying %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := o.config()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := fleet.NewCoordinatorDaemon(cfg, zap.NewNop()); err != nil {
				t.Fatalf("the coordinator refuses to start: %v", err)
			}
			var got []string
			for _, tok := range cfg.Web.ViewerTokens {
				got = append(got, tok.Name)
			}
			if strings.Join(got, ",") != strings.Join(tc.names, ",") {
				t.Errorf("viewer tokens %v, want %v", got, tc.names)
			}
		})
	}
}

// TestShortTokensRefusedAtStart: an API or viewer token shorter than 16 bytes stops the
// coordinator with a usage error naming the token, never showing it.
func TestShortTokensRefusedAtStart(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string { return testutil.WriteFile(t, dir, name, text) }
	apiFile := write("api", "ci ci-token-0123456789\ndeploy shorttok1\n")
	viewerFile := write("viewers", "reader shorttok2\n")
	for _, tc := range []struct {
		name string
		args []string
		env  string
		want string
	}{
		{"a short --token", []string{"--token", "shorttok0"}, "", `API token "default" is 9 bytes`},
		{"a short token in --token-file", []string{"--token-file", apiFile}, "", `API token "deploy" is 9 bytes`},
		{"a short $SKILLFLEET_TOKEN", nil, "shorttok3", `API token "default" is 9 bytes`},
		{"a short viewer token", []string{"--token", "op-token-0123456789", "--viewer-token-file", viewerFile}, "", `viewer token "reader" is 9 bytes`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("SKILLFLEET_NATS_TOKEN", "")
			t.Setenv("SKILLFLEET_TOKEN", tc.env)
			if tc.env == "" {
				os.Unsetenv("SKILLFLEET_TOKEN")
			}
			var o options
			cmd := newCommand(&o)
			cmd.RunE = func(cmd *cobra.Command, _ []string) error { return resolveTokens(cmd, &o) }
			cmd.SetArgs(tc.args)
			if err := cmd.Execute(); err != nil {
				t.Fatal(err)
			}
			cfg, err := o.config()
			if err != nil {
				t.Fatal(err)
			}
			_, err = fleet.NewCoordinatorDaemon(cfg, zap.NewNop())
			if !cmdutil.IsUsage(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want a usage error saying %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "shorttok") {
				t.Errorf("the refusal shows the token: %v", err)
			}
		})
	}
}
