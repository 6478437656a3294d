package assert

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"unicode/utf8"
)

// MaxFileReadBytes is how much of a file the worker reads for file_contains, file_matches and
// file_json. A longer file is read only in part (File.Truncated), and then only a
// file_contains that finds its text can pass: anything else would be decided on text that was
// not all read.
const MaxFileReadBytes = 1 << 20

// MaxFilePathBytes bounds the path of a file assertion: Linux's own limit is 4096, and a
// longer name in a case file is a mistake.
const MaxFilePathBytes = 1024

// ErrPath is wrapped, with ErrInvalid, by Compile's errors for a file assertion whose path is
// not a relative path that stays inside its directory.
var ErrPath = errors.New("bad path")

// FileState is what the worker found at a path.
type FileState int

// The states. FileUnknown is the zero value so that a File nobody filled is never taken for a
// missing one.
const (
	// FileUnknown: the state could not be determined (File.Problem says why); every
	// assertion on it is errored.
	FileUnknown FileState = iota
	// FileMissing: nothing is there, as far as a directory that could be searched shows.
	FileMissing
	// FileRegular: a regular file; its Size and Content are set.
	FileRegular
	// FileDirectory: a directory.
	FileDirectory
	// FileOther: a device, pipe or socket, which is never read.
	FileOther
)

// File is the state of one path the case's file assertions name, as the worker found it after
// the agent or the command ended.
type File struct {
	State FileState
	// Size is a regular file's size in bytes.
	Size int64
	// Content is a regular file's content, at most MaxFileReadBytes of it.
	Content []byte
	// Truncated says Content is only the first part of the file.
	Truncated bool
	// Problem says why the state is FileUnknown: the directory cannot be searched, the path
	// leads out of the directory through a symbolic link, the file cannot be read.
	Problem string
}

// isFile reports whether t is decided against Observation.Files.
func (t Type) isFile() bool {
	switch t {
	case FileExists, FileNotExists, FileContains, FileMatches, FileJSON:
		return true
	}
	return false
}

// IsFile reports whether t checks a file (Assertion.Path), so the worker knows which paths to
// gather.
func (t Type) IsFile() bool { return t.isFile() }

// checkPath cleans a file assertion's path in place and refuses one that is empty, absolute,
// or leaves its directory.
func checkPath(p *string) error {
	raw := *p
	switch {
	case strings.TrimSpace(raw) == "":
		return &compileError{msg: "the path is empty", cause: ErrPath}
	case len(raw) > MaxFilePathBytes:
		return tooLarge(fmt.Sprintf("the path is %d bytes, more than %d", len(raw), MaxFilePathBytes))
	case !utf8.ValidString(raw):
		return &compileError{msg: fmt.Sprintf("the path %q is not valid UTF-8", raw), cause: ErrPath}
	case strings.ContainsRune(raw, 0):
		return &compileError{msg: fmt.Sprintf("the path %q contains a NUL byte", raw), cause: ErrPath}
	case path.IsAbs(raw):
		return &compileError{msg: fmt.Sprintf("the path %q is absolute; write it relative to the directory the case's files are checked in", raw), cause: ErrPath}
	}
	clean := path.Clean(raw)
	if clean == "." || clean == ".." || strings.HasPrefix(clean, "../") {
		return &compileError{msg: fmt.Sprintf("the path %q leaves the directory the case's files are checked in", raw), cause: ErrPath}
	}
	*p = clean
	return nil
}

// compileFile checks a file assertion and compiles what it compares with.
func compileFile(a *Assertion, compilePattern patternCompiler) error {
	if err := checkPath(&a.Path); err != nil {
		return err
	}
	switch a.Type {
	case FileContains:
		if a.Value == "" {
			return invalid("the text is empty")
		}
		if len(a.Value) > MaxSubstringBytes {
			return tooLarge(fmt.Sprintf("the text is %d bytes, more than %d", len(a.Value), MaxSubstringBytes))
		}
		if !utf8.ValidString(a.Value) {
			return invalid("the text %q is not valid UTF-8", a.Value)
		}
	case FileMatches:
		if a.Regexp != nil && a.Regexp.String() == a.Value {
			return nil
		}
		re, n, err := compilePattern(a.Value)
		if err != nil {
			return err
		}
		a.Regexp, a.insts = re, int32(n)
	case FileJSON:
		doc, err := canonicalJSON(a.JSON)
		if err != nil {
			return err
		}
		a.JSON = doc
	}
	return nil
}

// evalFile decides a file assertion against obs.Files.
func evalFile(ctx context.Context, a Assertion, obs Observation) Result {
	name := "file " + quote(a.Path)
	r := Result{Type: a.Type, Expected: fileExpected(a, name)}
	if obs.Files == nil {
		r.Errored = true
		r.Message = fmt.Sprintf("%s was not decided: the job's files were not gathered", a.Type)
		return r
	}
	f, ok := obs.Files[a.Path]
	if !ok {
		r.Errored = true
		r.Message = fmt.Sprintf("%s was not decided: %s was not gathered", a.Type, name)
		return r
	}
	if f.State == FileUnknown {
		r.Errored = true
		r.Message = fmt.Sprintf("%s was not decided: the state of %s is unknown", a.Type, name)
		if f.Problem != "" {
			r.Message += ": " + clip(f.Problem, maxQuoted)
		}
		return r
	}
	r.Actual = describeFile(f)
	switch a.Type {
	case FileExists:
		r.Passed = f.State != FileMissing
		if r.Passed {
			r.Message = fmt.Sprintf("%s exists (%s)", name, describeFile(f))
		} else {
			r.Message = name + " does not exist"
		}
		return r
	case FileNotExists:
		r.Passed = f.State == FileMissing
		if r.Passed {
			r.Message = name + " does not exist"
		} else {
			r.Message = fmt.Sprintf("%s exists (%s)", name, describeFile(f))
		}
		return r
	}
	switch f.State {
	case FileMissing:
		r.Message = name + " does not exist"
		return r
	case FileDirectory, FileOther:
		r.Message = fmt.Sprintf("%s is %s, not a regular file", name, describeFile(f))
		return r
	}
	text := string(f.Content)
	switch a.Type {
	case FileContains:
		return fileContains(a, r, name, f, text)
	case FileMatches:
		if f.Truncated {
			return notAllRead(r, name, f)
		}
		return fileMatches(ctx, a, r, name, text)
	}
	if f.Truncated {
		return notAllRead(r, name, f)
	}
	return matchJSONText(a, name, text, false)
}

func fileExpected(a Assertion, name string) string {
	switch a.Type {
	case FileExists:
		return name + " exists"
	case FileNotExists:
		return name + " does not exist"
	case FileContains:
		return clip(fmt.Sprintf("%s contains %s (case-sensitive)", name, quote(a.Value)), maxExcerpt)
	case FileMatches:
		return clip(fmt.Sprintf("%s matches /%s/", name, clip(a.Value, maxQuoted)), maxExcerpt)
	}
	return name + " is a JSON document that matches"
}

func describeFile(f File) string {
	switch f.State {
	case FileMissing:
		return "missing"
	case FileRegular:
		if f.Size == 1 {
			return "a file of 1 byte"
		}
		return fmt.Sprintf("a file of %d bytes", f.Size)
	case FileDirectory:
		return "a directory"
	case FileOther:
		return "a device, pipe or socket"
	}
	return "unknown"
}

// notAllRead errors an assertion that would have to see the whole of a file the worker read
// only in part: a pattern's "$" or a JSON document's end are in the part not read.
func notAllRead(r Result, name string, f File) Result {
	r.Errored = true
	r.Message = fmt.Sprintf("%s was not decided: %s is %d bytes and only the first %d were read", r.Type, name, f.Size, len(f.Content))
	return r
}

func fileContains(a Assertion, r Result, name string, f File, text string) Result {
	st := stream{name: name, text: text}
	ts := newTexts()
	h, found := ts.find(a.Value, false, []stream{st})
	if found {
		r.Passed = true
		r.Actual = excerpt(text, h.start, h.end)
		r.Message = fmt.Sprintf("%s contains %s at %s", name, quote(a.Value), h.at())
		return r
	}
	r.Actual = excerpt(text, 0, 0)
	if f.Truncated {
		// The text may be in the part not read: absence is not shown.
		return notAllRead(r, name, f)
	}
	var msg strings.Builder
	fmt.Fprintf(&msg, "%s does not contain %s (case-sensitive)", name, quote(a.Value))
	if text == "" {
		msg.WriteString("; the file is empty")
	} else if hf, ok := ts.find(a.Value, true, []stream{st}); ok {
		fmt.Fprintf(&msg, "; it appears with different case at %s: %s", hf.at(), quote(text[hf.start:hf.end]))
	}
	r.Message = msg.String()
	return r
}

func fileMatches(ctx context.Context, a Assertion, r Result, name, text string) Result {
	shown := "/" + clip(a.Regexp.String(), maxQuoted) + "/"
	in := &deadlineReader{ctx: ctx, s: strings.NewReader(text)}
	var loc []int
	if a.insts > 0 && int64(len(text))*int64(a.insts) <= uninterruptedSteps {
		loc = a.Regexp.FindStringIndex(text)
	} else {
		loc = a.Regexp.FindReaderIndex(in)
	}
	if in.cut {
		r.Errored = true
		r.Message = fmt.Sprintf("file_matches %s was not decided: %v", shown, ErrDeadline)
		return r
	}
	if loc == nil {
		r.Actual = excerpt(text, 0, 0)
		r.Message = fmt.Sprintf("%s does not match %s", name, shown)
		if text == "" {
			r.Message += "; the file is empty"
		}
		return r
	}
	r.Passed = true
	r.Actual = excerpt(text, loc[0], loc[1])
	line, col := lineCol(text, loc[0])
	r.Message = fmt.Sprintf("%s matches %s at line %d, column %d", name, shown, line, col)
	return r
}
