package assert

import (
	"fmt"
	"strings"
)

// stream is one text an assertion looks at.
type stream struct {
	name string // "output", "stdout", "stderr"
	text string
}

// hit is where a substring was found.
type hit struct {
	stream     stream
	start, end int
}

func (h hit) at() string {
	line, col := lineCol(h.stream.text, h.start)
	return fmt.Sprintf("line %d, column %d", line, col)
}

// texts prepares the streams of one Observation for substring search and keeps them, so that
// the assertions of a case that look at the same stream in the same mode prepare it once.
type texts struct {
	preparers [2]*preparer // [0] exact, [1] folding
	prepared  map[textKey]*prepared
}

type textKey struct {
	stream string
	fold   bool
}

func newTexts() *texts { return &texts{prepared: map[textKey]*prepared{}} }

func (t *texts) preparer(fold bool) *preparer {
	i := 0
	if fold {
		i = 1
	}
	if t.preparers[i] == nil {
		t.preparers[i] = newPreparer(fold)
	}
	return t.preparers[i]
}

func (t *texts) text(st stream, fold bool) *prepared {
	k := textKey{st.name, fold}
	if p, ok := t.prepared[k]; ok {
		return p
	}
	p := t.preparer(fold).prepare(st.text)
	t.prepared[k] = &p
	return &p
}

// find looks for needle in the streams in order and reports the first hit.
func (t *texts) find(needle string, fold bool, sts []stream) (hit, bool) {
	prep := t.preparer(fold).prepare(needle).text
	for _, st := range sts {
		if start, end, ok := t.text(st, fold).find(prep); ok {
			return hit{stream: st, start: start, end: end}, true
		}
	}
	return hit{}, false
}

func caseNote(fold bool) string {
	if fold {
		return "(case-insensitive)"
	}
	return "(case-sensitive)"
}

// evalContains decides output_contains, output_not_contains, stdout_contains, stderr_contains and
// not_contains.
func evalContains(a Assertion, obs Observation, ts *texts) Result {
	fold := a.Type.caseInsensitive()
	negate := a.Type == OutputNotContains || a.Type == NotContains
	var sts []stream
	switch a.Type {
	case OutputContains, OutputNotContains:
		sts = []stream{{"output", obs.Output}}
	case StdoutContains:
		sts = []stream{{"stdout", obs.Stdout}}
	case StderrContains:
		sts = []stream{{"stderr", obs.Stderr}}
	case NotContains:
		sts = []stream{{"stdout", obs.Stdout}, {"stderr", obs.Stderr}}
	}
	subject := sts[0].name
	if len(sts) == 2 {
		subject = "stdout and stderr"
	}
	q, mode := quote(a.Value), caseNote(fold)

	missing := fmt.Sprintf("%s does not contain %s %s", subject, q, mode)
	if a.Type == NotContains {
		missing = fmt.Sprintf("neither stdout nor stderr contains %s %s", q, mode)
	}
	r := Result{Type: a.Type, Expected: clip(fmt.Sprintf("%s contains %s %s", subject, q, mode), maxExcerpt)}
	if negate {
		r.Expected = clip(missing, maxExcerpt)
	}

	h, found := ts.find(a.Value, fold, sts)
	r.Passed = found != negate

	var msg strings.Builder
	switch {
	case found:
		r.Actual = labelled(a, h.stream, h.start, h.end)
		fmt.Fprintf(&msg, "%s contains %s %s at %s", h.stream.name, q, mode, h.at())
	default:
		r.Actual = startOf(a, sts)
		msg.WriteString(missing)
		if empty(sts) {
			if len(sts) == 2 {
				msg.WriteString("; stdout and stderr are empty")
			} else {
				fmt.Fprintf(&msg, "; %s is empty", the(subject))
			}
		}
		// A case-sensitive miss next to a match in another case is worth a hint: a failing
		// contains is probably a typo in the case, a passing not-contains may be a surprise.
		if !fold {
			if hf, ok := ts.find(a.Value, true, sts); ok {
				r.Actual = labelled(a, hf.stream, hf.start, hf.end)
				fmt.Fprintf(&msg, "; it appears with different case in %s at %s: %s",
					hf.stream.name, hf.at(), quote(hf.stream.text[hf.start:hf.end]))
			}
		}
		if obs.OutputTruncated {
			what := the(subject) + " was"
			if len(sts) == 2 {
				what = "the captured output was"
			}
			fmt.Fprintf(&msg, "; %s truncated, so the part cut off was not checked", what)
			if negate {
				// Absence cannot be shown in text that was not kept: never a false pass.
				r.Passed, r.Errored = false, true
			}
		}
	}
	r.Message = msg.String()
	return r
}

func empty(sts []stream) bool {
	for _, st := range sts {
		if st.text != "" {
			return false
		}
	}
	return true
}

// the puts an article before "output"; stream names stand alone.
func the(subject string) string {
	if subject == "output" {
		return "the output"
	}
	return subject
}

// labelled is an excerpt of st around [start, end); for not_contains, which looks at two
// streams, it starts with the stream's name.
func labelled(a Assertion, st stream, start, end int) string {
	if a.Type == NotContains {
		label := st.name + ": "
		return label + excerptWithin(st.text, start, end, maxExcerpt-len(label))
	}
	return excerpt(st.text, start, end)
}

// startOf shows the beginning of what was searched when nothing decisive was found.
func startOf(a Assertion, sts []stream) string {
	st := sts[0]
	if len(sts) == 2 && st.text == "" && sts[1].text != "" {
		st = sts[1]
	}
	return labelled(a, st, 0, 0)
}
