package coordinator

import (
	"errors"
	"testing"
	"time"
)

func TestLatestSlot(t *testing.T) {
	at := func(s string) time.Time {
		t.Helper()
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	tests := []struct {
		name, cron, after, now, want string // want "" for no slot
	}{
		{"before the first slot", "0 2 * * *", "2026-03-01T01:00:00Z", "2026-03-01T01:59:59Z", ""},
		{"on the slot", "0 2 * * *", "2026-03-01T01:00:00Z", "2026-03-01T02:00:00Z", "2026-03-01T02:00:00Z"},
		{"slot already fired", "0 2 * * *", "2026-03-01T02:00:00Z", "2026-03-01T03:00:00Z", ""},
		{"three missed days give the latest", "0 2 * * *", "2026-03-01T02:00:00Z", "2026-03-04T05:00:00Z", "2026-03-04T02:00:00Z"},
		{"every minute, a year down", "* * * * *", "2025-03-01T00:00:00Z", "2026-03-01T12:34:56Z", "2026-03-01T12:34:00Z"},
		{"yearly, two years down", "@yearly", "2024-06-01T00:00:00Z", "2026-03-01T00:00:00Z", "2026-01-01T00:00:00Z"},
		{"descriptor", "@daily", "2026-03-01T00:00:00Z", "2026-03-02T00:00:01Z", "2026-03-02T00:00:00Z"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseCron(tc.cron)
			if err != nil {
				t.Fatal(err)
			}
			got := latestSlot(s, at(tc.after), at(tc.now))
			if tc.want == "" {
				if !got.IsZero() {
					t.Fatalf("got slot %s, want none", got)
				}
				return
			}
			if !got.Equal(at(tc.want)) {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestParseCronRefusals(t *testing.T) {
	for _, line := range []string{"", "0 2 * *", "61 * * * *", "@fortnightly", "0 2 * * * *"} {
		_, err := ParseCron(line)
		var inv *InvalidError
		if !errors.As(err, &inv) {
			t.Errorf("ParseCron(%q) = %v, want an InvalidError", line, err)
		}
	}
	for _, name := range []string{"", ".x", "a.b", "a/b", string(make([]byte, 101))} {
		if checkName("suite", name) == nil {
			t.Errorf("checkName(%q) accepted", name)
		}
	}
}
