package history

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// dashboardFile is the Grafana dashboard over the history that the Helm chart ships.
const dashboardFile = "../deploy/helm/skillfleet/files/history-dashboard.json"

type historyDashboard struct {
	UID    string `json:"uid"`
	Panels []struct {
		ID      int    `json:"id"`
		Title   string `json:"title"`
		Targets []struct {
			Format string `json:"format"`
			RawSQL string `json:"rawSql"`
		} `json:"targets"`
	} `json:"panels"`
}

// grafanaMacro is $__timeFilter(expr); Grafana expands it to a BETWEEN on the dashboard's
// time range.
var grafanaMacro = regexp.MustCompile(`\$__timeFilter\(((?:[^()]|\([^()]*\))*)\)`)

// expand does what Grafana does to a panel's SQL before it sends it: the time range covers
// the seeded history, $suite is the seeded suite (a multi-value variable: a quoted list) and
// $lane its lane.
func expand(q string) string {
	q = grafanaMacro.ReplaceAllString(q, "$1 BETWEEN to_timestamp(0) AND now() + interval '1 day'")
	q = strings.ReplaceAll(q, "$suite", "'nightly'")
	q = strings.ReplaceAll(q, "$team", "default")
	return strings.ReplaceAll(q, "$lane", "scheduled")
}

// seedNights writes eight nightly runs of suite "nightly", one a day: a case that always
// passes, one that breaks at night 5 and stays broken, one that alternates, and one that
// passes but errors in the sandbox every other night (infrastructure, never flaky).
func seedNights(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	base := time.Now().Add(-10 * 24 * time.Hour).Truncate(time.Hour)
	for night := range 8 {
		id := fmt.Sprintf("r%02d", night)
		at := base.Add(time.Duration(night) * 24 * time.Hour)
		outcome := map[string]pb.Verdict{
			"steady": pb.Verdict_VERDICT_PASSED,
			"breaks": pb.Verdict_VERDICT_PASSED,
			"flaky":  pb.Verdict_VERDICT_PASSED,
			"infra":  pb.Verdict_VERDICT_PASSED,
		}
		if night >= 5 {
			outcome["breaks"] = pb.Verdict_VERDICT_FAILED
		}
		if night%2 == 1 {
			outcome["flaky"] = pb.Verdict_VERDICT_FAILED
			outcome["infra"] = pb.Verdict_VERDICT_ERRORED
		}
		var results []*pb.Result
		passed := 0
		for _, c := range slices.Sorted(mapsKeys(outcome)) {
			v := outcome[c]
			r := &pb.Result{RunId: id, JobId: id + "-" + c, Skill: "s", CaseName: c, Epoch: 1, Attempt: 1, Agent: "default", Model: "m",
				Verdict: v, Usage: &pb.Usage{PromptTokens: 100, CompletionTokens: 10, Cost: 0.01}, Timings: &pb.Timings{TotalMs: 1000},
				FinishedAt: timestamppb.New(at.Add(time.Minute))}
			switch v {
			case pb.Verdict_VERDICT_PASSED:
				r.Assertions = []*pb.AssertionResult{{Type: "output_contains", Passed: true}}
				passed++
			case pb.Verdict_VERDICT_FAILED:
				r.Assertions = []*pb.AssertionResult{{Type: "output_contains"}}
			default:
				r.Reason = "sandbox: the container would not start after 3 tries"
			}
			results = append(results, r)
		}
		st := &pb.RunStatus{Id: id, State: pb.RunState_RUN_STATE_COMPLETED,
			Spec:       &pb.RunSpec{Id: id, Name: "nightly", Priority: pb.Priority_PRIORITY_SCHEDULED, CreatedAt: timestamppb.New(at)},
			FinishedAt: timestamppb.New(at.Add(time.Hour)), TotalJobs: 4, DoneJobs: 4,
			Cases: &pb.Counts{Total: 4, Passed: int32(passed), Failed: int32(4 - passed)}}
		if _, err := s.Backfill(ctx, st, func(yield func(*pb.Result, error) bool) {
			for _, r := range results {
				if !yield(r, nil) {
					return
				}
			}
		}); err != nil {
			t.Fatal(err)
		}
	}
}

func mapsKeys(m map[string]pb.Verdict) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestHistoryDashboardQueries runs every query of the history dashboard against a real
// PostgreSQL holding eight seeded nights, and checks what each panel would show.
func TestHistoryDashboardQueries(t *testing.T) {
	data, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d historyDashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	ctx := context.Background()
	url := postgresURL(t)
	s, err := Open(ctx, Options{Target: url})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	seedNights(t, s)
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	rows := map[string][][]string{} // panel title -> rows, each column as text
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			q := expand(tg.RawSQL)
			if strings.Contains(q, "$") {
				t.Errorf("panel %q: a variable is left unexpanded: %s", p.Title, q)
			}
			rs, err := db.QueryContext(ctx, q)
			if err != nil {
				t.Errorf("panel %q: %v\n%s", p.Title, err, q)
				continue
			}
			cols, _ := rs.Columns()
			if tg.Format == "time_series" && (len(cols) < 2 || cols[0] != "time") {
				t.Errorf("panel %q: a time series needs its first column named time, got %v", p.Title, cols)
			}
			for rs.Next() {
				vals := make([]sql.NullString, len(cols))
				ptrs := make([]any, len(cols))
				for i := range vals {
					ptrs[i] = &vals[i]
				}
				if err := rs.Scan(ptrs...); err != nil {
					t.Fatalf("panel %q: %v", p.Title, err)
				}
				row := make([]string, len(cols))
				for i, v := range vals {
					row[i] = v.String
				}
				rows[p.Title] = append(rows[p.Title], row)
			}
			if err := rs.Err(); err != nil {
				t.Errorf("panel %q: %v", p.Title, err)
			}
			rs.Close()
		}
	}

	// Pass rate per suite: eight points; the first night all four cases passed.
	if r := rows["Pass rate per suite"]; len(r) != 8 || r[0][2] != "1" {
		t.Errorf("pass rate per suite: %v", r)
	}
	// Regressions, nights 2 to 8 (the first has no previous run): the alternating case fails
	// after passing on nights 2, 4, 6 and 8, and the breaking case on night 6; the sandbox's
	// errors are not failures.
	var regressions []string
	for _, r := range rows["Regressions per night"] {
		regressions = append(regressions, r[2])
	}
	if want := []string{"1", "0", "1", "0", "2", "0", "1"}; !slices.Equal(regressions, want) {
		t.Errorf("regressions per night %v, want %v", regressions, want)
	}
	// Flaky: the alternating case only; the case errored by the sandbox every other night is not.
	flaky := rows["Flaky cases (last 20 runs)"]
	if len(flaky) != 1 || flaky[0][2] != "flaky" || flaky[0][6] != "7" {
		t.Errorf("flaky list %v, want the one alternating case with 7 flips", flaky)
	}
	// Spend: 4 results a night of 110 tokens.
	for _, r := range rows["Tokens and cost per night"] {
		if r[1] != "440" {
			t.Errorf("tokens per night %v, want 440", r)
		}
	}
	if len(rows["Pass rate per skill"]) != 8 {
		t.Errorf("pass rate per skill: %v", rows["Pass rate per skill"])
	}
}
