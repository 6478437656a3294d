package main

import (
	"strings"
	"testing"
)

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
