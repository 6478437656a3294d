package skill

import (
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// A reference is a relative path the body points at.
type reference struct {
	target string // as written, fragment and query removed
	line   int
	kind   refKind
}

type refKind int

const (
	refLink       refKind = iota // [text](target), ![alt](target), [id]: target
	refInlineCode                // `dir/file.ext`
	refBare                      // scripts/x.py in prose
)

// conventionalDirs are the specification's optional directories. A path into one of them is a
// reference to the skill's own files even when written as inline code or bare prose.
var conventionalDirs = []string{"scripts", "references", "assets"}

var (
	// linkRE finds inline links and images; the target ends at whitespace or ')'. Targets in
	// angle brackets may contain spaces.
	linkRE = regexp.MustCompile(`\]\(\s*(<[^>\n]*>|[^)\s]+)`)
	// refDefRE finds reference-style link definitions: [id]: target. A label starting with
	// '^' is a footnote definition ("[^1]: Some note text"), whose text is not a link target.
	refDefRE = regexp.MustCompile(`^ {0,3}\[[^\]^][^\]]*\]:\s*(<[^>\n]*>|\S+)`)
	// footnoteRE finds footnote references, [^1] or [^note]; they are blanked out before links
	// are looked for, so that "[^1](...)" cannot read as a link.
	footnoteRE = regexp.MustCompile(`\[\^[^\]\s]*\]`)
	// pathRE is the shape of a relative file path written as inline code: at least one
	// directory, a file extension, no spaces, globs or placeholders.
	pathRE = regexp.MustCompile(`^(?:\./)?[A-Za-z0-9_][A-Za-z0-9_.-]*(?:/[A-Za-z0-9_][A-Za-z0-9_.-]*)+\.[A-Za-z0-9]{1,10}$`)
	// barePathRE finds a path into a conventional directory written in prose.
	barePathRE = regexp.MustCompile(`(?:^|[\s(\[])((?:\./)?(?:scripts|references|assets)/[A-Za-z0-9_./-]*[A-Za-z0-9_-]\.[A-Za-z0-9]{1,10})\b`)
	schemeRE   = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)
	// slashCommandRE is a plugin's slash command written as a link target, "/plugin:skill":
	// agents resolve it by name, not as a file.
	slashCommandRE = regexp.MustCompile(`^/[A-Za-z0-9_.-]+:[A-Za-z0-9_.:-]+$`)
	// exampleRE ends the prose before an inline code span that is shown as an example, "e.g.
	// `src/app/main.py`", "such as `lib/x.go`": a path in the user's project, not in the skill.
	exampleRE = regexp.MustCompile(`(?i)(?:\be\.g\.?|\bfor (?:example|instance)|\bsuch as|\blike)[\s,:("'“]*$`)
	// createRE ends the prose before an inline code span that names a file the body has the
	// agent create ("Save `references/extract.py`:", "write the report to `out/r.md`"), or
	// that names a file by way of illustration ("a file named `references/topic.md`"): the
	// file does not exist until the skill runs, or ever.
	createRE = regexp.MustCompile(`(?i)\b(?:create|creates|creating|save|saves|saving|write|writes|writing|generate|generates|generating|produce|produces|output|outputs|put|place|named|called)\b(?:\s+[\w-]+){0,3}?[\s,:("'“]*$`)
	// changeRE is a line that tells the history of a file, as a changelog does: "renamed
	// `scripts/old.py` to ...", "formerly `references/a.md`". The old name is gone on purpose.
	changeRE = regexp.MustCompile(`(?i)\b(?:renamed|moved|removed|deleted|formerly|previously|deprecated|replaced|superseded|no longer)\b`)
	// placeholderRE is a path segment that holds a place for the reader's own name:
	// path/to/..., your-file.md, my_skill/..., example-skill/..., foo/bar.md, xxx, "...".
	placeholderRE = regexp.MustCompile(`(?i)(?:^|/)(?:path/to|(?:your|my|some)[-_][\w.-]*|example[-_][\w.-]*|foo|bar|baz|x{3,}|\.\.\.)(?:[./]|$)`)
	// listGapRE is what separates the items of a list of examples: "e.g. `a/b.py`, `c/d.py`
	// or `e/f.py`".
	listGapRE = regexp.MustCompile(`(?i)^[\s,;:/"'“”]*(?:(?:or|and)[\s,:"'“”]+)?$`)
)

// references lists the relative paths a body mentions, outside fenced code. Placeholders,
// illustrations, the old names of a changelog and the files the body has the agent create are
// no references (see createRE, changeRE and placeholderRE).
func references(lines []bodyLine) []reference {
	var out []reference
	created := map[string]bool{}
	type key struct {
		target string
		line   int
	}
	seen := map[key]bool{}
	add := func(raw string, line int, kind refKind) {
		t, ok := cleanTarget(raw)
		if !ok || seen[key{t, line}] || placeholderRE.MatchString(t) {
			return
		}
		seen[key{t, line}] = true
		out = append(out, reference{target: t, line: line, kind: kind})
	}
	for _, bl := range lines {
		if bl.code {
			continue
		}
		prose := bl.prose
		if strings.Contains(prose, "[^") {
			prose = footnoteRE.ReplaceAllStringFunc(prose, blank)
		}
		for _, m := range linkRE.FindAllStringSubmatch(prose, -1) {
			add(m[1], bl.line, refLink)
		}
		if m := refDefRE.FindStringSubmatch(prose); m != nil {
			add(m[1], bl.line, refLink)
		}
		// Each span's gap is the prose since the previous span, so the look-behind for an
		// example marker costs linear time however many spans a line holds.
		history := changeRE.MatchString(prose)
		prevEnd, prevExample := 0, false
		for _, span := range codeSpans(bl.text) {
			gap := bl.prose[prevEnd:span.start]
			example := exampleRE.MatchString(gap) || (prevExample && listGapRE.MatchString(gap))
			prevEnd, prevExample = span.end, example
			if !pathRE.MatchString(span.text) {
				continue
			}
			if createRE.MatchString(gap) {
				created[path.Clean(span.text)] = true
				continue
			}
			if !example && !history {
				add(span.text, bl.line, refInlineCode)
			}
		}
		if !history {
			for _, m := range barePathRE.FindAllStringSubmatch(prose, -1) {
				add(m[1], bl.line, refBare)
			}
		}
	}
	// A file the body has the agent create may be mentioned before the step that creates it.
	return slices.DeleteFunc(out, func(r reference) bool { return created[path.Clean(r.target)] })
}

// cleanTarget strips a link target to a relative path, or reports that it is not one (a URL,
// an anchor, a placeholder).
func cleanTarget(raw string) (string, bool) {
	t := strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(raw, "<"), ">"))
	if i := strings.IndexAny(t, "#?"); i >= 0 {
		t = t[:i]
	}
	if t == "" || schemeRE.MatchString(t) || slashCommandRE.MatchString(t) || strings.HasPrefix(t, "//") || strings.ContainsAny(t, "{}<>*$~|\\") {
		return "", false
	}
	if u, err := url.PathUnescape(t); err == nil {
		t = u
	}
	return t, true
}

// blank returns as many spaces as s has bytes, so offsets in a line stay put.
func blank(s string) string { return strings.Repeat(" ", len(s)) }

// checkable reports whether a reference is certainly meant as a file of the skill: links
// always are; inline code and prose paths are when they start in a conventional directory or
// in a directory the skill has (a `src/index.ts` in prose is more often the user's project).
func (r reference) checkable(dir string) bool {
	if r.kind == refLink {
		return true
	}
	first, _, _ := strings.Cut(strings.TrimPrefix(r.target, "./"), "/")
	if slices.Contains(conventionalDirs, first) {
		return true
	}
	info, err := os.Stat(filepath.Join(dir, first))
	return err == nil && info.IsDir()
}

// ancestorLevels bounds how far above the skill a reference is looked for: a repository
// keeps its skills at most at plugins/<plugin>/skills/<skill>, four levels below its root.
const ancestorLevels = 4

// problem returns why the reference is broken, or "". When the reference is not in the skill
// directory but resolves on this disk, outside is set instead: a sibling skill or a directory
// above the skill that the repository ships next to its skills ("../shared/style.md", a
// plugin's scripts/). Whether it resolves where the skill is installed depends on how it is
// installed, which the linter cannot know, so that is no broken reference.
func (r reference) problem(dir string) (broken, outside string) {
	if path.IsAbs(r.target) {
		return "is an absolute path; use a path relative to the skill directory", ""
	}
	c := path.Clean(r.target)
	if c == ".." || strings.HasPrefix(c, "../") {
		if exists(filepath.Join(dir, filepath.FromSlash(c))) {
			where := "in a directory above the skill"
			if sibling := strings.TrimPrefix(c, "../"); !strings.HasPrefix(sibling, "../") {
				first, _, _ := strings.Cut(sibling, "/")
				if exists(filepath.Join(dir, "..", first, FileName)) {
					where = "in the sibling skill " + first
				}
			}
			return "", "leaves the skill directory; it resolves here, " + where +
				", but whether it does where the skill is installed depends on the installation, which the linter cannot know; copy it into the skill if the skill must work on its own"
		}
		return "leaves the skill directory, and does not resolve here either", ""
	}
	if exists(filepath.Join(dir, filepath.FromSlash(c))) {
		return "", ""
	}
	if up := resolvesAbove(dir, c); up != "" {
		return "", fmt.Sprintf("is not in the skill directory but resolves from %s, above it; whether that directory exists where the skill is installed the linter cannot know; write %s if that file is meant, or copy it into the skill",
			up, path.Join(up, c))
	}
	return "does not exist in the skill directory", ""
}

// resolvesAbove returns the relative path ("..", "../..", ...) of the nearest directory above
// dir from which the clean relative path c resolves, or "". The search stops at a repository
// root (a directory holding .git) and after ancestorLevels levels.
func resolvesAbove(dir, c string) string {
	up := ""
	for range ancestorLevels {
		if exists(filepath.Join(dir, filepath.FromSlash(up), ".git")) {
			return ""
		}
		up = path.Join(up, "..")
		if exists(filepath.Join(dir, filepath.FromSlash(up), filepath.FromSlash(c))) {
			return up
		}
	}
	return ""
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// isDocInSubdir reports whether the reference points at a document in a subdirectory, which is
// what progressive disclosure means: detail moved out of SKILL.md into files read on demand.
func (r reference) isDocInSubdir() bool {
	c := path.Clean(r.target)
	if !strings.Contains(c, "/") || strings.HasPrefix(c, "../") || path.IsAbs(c) {
		return false
	}
	switch strings.ToLower(path.Ext(c)) {
	case ".md", ".markdown", ".mdx", ".txt", ".rst", ".adoc":
		return true
	}
	return false
}
