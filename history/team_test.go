package history

import (
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// teamStatus is status with the run owned by team.
func teamStatus(team, id string, state pb.RunState, created time.Time) *pb.RunStatus {
	st := status(id, "nightly", pb.Priority_PRIORITY_SCHEDULED, state, created)
	st.Spec.Team = team
	return st
}

// seedTeams writes two teams' runs of suite "nightly", interleaved in time, one result each
// (skill sk, case c1, cell key k): the default team's (written once as "" and once as
// "default") pass then fail, teamB's fail then pass. Were the teams mixed, every query below
// would answer with the other team's runs, which are newer than or between its own.
func seedTeams(t *testing.T, s *Store) {
	t.Helper()
	h := time.Hour
	for _, r := range []struct {
		team, id string
		at       time.Time
		v        pb.Verdict
	}{
		{"", "d1", t0, pb.Verdict_VERDICT_PASSED},
		{"teamB", "b1", t0.Add(h), pb.Verdict_VERDICT_FAILED},
		{"default", "d2", t0.Add(2 * h), pb.Verdict_VERDICT_FAILED},
		{"teamB", "b2", t0.Add(3 * h), pb.Verdict_VERDICT_PASSED},
	} {
		st := teamStatus(r.team, r.id, pb.RunState_RUN_STATE_COMPLETED, r.at)
		res := result(r.id, "j1", "sk", "c1", 1, r.v, "assertion failed", r.at)
		res.CellKey, res.CellDigest = "k", "d"
		if err := s.write(ctx(), []Run{FromStatus(st)}, []Result{FromResult(res, st.GetSpec(), r.at)}); err != nil {
			t.Fatal(err)
		}
	}
}

// runIDs lists the runs of cells' verdicts in order.
func runIDs(cells []Cell) []string {
	var out []string
	for _, c := range cells {
		for _, v := range c.Verdicts {
			out = append(out, v.RunID)
		}
	}
	return out
}

// TestTeamsShareNoSuite: two teams' runs under one suite name are two suites: every query by
// suite answers one team's runs only, and "" is the default team.
func TestTeamsShareNoSuite(t *testing.T) {
	forEachBackend(t, func(t *testing.T, target string) {
		s := open(t, target)
		seedTeams(t, s)
		tests := []struct {
			team     string
			previous string   // PreviousRunOf a run after all of them
			runs     []string // the suite's runs, newest first
			reusable string   // the run cell k is reusable from
		}{
			{"", "d2", []string{"d2", "d1"}, "d1"},
			{"default", "d2", []string{"d2", "d1"}, "d1"},
			{"teamB", "b2", []string{"b2", "b1"}, "b2"},
			{"teamC", "", nil, ""},
		}
		for _, tt := range tests {
			t.Run("team "+tt.team, func(t *testing.T) {
				prev, ok, err := s.PreviousRunOf(ctx(), tt.team, "nightly", "scheduled", t0.Add(10*time.Hour), "later")
				if err != nil || ok != (tt.previous != "") || prev.ID != tt.previous {
					t.Errorf("PreviousRunOf = %q %v %v, want %q", prev.ID, ok, err, tt.previous)
				}
				recent, err := s.RecentVerdicts(ctx(), tt.team, "nightly", "", 10)
				if got := runIDs(recent); err != nil || !slices.Equal(got, tt.runs) {
					t.Errorf("RecentVerdicts: runs %v, %v; want %v", got, err, tt.runs)
				}
				window, err := s.WindowVerdicts(ctx(), tt.team, "nightly", "scheduled", 10, "")
				if got := runIDs(window); err != nil || !slices.Equal(got, tt.runs) {
					t.Errorf("WindowVerdicts: runs %v, %v; want %v", got, err, tt.runs)
				}
				found, err := s.Reusable(ctx(), tt.team, "nightly", t0.Add(-time.Hour), "", map[string]int{"k": 1})
				if err != nil || found["k"].Run != tt.reusable {
					t.Errorf("Reusable = %v, %v; want cell k from %q", found, err, tt.reusable)
				}
				skillRuns, err := s.SkillRuns(ctx(), tt.team, "nightly", "", "sk", 10)
				var got []string
				for _, r := range skillRuns {
					got = append(got, r.RunID)
				}
				if err != nil || !slices.Equal(got, tt.runs) {
					t.Errorf("SkillRuns: %v, %v; want %v", got, err, tt.runs)
				}
			})
		}
		// PreviousRun reads the stored run's team: b1 lies between d1 and d2, d1 between b1
		// and b2.
		for run, want := range map[string]string{"d2": "d1", "b2": "b1", "d1": "", "b1": ""} {
			prev, ok, err := s.PreviousRun(ctx(), run)
			if err != nil || ok != (want != "") || prev.ID != want {
				t.Errorf("PreviousRun(%s) = %q %v %v, want %q", run, prev.ID, ok, err, want)
			}
		}
	})
}

// TestTeamIsKept: a run's team reaches its row and its results' rows whichever way they are
// written (the writer's batch, Backfill, the archive), and comes back in its status.
func TestTeamIsKept(t *testing.T) {
	forEachBackend(t, func(t *testing.T, target string) {
		s := open(t, target)
		seq := func(id string) func(func(*pb.Result, error) bool) {
			return func(yield func(*pb.Result, error) bool) {
				yield(result(id, "j1", "sk", "c1", 1, pb.Verdict_VERDICT_PASSED, "", t0), nil)
			}
		}
		tests := []struct {
			name, team, want string
			write            func(st *pb.RunStatus) error
		}{
			{"batch", "teamB", "teamB", func(st *pb.RunStatus) error {
				res := FromResult(result(st.GetId(), "j1", "sk", "c1", 1, pb.Verdict_VERDICT_PASSED, "", t0), st.GetSpec(), t0)
				return s.write(ctx(), []Run{FromStatus(st)}, []Result{res})
			}},
			{"backfill", "teamB", "teamB", func(st *pb.RunStatus) error {
				_, err := s.Backfill(ctx(), st, seq(st.GetId()))
				return err
			}},
			{"backfill of no team", "", "default", func(st *pb.RunStatus) error {
				_, err := s.Backfill(ctx(), st, seq(st.GetId()))
				return err
			}},
			{"archive", "teamC", "teamC", func(st *pb.RunStatus) error {
				r := result(st.GetId(), "j1", "sk", "c1", 1, pb.Verdict_VERDICT_PASSED, "", t0)
				if _, err := s.WriteArchive(ctx(), st, []byte(`{}`), each(r), ArchiveLimits{}); err != nil {
					return err
				}
				return s.WriteResults(ctx(), []Result{FromResult(r, st.GetSpec(), t0)})
			}},
		}
		for i, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				id := fmt.Sprint("t", i)
				if err := tt.write(teamStatus(tt.team, id, pb.RunState_RUN_STATE_COMPLETED, t0)); err != nil {
					t.Fatal(err)
				}
				if r, err := s.Run(ctx(), id); err != nil || r.Team != tt.want {
					t.Errorf("run's team %q, %v; want %q", r.Team, err, tt.want)
				}
				if rows, err := s.RunResults(ctx(), id); err != nil || len(rows) != 1 || rows[0].Team != tt.want {
					t.Errorf("results %+v, %v; want one of team %q", rows, err, tt.want)
				}
				if st, err := s.Status(ctx(), id); err != nil || st.GetSpec().GetTeam() != tt.want {
					t.Errorf("status's team %q, %v; want %q", st.GetSpec().GetTeam(), err, tt.want)
				}
			})
		}
		// The finished run's row replaces a progress row, team included.
		running := FromStatus(teamStatus("", "u1", pb.RunState_RUN_STATE_RUNNING, t0))
		done := FromStatus(teamStatus("teamB", "u1", pb.RunState_RUN_STATE_COMPLETED, t0))
		for _, r := range []Run{running, done} {
			if err := s.WriteRun(ctx(), r); err != nil {
				t.Fatal(err)
			}
		}
		if r, err := s.Run(ctx(), "u1"); err != nil || r.Team != "teamB" {
			t.Errorf("the finished row's team %q, %v; want teamB", r.Team, err)
		}
		// A row without an archive gives its status from the row: the team with it.
		if st := ToStatus(Run{ID: "x", Team: "teamB", Suite: "nightly"}); st.GetSpec().GetTeam() != "teamB" {
			t.Errorf("ToStatus: team %q", st.GetSpec().GetTeam())
		}
		// A run's row written bare (Team "") is the default team's, as the queries read "".
		if err := s.WriteRun(ctx(), Run{ID: "bare", Suite: "nightly", Lane: "scheduled", State: "completed", CreatedAt: t0.Add(time.Hour), FinishedAt: t0.Add(2 * time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if prev, ok, err := s.PreviousRunOf(ctx(), "default", "nightly", "scheduled", t0.Add(3*time.Hour), "later"); err != nil || !ok || prev.ID != "bare" || prev.Team != "default" {
			t.Errorf("a bare row: %+v %v %v, want run bare of team default", prev, ok, err)
		}
	})
}

// openAt opens target with its schema brought to version only, as an older skillfleet left it.
func openAt(t *testing.T, target string, version int) *Store {
	t.Helper()
	var (
		s   *Store
		err error
	)
	if IsPostgres(target) {
		s, err = openPostgres(Options{Target: target})
	} else {
		s, err = openSQLite(target)
	}
	if err != nil {
		t.Fatal(err)
	}
	ms, err := loadMigrations(s.d.name)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.applyAll(ctx(), ms[:version]); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestUpgradeToTeams: a history of schema version 3 holding runs and results migrates to the
// latest with them in the default team, still found by its queries and by no other team's.
func TestUpgradeToTeams(t *testing.T) {
	forEachBackend(t, func(t *testing.T, target string) {
		old := openAt(t, target, 3)
		h := time.Hour
		for i, r := range []struct {
			id      string
			at      time.Time
			verdict string
		}{{"o1", t0, "passed"}, {"o2", t0.Add(h), "failed"}} {
			if _, err := old.db.ExecContext(ctx(), old.d.bind(`INSERT INTO runs (run_id, suite, lane, state, created_ms, finished_ms)
VALUES ($1, 'nightly', 'scheduled', 'completed', $2, $3)`), r.id, r.at.UnixMilli(), r.at.Add(time.Minute).UnixMilli()); err != nil {
				t.Fatalf("a version 3 run: %v", err)
			}
			if _, err := old.db.ExecContext(ctx(), old.d.bind(`INSERT INTO results (run_id, job_id, suite, lane, skill, case_name, agent,
	model, judge_model, arm, epoch, attempt, verdict, reason_class, reason, prompt_tokens, completion_tokens, cost, duration_ms,
	case_digest, finished_ms, recorded_ms, cell_key, cell_digest)
VALUES ($1, 'j1', 'nightly', 'scheduled', 'sk', 'c1', 'builtin', 'm1', '', 'with_skill', 1, 1, $2, '', '', 0, 0, 0, 0, '', $3, $4, 'k', 'd')`),
				r.id, r.verdict, r.at.UnixMilli(), r.at.UnixMilli()); err != nil {
				t.Fatalf("a version 3 result %d: %v", i, err)
			}
		}
		if v, err := old.SchemaVersion(ctx()); err != nil || v != 3 {
			t.Fatalf("schema version %d, %v; want 3", v, err)
		}
		old.Close()

		s := open(t, target)
		if v, err := s.SchemaVersion(ctx()); err != nil || v != 7 {
			t.Fatalf("after the upgrade: schema version %d, %v; want 7", v, err)
		}
		if r, err := s.Run(ctx(), "o2"); err != nil || r.Team != "default" {
			t.Errorf("an old run's team %q, %v; want default", r.Team, err)
		}
		if rows, err := s.RunResults(ctx(), "o1"); err != nil || len(rows) != 1 || rows[0].Team != "default" {
			t.Errorf("an old run's results %+v, %v; want one of team default", rows, err)
		}
		if prev, _, err := s.PreviousRun(ctx(), "o2"); err != nil || prev.ID != "o1" {
			t.Errorf("PreviousRun(o2) = %q, %v; want o1", prev.ID, err)
		}
		for _, team := range []string{"", "default", "teamB"} {
			var want []string
			wantReuse := map[string]Reusable{}
			if team != "teamB" {
				want = []string{"o2", "o1"}
				wantReuse["k"] = Reusable{Run: "o1", CellDigest: "d", FinishedAt: t0}
			}
			window, err := s.WindowVerdicts(ctx(), team, "nightly", "scheduled", 10, "")
			if got := runIDs(window); err != nil || !slices.Equal(got, want) {
				t.Errorf("team %q: WindowVerdicts runs %v, %v; want %v", team, got, err, want)
			}
			recent, err := s.RecentVerdicts(ctx(), team, "nightly", "", 10)
			if got := runIDs(recent); err != nil || !slices.Equal(got, want) {
				t.Errorf("team %q: RecentVerdicts runs %v, %v; want %v", team, got, err, want)
			}
			found, err := s.Reusable(ctx(), team, "nightly", t0.Add(-h), "", map[string]int{"k": 1})
			if err != nil || !maps.Equal(found, wantReuse) {
				t.Errorf("team %q: Reusable %v, %v; want %v", team, found, err, wantReuse)
			}
			skillRuns, err := s.SkillRuns(ctx(), team, "nightly", "", "sk", 10)
			var got []string
			for _, r := range skillRuns {
				got = append(got, r.RunID)
			}
			if err != nil || !slices.Equal(got, want) {
				t.Errorf("team %q: SkillRuns %v, %v; want %v", team, got, err, want)
			}
		}
		// The suite queries' indexes lead with the team now (and the cell index, which no
		// query reads, is gone since version 5).
		for _, idx := range []string{"runs_team_suite_lane_created", "results_team_reuse", "audit_team_id", "audit_at"} {
			if !hasIndex(t, s, idx) {
				t.Errorf("no index %s", idx)
			}
		}
		for _, idx := range []string{"runs_suite_lane_created", "results_cell", "results_reuse", "results_team_cell"} {
			if hasIndex(t, s, idx) {
				t.Errorf("index %s is still there", idx)
			}
		}
	})
}

func hasIndex(t *testing.T, s *Store, name string) bool {
	t.Helper()
	q := `SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = $1`
	if s.Backend() == "postgres" {
		q = `SELECT 1 FROM pg_indexes WHERE indexname = $1`
	}
	var one int
	err := s.db.QueryRowContext(ctx(), s.d.bind(q), name).Scan(&one)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		t.Fatal(err)
	}
	return err == nil
}
