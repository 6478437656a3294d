package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestFleetCommandRefusesBadFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no workers and nothing to drive", []string{"fleet", "--workers", "0"}, "--workers must be at least 1"},
		{"no slots", []string{"fleet", "--slots", "0"}, "--slots must be at least 1"},
		{"fail rate over 1", []string{"fleet", "--fail-rate", "1.5"}, "--fail-rate must be between 0 and 1"},
		{"too many runs", []string{"fleet", "--submit", "--runs", "1001"}, "--runs between 1 and 1000"},
		{"no cases", []string{"fleet", "--submit", "--cases", "0"}, "--cases must be at least 1"},
		{"a positional argument", []string{"fleet", "extra"}, "unknown command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := newCommand()
			cmd.SetArgs(tc.args)
			cmd.SetOut(&bytes.Buffer{})
			cmd.SetErr(&bytes.Buffer{})
			err := cmd.Execute()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// The command line recorded in --out names every flag given, and no secret.
func TestCommandLineLeavesSecretsOut(t *testing.T) {
	cmd := newFleetCommand()
	if err := cmd.ParseFlags([]string{"--workers", "2", "--token", "api-secret-0123456789", "--nats-password", "nats-secret", "--submit"}); err != nil {
		t.Fatal(err)
	}
	got := commandLine(cmd)
	if strings.Contains(got, "--submit true") {
		t.Errorf("the command line %q gives a bool flag a value", got)
	}
	for _, secret := range []string{"api-secret", "nats-secret"} {
		if strings.Contains(got, secret) {
			t.Errorf("the command line %q shows a secret", got)
		}
	}
	for _, want := range []string{"--workers 2", "--token …", "--submit"} {
		if !strings.Contains(got, want) {
			t.Errorf("the command line %q lacks %q", got, want)
		}
	}
}
