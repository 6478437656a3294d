package comparison

import (
	"fmt"
	"maps"
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
	ca, cb := configOf(a.Results), configOf(b.Results)
	add("agents", list(sorted(ca.agents)), list(sorted(cb.agents)))
	// Per agent: the same agent name may stand for another model in another run.
	for _, agent := range sorted(union(ca.agents, cb.agents)) {
		key := "agent model"
		if agent != "" {
			key += " (" + agent + ")"
		}
		known(add, key, sorted(ca.models[agent]), sorted(cb.models[agent]))
	}
	known(add, "judge model", sorted(ca.judgeModels), sorted(cb.judgeModels))
	known(add, "judge prompt", sorted(ca.judgePrompts), sorted(cb.judgePrompts))
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

// sideConfig is what a side's results say about the configuration they ran in. Empty values
// (a worker older than the field, a job without a judge) are left out, bar the default agent's
// empty name.
type sideConfig struct {
	agents                    map[string]bool
	models                    map[string]map[string]bool // agent → its models
	judgeModels, judgePrompts map[string]bool
}

func configOf(results []Record) sideConfig {
	c := sideConfig{agents: map[string]bool{}, models: map[string]map[string]bool{}, judgeModels: map[string]bool{}, judgePrompts: map[string]bool{}}
	for i := range results {
		r := &results[i]
		agent := r.Agent
		c.agents[agent] = true
		if m := r.GetModel(); m != "" {
			if c.models[agent] == nil {
				c.models[agent] = map[string]bool{}
			}
			c.models[agent][m] = true
		}
		if v := r.GetJudgeModel(); v != "" {
			c.judgeModels[v] = true
		}
		if v := r.GetJudgePrompt(); v != "" {
			c.judgePrompts[v] = true
		}
	}
	return c
}

func union(a, b map[string]bool) map[string]bool {
	out := maps.Clone(a)
	maps.Copy(out, b)
	return out
}

func sorted(set map[string]bool) []string {
	return slices.Sorted(maps.Keys(set))
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
			names = append(names, g.key.skill+"/"+g.name)
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
