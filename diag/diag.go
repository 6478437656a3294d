// Package diag is the one shape of a finding about a user's input: a SKILL.md, a case file,
// skillfleet.yaml. Every reader (skill, suite, config), the coordinator's plan errors and the
// CLI's validate, lint, deps and plan output speak it, so a finding reads the same wherever it
// is shown and its JSON shape is one contract.
package diag

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// Severity grades a Diagnostic. Only errors make an input invalid.
type Severity string

// The severities, in the words the JSON output uses.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
	SeverityInfo    Severity = "info"
)

// Diagnostic is one finding about one file. Its JSON shape is part of the CLI's contract.
type Diagnostic struct {
	Rule     string   `json:"rule"`
	Severity Severity `json:"severity"`
	Message  string   `json:"message"`
	File     string   `json:"file"`
	Line     int      `json:"line"`
}

// Error makes an error-severity diagnostic.
func Error(rule, file string, line int, msg string) Diagnostic {
	return Diagnostic{Rule: rule, Severity: SeverityError, Message: msg, File: file, Line: line}
}

// Warning makes a warning-severity diagnostic.
func Warning(rule, file string, line int, msg string) Diagnostic {
	return Diagnostic{Rule: rule, Severity: SeverityWarning, Message: msg, File: file, Line: line}
}

// Info makes an info-severity diagnostic.
func Info(rule, file string, line int, msg string) Diagnostic {
	return Diagnostic{Rule: rule, Severity: SeverityInfo, Message: msg, File: file, Line: line}
}

// String renders the diagnostic the way compilers do, so editors can jump to it:
// "path/SKILL.md:3: error name.format: message". The line is omitted when unknown (0).
func (d Diagnostic) String() string {
	var b strings.Builder
	if d.File != "" {
		b.WriteString(d.File)
		if d.Line > 0 {
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(d.Line))
		}
		b.WriteString(": ")
	}
	b.WriteString(string(d.Severity))
	b.WriteByte(' ')
	b.WriteString(d.Rule)
	b.WriteString(": ")
	b.WriteString(d.Message)
	return b.String()
}

// Diagnostics is a list of findings.
type Diagnostics []Diagnostic

// Errors counts the error-severity diagnostics.
func (ds Diagnostics) Errors() int { return ds.count(SeverityError) }

// Warnings counts the warning-severity diagnostics.
func (ds Diagnostics) Warnings() int { return ds.count(SeverityWarning) }

// HasErrors reports whether any diagnostic is an error.
func (ds Diagnostics) HasErrors() bool { return ds.Errors() > 0 }

func (ds Diagnostics) count(s Severity) int {
	n := 0
	for _, d := range ds {
		if d.Severity == s {
			n++
		}
	}
	return n
}

// Sort orders the diagnostics by file, line and rule (then message, so the order is total and
// output is byte-for-byte reproducible).
func (ds Diagnostics) Sort() {
	slices.SortStableFunc(ds, func(a, b Diagnostic) int {
		return cmp.Or(
			cmp.Compare(a.File, b.File),
			cmp.Compare(a.Line, b.Line),
			cmp.Compare(a.Rule, b.Rule),
			cmp.Compare(a.Message, b.Message),
		)
	})
}

// ForFile returns the diagnostics about file, in their current order.
func (ds Diagnostics) ForFile(file string) Diagnostics {
	var out Diagnostics
	for _, d := range ds {
		if d.File == file {
			out = append(out, d)
		}
	}
	return out
}
