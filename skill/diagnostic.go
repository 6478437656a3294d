package skill

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// Severity grades a Diagnostic. Only errors make a skill invalid.
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

// maxQuoted bounds user-controlled text quoted in a message, so that a hostile 60 KB key
// yields a readable diagnostic.
const maxQuoted = 80

// clip shortens s to maxQuoted characters for quoting in a message.
func clip(s string) string {
	if len(s) <= maxQuoted {
		return s
	}
	n := 0
	for i := range s {
		if n == maxQuoted {
			return s[:i] + "…"
		}
		n++
	}
	return s
}

func errorAt(rule, file string, line int, msg string) Diagnostic {
	return Diagnostic{Rule: rule, Severity: SeverityError, Message: msg, File: file, Line: line}
}

func warningAt(rule, file string, line int, msg string) Diagnostic {
	return Diagnostic{Rule: rule, Severity: SeverityWarning, Message: msg, File: file, Line: line}
}

func infoAt(rule, file string, line int, msg string) Diagnostic {
	return Diagnostic{Rule: rule, Severity: SeverityInfo, Message: msg, File: file, Line: line}
}
