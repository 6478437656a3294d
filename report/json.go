package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// WriteJSON writes the report as indented JSON. Text is written as it is (HTML characters
// unescaped, control characters as \u escapes); readers that display it clean it themselves.
func WriteJSON(w io.Writer, r Report) error {
	if r.Cases == nil {
		r.Cases = []Case{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("report: writing JSON: %w", err)
	}
	return nil
}

// FromJSON reads a report written by WriteJSON, possibly by a newer version: unknown fields
// are ignored. Anything after the report is an error.
func FromJSON(rd io.Reader) (Report, error) {
	dec := json.NewDecoder(rd)
	var r Report
	if err := dec.Decode(&r); err != nil {
		return Report{}, fmt.Errorf("report: reading JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Report{}, errors.New("report: reading JSON: unexpected data after the report")
	}
	if r.Cases == nil {
		r.Cases = []Case{}
	}
	for i := range r.Cases {
		if r.Cases[i].Assertions == nil {
			r.Cases[i].Assertions = []Assertion{}
		}
	}
	return r, nil
}
