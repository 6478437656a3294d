package bundle

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// tarEntry is one entry of a generated archive.
type tarEntry struct {
	hdr     tar.Header
	content []byte
}

// regFile is a regular file entry.
func regFile(name, content string) tarEntry {
	return tarEntry{hdr: tar.Header{Typeflag: tar.TypeReg, Name: name, Size: int64(len(content)), Mode: 0o644,
		ModTime: time.Unix(0, 0), Format: tar.FormatPAX}, content: []byte(content)}
}

// writeTar writes entries, then the manifest of them when withManifest, and returns the archive
// and the offset at which each entry ends (after the manifest too, when there is one).
func writeTar(t *testing.T, entries []tarEntry, withManifest bool) ([]byte, []int) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	man := newManifestHasher()
	var ends []int
	for _, e := range entries {
		if err := tw.WriteHeader(&e.hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(e.content); err != nil {
			t.Fatal(err)
		}
		if err := tw.Flush(); err != nil {
			t.Fatal(err)
		}
		ends = append(ends, buf.Len())
		man.add(strings.TrimSuffix(e.hdr.Name, "/"), e.hdr.Typeflag, bundleMode(&e.hdr), int64(len(e.content)), sum(e.content))
	}
	if withManifest {
		if err := writeManifest(tw, man.manifest()); err != nil {
			t.Fatal(err)
		}
		_ = tw.Flush()
		ends = append(ends, buf.Len())
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), ends
}

func sum(b []byte) []byte {
	h := newManifestHasher().h
	h.Write(b)
	return h.Sum(nil)
}

// paxSparse is the archive: about 20 KiB that archive/tar expands into a 500 MiB file.
// Go's tar.Writer refuses GNU.sparse.* records, so they are written under a same-length key and
// renamed in the bytes (the PAX records are entry content, outside any header checksum).
func paxSparse(t *testing.T) []byte {
	t.Helper()
	const realSize = 500 << 20
	data := bytes.Repeat([]byte("d"), 16<<10)
	sparseMap := fmt.Sprintf("1\n%d\n%d\n", realSize-len(data), len(data))
	body := append([]byte(sparseMap), make([]byte, 512-len(sparseMap))...)
	body = append(body, data...)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: "s/GNUSparseFile.0/big", Size: int64(len(body)), Mode: 0o644,
		Format: tar.FormatPAX, PAXRecords: map[string]string{
			"GNU.sparsX.major": "1", "GNU.sparsX.minor": "0", "GNU.sparsX.name": "s/big",
			"GNU.sparsX.realsize": strconv.Itoa(realSize),
		}}
	if err := tw.WriteHeader(hdr); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(body); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return bytes.ReplaceAll(buf.Bytes(), []byte("GNU.sparsX."), []byte("GNU.sparse."))
}

// manyEmptyFiles streams an archive of n empty files, so the test holds no 100 MB buffer.
func manyEmptyFiles(n int) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		tw := tar.NewWriter(pw)
		for i := range n {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: fmt.Sprintf("s/f%06d", i), Mode: 0o644, Format: tar.FormatUSTAR}); err != nil {
				pw.CloseWithError(err)
				return
			}
		}
		pw.CloseWithError(tw.Close())
	}()
	return pr
}

// diskBytes sums the blocks the files under dir occupy.
func diskBytes(t *testing.T, dir string) (files int, blocks int64) {
	t.Helper()
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			files++
			if st, err := os.Stat(p); err == nil {
				blocks += st.Size()
			}
		}
		return nil
	})
	return files, blocks
}

// TestHostileBundles feeds archives built to exhaust disk, inodes or trust, through both
// ExtractBundle and CheckBundle, and checks each is refused for the right reason, leaving at
// most the entries read before the refusal.
func TestHostileBundles(t *testing.T) {
	thousand := make([]tarEntry, 1000)
	for i := range thousand {
		thousand[i] = regFile(fmt.Sprintf("s%03d/SKILL.md", i), strings.Repeat("x", i))
	}
	full, ends := writeTar(t, thousand, true)
	deep := strings.Repeat("d/", maxBundleDepth) + "f"
	tampered := bytes.Replace(full, []byte("xxxxxxxxxxxx"), []byte("xxxxxxxxxxxy"), 1)
	afterManifest := func() []byte {
		b, _ := writeTar(t, []tarEntry{regFile("s/SKILL.md", "x")}, true)
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "s/extra", Size: 1, Mode: 0o644})
		_, _ = tw.Write([]byte("x"))
		_ = tw.Close()
		// The first archive without its end-of-archive blocks, then one more entry.
		return append(b[:len(b)-1024], buf.Bytes()...)
	}()
	tests := []struct {
		name     string
		body     func() io.Reader
		want     error
		contains string
	}{
		{"PAX sparse 20 KiB claiming 500 MiB", func() io.Reader { return bytes.NewReader(paxSparse(t)) }, ErrUnsafeBundle, "sparse file"},
		{"200,000 empty files", func() io.Reader { return manyEmptyFiles(200000) }, ErrUnsafeBundle, "more than 20000 entries"},
		{"cut at an entry boundary", func() io.Reader { return bytes.NewReader(full[:ends[499]]) }, ErrIncompleteBundle, "500 entries and no manifest"},
		{"cut before the manifest", func() io.Reader { return bytes.NewReader(full[:ends[999]]) }, ErrIncompleteBundle, "1000 entries and no manifest"},
		{"truncated mid-entry", func() io.Reader { return bytes.NewReader(full[:ends[499]+700]) }, ErrIncompleteBundle, "unexpected EOF"},
		{"empty body", func() io.Reader { return bytes.NewReader(nil) }, ErrEmptyBundle, "empty bundle"},
		{"end-of-archive only", func() io.Reader { return bytes.NewReader(make([]byte, 1024)) }, ErrEmptyBundle, "empty bundle"},
		{"content changed", func() io.Reader { return bytes.NewReader(tampered) }, ErrIncompleteBundle, "do not match"},
		{"entry after the manifest", func() io.Reader { return bytes.NewReader(afterManifest) }, ErrIncompleteBundle, "follows the manifest"},
		{"deep path", func() io.Reader {
			b, _ := writeTar(t, []tarEntry{regFile(deep, "x")}, true)
			return bytes.NewReader(b)
		}, ErrUnsafeBundle, "path components"},
		{"duplicate file", func() io.Reader {
			b, _ := writeTar(t, []tarEntry{regFile("s/SKILL.md", "a"), regFile("s/SKILL.md", "b")}, true)
			return bytes.NewReader(b)
		}, ErrUnsafeBundle, "duplicate"},
		{"duplicate after cleaning", func() io.Reader {
			b, _ := writeTar(t, []tarEntry{regFile("s/SKILL.md", "a"), regFile("s/./SKILL.md", "b")}, true)
			return bytes.NewReader(b)
		}, ErrUnsafeBundle, "clean relative path"},
		{"file under a file", func() io.Reader {
			b, _ := writeTar(t, []tarEntry{regFile("s/a", "a"), regFile("s/a/b", "b")}, true)
			return bytes.NewReader(b)
		}, ErrUnsafeBundle, "is a file"},
		{"no manifest at all", func() io.Reader {
			b, _ := writeTar(t, []tarEntry{regFile("s/SKILL.md", "a")}, false)
			return bytes.NewReader(b)
		}, ErrIncompleteBundle, "1 entries and no manifest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			err := ExtractBundle(tt.body(), dir)
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.contains) {
				t.Fatalf("ExtractBundle: %v, want %v containing %q", err, tt.want, tt.contains)
			}
			if _, err := CheckBundle(tt.body()); !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.contains) {
				t.Fatalf("CheckBundle: %v, want %v containing %q", err, tt.want, tt.contains)
			}
			// Bytes actually written stay at what the archive carried, not what headers claim.
			if files, size := diskBytes(t, dir); files > MaxBundleEntries || size > 1<<20 {
				t.Errorf("refused bundle left %d files, %d bytes", files, size)
			}
		})
	}

	// The same archive, whole, is accepted, and its manifest describes it.
	m, err := CheckBundle(bytes.NewReader(full))
	if err != nil {
		t.Fatalf("the whole bundle: %v", err)
	}
	if m.Entries != 1000 || m.Bytes != 999*1000/2 {
		t.Errorf("manifest %+v", m)
	}
	if err := ExtractBundle(bytes.NewReader(full), t.TempDir()); err != nil {
		t.Fatalf("the whole bundle: %v", err)
	}
}
