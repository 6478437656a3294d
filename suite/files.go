package suite

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"go.yaml.in/yaml/v3"

	"github.com/skillfleet/skillfleet/internal/yamlstrict"
)

// skillFile resolves rel inside the skill directory dir. It refuses absolute paths, paths that
// climb out with "..", and symlinks whose target lies outside the skill, so a case cannot make
// the runner read (or ship) files that are not the skill's.
func skillFile(dir, rel string) (string, error) {
	return newSkillPaths(dir).file(rel)
}

// skillPaths is skillFile for many paths of one skill: the skill directory, and each directory
// the paths sit in, are resolved once, so a skill with thousands of case files in one directory
// costs a stat per file rather than a walk of every path's components.
type skillPaths struct {
	dir     string
	realDir string
	dirErr  error
	parents map[string]string // a directory in the skill → its resolved path
}

func newSkillPaths(dir string) *skillPaths {
	real, err := filepath.EvalSymlinks(dir)
	return &skillPaths{dir: dir, realDir: real, dirErr: err, parents: make(map[string]string)}
}

func (sp *skillPaths) file(rel string) (string, error) {
	if rel == "" {
		return "", errors.New("path is empty")
	}
	if filepath.IsAbs(rel) || !filepath.IsLocal(filepath.FromSlash(rel)) {
		return "", fmt.Errorf("path %q escapes the skill directory", rel)
	}
	p := filepath.Join(sp.dir, filepath.FromSlash(rel))
	real, err := sp.resolve(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("%q does not exist in the skill directory", rel)
		}
		return "", fmt.Errorf("%q: %w", rel, err)
	}
	if sp.dirErr != nil {
		return "", sp.dirErr
	}
	if r, err := filepath.Rel(sp.realDir, real); err != nil || !filepath.IsLocal(r) {
		return "", fmt.Errorf("path %q resolves outside the skill directory", rel)
	}
	return p, nil
}

// resolve is filepath.EvalSymlinks(p) with p's directory resolved once per skill: a p that is
// not itself a symlink resolves to its directory's resolution plus its name.
func (sp *skillPaths) resolve(p string) (string, error) {
	parent, name := filepath.Split(p)
	rp, ok := sp.parents[parent]
	if !ok {
		var err error
		if rp, err = filepath.EvalSymlinks(parent); err != nil {
			return "", err
		}
		sp.parents[parent] = rp
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return "", err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return filepath.EvalSymlinks(p)
	}
	return filepath.Join(rp, name), nil
}

// readCapped reads a regular file of at most limit bytes.
func readCapped(path string, limit int64) ([]byte, error) {
	return readCappedInto(nil, path, limit)
}

// readCappedInto is readCapped into buf's memory when it has room. A special file is refused
// before it is opened: opening a FIFO for reading waits for a writer, and opening a device can
// have effects of its own. The open does not block either (openFlags), for a file replaced by
// a FIFO between the two.
func readCappedInto(buf []byte, path string, limit int64) ([]byte, error) {
	if st, err := os.Stat(path); err != nil {
		return nil, err
	} else if !st.Mode().IsRegular() {
		return nil, notRegular(st.Mode())
	}
	f, err := os.OpenFile(path, openFlags, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, notRegular(st.Mode())
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("file is %d bytes, larger than the %d-byte limit", st.Size(), limit)
	}
	// Sized by the stat, as os.ReadFile sizes its buffer: io.ReadAll grows from 512 bytes and
	// left twice a cases file's size in garbage. A file that grew since is read to the limit.
	if room := st.Size() + bytes.MinRead; int64(cap(buf)) < room {
		buf = make([]byte, 0, room)
	}
	b := bytes.NewBuffer(buf[:0])
	if _, err := b.ReadFrom(io.LimitReader(f, limit+1)); err != nil {
		return nil, err
	}
	data := b.Bytes()
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("file is larger than the %d-byte limit", limit)
	}
	return data, nil
}

// notRegular says what a file that is not a regular file is, so the diagnostic names it.
func notRegular(m fs.FileMode) error {
	return fmt.Errorf("is %s, not a regular file; not read", describeType(m))
}

// describeType names the type of a file that is not a regular file.
func describeType(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "a special file"
}

// parseYAML parses data into a document node under the one YAML policy of the project
// (internal/yamlstrict), reporting a syntax error, an anchor or alias, or nesting beyond
// maxDepth with its line. Repeated keys are reported where a mapping is read, in its words.
func (r *reader) parseYAML(data []byte) (*yaml.Node, bool) {
	parse := yamlstrict.Parse
	if r.trees != nil {
		parse = r.trees.Parse
	}
	root, problems := parse(data, yamlstrict.Options{MaxBytes: maxCaseFileBytes, MaxDepth: maxDepth + 1})
	for _, p := range problems {
		switch p.Kind {
		case yamlstrict.Syntax:
			r.errorf(p.Line, "cases.yaml", "invalid YAML: %s", p.Located)
		case yamlstrict.TooLarge:
			r.errorf(0, "cases.file", "file is %d bytes, larger than the %d-byte limit", len(data), maxCaseFileBytes)
		case yamlstrict.Alias:
			r.errorf(p.Line, ruleAlias, "YAML %s: anchors and aliases are not allowed in case files; write the value out", p.Message)
		case yamlstrict.TooDeep:
			r.errorf(p.Line, "cases.yaml", "nested more than %d levels deep", maxDepth)
		}
	}
	if len(problems) > 0 {
		return nil, false
	}
	if root == nil {
		r.errorf(1, "cases.empty", "the file is empty")
		return nil, false
	}
	return root, true
}
