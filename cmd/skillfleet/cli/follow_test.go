package cli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/coordinator"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	runreport "github.com/skillfleet/skillfleet/report"
)

// stream is what one Events call of fakeRuns does.
type stream struct {
	events []*pb.Event
	err    error
	// interrupt cancels the follow's context (a ^C) and waits for it to end.
	interrupt bool
}

// fakeRuns plays a coordinator: each Events call plays the next stream (and one more
// interrupts the follow), each Status call returns the next status (the last one repeats).
type fakeRuns struct {
	streams   []stream
	statuses  []*pb.RunStatus
	statusErr error
	report    runreport.Report
	cancelled *pb.RunStatus
	interrupt context.CancelFunc

	opened, cancels int
}

func (f *fakeRuns) Events(ctx context.Context, _ string, fn func(*pb.Event) error) error {
	f.opened++
	if f.opened > len(f.streams) {
		// A follow that keeps reopening streams would spin forever: interrupt it, so the test
		// fails on the count instead of hanging.
		f.interrupt()
		return ctx.Err()
	}
	s := f.streams[f.opened-1]
	for _, ev := range s.events {
		if err := fn(ev); err != nil {
			return err
		}
	}
	if s.interrupt {
		f.interrupt()
		<-ctx.Done()
		return ctx.Err()
	}
	return s.err
}

func (f *fakeRuns) Status(context.Context, string) (*pb.RunStatus, error) {
	if f.statusErr != nil {
		return nil, f.statusErr
	}
	st := f.statuses[0]
	if len(f.statuses) > 1 {
		f.statuses = f.statuses[1:]
	}
	return st, nil
}

func (f *fakeRuns) Report(context.Context, string) (runreport.Report, error) { return f.report, nil }

func (f *fakeRuns) Cancel(context.Context, string) (*pb.RunStatus, error) {
	f.cancels++
	return f.cancelled, nil
}

func runStatus(s pb.RunState) *pb.RunStatus {
	return &pb.RunStatus{Id: "r1", State: s, TotalJobs: 1}
}

func TestFollow(t *testing.T) {
	running, completed := runStatus(pb.RunState_RUN_STATE_RUNNING), runStatus(pb.RunState_RUN_STATE_COMPLETED)
	cancelled := runStatus(pb.RunState_RUN_STATE_CANCELLED)
	passed := runreport.Report{Run: "r1", Summary: runreport.Summary{Total: 1, Passed: 1}}
	failed := runreport.Report{Run: "r1", Summary: runreport.Summary{Total: 1, Failed: 1}}
	noDelay := remotePolicy()
	noDelay.retryDelay = 0
	for _, tc := range []struct {
		name   string
		runs   fakeRuns
		policy followPolicy
		// want: exit code, Events calls, Cancel calls, and what stderr holds.
		code, opened, cancels int
		stderr                string
	}{
		{
			name:   "the run ends with its stream",
			runs:   fakeRuns{streams: []stream{{events: []*pb.Event{{Payload: &pb.Event_Status{Status: completed}}}}}, statuses: []*pb.RunStatus{completed}, report: passed},
			policy: inProcessPolicy(), code: ExitOK, opened: 1,
		},
		{
			name:   "a failed case sets the exit code",
			runs:   fakeRuns{streams: []stream{{}}, statuses: []*pb.RunStatus{completed}, report: failed},
			policy: remotePolicy(), code: ExitErrors, opened: 1,
		},
		{
			name:   "a stream dropped while the run goes on is opened again",
			runs:   fakeRuns{streams: []stream{{}, {}}, statuses: []*pb.RunStatus{running, completed}, report: passed},
			policy: inProcessPolicy(), code: ExitOK, opened: 2,
		},
		{
			name:   "a broken remote stream is reconnected",
			runs:   fakeRuns{streams: []stream{{err: io.ErrUnexpectedEOF}, {}}, statuses: []*pb.RunStatus{running, completed}, report: passed},
			policy: noDelay, code: ExitOK, opened: 2, stderr: "event stream interrupted (unexpected EOF); reconnecting",
		},
		{
			name:   "a remote refusal is final",
			runs:   fakeRuns{streams: []stream{{err: &coordinator.APIError{Status: 404, Message: "no such run"}}}, statusErr: &coordinator.APIError{Status: 404, Message: "no such run"}},
			policy: noDelay, code: ExitErrors, opened: 1,
		},
		{
			name:   "an in-process error is final",
			runs:   fakeRuns{streams: []stream{{err: errors.New("run r1 not found")}}, statusErr: errors.New("run r1 not found")},
			policy: inProcessPolicy(), code: ExitErrors, opened: 1,
		},
		{
			name:   "an interrupt cancels an in-process run and reports what ran",
			runs:   fakeRuns{streams: []stream{{interrupt: true}}, statuses: []*pb.RunStatus{running}, cancelled: cancelled, report: passed},
			policy: inProcessPolicy(), code: ExitErrors, opened: 1, cancels: 1, stderr: "interrupted: cancelling the run",
		},
		{
			name:   "an interrupt leaves a remote run going",
			runs:   fakeRuns{streams: []stream{{interrupt: true}}, statuses: []*pb.RunStatus{running}},
			policy: noDelay, code: ExitErrors, opened: 1, stderr: "the run goes on: skillfleet runs cancel r1",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			runs := tc.runs
			runs.interrupt = cancel
			var stdout, stderr bytes.Buffer
			err := follow(ctx, &env{stdout: &stdout, stderr: &stderr}, &runs, running, tc.policy, outputFlags{format: "json"})
			if code := exitCode(err); code != tc.code {
				t.Errorf("exit code %d (%v), want %d", code, err, tc.code)
			}
			if runs.opened != tc.opened || runs.cancels != tc.cancels {
				t.Errorf("opened %d streams and cancelled %d times, want %d and %d", runs.opened, runs.cancels, tc.opened, tc.cancels)
			}
			if all := stderr.String() + errString(err); !strings.Contains(all, tc.stderr) {
				t.Errorf("stderr and error %q do not say %q", all, tc.stderr)
			}
			if tc.code != ExitOK && tc.cancels == 0 {
				return // no report: the follow gave up
			}
			if rep, err := runreport.FromJSON(&stdout); err != nil || rep.Run != "r1" {
				t.Errorf("stdout holds no report of r1: %v %q", err, stdout.String())
			}
		})
	}
}

func exitCode(err error) int {
	var ee *exitError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		return ee.code
	}
	return -1
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
