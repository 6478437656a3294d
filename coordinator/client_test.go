package coordinator_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/skillfleet/skillfleet/coordinator"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// futureCoordinator answers as a newer coordinator might: every message carries a field this
// client does not know, and the event stream has an event kind it does not know.
func futureCoordinator(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	status := `{"id":"r1","state":"RUN_STATE_COMPLETED","total_jobs":2,"done_jobs":2,"added_in_v2":{"x":1}}`
	mux.HandleFunc("GET /v1/runs/r1", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintln(w, status)
	})
	mux.HandleFunc("GET /v1/runs", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"runs":[%s],"next_page":"abc"}`+"\n", status)
	})
	mux.HandleFunc("GET /v1/runs/r1/events", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, ": keep-alive\n\n")
		fmt.Fprint(w, "id: 1\nevent: progress\ndata: {\"percent\":50}\n\n")
		fmt.Fprint(w, "id: 2\nevent: result\ndata: {\"job_id\":\"j1\",\"run_id\":\"r1\",\"verdict\":\"VERDICT_PASSED\",\"cost_cents\":3}\n\n")
		fmt.Fprintf(w, "id: 3\nevent: status\ndata: %s\n\n", status)
	})
	mux.HandleFunc("GET /v1/runs/r2", func(w http.ResponseWriter, _ *http.Request) {
		// A proxy in front of the coordinator answers in plain text.
		http.Error(w, "Bad Gateway", http.StatusBadGateway)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestClientReadsNewerCoordinators: fields and event kinds a client does not know are skipped,
// as Status already does (DiscardUnknown) and as report.FromJSON does, so an older CLI keeps
// working against an upgraded coordinator.
func TestClientReadsNewerCoordinators(t *testing.T) {
	c := coordinator.NewClient(futureCoordinator(t).URL, "", nil)
	ctx := context.Background()

	st, err := c.Status(ctx, "r1")
	if err != nil || st.GetId() != "r1" || st.GetDoneJobs() != 2 {
		t.Fatalf("Status: %v %v", st, err)
	}
	runs, err := c.List(ctx)
	if err != nil {
		t.Errorf("List fails on a field it does not know: %v", err)
	} else if len(runs) != 1 || runs[0].GetId() != "r1" || runs[0].GetState() != pb.RunState_RUN_STATE_COMPLETED {
		t.Errorf("List: %v", runs)
	}
	var kinds []string
	err = c.Events(ctx, "r1", func(ev *pb.Event) error {
		switch p := ev.GetPayload().(type) {
		case *pb.Event_Status:
			kinds = append(kinds, "status:"+p.Status.GetState().String())
		case *pb.Event_Result:
			kinds = append(kinds, "result:"+p.Result.GetJobId())
		}
		return nil
	})
	if err != nil {
		t.Errorf("Events fails on a field it does not know: %v", err)
	}
	if fmt.Sprint(kinds) != "[result:j1 status:RUN_STATE_COMPLETED]" {
		t.Errorf("events %v, want the result and the final status (the unknown kind skipped)", kinds)
	}

	// A non-JSON error body becomes the message.
	_, err = c.Status(ctx, "r2")
	var ae *coordinator.APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusBadGateway || ae.Message != "Bad Gateway" || len(ae.Diagnostics) != 0 {
		t.Errorf("proxy error: %#v", err)
	}
}
