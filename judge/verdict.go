package judge

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/skillfleet/skillfleet/internal/text"
)

// Verdict is the judge's decision on one criterion.
type Verdict struct {
	Passed   bool
	Evidence string
}

// parseVerdict accepts exactly one JSON object with exactly the fields passed (boolean) and
// evidence (string), each once, and nothing around it but white space. Local servers do not all
// enforce the response schema, so the schema is checked here; everything else is an error.
func parseVerdict(content string) (Verdict, error) {
	dec := json.NewDecoder(strings.NewReader(content))
	tok, err := dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return Verdict{}, errors.New("empty answer")
		}
		return Verdict{}, fmt.Errorf("not JSON: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return Verdict{}, fmt.Errorf("not a JSON object (starts with %v)", tok)
	}
	var v Verdict
	var havePassed, haveEvidence bool
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return Verdict{}, fmt.Errorf("not JSON: %w", err)
		}
		key, _ := kt.(string)
		vt, err := dec.Token()
		if err != nil {
			return Verdict{}, fmt.Errorf("not JSON: %w", err)
		}
		switch key {
		case "passed":
			b, ok := vt.(bool)
			if !ok {
				return Verdict{}, fmt.Errorf(`"passed" is %s, not a boolean`, jsonKind(vt))
			}
			if havePassed {
				return Verdict{}, errors.New(`"passed" appears twice`)
			}
			v.Passed, havePassed = b, true
		case "evidence":
			s, ok := vt.(string)
			if !ok {
				return Verdict{}, fmt.Errorf(`"evidence" is %s, not a string`, jsonKind(vt))
			}
			if haveEvidence {
				return Verdict{}, errors.New(`"evidence" appears twice`)
			}
			v.Evidence, haveEvidence = s, true
		default:
			return Verdict{}, fmt.Errorf("unexpected field %q", text.ClipEscaped(key, 40))
		}
	}
	if _, err := dec.Token(); err != nil {
		return Verdict{}, fmt.Errorf("not JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Verdict{}, errors.New("text after the JSON object")
	}
	switch {
	case !havePassed && !haveEvidence:
		return Verdict{}, errors.New(`fields "passed" and "evidence" are missing`)
	case !havePassed:
		return Verdict{}, errors.New(`field "passed" is missing`)
	case !haveEvidence:
		return Verdict{}, errors.New(`field "evidence" is missing`)
	}
	return v, nil
}

func jsonKind(t json.Token) string {
	switch t.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64, json.Number:
		return "a number"
	case string:
		return "a string"
	case json.Delim:
		if t == json.Delim('[') {
			return "an array"
		}
		return "an object"
	}
	return "something else"
}
