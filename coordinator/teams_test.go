package coordinator_test

import (
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/coordinator"
)

func TestParseTeams(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       map[string]coordinator.TeamPolicy
		err        string // a part of the error; "" for none
	}{
		{"empty", "# nothing yet\n\n", map[string]coordinator.TeamPolicy{}, ""},
		{"every key", "platform weight=2 max_running=64 max_jobs=5000 max_result_bytes=1GiB max_artifact_bytes=300MB max_bundle_bytes=1024\nresearch\n",
			map[string]coordinator.TeamPolicy{
				"platform": {Weight: 2, MaxRunning: 64, MaxJobs: 5000, MaxResultBytes: 1 << 30, MaxArtifactBytes: 300e6, MaxBundleBytes: 1024},
				"research": {},
			}, ""},
		{"a typo in a key", "ci weigth=2\n", nil, "teams.yaml:1: teams.key: \"weigth=2\""},
		{"a key without a value", "ci weight\n", nil, "teams.yaml:1: teams.key"},
		{"a key twice", "\nci weight=2 weight=3\n", nil, "teams.yaml:2: teams.key: weight= given twice"},
		{"a team twice", "ci\nci weight=2\n", nil, "teams.yaml:2: teams.duplicate: team ci is already on line 1"},
		{"a bad team name", "ci/x weight=2\n", nil, "teams.yaml:1: teams.name"},
		{"a zero weight", "ci weight=0\n", nil, "teams.yaml:1: teams.value: weight=\"0\""},
		{"a negative size", "ci max_result_bytes=-1\n", nil, "teams.value"},
		{"a size with an unknown unit", "ci max_result_bytes=1PB\n", nil, "teams.value"},
		{"a size that overflows", "ci max_result_bytes=99999999999TiB\n", nil, "teams.value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := coordinator.ParseTeams(tc.text, "teams.yaml")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("%d teams, want %d", len(got), len(tc.want))
			}
			for team, p := range tc.want {
				if got[team] != p {
					t.Errorf("team %s: %+v, want %+v", team, got[team], p)
				}
			}
		})
	}
}

func TestFormatSize(t *testing.T) {
	for n, want := range map[int64]string{900: "900 B", 12 << 10: "12.0 KiB", 300 << 20: "300.0 MiB", 3 << 29: "1.5 GiB"} {
		if got := coordinator.FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}
