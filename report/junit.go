package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// The JUnit XML shape most CI readers accept (Jenkins, GitLab, the GitHub Actions test
// reporters): <testsuites> of <testsuite> of <testcase>, each with at most one of <failure>,
// <error> or <skipped>.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string           `xml:"name,attr"`
	Tests      int              `xml:"tests,attr"`
	Failures   int              `xml:"failures,attr"`
	Errors     int              `xml:"errors,attr"`
	Skipped    int              `xml:"skipped,attr"`
	Time       string           `xml:"time,attr"`
	Properties *junitProperties `xml:"properties"`
	Cases      []junitCase      `xml:"testcase"`
}

// junitProperties is a testsuite's <properties>, absent when nil.
type junitProperties struct {
	Property []Property `xml:"property"`
}

type junitCase struct {
	Classname string        `xml:"classname,attr"`
	Name      string        `xml:"name,attr"`
	Time      string        `xml:"time,attr"`
	File      string        `xml:"file,attr,omitempty"`
	Line      int           `xml:"line,attr,omitempty"`
	Failure   *junitProblem `xml:"failure"`
	Error     *junitProblem `xml:"error"`
	Skipped   *junitSkipped `xml:"skipped"`
	// SystemOut says that a `runs: auto` case was undecided, whatever its verdict.
	SystemOut string `xml:"system-out,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

type junitSkipped struct {
	Message string `xml:"message,attr,omitempty"`
}

// WriteJUnit writes the report as JUnit XML: one <testsuite> per skill (in report order), one
// <testcase classname="skill" name="case"> per case. Failed cases carry a <failure
// type="assertion">, errored and timed-out ones an <error type="errored"|"timed_out">,
// skipped and pending ones <skipped/>; the text holds the epoch tally, the assertions that
// did not pass and the output excerpts. Times are in seconds. Untrusted text is cleaned of
// escape sequences and characters XML 1.0 forbids, and escaped by encoding/xml.
func WriteJUnit(w io.Writer, r Report) error {
	doc := junitSuites{Name: cleanXML("skillfleet run " + r.Run)}
	// Group by skill in order of first appearance: a report from Builder is sorted already,
	// one read back with FromJSON need not be.
	var groups [][]Case
	index := map[string]int{}
	for _, c := range r.Cases {
		i, ok := index[c.Skill]
		if !ok {
			i = len(groups)
			index[c.Skill] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], c)
	}
	var total int64
	for _, cases := range groups {
		s := junitSuite{Name: cleanXML(cases[0].Skill)}
		var ms int64
		for _, c := range cases {
			jc := junitCase{
				Classname: cleanXML(c.Skill), Name: cleanXML(junitName(c)), Time: seconds(c.DurationMS),
				File: cleanXML(c.File), Line: c.Line,
			}
			baseline := c.Arm != "" && c.Arm != ArmWithSkill
			if c.Undecided {
				jc.SystemOut = cleanXML(undecidedText(c))
			}
			switch {
			case c.Status == StatusPassed:
			case c.Quarantined != "" && !baseline:
				// A quarantined case must not fail CI either: skipped, with its verdict, why it
				// is quarantined and the flaky evidence in the message.
				msg := "quarantined (" + c.Quarantined + ") " + c.Status
				if c.Reason != "" {
					msg += ": " + c.Reason
				}
				if c.Flaky != nil {
					msg += "; flaky: " + c.Flaky.Evidence
				}
				jc.Skipped = &junitSkipped{Message: cleanXML(msg)}
				s.Skipped++
			case baseline:
				// A baseline case that did not pass is what a comparison expects: CI must not
				// fail on it, so it is reported skipped, its verdict and reason in the message.
				jc.Skipped = &junitSkipped{Message: cleanXML(strings.TrimSuffix("baseline "+c.Arm+" "+c.Status+": "+c.Reason, ": "))}
				s.Skipped++
			case c.Status == StatusFailed:
				jc.Failure = &junitProblem{Message: cleanXML(flakyPrefix(c) + failureMessage(c)), Type: "assertion", Text: cleanXML(problemText(c))}
				s.Failures++
			case c.Status == StatusErrored || c.Status == StatusTimedOut:
				jc.Error = &junitProblem{Message: cleanXML(flakyPrefix(c) + failureMessage(c)), Type: c.Status, Text: cleanXML(problemText(c))}
				s.Errors++
			default: // skipped, pending, or a status from a newer version
				msg := c.Reason
				if c.Status != StatusSkipped {
					msg = strings.TrimSuffix(c.Status+": "+c.Reason, ": ")
				}
				jc.Skipped = &junitSkipped{Message: cleanXML(msg)}
				s.Skipped++
			}
			ms += c.DurationMS
			s.Cases = append(s.Cases, jc)
		}
		s.Tests = len(s.Cases)
		s.Time = seconds(ms)
		total += ms
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Errors += s.Errors
		doc.Skipped += s.Skipped
		doc.Suites = append(doc.Suites, s)
	}
	doc.Time = seconds(total)
	if props := ChangesProperties(r.Changes); len(props) > 0 {
		for i := range props {
			props[i] = Property{Name: cleanXML(props[i].Name), Value: cleanXML(props[i].Value)}
		}
		// First, as the text report starts with the changes.
		doc.Suites = append([]junitSuite{{Name: "changes", Time: "0", Properties: &junitProperties{props}}}, doc.Suites...)
	}
	if len(r.ComparisonProperties) > 0 {
		props := make([]Property, len(r.ComparisonProperties))
		for i, p := range r.ComparisonProperties {
			props[i] = Property{Name: cleanXML(p.Name), Value: cleanXML(p.Value)}
		}
		doc.Suites = append(doc.Suites, junitSuite{Name: "comparison", Time: "0", Properties: &junitProperties{props}})
	}
	if p := r.Partial; p != nil {
		// A run stopped at its cost cap: CI sees that the suite was not all run, and why.
		doc.Suites = append(doc.Suites, junitSuite{Name: "partial", Time: "0", Properties: &junitProperties{[]Property{
			{Name: "partial.reason", Value: cleanXML(p.Reason)},
			{Name: "partial.spent", Value: fmt.Sprintf("%.4f", p.Spent)},
			{Name: "partial.max_cost", Value: fmt.Sprintf("%.2f", p.MaxCost)},
		}}})
	}

	if _, err := io.WriteString(w, xml.Header); err != nil {
		return fmt.Errorf("report: writing JUnit: %w", err)
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("report: writing JUnit: %w", err)
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return fmt.Errorf("report: writing JUnit: %w", err)
	}
	return nil
}

func seconds(ms int64) string { return strconv.FormatFloat(float64(ms)/1000, 'f', 3, 64) }

// failureMessage is the one-line summary CI systems show: the first assertion that did not
// pass, else the reason, else the status.
func failureMessage(c Case) string {
	for _, a := range c.Assertions {
		if !a.Passed {
			return oneLine(assertionLine(a), 300)
		}
	}
	if c.Reason != "" {
		return oneLine(c.Reason, 300)
	}
	return c.Status
}

// flakyPrefix marks the message of a flaky case's failure, so CI shows it at a glance.
func flakyPrefix(c Case) string {
	if c.Flaky == nil {
		return ""
	}
	return "[flaky] "
}

// problemText is the body of a failure or error: tally, reason, assertions not passing,
// where the case is written, output excerpts.
func problemText(c Case) string {
	var b strings.Builder
	if c.Epochs > 1 {
		fmt.Fprintf(&b, "%s (confidence %s)\n", epochTally(c), strconv.FormatFloat(c.Confidence, 'f', -1, 64))
		if c.Curtailed() {
			fmt.Fprintf(&b, "%s\n", epochsRunText(c))
		}
		if c.Undecided {
			fmt.Fprintf(&b, "%s\n", undecidedText(c))
		}
	}
	if c.Reason != "" && c.Reason != epochTally(c) {
		fmt.Fprintf(&b, "reason: %s\n", c.Reason)
	}
	if c.Flaky != nil {
		fmt.Fprintf(&b, "flaky: %s\n", c.Flaky.Evidence)
	}
	for _, a := range c.Assertions {
		if a.Passed {
			continue
		}
		fmt.Fprintf(&b, "%s\n", assertionLine(a))
		if a.Expected != "" {
			fmt.Fprintf(&b, "  expected: %s\n", a.Expected)
		}
		if a.Actual != "" {
			fmt.Fprintf(&b, "  actual:   %s\n", a.Actual)
		}
		if a.Path != "" {
			fmt.Fprintf(&b, "  path:     %s\n", a.Path)
		}
	}
	if c.File != "" {
		fmt.Fprintf(&b, "case: %s\n", fileLine(c))
	}
	for _, o := range []struct{ name, text string }{{"output", c.Output}, {"stdout", c.Stdout}, {"stderr", c.Stderr}} {
		if o.text != "" {
			fmt.Fprintf(&b, "--- %s ---\n%s\n", o.name, strings.TrimRight(o.text, "\n"))
		}
	}
	return b.String()
}

// assertionLine is e.g. "FAILED output_contains: output does not contain \"hello\"".
func assertionLine(a Assertion) string {
	state := "FAILED"
	switch {
	case a.Errored:
		state = "ERRORED"
	case a.Passed:
		state = "passed"
	}
	if a.Message == "" {
		return state + " " + a.Type
	}
	return state + " " + a.Type + ": " + a.Message
}

func fileLine(c Case) string {
	if c.Line > 0 {
		return c.File + ":" + strconv.Itoa(c.Line)
	}
	return c.File
}

// junitName is a case's name in JUnit: a baseline arm's case is named with its arm, as in the
// text report, so CI shows the two arms of a case as two tests.
func junitName(c Case) string {
	if c.Arm != "" && c.Arm != ArmWithSkill {
		return c.Case + " [" + c.Arm + "]"
	}
	return c.Case
}
