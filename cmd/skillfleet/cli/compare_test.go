package cli

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/comparison"
	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/internal/testutil"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// TestCompare compares runs through a real coordinator's API: two runs of the example suite
// (the same cases, one failing in both), and a run against another agent, which is refused.
func TestCompare(t *testing.T) {
	r := startRemote(t)
	ctx := context.Background()
	remoteArgs := []string{"--coordinator", r.url, "--token", fleetToken}
	var ids []string
	for range 2 {
		if code, out, errOut := run(append([]string{"submit", "--follow", examples}, remoteArgs...)...); code != ExitErrors {
			t.Fatalf("submit: exit %d\n%s%s", code, out, errOut)
		}
	}
	list, err := r.client().List(ctx)
	if err != nil || len(list) != 2 {
		t.Fatalf("list %v: %v", list, err)
	}
	// Newest first.
	ids = []string{list[1].GetId(), list[0].GetId()}
	other, err := r.client().Submit(ctx, bytes.NewReader(exampleBundle(t)), coordinator.SubmitOptions{Agents: []string{"other"}})
	if err != nil {
		t.Fatal(err)
	}
	r.exec.Release("other")
	testutil.Eventually(t, 30*time.Second, 20*time.Millisecond, func() bool {
		st, err := r.client().Status(ctx, other.GetId())
		return err == nil && st.GetState() == pb.RunState_RUN_STATE_COMPLETED
	}, "the run of agent other did not complete")

	compare := func(args ...string) (int, string, string) {
		return run(append(append([]string{"compare"}, args...), remoteArgs...)...)
	}
	tests := []struct {
		name string
		args []string
		code int
		// out and errOut must appear in stdout and stderr.
		out, errOut []string
	}{
		{name: "text", args: ids, code: ExitOK, out: []string{
			"comparing B (run " + ids[1] + ", with_skill) against A (run " + ids[0] + ", with_skill)",
			"deploy-checklist", "1.0000    no", "changes: 0 newly failing, 0 fixed, 1 still failing",
			"still failing:\n  deploy-checklist/" + failingCase + " (failing → failing)",
		}},
		{name: "fail-if-worse, not worse", args: append([]string{"--fail-if-worse"}, ids...), code: ExitOK},
		{name: "refused", args: []string{ids[0], other.GetId()}, code: ExitUsage, errOut: []string{"comparison refused", "agents: A (default), B "}},
		{name: "unknown run", args: []string{ids[0], "r-nope"}, code: ExitErrors},
		{name: "one run", args: ids[:1], code: ExitUsage},
		{name: "bad format", args: append([]string{"--format", "xml"}, ids...), code: ExitUsage, errOut: []string{"unknown --format"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := compare(tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tt.code, out, errOut)
			}
			for _, w := range tt.out {
				if !strings.Contains(out, w) {
					t.Errorf("stdout has no %q:\n%s", w, out)
				}
			}
			for _, w := range tt.errOut {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr has no %q:\n%s", w, errOut)
				}
			}
		})
	}

	// A third run compared with the first as its baseline, without running the baseline
	// again; against the other agent's run it is refused before any gate.
	code, out, errOut := run(append([]string{"submit", "--follow", "--baseline-run", ids[0], "--fail-if-worse", examples}, remoteArgs...)...)
	if code != ExitErrors || !strings.Contains(out, "against A (run "+ids[0]) || !strings.Contains(out, "1 still failing") {
		t.Errorf("submit --baseline-run: exit %d (the example's failing case), want the comparison after the report\n%s%s", code, out, errOut)
	}
	code, out, errOut = run(append([]string{"submit", "--follow", "--baseline-run", other.GetId(), examples}, remoteArgs...)...)
	if code != ExitUsage || !strings.Contains(errOut, "--baseline-run "+other.GetId()) || !strings.Contains(errOut, "agents") {
		t.Errorf("submit --baseline-run of another agent's run: exit %d, want %d and the differing keys\n%s%s", code, ExitUsage, out, errOut)
	}

	code, out, errOut = compare(append([]string{"--format", "json"}, ids...)...)
	var doc struct {
		A        struct{ Run string }
		PerSkill []struct {
			Skill       string
			Cases       int
			Significant bool
		} `json:"per_skill"`
		Changes struct {
			StillFailing []struct{ Skill, Case string } `json:"still_failing"`
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != ExitOK {
		t.Fatalf("json: exit %d %v\n%s%s", code, err, out, errOut)
	}
	cases := 0
	for _, s := range doc.PerSkill {
		cases += s.Cases
		if s.Significant {
			t.Errorf("skill %s significant between two runs of the same suite", s.Skill)
		}
	}
	if doc.A.Run != ids[0] || cases != exampleCases || len(doc.Changes.StillFailing) != 1 || doc.Changes.StillFailing[0].Case != failingCase {
		t.Errorf("json: A %s, %d paired cases, still failing %v; want %s, %d, [%s]", doc.A.Run, cases, doc.Changes.StillFailing, ids[0], exampleCases, failingCase)
	}
	code, out, _ = compare(append([]string{"--format", "junit"}, ids...)...)
	if err := xml.Unmarshal([]byte(out), new(any)); err != nil || code != ExitOK || !strings.Contains(out, `<property name="compare.overall.significant" value="false">`) {
		t.Errorf("junit: exit %d %v\n%s", code, err, out)
	}

	// The same run exported: each skill's iteration has a benchmark.json in skill-creator's
	// schema beside its evals.
	dir := t.TempDir()
	if code, out, errOut := run(append([]string{"runs", "export", ids[0], "--workspace", dir}, remoteArgs...)...); code != ExitOK {
		t.Fatalf("export: exit %d\n%s%s", code, out, errOut)
	}
	data, err := os.ReadFile(filepath.Join(dir, "deploy-checklist", "iteration-1", "benchmark.json"))
	var bench struct {
		Metadata struct {
			SkillName string `json:"skill_name"`
		}
		Runs []struct {
			EvalName      string `json:"eval_name"`
			Configuration string
		}
		RunSummary map[string]json.RawMessage `json:"run_summary"`
	}
	if err != nil || json.Unmarshal(data, &bench) != nil || bench.Metadata.SkillName != "deploy-checklist" || len(bench.Runs) == 0 ||
		bench.Runs[0].Configuration != "with_skill" || bench.RunSummary["with_skill"] == nil {
		t.Errorf("benchmark.json (%v):\n%s", err, data)
	}

	// Finished runs are compared from the records their coordinator stored, never from their
	// results; a run whose records are gone is read from its results, and compares the same.
	r.readsOf("records")
	r.readsOf("results")
	code, viaRecords, errOut := compare(append([]string{"--format", "json"}, ids...)...)
	if code != ExitOK {
		t.Fatalf("compare: exit %d\n%s%s", code, viaRecords, errOut)
	}
	if records, results := r.readsOf("records"), r.readsOf("results"); records != 2 || results != 0 {
		t.Errorf("compare of two finished runs read their records %d times and their results %d times, want 2 and 0", records, results)
	}
	if err := r.fleet.Topology.DeleteRecords(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	code, viaResults, errOut := compare(append([]string{"--format", "json"}, ids...)...)
	if code != ExitOK || viaResults != viaRecords {
		t.Errorf("compare with run A's records gone: exit %d\n%s%s\nwant exit 0 and the comparison through the records:\n%s", code, viaResults, errOut, viaRecords)
	}
	if records, results := r.readsOf("records"), r.readsOf("results"); records != 2 || results != 1 {
		t.Errorf("compare with run A's records gone read records %d times and results %d times, want 2 (one answered 404) and 1", records, results)
	}
}

// TestCompareRefusesLyingRecords: a coordinator whose records announce more than the run
// counted, cut short or damaged gets a clear error naming the run, before the comparison
// allocates for what it only announces, and no comparison.
func TestCompareRefusesLyingRecords(t *testing.T) {
	var valid bytes.Buffer
	w, err := comparison.NewRecordsWriter(&valid, []comparison.RecordsArm{{Groups: 1, Records: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(&comparison.RecordGroup{Skill: "s", Case: "c", Epochs: []comparison.EpochRecord{{Epoch: 1, Verdict: pb.Verdict_VERDICT_PASSED}, {Epoch: 2}}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	billion := append([]byte("SFRC\x01\x01\x00\x01"), binary.AppendUvarint(nil, 1e9)...)
	damaged := bytes.Clone(valid.Bytes())
	damaged[len(damaged)-10] ^= 1
	tests := []struct {
		name string
		body []byte
		want string
	}{
		{"more records than the run counted", billion, "the records of run r1: records: more than 2 records announced, over the limit"},
		{"cut short", valid.Bytes()[:valid.Len()-3], "the records of run r1: records: cut short"},
		{"damaged", damaged, "the records of run r1: records: checksum mismatch"},
		{"not records at all", []byte("<html>proxy error</html>"), "not application/vnd.skillfleet.records"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("SKILLFLEET_TOKEN", "")
			t.Setenv("SKILLFLEET_COORDINATOR", "")
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				switch req.URL.Path {
				case "/v1/runs/r1", "/v1/runs/r2":
					_, _ = fmt.Fprintf(w, `{"id":%q,"state":"RUN_STATE_COMPLETED","records_stored":true,"done_jobs":2}`, path.Base(req.URL.Path))
				case "/v1/runs/r1/records", "/v1/runs/r2/records":
					if tt.name != "not records at all" {
						w.Header().Set("Content-Type", coordinator.RecordsContentType)
					}
					_, _ = w.Write(tt.body)
				default:
					http.NotFound(w, req)
				}
			}))
			defer srv.Close()
			code, out, errOut := run("compare", "--coordinator", srv.URL, "r1", "r2")
			if code != ExitErrors || out != "" || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d\n%s%s\nwant exit %d, nothing compared, and an error saying %q", code, out, errOut, ExitErrors, tt.want)
			}
		})
	}
}
