package coordinator

import "testing"

func TestHidePaths(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"open /var/lib/skillfleet/spool/skillfleet-bundle-123: no such file or directory", "open .../skillfleet-bundle-123: no such file or directory"},
		{`stat "/data/coordinator/bundles/ab/SKILL.md"`, `stat ".../SKILL.md"`},
		{"rename /tmp/x /tmp/y/z: file exists", "rename .../x .../z: file exists"},
		{"dir=/srv/a/b", "dir=.../b"},
		{"skills/env-selector/cases.yaml:3: error case.name", "skills/env-selector/cases.yaml:3: error case.name"},
		{"fetch http://nats.example/a/b failed", "fetch http://nats.example/a/b failed"},
		{"nats://127.0.0.1:4222 refused", "nats://127.0.0.1:4222 refused"},
		{"deadline must be a positive duration such as 2h", "deadline must be a positive duration such as 2h"},
	} {
		if got := hidePaths(tc.in); got != tc.want {
			t.Errorf("hidePaths(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
