// Package assertpb is the one codec between assertions and the wire: the coordinator encodes
// the assertions it compiled when it planned, the worker decodes and compiles them once per
// job, and their results travel back the same way. A new assertion kind is a change to assert
// and, if it brings a field, to this file and the proto; its tests cover every kind assert
// lists.
package assertpb

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/skillfleet/skillfleet/assert"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// Encode is a compiled assertion as a job carries it, with where it was written (file and
// line, for messages) and the judge samples a semantic_match asks for (0: the judge's
// default).
func Encode(a assert.Assertion, file string, line, votes int) (*pb.Assertion, error) {
	pa := &pb.Assertion{
		Type: string(a.Type), Value: a.Value, ExitCode: int32(a.ExitCode), File: file, Line: int32(line), Votes: int32(votes),
		ArgsMatch: a.ArgsMatch, Min: int32(a.Min), Max: a.Max, MaxSet: a.MaxSet, Names: a.Names, Path: a.Path,
	}
	if a.JSON != nil {
		b, err := json.Marshal(a.JSON)
		if err != nil {
			return nil, fmt.Errorf("%s at line %d: %w", a.Type, line, err)
		}
		pa.Json = b
	}
	return pa, nil
}

// Decode rebuilds and compiles an assertion from the wire (assert.Compile): what Encode
// wrote decodes to an assertion that evaluates as the planned one did.
func Decode(pa *pb.Assertion) (assert.Assertion, error) {
	a := assert.Assertion{
		Type: assert.Type(pa.GetType()), Value: pa.GetValue(), ExitCode: int(pa.GetExitCode()),
		ArgsMatch: pa.GetArgsMatch(), Min: int(pa.GetMin()), Max: pa.GetMax(), MaxSet: pa.GetMaxSet(), Names: pa.GetNames(), Path: pa.GetPath(),
	}
	if len(pa.GetJson()) > 0 {
		dec := json.NewDecoder(bytes.NewReader(pa.GetJson()))
		dec.UseNumber()
		if err := dec.Decode(&a.JSON); err != nil {
			return assert.Assertion{}, fmt.Errorf("%s at line %d: %w", pa.GetType(), pa.GetLine(), err)
		}
	}
	if err := assert.Compile(&a); err != nil {
		return assert.Assertion{}, fmt.Errorf("%s at line %d: %w", pa.GetType(), pa.GetLine(), err)
	}
	return a, nil
}

// DecodeAll decodes a job's assertions. A job without any is refused: nothing could decide
// it, and only assertions decide a pass.
func DecodeAll(in []*pb.Assertion) ([]assert.Assertion, error) {
	if len(in) == 0 {
		return nil, errors.New("the job has no assertions")
	}
	out := make([]assert.Assertion, 0, len(in))
	for _, pa := range in {
		a, err := Decode(pa)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// Results are assertion results as a job's result carries them.
func Results(in []assert.Result) []*pb.AssertionResult {
	out := make([]*pb.AssertionResult, len(in))
	for i, r := range in {
		out[i] = &pb.AssertionResult{
			Type: string(r.Type), Passed: r.Passed, Expected: r.Expected, Actual: r.Actual,
			Message: r.Message, Path: r.Path, Errored: r.Errored,
		}
	}
	return out
}
