package skill

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"unicode/utf8"

	"github.com/skillfleet/skillfleet/diag"
)

// MaxFileSize caps how much of a SKILL.md is read. Real skills are a few kilobytes and the
// specification asks for under 500 lines; the cap keeps hostile input from costing memory.
const MaxFileSize = 1 << 20

// FileName is the name of the file that makes a directory a skill.
const FileName = "SKILL.md"

// ParseFile reads path (at most MaxFileSize bytes) and parses it. Dir is the file's directory.
// Reading problems are diagnostics, never errors, so callers treat every file alike.
func ParseFile(path string) (*Skill, diag.Diagnostics) {
	data, d := readCapped(path)
	if d != nil {
		s := &Skill{File: path, Dir: filepath.Dir(path), Lines: map[string]int{}, parsed: true}
		return s, diag.Diagnostics{*d}
	}
	s, ds := Parse(path, data)
	s.Dir = filepath.Dir(path)
	return s, ds
}

func readCapped(path string) ([]byte, *diag.Diagnostic) {
	data, err := readRegular(path, MaxFileSize)
	if err == nil {
		return data, nil
	}
	var d diag.Diagnostic
	var nr *notRegularError
	var tl *tooLargeError
	switch {
	case errors.As(err, &nr):
		d = diag.Error(RuleFileUnreadable, path, 0, "not a regular file but "+describeMode(nr.mode))
	case errors.As(err, &tl):
		d = diag.Error(RuleFileTooLarge, path, 0, fmt.Sprintf("file is %s bytes; the limit is %d (1 MiB)", tl.sizeText(), MaxFileSize))
	default:
		d = diag.Error(RuleFileUnreadable, path, 0, fmt.Sprintf("cannot read: %v", unwrapPathError(err)))
	}
	return nil, &d
}

// notRegularError and tooLargeError are readRegular's refusals.
type notRegularError struct{ mode os.FileMode }

func (e *notRegularError) Error() string { return "not a regular file" }

type tooLargeError struct {
	size    int64
	atLeast bool // the file grew while being read; size is what was read
}

func (e *tooLargeError) Error() string { return "file is " + e.sizeText() + " bytes" }

func (e *tooLargeError) sizeText() string {
	if e.atLeast {
		return fmt.Sprintf("at least %d", e.size)
	}
	return fmt.Sprint(e.size)
}

func describeMode(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return "a special file (" + m.Type().String() + ")"
}

// unwrapPathError drops the path from *PathError messages: diagnostics already name the file.
func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	return err
}

var (
	utf8BOM    = []byte{0xEF, 0xBB, 0xBF}
	utf16LEBOM = []byte{0xFF, 0xFE}
	utf16BEBOM = []byte{0xFE, 0xFF}
)

// Parse parses the contents of a SKILL.md named file. It never panics; the returned Skill is
// never nil and holds whatever could be decoded. The diagnostics are about the file's form
// (encoding, frontmatter, YAML); Validate reports on the fields.
func Parse(file string, data []byte) (s *Skill, ds diag.Diagnostics) {
	s = &Skill{File: file, Dir: filepath.Dir(file), Lines: map[string]int{}, parsed: true}
	defer func() {
		// Parse is fed hostile input; a bug in a dependency must cost one diagnostic, not the
		// process.
		if r := recover(); r != nil {
			s.decoded = false
			ds = append(ds, diag.Error(RuleFrontmatterYAML, file, 0, fmt.Sprintf("internal error while parsing: %v", r)))
		}
	}()

	if len(data) > MaxFileSize {
		return s, diag.Diagnostics{diag.Error(RuleFileTooLarge, file, 0, fmt.Sprintf("file is %d bytes; the limit is %d (1 MiB)", len(data), MaxFileSize))}
	}
	if bytes.HasPrefix(data, utf16LEBOM) || bytes.HasPrefix(data, utf16BEBOM) {
		return s, diag.Diagnostics{diag.Error(RuleFileEncoding, file, 1, "file is UTF-16; save it as UTF-8")}
	}
	data = bytes.TrimPrefix(data, utf8BOM)
	if i := bytes.IndexByte(data, 0); i >= 0 {
		return s, diag.Diagnostics{diag.Error(RuleFileBinary, file, lineOf(data, i), "file contains NUL bytes; it looks binary, not Markdown")}
	}
	if !utf8.Valid(data) {
		i := firstInvalidUTF8(data)
		return s, diag.Diagnostics{diag.Error(RuleFileEncoding, file, lineOf(data, i), fmt.Sprintf("invalid UTF-8 at byte offset %d", i))}
	}

	fm, ok := splitFrontmatter(data)
	switch {
	case !ok && fm.openLine == 0:
		return s, diag.Diagnostics{diag.Error(RuleFrontmatterMissing, file, 1, "SKILL.md must begin with YAML frontmatter: a line containing only ---")}
	case !ok:
		return s, diag.Diagnostics{diag.Error(RuleFrontmatterUnterminated, file, fm.openLine, "frontmatter opened with --- is never closed by a line containing only ---")}
	}
	s.Body = string(fm.body)
	s.BodyLine = fm.bodyLine

	ds = decodeFrontmatter(s, fm.yaml, fm.yamlLine)
	return s, ds
}

// frontmatter is the result of splitting a SKILL.md by line scanning.
type frontmatter struct {
	openLine int    // line of the opening ---; 0 when there is none
	yaml     []byte // text between the delimiters
	yamlLine int    // file line of the first YAML line
	body     []byte // text after the closing delimiter
	bodyLine int    // file line on which the body starts
}

// splitFrontmatter finds the frontmatter the way the reference regex
// /^---\r?\n([\s\S]*?)\r?\n---\r?\n?([\s\S]*)$/ does, but line by line: the first line must be
// ---, the frontmatter ends at the next line that is --- (trailing spaces, tabs and CR
// tolerated), and any later --- lines are body. ok is false when there is no opening line
// (openLine 0) or no closing one.
func splitFrontmatter(data []byte) (fm frontmatter, ok bool) {
	first, _, found := bytes.Cut(data, newline)
	if !isDelimiter(first) {
		return fm, false
	}
	fm.openLine = 1
	if !found {
		return fm, false
	}
	start := len(first) + 1
	fm.yamlLine = 2
	for off, line := start, 2; off <= len(data); line++ {
		cur, _, hasNL := bytes.Cut(data[off:], newline)
		if isDelimiter(cur) {
			fm.yaml = data[start:off]
			next := off + len(cur)
			if hasNL {
				next++
			}
			fm.body = data[next:]
			fm.bodyLine = line + 1
			return fm, true
		}
		if !hasNL {
			break
		}
		off += len(cur) + 1
	}
	return fm, false
}

var newline = []byte("\n")

func isDelimiter(line []byte) bool {
	return string(bytes.TrimRight(line, " \t\r")) == "---"
}

// lineOf returns the 1-based line of byte offset i.
func lineOf(data []byte, i int) int {
	if i > len(data) {
		i = len(data)
	}
	return bytes.Count(data[:i], []byte("\n")) + 1
}

func firstInvalidUTF8(data []byte) int {
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return len(data)
}
