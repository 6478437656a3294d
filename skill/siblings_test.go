package skill

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/skillfleet/skillfleet/diag"
)

// TestSiblingsMatchLayered checks that the shared parent gives every skill what discovering
// [dir, dir/..] on its own gives it, including the cases where it must not be shared.
func TestSiblingsMatchLayered(t *testing.T) {
	write := func(t *testing.T, path, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	md := func(name, extra string) string {
		return "---\nname: " + name + "\ndescription: Use when testing.\n" + extra + "---\nbody\n"
	}
	tests := []struct {
		name  string
		setup func(t *testing.T, root string)
		dirs  []string
	}{
		{"siblings resolve", func(t *testing.T, root string) {
			write(t, filepath.Join(root, "a/SKILL.md"), md("a", "requires:\n  - b\n"))
			write(t, filepath.Join(root, "b/SKILL.md"), md("b", "requires:\n  - missing\n"))
		}, []string{"a", "b", "a/"}},
		{"earlier sibling of the same name", func(t *testing.T, root string) {
			write(t, filepath.Join(root, "a/SKILL.md"), md("z", ""))
			write(t, filepath.Join(root, "z/SKILL.md"), md("z", "requires:\n  - nope\n"))
		}, []string{"z", "a"}},
		{"unparsable and unnamed", func(t *testing.T, root string) {
			write(t, filepath.Join(root, "a/SKILL.md"), "---\nname: [\n---\n")
			write(t, filepath.Join(root, "b/SKILL.md"), "no frontmatter\n")
		}, []string{"a", "b"}},
		{"symlinked skill", func(t *testing.T, root string) {
			write(t, filepath.Join(root, "real/SKILL.md"), md("real", "requires:\n  - other\n"))
			write(t, filepath.Join(root, "other/SKILL.md"), md("other", ""))
			if err := os.Symlink(filepath.Join(root, "real"), filepath.Join(root, "link")); err != nil {
				t.Fatal(err)
			}
		}, []string{"link", "real", "other"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			tt.setup(t, root)
			sib := NewSiblings(Options{})
			for _, d := range tt.dirs {
				dir := filepath.Join(root, d)
				if d[len(d)-1] == '/' {
					dir += "/"
				}
				gs, gds, grs := sib.Load(dir)
				ws, wds, wrs := NewSiblings(Options{}).layered(dir, filepath.Join(dir, ".."))
				if (gs == nil) != (ws == nil) || (gs != nil && gs.File != ws.File) {
					t.Fatalf("%s: skill %v, want %v", d, gs, ws)
				}
				if !sameDiags(gds, wds) || !sameDiags(grs, wrs) {
					t.Errorf("%s: diagnostics\n%v %v\nwant\n%v %v", d, gds, grs, wds, wrs)
				}
			}
		})
	}
}

func sameDiags(a, b diag.Diagnostics) bool {
	return len(a) == len(b) && (len(a) == 0 || reflect.DeepEqual(a, b))
}
