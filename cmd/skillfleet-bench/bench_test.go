package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestSkillfleetBinaryPrefersTheFlag(t *testing.T) {
	got, err := skillfleetBinary("/opt/skillfleet")
	if err != nil || got != "/opt/skillfleet" {
		t.Fatalf("skillfleetBinary(flag) = %q, %v; want the flag", got, err)
	}
}

func TestCommandRefusesBadArguments(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown benchmark", []string{"--only", "validate,nope"}, `unknown benchmark "nope"`},
		{"positional argument", []string{"extra"}, "unknown command"},
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
