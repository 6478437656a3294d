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
	refCode                      // scripts/x.py in a fenced code block: a command that runs it
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
	// barePathRE finds a relative file path written in prose: a directory, a file name with
	// an extension. Whether it is the skill's (its first directory is a conventional one or
	// one the skill has) is checkable's question.
	barePathRE = regexp.MustCompile(`(?:^|[\s(\[])((?:\./)?[A-Za-z0-9_][A-Za-z0-9_.-]*/[A-Za-z0-9_./-]*[A-Za-z0-9_-]\.[A-Za-z0-9]{1,10})\b`)
	// codePathRE finds a path into a conventional directory in a fenced code block, where a
	// command runs or reads a file of the skill: "python scripts/fill.py", "cat
	// references/api.md". Other directories in code are more often the user's project.
	codePathRE = regexp.MustCompile(`(?:^|[\s"'=(])((?:\./)?(?:scripts|references|assets)/[A-Za-z0-9_./-]*[A-Za-z0-9_-]\.[A-Za-z0-9]{1,10})\b`)
	// codeWriteRE is a code line that writes, moves, tests for or lists files rather than
	// using them: a redirection, an output flag, mkdir, touch, cp, mv, tee, git, a shell test
	// ("[[ -f scripts/x.sh ]]": the file may be absent), a directory tree's branches, or a
	// comment. A path there is a file the command makes, one it looks for, or an illustration.
	codeWriteRE = regexp.MustCompile(`>|(?:^|[\s(])(?:-o|--out\S*|--output\S*|mkdir|touch|cp|mv|tee|ln|rm|install|chmod|git)(?:\s|=|$)|[├└│]|^\s*(?:#|//)|\[\[?\s+!?\s*-[a-zA-Z]\s`)
	schemeRE    = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)
	// slashCommandRE is a plugin's slash command written as a link target, "/plugin:skill":
	// agents resolve it by name, not as a file.
	slashCommandRE = regexp.MustCompile(`^/[A-Za-z0-9_.-]+:[A-Za-z0-9_.:-]+$`)
	// exampleRE ends the prose before an inline code span that is shown as an example, "e.g.
	// `src/app/main.py`", "such as `lib/x.go`": a path in the user's project, not in the skill.
	exampleRE = regexp.MustCompile(`(?i)(?:\be\.g\.?|\bfor (?:example|instance)|\bsuch as|\blike|\bexamples?\s*:|如|例如|比如)[\s,:("'“：（]*$`)
	// exampleLabelRE is the label of a line that shows an example: "Example:", "Valid:",
	// "Invalid:", "Good:", "Correct:", "✅" (see exampleLabel for what is stripped before it).
	// exampleLabelOnlyRE is such a label with nothing after it: it introduces the lines below.
	exampleLabelOnlyRE = regexp.MustCompile(`^[^:]*:[\s*_]*$`)
	exampleLabelRE     = regexp.MustCompile(`(?i)^(?:examples?|e\.g\.|valid|invalid|good|correct|incorrect|right|wrong|bad|before|after|sample)\b[^:]{0,20}:`)
	// createRE ends the prose before an inline code span that names a file the body has the
	// agent create ("Save `references/extract.py`:", "write the report to `out/r.md`"), or
	// that names a file by way of illustration ("a file named `references/topic.md`"): the
	// file does not exist until the skill runs, or ever.
	createRE = regexp.MustCompile(`(?i)\b(?:create|creates|creating|save|saves|saving|write|writes|writing|generate|generates|generating|produce|produces|output|outputs|put|place|named|called)\b(?:\s+[\w-]+){0,3}?[\s,:("'“]*$|\binto (?:an? |the )?$`)
	// changeRE is a line that tells the history of a file, as a changelog does: "renamed
	// `scripts/old.py` to ...", "formerly `references/a.md`". The old name is gone on purpose.
	changeRE = regexp.MustCompile(`(?i)\b(?:renamed|moved|removed|deleted|formerly|previously|deprecated|replaced|superseded|no longer)\b`)
	// placeholderCaseRE is a path segment that numbers a place in capitals, as authoring guides
	// do: "references/NN-topic.md", "XX_name.md".
	placeholderCaseRE = regexp.MustCompile(`(?:^|/)(?:N{1,3}|X{1,3})[-_.]`)
	// placeholderRE is a path segment that holds a place for the reader's own name:
	// path/to/..., your-file.md, my_skill/..., example-skill/..., foo/bar.md, xxx, "...".
	placeholderRE = regexp.MustCompile(`(?i)(?:^|/)(?:path/to|(?:your|my|some)[-_][\w.-]*|example[-_][\w.-]*|foo|bar|baz|x{3,}|\.\.\.)(?:[./]|$)`)
	// othersRE ends the prose before a path that the line says is someone else's: "the
	// design-system skill's `references/x.md`", "`interaction-flows`'s `references/x.md`".
	othersRE = regexp.MustCompile(`(?:['’]s|の)[\s*_]*$`)
	// elsewhereRE starts the prose after a path that the line places in another skill,
	// repository or project: "`scripts/plot.py` in opendeviationbar-patterns", "… in the doc
	// and novel skills", "(via execute-checklist skill)".
	elsewhereRE = regexp.MustCompile(`(?i)^[^.;:!?]{0,40}?\b(?:in|from|via|of) (?:the )?(?:[\w./+-]+ ){0,4}?(?:skills?|repo(?:sitory)?|project|package|plugin)\b|^\s*(?:§\S+\s+)?in [\w.-]+\s*(?:[.,;)]|$)`)
	// elsewhereReach bounds the prose elsewhereRE reads after a span: its forty characters, a
	// few words and the place's name fit in it.
	elsewhereReach = 160
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
		if !ok || seen[key{t, line}] || placeholderRE.MatchString(t) || placeholderCaseRE.MatchString(t) {
			return
		}
		seen[key{t, line}] = true
		out = append(out, reference{target: t, line: line, kind: kind})
	}
	anti := antiExampleLines(lines)
	userBlock := false // the current code block runs in the user's project
	// The lines under a label of their own ("**Valid:**", "Examples:") up to a blank line
	// or a heading are examples.
	underLabel := false
	for i, bl := range lines {
		if bl.code {
			if i == 0 || !lines[i-1].code {
				userBlock = blockInProject(lines, i)
			}
			if !userBlock && hasConventionalDir(bl.text) && !codeWriteRE.MatchString(bl.text) {
				for _, m := range codePathRE.FindAllStringSubmatch(bl.text, -1) {
					add(m[1], bl.line, refCode)
				}
			}
			continue
		}
		// A line that is an example ("Example: `scripts/rotate_pdf.py` for PDF rotation",
		// "Valid: `./scripts/tool.py`", a line of an anti-example) illustrates a path.
		label, _ := exampleLabel(bl.prose)
		labelled := exampleLabelRE.MatchString(label)
		switch {
		case labelled && exampleLabelOnlyRE.MatchString(label):
			underLabel = true
		case strings.TrimSpace(bl.prose) == "" || heading(bl.text) != "":
			underLabel = false
		}
		lineExample := anti[i] || labelled || underLabel
		// A reference needs a link's bracket, a code span or a slash: most lines have none.
		if !strings.ContainsAny(bl.text, "]`/") {
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
			// The prose after the span is read no further than elsewhereRE can match, so a
			// line of many spans costs linear time.
			after := bl.prose[span.end:min(len(bl.prose), span.end+elsewhereReach)]
			if othersRE.MatchString(gap) || elsewhereRE.MatchString(after) {
				continue // another skill's or project's file, named as such
			}
			if !example && !history && !lineExample {
				add(span.text, bl.line, refInlineCode)
			}
		}
		if !history && !lineExample && strings.Contains(prose, "/") {
			for _, m := range barePathRE.FindAllStringSubmatch(prose, -1) {
				add(m[1], bl.line, refBare)
			}
		}
	}
	// A file the body has the agent create may be mentioned before the step that creates it.
	return slices.DeleteFunc(out, func(r reference) bool { return created[path.Clean(r.target)] })
}

// hasConventionalDir reports whether a line may name a path into a conventional directory:
// the test spares codePathRE and codeWriteRE most lines of code.
func hasConventionalDir(t string) bool {
	for _, d := range conventionalDirs {
		if strings.Contains(t, d+"/") {
			return true
		}
	}
	return false
}

// projectRE is what says that commands run in the user's project, not in the skill: "from
// the project root", "in your repository".
var projectRE = regexp.MustCompile(`(?i)\b(?:project|repo(?:sitory)?|workspace) root\b|\b(?:your|the user's) (?:project|repo(?:sitory)?|codebase|workspace)\b`)

// showRE is the info string of a code block that shows a document or a listing rather than
// commands: its paths are the shown document's, not the skill's.
var showRE = regexp.MustCompile(`(?i)^(?:markdown|md|mdx|text|txt|plain|plaintext|tree|diff|patch|gitignore)\b`)

// blockInProject reports whether the paths of the code block opening at lines[i] are not the
// skill's: it shows a document (```markdown) or runs in the user's project, as the prose line
// before it or a line of the block says.
func blockInProject(lines []bodyLine, i int) bool {
	if info := strings.TrimLeft(strings.TrimSpace(lines[i].text), "`~"); showRE.MatchString(strings.TrimSpace(info)) {
		return true
	}
	if i > 0 && projectRE.MatchString(lines[i-1].text) {
		return true
	}
	for j := i; j < len(lines) && lines[j].code; j++ {
		if projectRE.MatchString(lines[j].text) {
			return true
		}
		if j > i && fenceEnds(lines[j].text) {
			break
		}
	}
	return false
}

// fenceEnds reports whether a code line is a fence line, which ends the block when it is not
// its first line.
func fenceEnds(t string) bool {
	_, n := fence(t)
	return n > 0
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
// always are; inline code and prose paths are when they start in a conventional directory, in
// a directory the skill has (a `src/index.ts` in prose is more often the user's project), or
// in a near miss of one (`reference/x.md` beside references/), which is the mistake the rule
// is for.
func (r reference) checkable(dir string) bool {
	if r.kind == refLink {
		return true
	}
	first, _, _ := strings.Cut(strings.TrimPrefix(r.target, "./"), "/")
	// In a code block, only a directory the skill has: a skill that documents a tool shows
	// commands run in the user's project ("./scripts/ralph-loop.sh"), which has its own
	// scripts/.
	if info, err := os.Stat(filepath.Join(dir, first)); err == nil && info.IsDir() {
		return true
	}
	// A conventional directory the skill does not have: the path is more often the user's
	// project or another one the text describes ("the wrapper `scripts/run.sh`") than a
	// missing directory, unless the file is in the skill under another directory (a near
	// miss, `reference/x.md` beside references/x.md) or resolves above it (a plugin's
	// scripts/, references.outside).
	if slices.Contains(conventionalDirs, first) || slices.Contains(conventionalDirs, first+"s") {
		c := path.Clean(r.target)
		return nearMiss(dir, c) != "" || resolvesAbove(dir, c) != ""
	}
	return false
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
		if fsRootRE.MatchString(r.target) {
			return "is an absolute file-system path, which exists only on its author's machine; use a path relative to the skill directory", ""
		}
		// "/en/hooks", "/docs/api.html": a path on the documentation site the text was copied
		// from. A relative path would not fix it; the site's address would.
		return "is a site-absolute link, which resolves only on the website it was written for; write the full URL (https://...)", ""
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
	if near := nearMiss(dir, c); near != "" {
		return fmt.Sprintf("does not exist in the skill directory; did you mean %q?", near), ""
	}
	return "does not exist in the skill directory", ""
}

// fsRootRE is an absolute path into a file system's usual top directories, as opposed to a
// website's path.
var fsRootRE = regexp.MustCompile(`^/(?:home|Users|root|tmp|var|etc|usr|opt|mnt|workspace|private|Volumes)/`)

// nearMissFiles bounds the files nearMiss looks at, so a skill with a huge tree costs little.
const nearMissFiles = 2000

// nearMiss returns a file of the skill that the missing clean path c probably means, or "":
// the path with each directory and the file name matched without regard to case or a plural
// "s" (`reference/x.md` for references/x.md, `Scripts/Run.py`), or else the one file of the
// skill with the same base name.
func nearMiss(dir, c string) string {
	want := strings.Split(c, "/")
	fold := func(s string) string { return strings.TrimSuffix(strings.ToLower(s), "s") }
	var folded string   // the path matched without regard to case or a plural "s"
	var byBase []string // the files with the same base name
	seen := 0
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || seen >= nearMissFiles {
			return filepath.SkipAll
		}
		if d.IsDir() {
			if p != dir && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		seen++
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return nil
		}
		rel = filepath.ToSlash(rel)
		got := strings.Split(rel, "/")
		if len(got) == len(want) && slices.EqualFunc(got, want, func(a, b string) bool { return fold(a) == fold(b) }) {
			folded = rel
			return filepath.SkipAll
		}
		if got[len(got)-1] == want[len(want)-1] {
			byBase = append(byBase, rel)
		}
		return nil
	})
	if folded == c {
		return "" // the path itself, a dangling symlink: no other file is meant
	}
	if folded != "" {
		return folded
	}
	if len(byBase) == 1 {
		return byBase[0]
	}
	return ""
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
