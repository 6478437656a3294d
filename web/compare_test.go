package web

import (
	"net/http"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/report"
	"github.com/skillfleet/skillfleet/stats"
)

// withArms adds to src a run whose cases also ran without the skill, every baseline job failing.
func withArms(src *fakeSource, id string, n int) {
	st, rep, res := bigRun(id, n, pb.RunState_RUN_STATE_COMPLETED, true, "out")
	st.Spec.Baseline = "without_skill"
	for _, r := range append([]*pb.Result(nil), res...) {
		b := proto.Clone(r).(*pb.Result)
		b.Arm, b.JobId, b.Verdict = "without_skill", r.GetJobId()+"-b", pb.Verdict_VERDICT_FAILED
		res = append(res, b)
	}
	for _, c := range append([]report.Case(nil), rep.Cases...) {
		c.Arm, c.Status = "without_skill", report.StatusFailed
		rep.Cases = append(rep.Cases, c)
	}
	src.add(st, rep, res)
}

func TestComparePage(t *testing.T) {
	src := newFake()
	stA, repA, resA := bigRun("ra", 200, pb.RunState_RUN_STATE_COMPLETED, true, "a")
	for _, r := range resA {
		r.Model = "m1"
	}
	src.add(stA, repA, resA)
	stB, repB, resB := bigRun("rb", 200, pb.RunState_RUN_STATE_COMPLETED, true, "b")
	for _, r := range resB { // every case passes in B
		r.Verdict, r.Model = pb.Verdict_VERDICT_PASSED, "m1"
	}
	src.add(stB, repB, resB)
	stC, repC, resC := bigRun("rc", 200, pb.RunState_RUN_STATE_COMPLETED, true, "c")
	for _, r := range resC {
		r.Model = "another-model"
	}
	src.add(stC, repC, resC)
	withArms(src, "rarms", 40)
	withArms(src, "rsmall", 5)
	withArms(src, "rseq", 40)
	g, err := stats.NewGroupSequential(stats.Alpha, 4, stats.DefaultLooks, 1, 40)
	if err != nil {
		t.Fatal(err)
	}
	stopped := g.Result([]float64{1}, stats.StopFutile)
	stopped.Skill = "skill-000"
	src.runs["rseq"].rep.Sequential = []stats.SequentialResult{stopped}
	s := testServer(t, src)
	op := login(t, s, operatorToken)
	for _, tc := range []struct {
		name, target string
		code         int
		want         []string
	}{
		{"the form", "/compare", http.StatusOK, []string{"Compare two runs", "Compare its arms"}},
		{"two runs", "/compare?a=ra&b=rb", http.StatusOK, []string{"on the skill axis", "fixed (20)", "all cases", "200 results"}},
		{"refused", "/compare?a=ra&b=rc", http.StatusOK, []string{"Comparison refused", "another-model"}},
		{"a run's arms", "/compare?run=rarms", http.StatusOK, []string{"on the arm axis", "B (with_skill, arm with_skill, 40 results) compared against A (without_skill", "fixed (36)", "yes, better"}},
		// Five cases cannot reach p ≤ 0.05 whatever they do: not only "no".
		{"an underpowered comparison", "/compare?run=rsmall", http.StatusOK, []string{"no, underpowered"}},
		{"a run's arms, a skill stopped early", "/compare?run=rseq", http.StatusOK, []string{
			"Group-sequential comparison of skill-000: stopped at look 1 of 4, 1 of 4 epochs per case and arm: futile; p over the looks 1.0000 before Holm",
			"group-sequential sign-flip"}},
		{"a run without a baseline", "/compare?run=ra", http.StatusBadRequest, []string{"has no baseline arm"}},
		{"an unknown run", "/compare?a=ra&b=nope", http.StatusNotFound, []string{"nope"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := do(s, "GET", tc.target, nil, op)
			if w.Code != tc.code {
				t.Fatalf("status %d, want %d\n%s", w.Code, tc.code, w.Body)
			}
			doc := parseHTML(t, w.Body.Bytes())
			checkInert(t, doc, true)
			text := strings.Join(strings.Fields(textOf(doc)), " ")
			for _, want := range tc.want {
				if !strings.Contains(text, want) {
					t.Errorf("the page does not say %q:\n%s", want, text)
				}
			}
		})
	}
	// The arms page links the run's changed cases to their pages, and a run with a baseline
	// links its comparison.
	w := do(s, "GET", "/compare?run=rarms", nil, op)
	if !strings.Contains(w.Body.String(), `href="/runs/rarms/cases?case=case-00001&amp;skill=skill-001"`) {
		t.Errorf("the arms comparison does not link its cases")
	}
	if w := do(s, "GET", "/runs/rarms", nil, op); !strings.Contains(w.Body.String(), `href="/compare?run=rarms"`) {
		t.Errorf("the run page does not link its arms' comparison")
	}
}
