package history

import (
	"fmt"
	"testing"
	"time"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

func TestSkillRuns(t *testing.T) {
	forEachBackend(t, func(t *testing.T, target string) {
		s := open(t, target)
		const od, sc = pb.Priority_PRIORITY_ON_DEMAND, pb.Priority_PRIORITY_SCHEDULED
		P, F, E, T := pb.Verdict_VERDICT_PASSED, pb.Verdict_VERDICT_FAILED, pb.Verdict_VERDICT_ERRORED, pb.Verdict_VERDICT_TIMED_OUT
		type job struct {
			skill string
			arm   string
			v     pb.Verdict
		}
		runs := []struct {
			st   *pb.RunStatus
			jobs []job
		}{
			{status("s1", "alpha", sc, pb.RunState_RUN_STATE_COMPLETED, t0), []job{{"sk", "", P}, {"sk", "", P}, {"other", "", F}}},
			{status("s2", "alpha", sc, pb.RunState_RUN_STATE_COMPLETED, t0.Add(time.Hour)), []job{{"sk", "", P}, {"sk", "", F}, {"sk", "without_skill", F}}},
			{status("s3", "alpha", od, pb.RunState_RUN_STATE_CANCELLED, t0.Add(2*time.Hour)), []job{{"sk", "", E}, {"sk", "", T}}},
			// s4 did not run the skill: it is not one of the skill's runs.
			{status("s4", "alpha", sc, pb.RunState_RUN_STATE_COMPLETED, t0.Add(3*time.Hour)), []job{{"other", "", P}}},
			{status("s5", "alpha", sc, pb.RunState_RUN_STATE_RUNNING, t0.Add(4*time.Hour)), []job{{"sk", "", F}}},
			{status("z1", "beta", sc, pb.RunState_RUN_STATE_COMPLETED, t0.Add(5*time.Hour)), []job{{"sk", "", P}}},
		}
		for _, r := range runs {
			var rows []Result
			for i, j := range r.jobs {
				res := result(r.st.GetId(), fmt.Sprintf("j%d", i), j.skill, fmt.Sprintf("c%d", i), 1, j.v, "assertion failed", t0)
				res.Arm = j.arm
				rows = append(rows, FromResult(res, r.st.GetSpec(), t0))
			}
			if err := s.write(ctx(), []Run{FromStatus(r.st)}, rows); err != nil {
				t.Fatal(err)
			}
		}
		show := func(rs []SkillRun) []string {
			var out []string
			for _, r := range rs {
				out = append(out, fmt.Sprintf("%s %s %s p%d f%d e%d t%d s%d", r.RunID, r.Lane, r.State, r.Passed, r.Failed, r.Errored, r.TimedOut, r.Skipped))
			}
			return out
		}
		tests := []struct {
			name, lane string
			n          int
			want       []string
		}{
			{"every lane", "", 10, []string{"s5 scheduled running p0 f1 e0 t0 s0", "s3 ondemand cancelled p0 f0 e1 t1 s0",
				"s2 scheduled completed p1 f1 e0 t0 s0", "s1 scheduled completed p2 f0 e0 t0 s0"}},
			{"one lane, the last two", "scheduled", 2, []string{"s5 scheduled running p0 f1 e0 t0 s0", "s2 scheduled completed p1 f1 e0 t0 s0"}},
			{"none asked", "", 0, nil},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				got, err := s.SkillRuns(ctx(), "", "alpha", tt.lane, "sk", tt.n)
				if err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(show(got)) != fmt.Sprint(tt.want) {
					t.Errorf("got  %q\nwant %q", show(got), tt.want)
				}
			})
		}
		got, err := s.SkillRuns(ctx(), "", "alpha", "", "sk", 10)
		if err != nil || len(got) == 0 || !got[len(got)-1].CreatedAt.Equal(t0) || got[len(got)-1].Decided() != 2 {
			t.Errorf("oldest run: %+v, %v", got, err)
		}
		if got, err := s.SkillRuns(ctx(), "", "alpha", "", "nope", 10); err != nil || len(got) != 0 {
			t.Errorf("an unknown skill: %v, %v", got, err)
		}
	})
}
