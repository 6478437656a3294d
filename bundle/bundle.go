// Package bundle is the suite bundle: the deterministic tar of a suite's skill directories that
// travels from the submitter to the coordinator and from the object store to every worker. It
// writes, checks and extracts bundles, and caches extracted ones by content digest. It knows
// directories and digests, not skills, so a worker can fetch a suite without parsing it.
package bundle

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
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
	// Skipped are the special files of the skill directories (FIFOs, sockets, devices): left
	// out, never opened (opening a FIFO waits for a writer), for the caller to report.
	Skipped []SkippedFile
}

// SkippedFile is a file of a skill directory that is not bundled.
type SkippedFile struct {
	Skill string      // the skill's name
	Path  string      // the file as found on disk
	Mode  fs.FileMode // what it is
}

// Dir is one skill directory to bundle.
type Dir struct {
	// Name is the skill's name: its directory inside the bundle.
	Name string
	// Path is the directory on disk.
	Path string
	// Closure names the skill and its transitive dependencies, itself first; each must be
	// among the directories written with it.
	Closure []string
}

// WriteBundle writes the skill directories as a deterministic tar to w: entries sorted, owners
// and times zeroed, modes reduced to 0644/0755, and the manifest last (see ManifestName). The
// same files give the same bytes, so the bundle's sha256 is the suite's content digest on every
// machine. dirs must hold every skill of every closure; suite.WriteBundle computes them from a
// skill graph.
func WriteBundle(w io.Writer, dirs []Dir) (*Bundle, error) {
	return writeBundle(w, dirs, aheadLimits{file: aheadFileBytes, skill: aheadSkillBytes, skillsPerWorker: aheadSkillsPerWorker})
}

// writeBundle is WriteBundle reading ahead of the tar stream within lim.
func writeBundle(w io.Writer, dirs []Dir, lim aheadLimits) (*Bundle, error) {
	byName := make(map[string]Dir, len(dirs))
	for _, d := range dirs {
		byName[d.Name] = d
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
	man := newManifestHasher()
	ordered := make([]Dir, len(names))
	for i, name := range names {
		ordered[i] = byName[name]
	}
	ra := startReadAhead(ordered, lim)
	defer ra.stop()
	var skipped []SkippedFile
	for i, name := range names {
		pre := ra.skill(i)
		d, n, err := writeSkill(tw, byName[name], pre, total, buf, man)
		if err != nil {
			return nil, fmt.Errorf("bundle skill %s: %w", name, err)
		}
		for _, sf := range pre.skipped {
			sf.Skill = name
			skipped = append(skipped, sf)
		}
		ra.written(i)
		digests[name] = d
		total += n
	}
	if man.entries > MaxBundleEntries {
		return nil, fmt.Errorf("the suite has %d files, more than %d", man.entries, MaxBundleEntries)
	}
	if err := writeManifest(tw, man.manifest()); err != nil {
		return nil, fmt.Errorf("bundle manifest: %w", err)
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := &Bundle{Digest: DigestPrefix + hex.EncodeToString(h.Sum(nil)), Bytes: cw.n, Skipped: skipped}
	var line []byte // "<dep>\x00<digest>\n", the closure digest's input for each dependency
	for _, name := range names {
		closure := byName[name].Closure
		if len(closure) == 0 {
			closure = []string{name}
		}
		ch := sha256.New()
		for _, dep := range closure {
			d, ok := digests[dep]
			if !ok {
				return nil, fmt.Errorf("bundle skill %s: its dependency %s is not bundled", name, dep)
			}
			line = append(append(append(append(line[:0], dep...), 0), d...), '\n')
			ch.Write(line)
		}
		b.Skills = append(b.Skills, SkillDigest{
			Name: name, Path: name, Digest: digests[name],
			ClosureDigest: DigestPrefix + hex.EncodeToString(ch.Sum(nil)), Closure: slices.Clone(closure),
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

// writeSkill writes one skill's files under "<name>/", as pre listed them and read the first
// of them, and returns the skill's digest. Each file is also added to man, the bundle's
// manifest.
func writeSkill(tw *tar.Writer, s Dir, pre *preparedSkill, sofar int64, buf []byte, man *manifestHasher) (string, int64, error) {
	if pre.err != nil {
		return "", 0, pre.err
	}
	h, fh := sha256.New(), sha256.New()
	var n int64
	for i, f := range pre.files {
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
		var sum []byte
		if i < len(pre.ahead) {
			a := &pre.ahead[i]
			if a.err != nil {
				return "", 0, fmt.Errorf("%s: %w", f.rel, a.err)
			}
			if _, err := tw.Write(a.data); err != nil {
				return "", 0, fmt.Errorf("%s: %w", f.rel, err)
			}
			sum = a.sum[:]
		} else {
			fh.Reset()
			if err := copyFile(io.MultiWriter(tw, fh), f.path, f.size, buf); err != nil {
				return "", 0, fmt.Errorf("%s: %w", f.rel, err)
			}
			sum = fh.Sum(nil)
		}
		fmt.Fprintf(h, "%s\x00%o\x00%x\n", f.rel, mode, sum)
		man.add(hdr.Name, hdr.Typeflag, mode, f.size, sum)
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
// are followed only to files inside the skill. Special files (FIFOs, sockets, devices) are
// returned apart, by their type alone: they are never opened.
func skillFiles(dir string) ([]bundleFile, []SkippedFile, error) {
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, nil, err
	}
	var out []bundleFile
	var skipped []SkippedFile
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
			skipped = append(skipped, SkippedFile{Path: p, Mode: st.Mode().Type()})
			return nil
		}
		out = append(out, bundleFile{rel: filepath.ToSlash(rel), path: real, size: st.Size(), exec: st.Mode()&0o111 != 0})
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	slices.SortFunc(out, func(a, b bundleFile) int { return strings.Compare(a.rel, b.rel) })
	return out, skipped, nil
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

// The bundle format. A bundle is a POSIX (PAX) tar of regular files named "<skill>/<path>",
// written by WriteBundle in sorted order, and ends with one more entry, the manifest, named
// ManifestName and holding the JSON of a BundleManifest:
//
//	{"format":"skillfleet-bundle/1","entries":N,"bytes":B,"digest":"sha256:<hex>"}
//
// entries counts the entries before the manifest, bytes sums their contents, and digest is the
// sha256 of one line per entry, in archive order:
//
//	<name> NUL <typeflag> NUL <mode, octal> NUL <size, decimal> NUL <hex sha256 of content> LF
//
// The manifest is last because the writer streams: only after the last file does it know the
// count and the digest, and a first entry would cost a second read of every file. A reader has
// to read the whole archive before trusting any of it anyway, and with the manifest last a
// bundle cut anywhere, even exactly at an entry boundary, which a tar reader cannot tell from
// the end, lacks its manifest and is refused as incomplete. Nothing may follow the manifest.
// The manifest is not extracted. Its name starts with a dot, which no skill name does, and
// WriteBundle never bundles hidden files, so it cannot collide with a suite's file.
const ManifestName = ".skillfleet-manifest.json"

// manifestFormat names the format version in the manifest.
const manifestFormat = "skillfleet-bundle/1"

// Caps on a bundle's shape, besides MaxBundleBytes: each refuses what no suite needs and what
// would cost a coordinator or a worker inodes, memory or time out of proportion to the upload.
const (
	// MaxBundleEntries bounds the entries before the manifest (200,000 empty files were
	// accepted before there was a cap).
	MaxBundleEntries = 20000
	// maxBundleDepth bounds the path components of an entry name.
	maxBundleDepth = 32
	// maxBundleName bounds the length of an entry name in bytes.
	maxBundleName = 1024
	// maxManifestBytes bounds the manifest entry; it is one short JSON line.
	maxManifestBytes = 4096
)

// BundleManifest is the last entry of a bundle: what a complete bundle holds.
type BundleManifest struct {
	Format  string `json:"format"`
	Entries int    `json:"entries"`
	Bytes   int64  `json:"bytes"`
	Digest  string `json:"digest"`
}

// ErrUnsafeBundle is returned by ExtractBundle and CheckBundle for entries that would land
// outside the target, or that no bundle written by WriteBundle holds (links, devices, sparse
// files, duplicates), or beyond a cap.
var ErrUnsafeBundle = errors.New("unsafe bundle entry")

// ErrIncompleteBundle is returned for a bundle that is cut short or corrupt: unreadable, without
// its manifest, or not matching it.
var ErrIncompleteBundle = errors.New("bundle incomplete or corrupt")

// ErrEmptyBundle is returned for a body that holds no tar entry at all, so the caller can say
// "empty bundle" rather than "no test cases matched".
var ErrEmptyBundle = errors.New("empty bundle: the body holds no tar entry")

// manifestHasher accumulates the manifest of the entries written or read so far.
type manifestHasher struct {
	h       hash.Hash
	entries int
	bytes   int64
}

func newManifestHasher() *manifestHasher { return &manifestHasher{h: sha256.New()} }

func (m *manifestHasher) add(name string, typeflag byte, mode, size int64, contentSum []byte) {
	fmt.Fprintf(m.h, "%s\x00%c\x00%o\x00%d\x00%x\n", name, typeflag, mode, size, contentSum)
	m.entries++
	m.bytes += size
}

func (m *manifestHasher) manifest() BundleManifest {
	return BundleManifest{Format: manifestFormat, Entries: m.entries, Bytes: m.bytes,
		Digest: DigestPrefix + hex.EncodeToString(m.h.Sum(nil))}
}

// writeManifest writes the manifest entry that ends a bundle.
func writeManifest(tw *tar.Writer, m BundleManifest) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: ManifestName, Size: int64(len(b)), Mode: 0o644,
		ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	_, err = tw.Write(b)
	return err
}

// CheckBundle reads a whole bundle and reports whether ExtractBundle would accept it, without
// writing anything: the coordinator calls it on a spooled upload before storing it. It returns
// the bundle's manifest.
func CheckBundle(r io.Reader) (BundleManifest, error) {
	return walkBundle(r, func(string, *tar.Header, io.Reader) error { return nil })
}

// ExtractBundle unpacks a bundle written by WriteBundle into dir, with every check of
// CheckBundle. Files are written as they arrive (a bundle is read once, from the network or a
// spool), so on error dir holds a partial tree the caller must discard, as Cache does.
func ExtractBundle(r io.Reader, dir string) error {
	_, err := walkBundle(r, func(name string, hdr *tar.Header, content io.Reader) error {
		target := filepath.Join(dir, filepath.FromSlash(name))
		if hdr.Typeflag == tar.TypeDir {
			return os.MkdirAll(target, 0o755)
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
		_, err = io.Copy(f, content)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	})
	return err
}

// walkBundle reads a bundle entry by entry, refusing what a bundle must not hold, and hands each
// entry before the manifest to fn with a reader of its content (which fn may leave unread). It
// counts the bytes actually read, not the sizes headers claim, and succeeds only when the
// archive ends with a manifest that matches what was read.
func walkBundle(r io.Reader, fn func(name string, hdr *tar.Header, content io.Reader) error) (BundleManifest, error) {
	tr := tar.NewReader(r)
	got := newManifestHasher()
	seen := make(map[string]byte)
	fh := sha256.New()
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			if got.entries == 0 {
				return BundleManifest{}, ErrEmptyBundle
			}
			return BundleManifest{}, fmt.Errorf("%w: %d entries and no manifest: the bundle was cut short (a complete bundle ends with %s)",
				ErrIncompleteBundle, got.entries, ManifestName)
		}
		if err != nil {
			return BundleManifest{}, fmt.Errorf("%w after %d entries: read bundle: %w", ErrIncompleteBundle, got.entries, err)
		}
		if hdr.Name == ManifestName {
			return checkManifest(tr, got)
		}
		name, err := checkEntry(hdr, seen, got)
		if err != nil {
			return BundleManifest{}, err
		}
		fh.Reset()
		cr := &countingReader{r: io.LimitReader(tr, hdr.Size)}
		content := io.TeeReader(cr, fh)
		if err := fn(name, hdr, content); err != nil {
			if cr.err != nil { // the archive failed under fn, not fn itself
				return BundleManifest{}, fmt.Errorf("%w: entry %q: read bundle: %w", ErrIncompleteBundle, hdr.Name, cr.err)
			}
			return BundleManifest{}, fmt.Errorf("bundle entry %q: %w", hdr.Name, err)
		}
		// Whatever fn left unread still counts towards the digest.
		if _, err := io.Copy(fh, cr); err != nil {
			return BundleManifest{}, fmt.Errorf("%w: entry %q: read bundle: %w", ErrIncompleteBundle, hdr.Name, err)
		}
		if cr.n != hdr.Size {
			return BundleManifest{}, fmt.Errorf("%w: entry %q holds %d of its %d bytes", ErrIncompleteBundle, hdr.Name, cr.n, hdr.Size)
		}
		got.add(name, hdr.Typeflag, bundleMode(hdr), cr.n, fh.Sum(nil))
	}
}

// checkEntry refuses an entry a bundle must not hold and returns its canonical name.
func checkEntry(hdr *tar.Header, seen map[string]byte, got *manifestHasher) (string, error) {
	refuse := func(format string, args ...any) (string, error) {
		return "", fmt.Errorf("%w: %q: %s", ErrUnsafeBundle, hdr.Name, fmt.Sprintf(format, args...))
	}
	if got.entries >= MaxBundleEntries {
		return refuse("more than %d entries", MaxBundleEntries)
	}
	// archive/tar expands GNU sparse files itself: a few KiB of archive would become hundreds
	// of MiB of zeros on disk. WriteBundle never writes one.
	if hdr.Typeflag == tar.TypeGNUSparse {
		return refuse("sparse file (GNU sparse type)")
	}
	for k := range hdr.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return refuse("sparse file (PAX record %s)", k)
		}
	}
	switch hdr.Typeflag {
	case tar.TypeReg, tar.TypeDir:
	default:
		return refuse("type %q (only regular files and directories)", hdr.Typeflag)
	}
	name := strings.TrimSuffix(hdr.Name, "/")
	if len(name) > maxBundleName {
		return refuse("name longer than %d bytes", maxBundleName)
	}
	if !filepath.IsLocal(filepath.FromSlash(name)) || path.Clean(name) != name || strings.Contains(name, `\`) {
		return refuse("not a clean relative path")
	}
	if d := strings.Count(name, "/") + 1; d > maxBundleDepth {
		return refuse("%d path components, more than %d", d, maxBundleDepth)
	}
	if _, dup := seen[name]; dup {
		return refuse("duplicate entry")
	}
	// A file's parent must not be a file already; directories may repeat as parents.
	for dir := path.Dir(name); dir != "."; dir = path.Dir(dir) {
		if seen[dir] == tar.TypeReg {
			return refuse("parent %q is a file", dir)
		}
	}
	seen[name] = hdr.Typeflag
	if hdr.Size < 0 || got.bytes+hdr.Size > MaxBundleBytes {
		return refuse("content exceeds %d bytes", MaxBundleBytes)
	}
	if hdr.Typeflag == tar.TypeDir && hdr.Size != 0 {
		return refuse("directory with content")
	}
	return name, nil
}

// checkManifest reads the manifest entry, compares it with what was read and checks that the
// archive ends there.
func checkManifest(tr *tar.Reader, got *manifestHasher) (BundleManifest, error) {
	b, err := io.ReadAll(io.LimitReader(tr, maxManifestBytes+1))
	if err != nil {
		return BundleManifest{}, fmt.Errorf("%w: manifest: read bundle: %w", ErrIncompleteBundle, err)
	}
	var m BundleManifest
	if len(b) > maxManifestBytes {
		return BundleManifest{}, fmt.Errorf("%w: manifest larger than %d bytes", ErrIncompleteBundle, maxManifestBytes)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return BundleManifest{}, fmt.Errorf("%w: manifest: %w", ErrIncompleteBundle, err)
	}
	if m.Format != manifestFormat {
		return BundleManifest{}, fmt.Errorf("%w: manifest format %q, want %q", ErrIncompleteBundle, m.Format, manifestFormat)
	}
	want := got.manifest()
	switch {
	case m.Entries != want.Entries:
		return BundleManifest{}, fmt.Errorf("%w: %d of %d entries", ErrIncompleteBundle, want.Entries, m.Entries)
	case m.Bytes != want.Bytes:
		return BundleManifest{}, fmt.Errorf("%w: %d of %d bytes", ErrIncompleteBundle, want.Bytes, m.Bytes)
	case m.Digest != want.Digest:
		return BundleManifest{}, fmt.Errorf("%w: the entries do not match the manifest's digest", ErrIncompleteBundle)
	}
	if _, err := tr.Next(); err != io.EOF {
		if err == nil {
			err = errors.New("an entry follows the manifest")
		}
		return BundleManifest{}, fmt.Errorf("%w: after the manifest: %w", ErrIncompleteBundle, err)
	}
	return m, nil
}

// bundleMode is the mode an entry is extracted with, so the digest covers what lands on disk.
func bundleMode(hdr *tar.Header) int64 {
	switch {
	case hdr.Typeflag == tar.TypeDir:
		return 0o755
	case hdr.Mode&0o111 != 0:
		return 0o755
	}
	return 0o644
}

// countingReader counts what it reads and keeps the first read error other than io.EOF.
type countingReader struct {
	r   io.Reader
	n   int64
	err error
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if err != nil && err != io.EOF && c.err == nil {
		c.err = err
	}
	return n, err
}

// BaselineDir is the reserved directory of a bundle that holds the previous versions of its
// skills, for a run's old_skill arm ("<BaselineDir>/<skill name>/..."). It is hidden, like the
// manifest: no skill name starts with a dot, skill discovery never enters it (so the old
// versions are never skills of the suite), and only the jobs of the old_skill arm are shown
// what it holds.
const BaselineDir = ".skillfleet-baseline"
