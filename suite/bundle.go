package suite

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/skillfleet/skillfleet/skill"
)

// MaxBundleBytes bounds the file content of one bundle, so a stray data directory cannot be
// shipped to every worker of a fleet.
const MaxBundleBytes = 512 << 20

// DigestPrefix marks a sha256 content digest.
const DigestPrefix = "sha256:"

// SkillDigest is the content identity of one skill in a bundle.
type SkillDigest struct {
	Name string `json:"name"`
	// Path is the skill's directory inside the bundle: its name, so every skill of a suite has
	// one unambiguous place whatever root it came from.
	Path string `json:"path"`
	// Digest covers the skill directory's files: their paths, executable bits and contents.
	Digest string `json:"digest"`
	// ClosureDigest covers the skill and its transitive dependencies.
	ClosureDigest string `json:"closure_digest"`
	// Closure lists the bundle paths of the skill and its dependencies, itself first.
	Closure []string `json:"closure"`
}

// Bundle describes what WriteBundle wrote.
type Bundle struct {
	Digest string
	Skills []SkillDigest
	Bytes  int64
}

// WriteBundle writes the skills (and their dependency closures) as a deterministic tar to w:
// entries sorted, owners and times zeroed, modes reduced to 0644/0755. The same files give the
// same bytes, so the bundle's sha256 is the suite's content digest on every machine.
func WriteBundle(w io.Writer, g *skill.Graph, skills []*skill.Skill) (*Bundle, error) {
	byName := make(map[string]*skill.Skill)
	for _, s := range skills {
		for _, dep := range g.Closure(s.Name) {
			byName[dep.Name] = dep
		}
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	slices.Sort(names)

	h := sha256.New()
	cw := &countingWriter{w: io.MultiWriter(w, h)}
	tw := tar.NewWriter(cw)
	digests := make(map[string]string, len(names))
	var total int64
	buf := make([]byte, 64<<10)
	for _, name := range names {
		d, n, err := writeSkill(tw, byName[name], total, buf)
		if err != nil {
			return nil, fmt.Errorf("bundle skill %s: %w", name, err)
		}
		digests[name] = d
		total += n
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := &Bundle{Digest: DigestPrefix + hex.EncodeToString(h.Sum(nil)), Bytes: cw.n}
	for _, name := range names {
		closure := g.Closure(name)
		ch := sha256.New()
		paths := make([]string, 0, len(closure))
		for _, dep := range closure {
			paths = append(paths, dep.Name)
			fmt.Fprintf(ch, "%s\x00%s\n", dep.Name, digests[dep.Name])
		}
		b.Skills = append(b.Skills, SkillDigest{
			Name: name, Path: name, Digest: digests[name],
			ClosureDigest: DigestPrefix + hex.EncodeToString(ch.Sum(nil)), Closure: paths,
		})
	}
	return b, nil
}

// bundleFile is one file of a skill directory.
type bundleFile struct {
	rel  string // slash-separated, relative to the skill directory
	path string // on disk, symlinks resolved
	size int64
	exec bool
}

// writeSkill writes one skill's files under "<name>/" and returns the skill's digest.
func writeSkill(tw *tar.Writer, s *skill.Skill, sofar int64, buf []byte) (string, int64, error) {
	files, err := skillFiles(s.Dir)
	if err != nil {
		return "", 0, err
	}
	h, fh := sha256.New(), sha256.New()
	var n int64
	for _, f := range files {
		if sofar+n+f.size > MaxBundleBytes {
			return "", 0, fmt.Errorf("the suite's files exceed %d bytes", MaxBundleBytes)
		}
		mode := int64(0o644)
		if f.exec {
			mode = 0o755
		}
		hdr := &tar.Header{
			Typeflag: tar.TypeReg, Name: s.Name + "/" + f.rel, Size: f.size, Mode: mode,
			ModTime: time.Unix(0, 0), Format: tar.FormatPAX,
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return "", 0, err
		}
		fh.Reset()
		if err := copyFile(io.MultiWriter(tw, fh), f.path, f.size, buf); err != nil {
			return "", 0, fmt.Errorf("%s: %w", f.rel, err)
		}
		fmt.Fprintf(h, "%s\x00%o\x00%x\n", f.rel, mode, fh.Sum(nil))
		n += f.size
	}
	return DigestPrefix + hex.EncodeToString(h.Sum(nil)), n, nil
}

// copyFile copies exactly size bytes, failing if the file changed size under us: a bundle
// whose digest does not describe its content would be worse than no bundle.
func copyFile(w io.Writer, path string, size int64, buf []byte) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	n, err := io.CopyBuffer(w, io.LimitReader(f, size), buf)
	if err != nil {
		return err
	}
	if n != size {
		return fmt.Errorf("file changed while bundling (read %d of %d bytes)", n, size)
	}
	return nil
}

// skillFiles lists a skill directory's regular files in sorted order. Hidden entries (.git,
// .DS_Store) and nested skill directories (they are skills of their own) are left out; symlinks
// are followed only to files inside the skill.
func skillFiles(dir string) ([]bundleFile, error) {
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, err
	}
	var out []bundleFile
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if _, err := os.Stat(filepath.Join(p, "SKILL.md")); err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		real := p
		if d.Type()&fs.ModeSymlink != 0 {
			real, err = filepath.EvalSymlinks(p)
			if err != nil {
				return fmt.Errorf("%s: %w", rel, err)
			}
			if r, err := filepath.Rel(realDir, real); err != nil || !filepath.IsLocal(r) {
				return fmt.Errorf("%s: symlink points outside the skill directory", rel)
			}
		}
		st, err := os.Stat(real)
		if err != nil {
			return err
		}
		if !st.Mode().IsRegular() {
			if st.IsDir() {
				return nil // a symlinked directory: its files are reachable under their own path
			}
			return fmt.Errorf("%s: not a regular file", rel)
		}
		out = append(out, bundleFile{rel: filepath.ToSlash(rel), path: real, size: st.Size(), exec: st.Mode()&0o111 != 0})
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b bundleFile) int { return strings.Compare(a.rel, b.rel) })
	return out, nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// ErrUnsafeBundle is returned by ExtractBundle for entries that would land outside the target.
var ErrUnsafeBundle = errors.New("unsafe bundle entry")

// ExtractBundle unpacks a bundle written by WriteBundle into dir. It accepts only regular files
// and directories with local paths, and caps the total size, because a bundle arrives from the
// network.
func ExtractBundle(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	var total int64
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read bundle: %w", err)
		}
		name := filepath.FromSlash(hdr.Name)
		if !filepath.IsLocal(name) {
			return fmt.Errorf("%w: %q", ErrUnsafeBundle, hdr.Name)
		}
		target := filepath.Join(dir, name)
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
			continue
		case tar.TypeReg:
		default:
			return fmt.Errorf("%w: %q has type %q", ErrUnsafeBundle, hdr.Name, hdr.Typeflag)
		}
		total += hdr.Size
		if hdr.Size < 0 || total > MaxBundleBytes {
			return fmt.Errorf("%w: content exceeds %d bytes", ErrUnsafeBundle, MaxBundleBytes)
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if hdr.Mode&0o111 != 0 {
			mode = 0o755
		}
		f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, io.LimitReader(tr, hdr.Size))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
}
