package activation

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func readBody(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func testDetector(t testing.TB) (*Detector, map[string]string) {
	bodies := map[string]string{
		"deploy-checklist":  readBody(t, "deploy.md"),
		"logging-standards": readBody(t, "logging.md"),
		"tiny":              readBody(t, "tiny.md"),
	}
	var skills []Skill
	for _, n := range []string{"deploy-checklist", "logging-standards", "tiny"} {
		skills = append(skills, Skill{Name: n, Body: bodies[n]})
	}
	return New(skills), bodies
}

// numbered renders body as `cat -n` (format "%6d\t") or an agent's read tool ("%6d→") would.
func numbered(body, format string) string {
	var b strings.Builder
	for i, l := range strings.Split(body, "\n") {
		fmt.Fprintf(&b, format+"%s\n", i+1, l)
	}
	return b.String()
}

func TestScan(t *testing.T) {
	d, bodies := testDetector(t)
	deploy, logging := bodies["deploy-checklist"], bodies["logging-standards"]
	frontmatter := "---\nname: deploy-checklist\ndescription: Produces the pre-deployment checklist. Use when the user is about to deploy.\n---\n"
	tests := []struct {
		name string
		text string
		want []string
	}{
		{"the body as cat prints it", "$ cat /skills/deploy-checklist/SKILL.md\n" + frontmatter + deploy, []string{"deploy-checklist"}},
		{"cat -n", numbered(deploy, "%6d\t"), []string{"deploy-checklist"}},
		{"a read tool's arrows", numbered(logging, "%6d→"), []string{"logging-standards"}},
		{"nl's colon", numbered(logging, "%d: "), []string{"logging-standards"}},
		{"CRLF line ends", strings.ReplaceAll(logging, "\n", "\r\n"), []string{"logging-standards"}},
		{"indented, as in a quoted tool result", "    " + strings.ReplaceAll(deploy, "\n", "\n    "), []string{"deploy-checklist"}},
		{"two skills in one text, in text order", logging + "\n" + deploy, []string{"logging-standards", "deploy-checklist"}},
		{"the frontmatter only: being listed is no activation", frontmatter, nil},
		{"the catalog block", "<available_skills>\n<skill><name>deploy-checklist</name><description>Produces the pre-deployment checklist.</description></skill>\n</available_skills>", nil},
		{"one line quoted by another document", "As the checklist says:\n> 2. Run `python3 scripts/checklist.py ENV` and show its numbered list exactly as printed.\n", nil},
		{"two of three fingerprint lines (head -4)", strings.Join(strings.Split(deploy, "\n")[:5], "\n"), nil},
		{"a line merely starting with a number keeps it", "12 Every log line is one JSON object with the keys ts, level, msg and service.", nil},
		{"empty", "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := d.Scan(tc.text); !slices.Equal(got, tc.want) {
				t.Errorf("Scan = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestUnfingerprinted(t *testing.T) {
	d, bodies := testDetector(t)
	if got := d.Unfingerprinted(); !slices.Equal(got, []string{"tiny"}) {
		t.Errorf("Unfingerprinted = %v, want [tiny]", got)
	}
	if got := d.Scan(bodies["tiny"]); got != nil {
		t.Errorf("a body without fingerprint detected: %v", got)
	}
}

// TestTracker: a body read in two chunks activates its skill at the turn that completes it,
// and reading it again reports nothing new.
func TestTracker(t *testing.T) {
	d, bodies := testDetector(t)
	lines := strings.Split(bodies["deploy-checklist"], "\n")
	tr := NewTracker(d)
	if got := tr.Observe(1, "a user question about deployments"); got != nil {
		t.Errorf("turn 1: %v", got)
	}
	if got := tr.Observe(2, strings.Join(lines[:5], "\n")); got != nil {
		t.Errorf("turn 2, first chunk: %v", got)
	}
	if got := tr.Observe(3, strings.Join(lines[5:], "\n")); !slices.Equal(got, []string{"deploy-checklist"}) {
		t.Errorf("turn 3, second chunk: %v", got)
	}
	if got := tr.Observe(4, bodies["deploy-checklist"]+bodies["logging-standards"]); !slices.Equal(got, []string{"logging-standards"}) {
		t.Errorf("turn 4: %v, want only the new skill", got)
	}
	want := []Activation{{"deploy-checklist", 3}, {"logging-standards", 4}}
	if got := tr.Activated(); !slices.Equal(got, want) {
		t.Errorf("Activated = %v, want %v", got, want)
	}
	var none *Tracker
	if none.Observe(1, "x") != nil || none.Activated() != nil || NewTracker(nil).Observe(1, bodies["logging-standards"]) != nil {
		t.Error("a nil tracker or detector detects something")
	}
}

// TestRepeatedLinesAreNotFingerprints: a line the body repeats is skipped, so three different
// lines are still needed.
func TestRepeatedLinesAreNotFingerprints(t *testing.T) {
	const same = "Always run the full test suite before you push anything."
	body := same + "\n" + same + "\nThe second distinct line of this body is long enough.\nA third distinct line, also long enough to count here.\nAnd a fourth one that completes the fingerprint of three.\n"
	d := New([]Skill{{Name: "r", Body: body}})
	if got := d.Scan(same + "\nThe second distinct line of this body is long enough.\nA third distinct line, also long enough to count here.\n"); got != nil {
		t.Errorf("the repeated line counted: %v", got)
	}
	if got := d.Scan(body); !slices.Equal(got, []string{"r"}) {
		t.Errorf("Scan(body) = %v", got)
	}
}

// BenchmarkScan scans a 100 KB tool result against a catalog of 1,000 skills, the scale of a
// large skills root: the cost does not depend on the number of skills.
func BenchmarkScan(b *testing.B) {
	var skills []Skill
	for i := range 1000 {
		skills = append(skills, Skill{Name: fmt.Sprintf("skill-%d", i), Body: fmt.Sprintf(
			"# Skill %d\n\nFirst instruction line of skill number %d, long enough.\nSecond instruction line of skill number %d, long enough.\nThird instruction line of skill number %d, long enough.\n", i, i, i, i)})
	}
	d := New(skills)
	var text strings.Builder
	for text.Len() < 100_000 {
		text.WriteString("    12\tsome output line of a command that ran in the sandbox, nothing to see\n")
	}
	s := text.String()
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		d.Scan(s)
	}
}

func TestBodyOf(t *testing.T) {
	tests := []struct{ in, want string }{
		{"---\nname: a\n---\nbody\n", "body\n"},
		{"\ufeff---\r\nname: a\r\n--- \r\nbody\r\n", "body\r\n"},
		{"no frontmatter\n---\nx\n", "no frontmatter\n---\nx\n"},
		{"---\nname: a\nnever closed\n", "---\nname: a\nnever closed\n"},
		{"---\n---\n", ""},
		{"", ""},
	}
	for _, tc := range tests {
		if got := BodyOf(tc.in); got != tc.want {
			t.Errorf("BodyOf(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
