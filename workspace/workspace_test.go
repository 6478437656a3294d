package workspace

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/internal/testutil"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// TestLayout writes a run of three jobs (a case of one epoch, a case of two, a hostile name)
// twice, and compares every file written with testdata/layout.golden: the guide's layout,
// skill-creator's field names, and the second run in iteration-2.
func TestLayout(t *testing.T) {
	dir := t.TempDir()
	jobs := []Job{
		{Result: &pb.Result{Skill: "csv", CaseName: "eval-1", Epoch: 1, Verdict: pb.Verdict_VERDICT_FAILED,
			Usage:   &pb.Usage{PromptTokens: 800, CompletionTokens: 52},
			Timings: &pb.Timings{TotalMs: 2340, ExecutionMs: 2100},
			Assertions: []*pb.AssertionResult{
				{Type: "output_contains", Passed: true, Expected: `contains "total"`, Actual: "the total is 7", Message: "found"},
				{Type: "semantic_match", Expected: "lists three months", Message: "only two months are listed", Errored: false},
				{Type: "stdout_json", Expected: "{...}", Path: "$.a", Message: "differs", Errored: true},
			}},
			Trajectory: []byte(`{"schema_version":"ATIF-v1.7"}`)},
		{Result: &pb.Result{Skill: "csv", CaseName: "sums", Epoch: 1, Verdict: pb.Verdict_VERDICT_PASSED, Timings: &pb.Timings{TotalMs: 10},
			Outputs: []*pb.OutputFile{
				{Path: "report.csv", Size: 6, Content: []byte("a,b\n1\n")},
				{Path: "deep/../../../escape.txt", Size: 2, Content: []byte("x\n")},
				{Path: "big.bin", Size: 9000, Content: []byte("head"), Truncated: true},
				{Path: "apart.txt", Size: 5},
			},
			OutputsOmitted: []string{"3 files left out: more than 100 files"}}},
		{Result: &pb.Result{Skill: "csv", CaseName: "sums", Epoch: 2, Verdict: pb.Verdict_VERDICT_ERRORED, Reason: "no agent"}},
		// A baseline job goes to its arm's directory, beside with_skill.
		{Result: &pb.Result{Skill: "csv", CaseName: "eval-1", Epoch: 1, Arm: "without_skill", Verdict: pb.Verdict_VERDICT_FAILED, Timings: &pb.Timings{TotalMs: 5}}},
		{Result: &pb.Result{Skill: "../evil", CaseName: "../../etc/passwd", Epoch: 1, Verdict: pb.Verdict_VERDICT_PASSED}},
	}
	for range 2 {
		w, err := New(dir, map[string]int{"csv/eval-1/with_skill": 1, "csv/sums/with_skill": 2, "csv/eval-1/without_skill": 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs {
			if err := w.Add(j); err != nil {
				t.Fatal(err)
			}
		}
	}
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			b.WriteString(rel + "/\n")
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.Contains(rel, "iteration-2") {
			b.WriteString(rel + "\n") // the same content as iteration-1's
			return nil
		}
		b.WriteString("== " + rel + "\n" + string(data))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	testutil.Golden(t, filepath.Join("testdata", "layout.golden"), []byte(b.String()))
}

func TestOutputPath(t *testing.T) {
	for rel, want := range map[string]string{
		"report.csv":       "out/report.csv",
		"sub/a.txt":        "out/sub/a.txt",
		"../../etc/passwd": "out/etc/passwd",
		"/abs/x":           "out/abs/x",
		"":                 "",
		".":                "",
	} {
		if got := OutputPath("out", rel); got != want {
			t.Errorf("OutputPath(%q) = %q, want %q", rel, got, want)
		}
	}
}
