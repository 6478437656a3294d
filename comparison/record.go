package comparison

import (
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// Record is what a comparison reads of one result: 40 bytes and a key shared with the other
// epochs of its case, where a result message holds its outputs, assertions and transcript.
// Two runs of 100,000 cases of 10 epochs are 2,000,000 of them. A Record always has its key.
type Record struct {
	*RecordKey
	Epoch      int32
	Verdict    pb.Verdict
	Tokens     int64
	Cost       float64
	DurationMS int64
}

// RecordKey is what the records of a case share: its identity and what the configuration check
// compares (the agent's model, the judge and the case's definition). Records share keys, so a
// key is never changed in place: a record given another gets a key of its own.
type RecordKey struct {
	Skill, Case, Agent                         string
	Model, JudgeModel, JudgePrompt, CaseDigest string
}

// Keys interns record keys, so the records of a case share one, and the strings the keys of a
// run repeat (skill, agent, model, judge).
type Keys struct {
	keys map[RecordKey]*RecordKey
	strs map[string]string
}

// Key returns the interned key equal to k.
func (ks *Keys) Key(k RecordKey) *RecordKey {
	if p, ok := ks.keys[k]; ok {
		return p
	}
	if ks.keys == nil {
		ks.keys, ks.strs = map[RecordKey]*RecordKey{}, map[string]string{}
	}
	in := func(s string) string {
		if v, ok := ks.strs[s]; ok {
			return v
		}
		ks.strs[s] = s
		return s
	}
	p := &RecordKey{Skill: in(k.Skill), Case: in(k.Case), Agent: in(k.Agent),
		Model: in(k.Model), JudgeModel: in(k.JudgeModel), JudgePrompt: in(k.JudgePrompt), CaseDigest: k.CaseDigest}
	ks.keys[*p] = p
	return p
}

// Records keeps of results what a comparison reads, sharing keys between the epochs of a case.
type Records struct {
	list []Record
	keys Keys
}

// Add keeps r's record.
func (rs *Records) Add(r *pb.Result) {
	u := r.GetUsage()
	rs.list = append(rs.list, Record{
		RecordKey: rs.keys.Key(RecordKey{Skill: r.GetSkill(), Case: r.GetCaseName(), Agent: r.GetAgent(),
			Model: r.GetModel(), JudgeModel: r.GetJudgeModel(), JudgePrompt: r.GetJudgePrompt(), CaseDigest: r.GetCaseDigest()}),
		Epoch: r.GetEpoch(), Verdict: r.GetVerdict(),
		Tokens: u.GetPromptTokens() + u.GetCompletionTokens(), Cost: u.GetCost(), DurationMS: r.GetTimings().GetTotalMs(),
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

// Same reports whether two records say the same, keys compared by value.
func Same(a, b Record) bool {
	return *a.RecordKey == *b.RecordKey && a.Epoch == b.Epoch && a.Verdict == b.Verdict &&
		a.Tokens == b.Tokens && a.Cost == b.Cost && a.DurationMS == b.DurationMS
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
