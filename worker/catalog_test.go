package worker

import (
	"context"
	"errors"
	"io"
	"testing"

	"google.golang.org/protobuf/proto"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// fakeStore serves catalogs by digest and counts the fetches.
type fakeStore struct {
	objects map[string][]byte
	fetches int
	fail    error
}

func (f *fakeStore) GetBundle(_ context.Context, digest string, w io.Writer) error {
	f.fetches++
	if f.fail != nil {
		return f.fail
	}
	b, ok := f.objects[digest]
	if !ok {
		return errors.New("no such object")
	}
	_, err := w.Write(b)
	return err
}

func catalogBytes(t *testing.T, names ...string) []byte {
	t.Helper()
	cat := &pb.Catalog{}
	for _, n := range names {
		cat.Entries = append(cat.Entries, &pb.CatalogEntry{Name: n, Description: "d " + n, Path: n + "/SKILL.md"})
	}
	b, err := proto.Marshal(cat)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCatalogResolve(t *testing.T) {
	prompt := func(digest string, inline ...string) *pb.Job {
		j := &pb.Job{Kind: pb.CaseKind_CASE_KIND_PROMPT, CatalogDigest: digest}
		for _, n := range inline {
			j.Catalog = append(j.Catalog, &pb.CatalogEntry{Name: n})
		}
		return j
	}
	for _, tc := range []struct {
		name    string
		jobs    []*pb.Job
		keep    int
		fail    error
		want    [][]string // the catalog names each job ends with
		fetches int
		err     bool
	}{
		{name: "fetched once for the jobs of a run", keep: 4,
			jobs: []*pb.Job{prompt("sha256:a"), prompt("sha256:a"), prompt("sha256:a")},
			want: [][]string{{"x", "y"}, {"x", "y"}, {"x", "y"}}, fetches: 1},
		{name: "each run's own catalog", keep: 4,
			jobs: []*pb.Job{prompt("sha256:a"), prompt("sha256:b")},
			want: [][]string{{"x", "y"}, {"z"}}, fetches: 2},
		{name: "only the last few are kept", keep: 1,
			jobs: []*pb.Job{prompt("sha256:a"), prompt("sha256:b"), prompt("sha256:a")},
			want: [][]string{{"x", "y"}, {"z"}, {"x", "y"}}, fetches: 3},
		{name: "an inline catalog (an older coordinator) is used as it is", keep: 4,
			jobs: []*pb.Job{prompt("sha256:a", "inline")},
			want: [][]string{{"inline"}}, fetches: 0},
		{name: "a command job needs none", keep: 4,
			jobs: []*pb.Job{{Kind: pb.CaseKind_CASE_KIND_COMMAND, CatalogDigest: "sha256:a"}},
			want: [][]string{nil}, fetches: 0},
		{name: "an unreachable store is an error, not an empty catalog", keep: 4, fail: errors.New("store down"),
			jobs: []*pb.Job{prompt("sha256:a")}, fetches: 1, err: true},
		{name: "an unreadable object is an error", keep: 4,
			jobs: []*pb.Job{prompt("sha256:junk")}, fetches: 1, err: true},
		{name: "an empty catalog is an error", keep: 4,
			jobs: []*pb.Job{prompt("sha256:empty")}, fetches: 1, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := &fakeStore{fail: tc.fail, objects: map[string][]byte{
				"sha256:a": catalogBytes(t, "x", "y"), "sha256:b": catalogBytes(t, "z"),
				"sha256:junk": {0xff, 0xff, 0xff}, "sha256:empty": catalogBytes(t),
			}}
			c := newCatalogs(store, tc.keep)
			for i, job := range tc.jobs {
				err := c.resolve(context.Background(), job)
				if tc.err {
					if err == nil {
						t.Fatalf("job %d: resolved to %v, want an error", i, job.GetCatalog())
					}
					if len(job.GetCatalog()) != 0 {
						t.Errorf("job %d: a catalog was set despite the error", i)
					}
					continue
				}
				if err != nil {
					t.Fatalf("job %d: %v", i, err)
				}
				var names []string
				for _, e := range job.GetCatalog() {
					names = append(names, e.GetName())
				}
				if len(names) != len(tc.want[i]) {
					t.Fatalf("job %d: catalog %v, want %v", i, names, tc.want[i])
				}
				for k := range names {
					if names[k] != tc.want[i][k] {
						t.Fatalf("job %d: catalog %v, want %v", i, names, tc.want[i])
					}
				}
			}
			if store.fetches != tc.fetches {
				t.Errorf("%d fetches, want %d", store.fetches, tc.fetches)
			}
		})
	}
}

// TestCatalogSizeIsBounded: a store answer past the limit is refused while it is read.
func TestCatalogSizeIsBounded(t *testing.T) {
	var w capped
	if _, err := w.Write(make([]byte, maxCatalogBytes)); err != nil {
		t.Fatalf("a catalog at the limit was refused: %v", err)
	}
	if _, err := w.Write([]byte{0}); err == nil {
		t.Error("a catalog past the limit was accepted")
	}
}
