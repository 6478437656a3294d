package fleet

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/skillfleet/skillfleet/history"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/worker"
)

// A run's counted results and its final state land in the SQLite history, through the
// coordinator's History and the background writer.
func TestRunResultsLandInHistory(t *testing.T) {
	exec := newScripted()
	exec.fail = func(j *pb.Job) bool { return j.GetCaseName() == "usage-error" }
	db := filepath.Join(t.TempDir(), "state", "history.db")
	f, err := StartInProcess(context.Background(), InProcessConfig{
		DataDir: t.TempDir(), Workers: 2, Slots: 2, Queue: testQueue(), Executor: exec,
		Worker:  worker.Config{RetryDelay: 50 * time.Millisecond, FetchWait: 100 * time.Millisecond, DrainGrace: 5 * time.Second},
		History: HistoryConfig{Target: db, Writer: history.WriterConfig{FlushEvery: 20 * time.Millisecond}},
		Log:     zaptest.NewLogger(t).Named(t.Name()),
	})
	if err != nil {
		t.Fatal(err)
	}
	st := submit(t, f.Coordinator, &pb.RunSpec{Name: "examples", Priority: pb.Priority_PRIORITY_SCHEDULED})
	final := wait(t, f.Coordinator, st.GetId())
	if err := f.Close(context.Background()); err != nil { // writes what is queued
		t.Fatal(err)
	}

	s, err := history.Open(context.Background(), history.Options{Target: db})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	run, err := s.Run(context.Background(), st.GetId())
	if err != nil {
		t.Fatal(err)
	}
	if run.Suite != "examples" || run.Lane != "scheduled" || run.State != "completed" || run.FinishedAt.IsZero() ||
		run.TotalJobs != int(final.GetTotalJobs()) || run.Cases.Failed != 1 {
		t.Errorf("run %+v, final status %v", run, final)
	}
	rows, err := s.RunResults(context.Background(), st.GetId())
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != int(final.GetTotalJobs()) {
		t.Fatalf("%d rows, want one per job (%d)", len(rows), final.GetTotalJobs())
	}
	failed := 0
	for _, r := range rows {
		if r.Suite != "examples" || r.Skill == "" || r.Case == "" || r.Arm != "with_skill" {
			t.Errorf("row %+v", r)
		}
		if r.Verdict == "failed" {
			failed++
			if r.Case != "usage-error" || r.ReasonClass != history.ClassAssertion {
				t.Errorf("failed row %+v", r)
			}
		}
	}
	if failed == 0 {
		t.Error("the failing case has no failed row")
	}
}

func TestHistoryPassword(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "pw")
	if err := os.WriteFile(file, []byte("s3cret\nignored\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TEST_HISTORY_PW", "from-env")
	for _, tt := range []struct {
		file, want string
		wantErr    bool
	}{
		{"", "from-env", false},
		{file, "s3cret", false},
		{empty, "", true},
		{filepath.Join(dir, "missing"), "", true},
	} {
		got, err := HistoryPassword(tt.file, "TEST_HISTORY_PW")
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("HistoryPassword(%q) = %q, %v", tt.file, got, err)
		}
	}
}

func TestOpenHistoryOffAndRefusals(t *testing.T) {
	for _, target := range []string{"", HistoryOff} {
		if h, err := OpenHistory(context.Background(), HistoryConfig{Target: target}, zaptest.NewLogger(t)); h != nil || err != nil {
			t.Errorf("target %q: %v, %v; want no history", target, h, err)
		}
	}
	_, err := OpenHistory(context.Background(), HistoryConfig{Target: filepath.Join(t.TempDir(), "h.db"), Password: "x"}, zaptest.NewLogger(t))
	if err == nil {
		t.Error("a password with a SQLite file was accepted")
	}
}

func TestDefaultLocalHistory(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/xdg/state")
	if got, err := DefaultLocalHistory(); err != nil || got != "/xdg/state/skillfleet/history.db" {
		t.Errorf("with XDG_STATE_HOME: %q, %v", got, err)
	}
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("HOME", "/home/u")
	if got, err := DefaultLocalHistory(); err != nil || got != "/home/u/.local/state/skillfleet/history.db" {
		t.Errorf("without: %q, %v", got, err)
	}
}
