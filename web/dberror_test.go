package web

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/history"
	"github.com/skillfleet/skillfleet/report"
)

// errDriver is what a database driver says: hosts, users, and more than a reader should see.
var errDriver = errors.New(`failed to connect to host=db.internal user=skillfleet database=history: FATAL: password authentication failed for user "skillfleet"`)

type failingHistory struct{}

func (failingHistory) SkillRuns(context.Context, string, string, string, string, int) ([]history.SkillRun, error) {
	return nil, errDriver
}

type failingFlaky struct{}

func (failingFlaky) FlakyCells(context.Context, string, string, string) ([]report.FlakyCell, error) {
	return nil, errDriver
}

// TestDatabaseErrorsAreASentence: a history that fails shows the reader a sentence, never the
// driver's error.
func TestDatabaseErrorsAreASentence(t *testing.T) {
	s := testServer(t, newFake(), func(d *Deps) {
		d.History = failingHistory{}
		d.Flaky = failingFlaky{}
	})
	w := do(s, "GET", "/skills/deploy-checklist?suite=s", nil, login(t, s, operatorToken))
	body := w.Body.String()
	if strings.Contains(body, "db.internal") || strings.Contains(body, "password authentication") {
		t.Fatalf("the page shows the driver's error:\n%s", body)
	}
	if !strings.Contains(body, "The history could not be read") {
		t.Errorf("the page does not say the history could not be read:\n%s", body)
	}
}
