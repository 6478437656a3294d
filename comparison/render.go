package comparison

import (
	"cmp"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"unicode"

	"github.com/skillfleet/skillfleet/internal/text"
	"github.com/skillfleet/skillfleet/stats"
)

// maxListed bounds the cases the text rendering names per change category.
const maxListed = 20

func (a Axis) String() string {
	if a == AxisArm {
		return "arm"
	}
	return "skill"
}

// sideName describes a side for a reader.
func sideName(s Side) string {
	parts := []string{}
	if s.Label != "" {
		parts = append(parts, s.Label)
	}
	if s.Run != "" && !strings.Contains(s.Label, s.Run) {
		parts = append(parts, "run "+s.Run)
	}
	parts = append(parts, s.Arm)
	return clean(strings.Join(parts, ", "))
}

// WriteText writes the comparison for a person: per skill both pass rates, the difference in
// percentage points with its 95% interval, the Holm-adjusted p-value, whether it is
// significant and the methods behind them, the errored epochs left out per side; then what
// changed case by case.
func (r *Report) WriteText(w io.Writer) error {
	c := r.Comparison
	var b strings.Builder
	fmt.Fprintf(&b, "comparing B (%s) against A (%s), on the %s axis\n", sideName(r.B), sideName(r.A), r.Axis)
	fmt.Fprintf(&b, "pass rates over decided epochs, each case weighing the same; differences are B minus A in points;\n")
	fmt.Fprintf(&b, "p-values Holm-adjusted across %d skills; significant at %.2f; seed %d\n\n", len(c.PerSkill), stats.Alpha, c.Seed)
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SKILL\tCASES\tA\tB\tDELTA\t95% INTERVAL\tP (HOLM)\tSIGNIFICANT\tLEFT OUT A/B\tMETHOD")
	row := func(name string, s stats.SkillComparison) {
		if !s.Tested {
			fmt.Fprintf(tw, "%s\t%d\t-\t-\t-\t-\t-\tnot tested\t%d/%d\tno paired case\n", clean(name), s.Cases, s.A.LeftOut, s.B.LeftOut)
			return
		}
		sig := "no"
		if s.Underpowered && !s.Significant {
			// The design could not have seen --min-effect: "not significant" says little.
			sig = "no, underpowered"
		}
		if s.Significant {
			sig = "yes"
			if s.Delta < 0 {
				sig = "yes, worse"
			} else if s.Delta > 0 {
				sig = "yes, better"
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t[%s, %s]\t%.4f\t%s\t%d/%d\t%s, %s\n", clean(name), s.Cases,
			percent(s.A.PassRate), percent(s.B.PassRate), points(s.Delta), points(s.Interval.Lo), points(s.Interval.Hi),
			s.PAdjusted, sig, s.A.LeftOut, s.B.LeftOut, s.Test, s.IntervalMethod)
	}
	for _, s := range c.PerSkill {
		row(s.Skill, s)
	}
	row("(all, unadjusted)", c.Overall)
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, s := range c.PerSkill {
		if s.Sequential != nil {
			b.WriteString(SequentialLine(clean(s.Skill), *s.Sequential))
		}
	}
	o := c.Overall
	if r.Noise == nil {
		fmt.Fprintf(&b, "\nsmallest difference this design detects (80%% power, alpha %.2f): %s overall; underpowered (cannot detect %.1f points): %s\n",
			stats.Alpha, minDetectable(o.MinDetectable), 100*o.MinEffect, underpoweredSkills(c))
	}
	fmt.Fprintf(&b, "\nleft out: %d errored or timed-out epochs in A, %d in B (never counted as passes or fails); skipped: %d in A, %d in B\n",
		o.A.LeftOut, o.B.LeftOut, o.A.Skipped, o.B.Skipped)
	if o.OnlyA+o.OnlyB+o.Unpaired > 0 {
		fmt.Fprintf(&b, "not paired: %d cases only in A, %d only in B, %d with no decided epoch in one side\n", o.OnlyA, o.OnlyB, o.Unpaired)
	}
	if o.Tested {
		fmt.Fprintf(&b, "tokens per case: A %.0f, B %.0f (%+.0f); seconds per case: A %.1f, B %.1f (%+.1f)\n",
			o.Tokens.A, o.Tokens.B, noNegativeZero(o.Tokens.Mean), o.Seconds.A, o.Seconds.B, noNegativeZero(o.Seconds.Mean))
	}
	lists := r.ChangeLists()
	counts := make([]string, len(lists))
	for i, l := range lists {
		counts[i] = fmt.Sprintf("%d %s", len(l.Cases), cmp.Or(l.Summary, l.Name))
	}
	fmt.Fprintf(&b, "\nchanges: %s\n", strings.Join(counts, ", "))
	for _, cat := range lists {
		if len(cat.Cases) == 0 {
			continue
		}
		fmt.Fprintf(&b, "%s:\n", cat.Name)
		for _, cc := range cat.Cases[:min(len(cat.Cases), maxListed)] {
			fmt.Fprintf(&b, "  %s/%s (%s → %s)", clean(cc.Skill), clean(cc.Case), cc.A, cc.B)
			if cc.FlippedEpochs != nil {
				fmt.Fprintf(&b, " epochs flipped: %s", strings.Trim(fmt.Sprint(cc.FlippedEpochs), "[]"))
			}
			b.WriteByte('\n')
		}
		if n := len(cat.Cases) - maxListed; n > 0 {
			fmt.Fprintf(&b, "  and %d more\n", n)
		}
	}
	if r.Noise != nil {
		writeNoise(&b, r.Noise, c.Overall.Test)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// SequentialLine says, in a line, where a skill's group-sequential comparison stopped and why:
// the look and epochs, the reason, the sequential p-value before Holm and the rule.
func SequentialLine(skill string, s stats.SequentialResult) string {
	return fmt.Sprintf("group-sequential %s: stopped at look %d of %d (%d of %d epochs per case and arm): %s; p over the looks %.4f before Holm (looks at epochs %s; %s)\n",
		skill, s.StoppedAtLook, len(s.Looks), s.EpochsRun, s.Epochs, s.Reason, s.P, text.Ints(s.Looks), s.Spending)
}

// underpoweredSkills names the skills (and "overall") whose design cannot detect the
// comparison's minimum effect, or says none.
func underpoweredSkills(c stats.Comparison) string {
	var names []string
	for _, s := range c.PerSkill {
		if s.Underpowered {
			names = append(names, clean(s.Skill))
		}
	}
	if c.Overall.Underpowered {
		names = append(names, "overall")
	}
	if names == nil {
		return "none"
	}
	if len(names) > maxListed {
		names = append(names[:maxListed], fmt.Sprintf("and %d more", len(names)-maxListed))
	}
	return strings.Join(names, ", ")
}

// percent renders a rate in [0, 1] as a percentage.
func percent(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) }

// points renders a difference of rates in percentage points, signed.
func points(x float64) string {
	if x == 0 {
		return "0.0"
	}
	return fmt.Sprintf("%+.1f", 100*x)
}

// noNegativeZero keeps "-0.0" out of a rendering: a mean of differences that rounds to zero
// is no change.
func noNegativeZero(x float64) float64 {
	if math.Abs(x) < 0.05 {
		return 0
	}
	return x
}

// clean makes untrusted names (skill and case names come from a suite) safe for a terminal.
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return '?'
		}
		return r
	}, s)
}

// JSONSide is a side in the JSON rendering.
type JSONSide struct {
	Label string `json:"label"`
	Run   string `json:"run"`
	Arm   string `json:"arm"`
	// Results counts the results of the side.
	Results int `json:"results"`
}

// JSONReport is the JSON rendering of a comparison. Its field names are stable: "a" and "b"
// the sides (B is compared against A: differences are B minus A); "axis" "skill" (two runs,
// the skill's files may differ) or "arm"; "alpha" the significance level after Holm's
// adjustment; "per_skill" and "overall" package stats' SkillComparison (pass rates and
// differences as fractions, "interval" {"lo","hi"} at 95%, "p" and "p_adjusted",
// "significant", "test" and "interval_method", per side "left_out" the errored and timed-out
// epochs, and "sequential" where a group-sequential comparison stopped, see
// stats.SequentialResult); "changes" the case-level diff (see Changes). Per-case statistics are not included:
// a run of 100,000 cases would make them the bulk of the document.
type JSONReport struct {
	A        JSONSide                `json:"a"`
	B        JSONSide                `json:"b"`
	Axis     string                  `json:"axis"`
	Alpha    float64                 `json:"alpha"`
	Seed     uint64                  `json:"seed"`
	PerSkill []stats.SkillComparison `json:"per_skill"`
	Overall  stats.SkillComparison   `json:"overall"`
	Changes  Changes                 `json:"changes"`
	// Noise is an A/A run's noise floor (see Noise); absent otherwise.
	Noise *Noise `json:"noise,omitempty"`
}

// JSON returns the JSON rendering's document.
func (r *Report) JSON() JSONReport {
	side := func(s Side) JSONSide {
		return JSONSide{Label: s.Label, Run: s.Run, Arm: s.Arm, Results: len(s.Results)}
	}
	per := r.Comparison.PerSkill
	if per == nil {
		per = []stats.SkillComparison{}
	}
	return JSONReport{
		A: side(r.A), B: side(r.B), Axis: r.Axis.String(), Alpha: stats.Alpha, Seed: r.Comparison.Seed,
		PerSkill: per, Overall: r.Comparison.Overall, Changes: r.Changes.nonNil(), Noise: r.Noise,
	}
}

// nonNil makes every list of the changes an array in JSON, never null.
func (c Changes) nonNil() Changes {
	for _, l := range []*[]CaseChange{&c.NewlyFailing, &c.Fixed, &c.StillFailing, &c.New, &c.Removed, &c.Undecided, &c.Flipped} {
		if *l == nil {
			*l = []CaseChange{}
		}
	}
	return c
}

// WriteJSON writes the JSON rendering (see JSONReport), indented.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r.JSON())
}

// Property is one JUnit <property>.
type Property struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

// Properties are the comparison as JUnit properties, for a <properties> block on a
// testsuite: per skill "compare.<skill>.delta" (B minus A, a signed fraction),
// ".interval" ("lo,hi"), ".p_adjusted" and ".significant" ("true"/"false"), and the same
// for "compare.overall"; a group-sequentially compared skill adds ".sequential.reason",
// ".sequential.stopped_at_look" ("look,looks") and ".sequential.epochs" ("run,planned"); "compare.a" and "compare.b" name the sides. An A/A comparison adds
// "noise.flipped" ("flipped,paired"), "noise.flip_rate", "noise.interval" (Wilson, "lo,hi")
// and "noise.min_detectable" (a fraction, or "none").
func (r *Report) Properties() []Property {
	props := []Property{{"compare.a", sideName(r.A)}, {"compare.b", sideName(r.B)}, {"compare.axis", r.Axis.String()}}
	add := func(prefix string, s stats.SkillComparison) {
		props = append(props,
			Property{prefix + ".delta", fmt.Sprintf("%+.4f", s.Delta)},
			Property{prefix + ".interval", fmt.Sprintf("%.4f,%.4f", s.Interval.Lo, s.Interval.Hi)},
			Property{prefix + ".p_adjusted", fmt.Sprintf("%.4f", s.PAdjusted)},
			Property{prefix + ".significant", fmt.Sprint(s.Significant)},
			Property{prefix + ".left_out", fmt.Sprintf("%d,%d", s.A.LeftOut, s.B.LeftOut)},
			Property{prefix + ".underpowered", fmt.Sprint(s.Underpowered)},
		)
		if q := s.Sequential; q != nil {
			props = append(props,
				Property{prefix + ".sequential.reason", q.Reason},
				Property{prefix + ".sequential.stopped_at_look", fmt.Sprintf("%d,%d", q.StoppedAtLook, len(q.Looks))},
				Property{prefix + ".sequential.epochs", fmt.Sprintf("%d,%d", q.EpochsRun, q.Epochs)},
			)
		}
	}
	for _, s := range r.Comparison.PerSkill {
		add("compare."+clean(s.Skill), s)
	}
	add("compare.overall", r.Comparison.Overall)
	if n := r.Noise; n != nil {
		mde := "none"
		if n.MinDetectable != nil {
			mde = fmt.Sprintf("%.4f", *n.MinDetectable)
		}
		props = append(props,
			Property{"noise.flipped", fmt.Sprintf("%d,%d", n.Flipped, n.Cases)},
			Property{"noise.flip_rate", fmt.Sprintf("%.4f", n.FlipRate)},
			Property{"noise.interval", fmt.Sprintf("%.4f,%.4f", n.Interval.Lo, n.Interval.Hi)},
			Property{"noise.min_detectable", mde},
		)
	}
	return props
}

type junitSuites struct {
	XMLName xml.Name   `xml:"testsuites"`
	Suite   junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string      `xml:"name,attr"`
	Tests      int         `xml:"tests,attr"`
	Failures   int         `xml:"failures,attr"`
	Properties []Property  `xml:"properties>property"`
	Cases      []junitCase `xml:"testcase"`
}

type junitCase struct {
	Classname string        `xml:"classname,attr"`
	Name      string        `xml:"name,attr"`
	Failure   *junitFailure `xml:"failure"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
}

// WriteJUnit writes the comparison as a JUnit testsuite named "comparison": its <properties>
// are Properties, and one <testcase> per skill fails when B is significantly worse than A.
func (r *Report) WriteJUnit(w io.Writer) error {
	s := junitSuite{Name: "comparison", Properties: r.Properties()}
	for _, sc := range r.Comparison.PerSkill {
		c := junitCase{Classname: "comparison", Name: clean(sc.Skill)}
		if sc.Significant && sc.Delta < 0 {
			c.Failure = &junitFailure{Type: "worse", Message: fmt.Sprintf("significantly worse: %s points [%s, %s], p %.4f (Holm)",
				points(sc.Delta), points(sc.Interval.Lo), points(sc.Interval.Hi), sc.PAdjusted)}
			s.Failures++
		}
		s.Cases = append(s.Cases, c)
	}
	s.Tests = len(s.Cases)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(junitSuites{Suite: s}); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
