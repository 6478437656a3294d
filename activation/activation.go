// Package activation tells, from what entered a model's context, which skills were activated.
//
// A skill is activated when its SKILL.md body first reaches the model, however it got there: a
// read tool, `cat` or `head` in a shell, an agent CLI's own skill loader. The only place all of
// these meet is the model boundary, so detection is by content, not by tool: a Detector is built
// from the bodies of the skills a job's agent may see, and Scan is given every text that enters
// the model's context (tool results for the built-in agent, request messages at the gateway for
// an agent CLI).
//
// # Fingerprints
//
// A skill's fingerprint is up to FingerprintLines distinctive lines of its body: the first lines
// of at least MinLineBytes bytes after trimming and removing Markdown heading marks, skipping lines
// that repeat within the body. A scanned text activates a skill when every line of its
// fingerprint occurs in it as a whole line. Lines are compared after the same trimming, and after
// removing the line-number prefix that `cat -n`, `nl` and agents' read tools put in front
// ("  12\t", "12→", "12:", "12|"), so numbered, indented, CRLF or JSON-decoded copies match. A
// fingerprint never comes from the frontmatter: the catalog shown to every agent already holds
// each description, and a skill is not activated by being listed.
//
// A body with no line long enough has no fingerprint and cannot be detected; Unfingerprinted
// lists such skills so that a caller can say so instead of reporting "not activated".
//
// # Cost
//
// Scan hashes each line of the text once and looks it up in one map: linear in the text's size,
// whatever the number of skills.
package activation

import (
	"hash/maphash"
	"strings"
)

const (
	// FingerprintLines is how many body lines make a fingerprint: enough that one quoted line
	// (a skill citing another) does not count as reading it.
	FingerprintLines = 3
	// MinLineBytes is the shortest line a fingerprint uses: shorter lines ("## Steps", "```")
	// occur in every other document.
	MinLineBytes = 24
	// maxScannedLine bounds the bytes of one line that are hashed; a longer line is compared by
	// its prefix, which is plenty to tell skills apart and keeps a hostile one-line text cheap.
	maxScannedLine = 4096
)

// Skill is one skill a Detector knows: its name and its SKILL.md body (frontmatter excluded).
type Skill struct {
	Name string
	Body string
}

// Detector finds skills' fingerprints in text. It is immutable and safe for concurrent use;
// per-conversation state is kept by a Tracker.
type Detector struct {
	seed maphash.Seed
	// lines maps a fingerprint line's hash to the (skill, line) pairs it belongs to.
	lines map[uint64][]ref
	// need is the number of fingerprint lines of each skill, by index.
	need  []int
	names []string
	blind []string
}

type ref struct {
	skill int
	line  int
}

// New builds a Detector for skills. Skills without a body line long enough are left out and
// listed by Unfingerprinted; a name given twice keeps its first body.
func New(skills []Skill) *Detector {
	d := &Detector{seed: maphash.MakeSeed(), lines: map[uint64][]ref{}}
	seen := map[string]bool{}
	for _, s := range skills {
		if seen[s.Name] {
			continue
		}
		seen[s.Name] = true
		fp := fingerprint(s.Body)
		if len(fp) == 0 {
			d.blind = append(d.blind, s.Name)
			continue
		}
		idx := len(d.names)
		d.names = append(d.names, s.Name)
		d.need = append(d.need, len(fp))
		for i, l := range fp {
			h := maphash.String(d.seed, l)
			d.lines[h] = append(d.lines[h], ref{skill: idx, line: i})
		}
	}
	return d
}

// Unfingerprinted lists the skills whose activation cannot be detected: their bodies have no
// line of MinLineBytes bytes.
func (d *Detector) Unfingerprinted() []string { return d.blind }

// Scan returns the skills whose whole fingerprint occurs in text, in the order their last
// fingerprint line occurs.
func (d *Detector) Scan(text string) []string {
	return d.match(text, map[int]uint8{})
}

// match scans text, adding the fingerprint lines it meets to seen (a bit set per skill index),
// and returns the skills whose fingerprint seen completes.
func (d *Detector) match(text string, seen map[int]uint8) []string {
	if d == nil || len(d.names) == 0 {
		return nil
	}
	var found []string
	for len(text) > 0 {
		line := text
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			text = ""
		}
		l := normalize(stripLineNumber(line))
		if len(l) < MinLineBytes {
			continue
		}
		for _, r := range d.lines[maphash.String(d.seed, l)] {
			before := seen[r.skill]
			now := before | 1<<r.line
			if now == before {
				continue
			}
			seen[r.skill] = now
			if now == 1<<d.need[r.skill]-1 {
				found = append(found, d.names[r.skill])
			}
		}
	}
	return found
}

// fingerprint picks the body lines that identify it.
func fingerprint(body string) []string {
	var out []string
	count := map[string]int{}
	var lines []string
	for _, raw := range strings.Split(body, "\n") {
		l := normalize(raw)
		if len(l) >= MinLineBytes {
			count[l]++
			lines = append(lines, l)
		}
	}
	for _, l := range lines {
		if count[l] > 1 {
			continue // a repeated line says less, and a bit set holds one bit per line
		}
		out = append(out, l)
		if len(out) == FingerprintLines {
			break
		}
	}
	return out
}

// normalize trims a line, drops Markdown heading marks, and bounds its length, so a
// body line and its copy in a tool result compare equal.
func normalize(line string) string {
	l := strings.TrimSpace(strings.TrimSuffix(line, "\r"))
	l = strings.TrimLeft(l, "#")
	l = strings.TrimSpace(l)
	if len(l) > maxScannedLine {
		l = l[:maxScannedLine]
	}
	return l
}

// stripLineNumber removes the line number that numbered listings put before a line: digits
// after optional spaces, then a tab, "→", ":" or "|" (and one space after it, if any). A line
// that merely starts with a number ("3 steps:") keeps it.
func stripLineNumber(line string) string {
	i := 0
	for i < len(line) && line[i] == ' ' {
		i++
	}
	j := i
	for j < len(line) && line[j] >= '0' && line[j] <= '9' {
		j++
	}
	if j == i || j-i > 9 {
		return line
	}
	rest := line[j:]
	for _, sep := range []string{"\t", "→", ":", "|"} {
		if strings.HasPrefix(rest, sep) {
			return strings.TrimPrefix(rest[len(sep):], " ")
		}
	}
	return line
}

// Tracker follows one conversation: a skill is activated once every line of its fingerprint
// has entered the context, in one text or over several (a file read in chunks), and is reported
// once, at the turn that completed it.
type Tracker struct {
	d         *Detector
	seen      map[int]uint8
	activated []Activation
}

// Activation is one skill's first activation in a conversation.
type Activation struct {
	Skill string
	// Turn is the 1-based model call that first had the whole fingerprint in its context.
	Turn int
}

// NewTracker starts a conversation on d (nil: nothing is ever detected).
func NewTracker(d *Detector) *Tracker { return &Tracker{d: d, seen: map[int]uint8{}} }

// Observe scans text that enters the model's context before model call turn and returns the
// skills it activates.
func (t *Tracker) Observe(turn int, text string) []string {
	if t == nil || t.d == nil {
		return nil
	}
	fresh := t.d.match(text, t.seen)
	for _, s := range fresh {
		t.activated = append(t.activated, Activation{Skill: s, Turn: turn})
	}
	return fresh
}

// Activated returns the activations so far, in order.
func (t *Tracker) Activated() []Activation {
	if t == nil {
		return nil
	}
	return append([]Activation(nil), t.activated...)
}

// BodyOf returns the body of a SKILL.md file: what follows its frontmatter (a first line ---,
// closed by the next line that is ---; a byte order mark, trailing blanks and CR allowed), or
// the whole text when it has none.
func BodyOf(skillMD string) string {
	s := strings.TrimPrefix(skillMD, "\ufeff")
	first, rest, ok := strings.Cut(s, "\n")
	if !ok || strings.TrimRight(first, " \t\r") != "---" {
		return skillMD
	}
	for len(rest) > 0 {
		line, after, _ := strings.Cut(rest, "\n")
		if strings.TrimRight(line, " \t\r") == "---" {
			return after
		}
		rest = after
	}
	return skillMD // never closed: not frontmatter
}
