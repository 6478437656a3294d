package comparison

import (
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// Difference is one configuration key on which the two sides differ.
type Difference struct {
	Key string `json:"key"`
	A   string `json:"a"`
	B   string `json:"b"`
}

// RefusalError is a comparison refused because the two sides' configurations differ outside
// the compared axis: a difference in pass rate could then come from any of them.
type RefusalError struct {
	Differences []Difference
}

func (e *RefusalError) Error() string {
	var b strings.Builder
	b.WriteString("comparison refused: the configurations differ outside the compared axis:")
	for _, d := range e.Differences {
		fmt.Fprintf(&b, "\n  %s: A %s, B %s", d.Key, d.A, d.B)
	}
	return b.String()
}

// Keys lists the differing keys, in order.
func (e *RefusalError) Keys() []string {
	keys := make([]string, len(e.Differences))
	for i, d := range e.Differences {
		keys[i] = d.Key
	}
	return keys
}

// maxNamed bounds how many differing cases a refusal names.
const maxNamed = 5

// check refuses two sides whose configurations differ outside axis. A value a side does not
// know (results from a worker older than the field) is not held against it: only values
// both sides know are compared.
func check(a, b Side, ga, gb []group, axis Axis) error {
	var diffs []Difference
	add := func(key, va, vb string) {
		if va != vb {
			diffs = append(diffs, Difference{Key: key, A: va, B: vb})
		}
	}
	if axis == AxisSkill {
		add("arm", a.Arm, b.Arm)
	}
	add("agents", list(values(a.Results, (*pb.Result).GetAgent, true)), list(values(b.Results, (*pb.Result).GetAgent, true)))
	// Per agent: the same agent name may stand for another model in another run.
	for _, agent := range values(append(slices.Clip(a.Results), b.Results...), (*pb.Result).GetAgent, true) {
		of := func(r *pb.Result) string {
			if r.GetAgent() != agent {
				return ""
			}
			return r.GetModel()
		}
		key := "agent model"
		if agent != "" {
			key += " (" + agent + ")"
		}
		known(add, key, values(a.Results, of, false), values(b.Results, of, false))
	}
	known(add, "judge model", values(a.Results, (*pb.Result).GetJudgeModel, false), values(b.Results, (*pb.Result).GetJudgeModel, false))
	known(add, "judge prompt", values(a.Results, (*pb.Result).GetJudgePrompt, false), values(b.Results, (*pb.Result).GetJudgePrompt, false))
	if d := caseDigests(ga, gb); d != nil {
		diffs = append(diffs, *d)
	}
	if a.Spec != nil && b.Spec != nil {
		if !proto.Equal(a.Spec.GetLimits(), b.Spec.GetLimits()) {
			add("limits", limitsText(a.Spec.GetLimits()), limitsText(b.Spec.GetLimits()))
		}
		add("max tokens", fmt.Sprint(a.Spec.GetMaxTokens()), fmt.Sprint(b.Spec.GetMaxTokens()))
	}
	if diffs != nil {
		return &RefusalError{Differences: diffs}
	}
	return nil
}

// known compares two sets of values when both sides know some.
func known(add func(key, a, b string), key string, a, b []string) {
	if len(a) > 0 && len(b) > 0 {
		add(key, list(a), list(b))
	}
}

// values is the sorted distinct values of a field over results; empty ones only when
// withEmpty.
func values(results []*pb.Result, field func(*pb.Result) string, withEmpty bool) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range results {
		v := field(r)
		if (v == "" && !withEmpty) || seen[v] {
			continue
		}
		seen[v] = true
		out = append(out, v)
	}
	slices.Sort(out)
	return out
}

func list(vs []string) string {
	if len(vs) == 0 {
		return "(none)"
	}
	q := make([]string, len(vs))
	for i, v := range vs {
		if v == "" {
			v = "(default)"
		}
		q[i] = v
	}
	return strings.Join(q, ", ")
}

// caseDigests finds the cases both sides ran whose definitions differ.
func caseDigests(ga, gb []group) *Difference {
	digestOf := func(g group) string {
		for _, r := range g.epochs {
			if d := r.GetCaseDigest(); d != "" {
				return d
			}
		}
		return ""
	}
	inA := make(map[caseKey]string, len(ga))
	for _, g := range ga {
		inA[g.key] = digestOf(g)
	}
	var names []string
	for _, g := range gb {
		da, ok := inA[g.key]
		db := digestOf(g)
		if ok && da != "" && db != "" && da != db {
			names = append(names, g.key.skill+"/"+g.key.caseName())
		}
	}
	if names == nil {
		return nil
	}
	shown := names[:min(len(names), maxNamed)]
	more := ""
	if len(names) > maxNamed {
		more = fmt.Sprintf(" and %d more", len(names)-maxNamed)
	}
	return &Difference{Key: "case digest", A: "the cases as A ran them",
		B: fmt.Sprintf("%d of them defined differently: %s%s", len(names), strings.Join(shown, ", "), more)}
}

func limitsText(l *pb.Limits) string {
	if l == nil {
		return "(defaults)"
	}
	return strings.TrimSpace(prototext.MarshalOptions{}.Format(l))
}
