package history

import (
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/skillfleet/skillfleet/internal/tenant"
	"github.com/skillfleet/skillfleet/internal/text"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/verdict"
)

// maxReason bounds a stored reason: history needs its class and gist; the full text stays in
// the run's report while JetStream keeps it.
const maxReason = 2000

// maxAgentVersion bounds a stored CLI version; the gateway keeps them under 130 bytes.
const maxAgentVersion = 200

// Result is one job's result as history keeps it.
type Result struct {
	RunID string
	JobID string
	// Team owns the result: its run's team (RunSpec.team, "" stored as tenant.DefaultTeam).
	Team string
	// Suite is the run's suite name (RunSpec.name); Lane "ondemand" or "scheduled".
	Suite, Lane string
	Skill, Case string
	Agent       string
	Model       string
	JudgeModel  string
	// Arm is "with_skill", "without_skill" or "old_skill" (the wire's "" is with_skill).
	Arm     string
	Epoch   int
	Attempt int
	// Verdict is the counted verdict (verdict.Counted): "passed", "failed", "errored",
	// "timed_out" or "skipped".
	Verdict string
	// ReasonClass is Classify's class; "" for a pass or a skip.
	ReasonClass      string
	Reason           string
	PromptTokens     int64
	CompletionTokens int64
	Cost             float64
	DurationMS       int64
	CaseDigest       string
	// CellKey and CellDigest identify the cell for changed-only runs (pb.Job.cell_key,
	// pb.Result.cell_digest); ReusedFrom is the run a "reused" verdict came from.
	CellKey, CellDigest, ReusedFrom string
	// AgentVersion is the command agent's CLI version (pb.Result.agent_version), "" when
	// unknown.
	AgentVersion string
	FinishedAt   time.Time
	RecordedAt   time.Time
}

// Counts tallies a run's cases by verdict.
type Counts struct {
	Total, Passed, Failed, Errored, TimedOut, Skipped, Reused int
}

// Run is one run as history keeps it.
type Run struct {
	ID string
	// Team owns the run (RunSpec.team, "" stored as tenant.DefaultTeam): a suite name means
	// a suite only within its team.
	Team        string
	Suite, Lane string
	// State is "pending", "running", "completed", "cancelled", "deadline_exceeded" or "failed".
	State      string
	Reason     string
	CreatedAt  time.Time
	FinishedAt time.Time // zero while the run is unfinished
	TotalJobs  int
	DoneJobs   int
	Cases      Counts
}

// Lane names a run's priority the way history stores it.
func Lane(p pb.Priority) string {
	if p == pb.Priority_PRIORITY_SCHEDULED {
		return "scheduled"
	}
	return "ondemand"
}

// VerdictName is a verdict in the words of DESIGN.md.
func VerdictName(v pb.Verdict) string {
	return strings.ToLower(strings.TrimPrefix(v.String(), "VERDICT_"))
}

// StateName is a run state in lower case without its prefix.
func StateName(s pb.RunState) string {
	return strings.ToLower(strings.TrimPrefix(s.String(), "RUN_STATE_"))
}

// FromResult makes the row of a result of the run spec describes, recorded at now.
func FromResult(res *pb.Result, spec *pb.RunSpec, now time.Time) Result {
	v, reason := verdict.Counted(res)
	arm := res.GetArm()
	if arm == "" {
		arm = "with_skill"
	}
	finished := now
	if res.GetFinishedAt() != nil {
		finished = res.GetFinishedAt().AsTime()
	}
	return Result{
		RunID: res.GetRunId(), JobID: res.GetJobId(), Team: tenant.Team(spec.GetTeam()),
		Suite: spec.GetName(), Lane: Lane(spec.GetPriority()),
		Skill: res.GetSkill(), Case: res.GetCaseName(), Agent: res.GetAgent(),
		Model: res.GetModel(), JudgeModel: res.GetJudgeModel(), Arm: arm,
		Epoch: int(res.GetEpoch()), Attempt: int(res.GetAttempt()),
		Verdict: VerdictName(v), ReasonClass: Classify(v, reason), Reason: text.ClipBytes(reason, maxReason),
		PromptTokens: res.GetUsage().GetPromptTokens(), CompletionTokens: res.GetUsage().GetCompletionTokens(),
		Cost: res.GetUsage().GetCost(), DurationMS: res.GetTimings().GetTotalMs(),
		CaseDigest: res.GetCaseDigest(), FinishedAt: finished, RecordedAt: now,
		CellKey: res.GetCellKey(), CellDigest: res.GetCellDigest(), ReusedFrom: res.GetReusedFrom(),
		AgentVersion: text.ClipBytes(res.GetAgentVersion(), maxAgentVersion),
	}
}

// FromStatus makes the row of a run.
func FromStatus(st *pb.RunStatus) Run {
	spec := st.GetSpec()
	id := st.GetId()
	if id == "" {
		id = spec.GetId()
	}
	r := Run{
		ID: id, Team: tenant.Team(spec.GetTeam()), Suite: spec.GetName(), Lane: Lane(spec.GetPriority()),
		State: StateName(st.GetState()), Reason: text.ClipBytes(st.GetReason(), maxReason),
		CreatedAt: spec.GetCreatedAt().AsTime(),
		TotalJobs: int(st.GetTotalJobs()), DoneJobs: int(st.GetDoneJobs()),
	}
	if st.GetFinishedAt() != nil {
		r.FinishedAt = st.GetFinishedAt().AsTime()
	}
	c := st.GetCases()
	r.Cases = Counts{Total: int(c.GetTotal()), Passed: int(c.GetPassed()), Failed: int(c.GetFailed()),
		Errored: int(c.GetErrored()), TimedOut: int(c.GetTimedOut()), Skipped: int(c.GetSkipped()), Reused: int(c.GetReused())}
	return r
}

// ToStatus is the status a run's row gives (FromStatus's inverse, as far as the row goes):
// what is known of a run whose status was not kept with it.
func ToStatus(r Run) *pb.RunStatus {
	st := &pb.RunStatus{
		Id: r.ID, State: pb.RunState(pb.RunState_value["RUN_STATE_"+strings.ToUpper(r.State)]), Reason: r.Reason,
		TotalJobs: int32(r.TotalJobs), DoneJobs: int32(r.DoneJobs),
		Spec: &pb.RunSpec{Id: r.ID, Team: r.Team, Name: r.Suite, CreatedAt: timestamppb.New(r.CreatedAt)},
		Cases: &pb.Counts{Total: int32(r.Cases.Total), Passed: int32(r.Cases.Passed), Failed: int32(r.Cases.Failed),
			Errored: int32(r.Cases.Errored), TimedOut: int32(r.Cases.TimedOut), Skipped: int32(r.Cases.Skipped), Reused: int32(r.Cases.Reused)},
	}
	if r.Lane == "scheduled" {
		st.Spec.Priority = pb.Priority_PRIORITY_SCHEDULED
	}
	if !r.FinishedAt.IsZero() {
		st.FinishedAt = timestamppb.New(r.FinishedAt)
	}
	return st
}
