package history_test

import (
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/history"
)

// TestPasswordsInURLs: a password in a PostgreSQL URL, in its user information or its query,
// is found (so it can be refused) and never described (so it is never logged).
func TestPasswordsInURLs(t *testing.T) {
	for _, tc := range []struct {
		target   string
		holds    bool
		describe string
	}{
		{"postgres://fleet:s3cretpw@db:5432/skillfleet", true, "postgres://fleet:xxxxx@db:5432/skillfleet"},
		{"postgres://fleet@db/skillfleet?password=s3cretpw&sslmode=require", true, "postgres://fleet@db/skillfleet?password=xxxxx&sslmode=require"},
		{"postgresql://db/skillfleet?sslpassword=s3cretpw", true, "postgresql://db/skillfleet?sslpassword=xxxxx"},
		{"postgres://fleet@db/skillfleet?sslmode=require", false, "postgres://fleet@db/skillfleet?sslmode=require"},
		{"/var/lib/skillfleet/history.db", false, "/var/lib/skillfleet/history.db"},
	} {
		if got := history.HoldsPassword(tc.target); got != tc.holds {
			t.Errorf("HoldsPassword(%s) = %v, want %v", tc.target, got, tc.holds)
		}
		got := history.Describe(tc.target)
		if got != tc.describe || strings.Contains(got, "s3cretpw") {
			t.Errorf("Describe(%s) = %s, want %s", tc.target, got, tc.describe)
		}
	}
}
