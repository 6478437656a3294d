package comparison

import (
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// Record is what a comparison reads of one result: a few dozen bytes where a result message
// holds its outputs, assertions and transcript. Two runs of 100,000 cases of 3 epochs are
// 600,000 of them.
type Record struct {
	Skill, Case, Agent string
	Epoch              int32
	Verdict            pb.Verdict
	Tokens             int64
	Cost               float64
	DurationMS         int64
	// What the configuration check compares: the agent's model, the judge and the case's
	// definition.
	Model, JudgeModel, JudgePrompt, CaseDigest string
}

// Records keeps of results what a comparison reads, sharing the strings that repeat (skill,
// agent, model, judge, and a case's name and digest across its epochs).
type Records struct {
	list []Record
	strs map[string]string
}

// Add keeps r's record.
func (rs *Records) Add(r *pb.Result) {
	if rs.strs == nil {
		rs.strs = map[string]string{}
	}
	in := func(s string) string {
		if v, ok := rs.strs[s]; ok {
			return v
		}
		rs.strs[s] = s
		return s
	}
	u := r.GetUsage()
	rs.list = append(rs.list, Record{
		Skill: in(r.GetSkill()), Case: in(r.GetCaseName()), Agent: in(r.GetAgent()),
		Epoch: r.GetEpoch(), Verdict: r.GetVerdict(),
		Tokens: u.GetPromptTokens() + u.GetCompletionTokens(), Cost: u.GetCost(), DurationMS: r.GetTimings().GetTotalMs(),
		Model: in(r.GetModel()), JudgeModel: in(r.GetJudgeModel()), JudgePrompt: in(r.GetJudgePrompt()), CaseDigest: in(r.GetCaseDigest()),
	})
}

// List returns the records kept, in the order added.
func (rs *Records) List() []Record { return rs.list }

// RecordsOf keeps of results what a comparison reads.
func RecordsOf(results []*pb.Result) []Record {
	var rs Records
	for _, r := range results {
		rs.Add(r)
	}
	return rs.List()
}

// GetSkill is the record's skill.
func (r *Record) GetSkill() string { return r.Skill }

// GetCaseName is the record's case.
func (r *Record) GetCaseName() string { return r.Case }

// GetAgent is the agent the job ran against.
func (r *Record) GetAgent() string { return r.Agent }

// GetEpoch is the job's epoch.
func (r *Record) GetEpoch() int32 { return r.Epoch }

// GetVerdict is the job's verdict.
func (r *Record) GetVerdict() pb.Verdict { return r.Verdict }

// GetModel is the agent's model.
func (r *Record) GetModel() string { return r.Model }

// GetJudgeModel is the judge's model, when the job was judged.
func (r *Record) GetJudgeModel() string { return r.JudgeModel }

// GetJudgePrompt is the judge's prompt version, when the job was judged.
func (r *Record) GetJudgePrompt() string { return r.JudgePrompt }

// GetCaseDigest is the digest of the case's definition.
func (r *Record) GetCaseDigest() string { return r.CaseDigest }
