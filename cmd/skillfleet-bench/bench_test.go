package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/skill"
	"github.com/skillfleet/skillfleet/suite"
	"github.com/skillfleet/skillfleet/suite/suitetest"
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
		{"fleet: no workers and nothing to drive", []string{"fleet", "--workers", "0"}, "--workers must be at least 1"},
		{"fleet: no slots", []string{"fleet", "--slots", "0"}, "--slots must be at least 1"},
		{"fleet: fail rate over 1", []string{"fleet", "--fail-rate", "1.5"}, "--fail-rate must be between 0 and 1"},
		{"fleet: too many runs", []string{"fleet", "--submit", "--runs", "1001"}, "--runs between 1 and 1000"},
		{"fleet: no cases", []string{"fleet", "--submit", "--cases", "0"}, "--cases must be at least 1"},
		{"fleet: a positional argument", []string{"fleet", "extra"}, "unknown command"},
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

// TestPlannedJobs: the job count the plan benchmark reports is what its suite plans into.
func TestPlannedJobs(t *testing.T) {
	for _, shape := range [][2]int{{23, 10}, {10, 100}, {1, 1}} {
		root := t.TempDir()
		if err := suitetest.Generate(root, shape[0], shape[1]); err != nil {
			t.Fatal(err)
		}
		s := suite.Load([]string{root}, skill.Options{})
		p, err := s.Plan(suite.PlanOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := plannedJobs(shape[0], shape[1]); got != len(p.Jobs) {
			t.Errorf("plannedJobs(%d, %d) = %d, the plan has %d", shape[0], shape[1], got, len(p.Jobs))
		}
	}
}
