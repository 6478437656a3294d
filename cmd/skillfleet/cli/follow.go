package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/skillfleet/skillfleet/coordinator"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	runreport "github.com/skillfleet/skillfleet/report"
)

// followedRuns is what following a run needs of a coordinator: the in-process one of
// `skillfleet test` (*coordinator.Coordinator) and a remote one for `submit --follow`
// (remoteRuns, over *coordinator.Client).
type followedRuns interface {
	Status(ctx context.Context, id string) (*pb.RunStatus, error)
	// Events calls fn for each event until the stream closes (nil), fn fails, or ctx ends.
	Events(ctx context.Context, id string, fn func(*pb.Event) error) error
	Report(ctx context.Context, id string) (runreport.Report, error)
	Cancel(ctx context.Context, id string) (*pb.RunStatus, error)
}

// followPolicy is where following an in-process run and a remote one differ.
type followPolicy struct {
	// cancelOnInterrupt: the run lives in this process and dies with it, so an interrupt
	// cancels it and reports what ran. A remote run goes on without us.
	cancelOnInterrupt bool
	// retryDelay is the pause before an event stream is opened again while the run goes on:
	// a remote coordinator may be restarting, and must not be hammered meanwhile.
	retryDelay time.Duration
	// retryable says whether an error may go away by opening the stream again; nil: none does.
	retryable func(error) bool
}

// inProcessPolicy follows a run of the coordinator in this process: its errors are final, and
// a dropped event stream (a slow subscriber) is picked up again at once.
func inProcessPolicy() followPolicy { return followPolicy{cancelOnInterrupt: true} }

// remotePolicy follows a run on a coordinator over HTTP.
func remotePolicy() followPolicy {
	return followPolicy{retryDelay: 2 * time.Second, retryable: retryableAPIError}
}

// retryableAPIError is false for the coordinator's refusals (401, 404, ...), which will not
// go away by retrying; timeouts, throttling and broken connections may.
func retryableAPIError(err error) bool {
	var ae *coordinator.APIError
	return !errors.As(err, &ae) || ae.Status < 400 || ae.Status >= 500 || ae.Status == 408 || ae.Status == 429
}

// follow shows a run's progress on stderr until it ends, then writes its report (finishRun).
// An event stream that closes before the run ends is opened again.
func follow(ctx context.Context, e *env, runs followedRuns, st *pb.RunStatus, p followPolicy, o outputFlags) error {
	id := st.GetId()
	prog := newProgress(e.stderr, int(st.GetTotalJobs()))
	for {
		err := runs.Events(ctx, id, func(ev *pb.Event) error { prog.event(ev); return nil })
		if ctx.Err() != nil {
			prog.finish()
			if !p.cancelOnInterrupt {
				return failf("interrupted; the run goes on: skillfleet runs cancel %s", id)
			}
			fmt.Fprintln(e.stderr, "interrupted: cancelling the run")
			cur, err := runs.Cancel(context.WithoutCancel(ctx), id)
			if err != nil {
				return failf("%v", err)
			}
			rep, _ := runs.Report(context.WithoutCancel(ctx), id)
			return finishRun(e, cur, rep, o)
		}
		cur, serr := runs.Status(ctx, id)
		if serr == nil && cur.GetState() != pb.RunState_RUN_STATE_RUNNING && cur.GetState() != pb.RunState_RUN_STATE_PENDING {
			prog.finish()
			rep, err := runs.Report(ctx, id)
			if err != nil {
				return apiFailure(e, err)
			}
			return finishRun(e, cur, rep, o)
		}
		if err == nil {
			err = serr
		}
		if err != nil {
			if p.retryable == nil || !p.retryable(err) {
				prog.finish()
				return apiFailure(e, err)
			}
			fmt.Fprintf(e.stderr, "event stream interrupted (%v); reconnecting\n", err)
		}
		if p.retryDelay > 0 {
			t := time.NewTimer(p.retryDelay)
			select {
			case <-t.C:
			case <-ctx.Done():
			}
			t.Stop()
		}
	}
}

// remoteRuns follows runs on a coordinator over HTTP; its Report decodes the JSON report.
type remoteRuns struct{ *coordinator.Client }

// Report fetches and decodes a run's report.
func (r remoteRuns) Report(ctx context.Context, id string) (runreport.Report, error) {
	var buf bytes.Buffer
	if err := r.Client.Report(ctx, id, "json", &buf); err != nil {
		return runreport.Report{}, err
	}
	rep, err := runreport.FromJSON(&buf)
	if err != nil {
		return runreport.Report{}, fmt.Errorf("report: %w", err)
	}
	return rep, nil
}
