package skill

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestDiscoverNested builds trees with skills below skills, resource directories holding
// SKILL.md files, and symlinked directories, and checks the exact catalog and diagnostics:
// every SKILL.md below a root is listed once, under its real path, or reported.
func TestDiscoverNested(t *testing.T) {
	// fill builds the expected discovery.nested line of dir, a resource directory of skillDir.
	fill := func(dir, skillDir string, n int, shown string) string {
		what, verb, them := "1 SKILL.md", "is not listed as a skill", "it"
		if n > 1 {
			what, verb, them = strconv.Itoa(n)+" SKILL.md files", "are not listed as skills", "them"
		}
		return "$TMP/" + dir + ": warning discovery.nested: " + what + " below this directory of skill $TMP/" + skillDir +
			" " + verb + " (" + shown + "): a skill's references, assets, scripts, examples, templates and test directories hold examples and fixtures; to list " +
			them + ", give $TMP/" + dir + " as a skills root"
	}

	tests := []struct {
		name  string
		files []string    // SKILL.md files below the temporary directory; the name is the directory's
		named [][2]string // SKILL.md files whose name differs from their directory: path, name
		links [][2]string // symlinks: path, target
		roots []string    // below the temporary directory; default "root"
		opts  Options
		want  []string // cat.All(): name@file, file below $TMP, in discovery order
		diags []string // every diagnostic, sorted, $TMP for the temporary directory
	}{
		{
			name: "a root that is a skill lists the skills below it",
			files: []string{
				"root/SKILL.md", "root/skills/a/SKILL.md", "root/skills/b/SKILL.md",
				"root/.claude/skills/c/SKILL.md", "root/plugins/p/skills/d/SKILL.md",
			},
			want: []string{
				"root@root/SKILL.md", "c@root/.claude/skills/c/SKILL.md", "d@root/plugins/p/skills/d/SKILL.md",
				"a@root/skills/a/SKILL.md", "b@root/skills/b/SKILL.md",
			},
		},
		{
			name: "sub-skills in a skill's directory are skills",
			files: []string{
				"root/parent/SKILL.md", "root/parent/child-a/SKILL.md", "root/parent/child-b/SKILL.md",
				"root/parent/child-b/grandchild/SKILL.md", "root/parent/skills/child-c/SKILL.md", "root/other/SKILL.md",
			},
			want: []string{
				"other@root/other/SKILL.md", "parent@root/parent/SKILL.md", "child-a@root/parent/child-a/SKILL.md",
				"child-b@root/parent/child-b/SKILL.md", "grandchild@root/parent/child-b/grandchild/SKILL.md",
				"child-c@root/parent/skills/child-c/SKILL.md",
			},
		},
		{
			name: "SKILL.md files in a skill's references and fixtures are reported, not listed",
			files: []string{
				"root/s/SKILL.md",
				"root/s/references/example/SKILL.md",
				"root/s/tests/fixtures/a/SKILL.md", "root/s/tests/fixtures/b/SKILL.md", "root/s/tests/SKILL.md",
				"root/s/evals/files/SKILL.md",
				"root/s/sub/SKILL.md", "root/s/sub/Examples/x/SKILL.md", "root/s/sub/docs/templates/t/SKILL.md",
				// Outside any skill, an examples directory is an ordinary one.
				"root/examples/e/SKILL.md",
			},
			// A fixture named like a skill of the root is no duplicate: it is not parsed.
			named: [][2]string{{"root/s/references/s/SKILL.md", "s"}},
			want: []string{
				"e@root/examples/e/SKILL.md", "s@root/s/SKILL.md", "sub@root/s/sub/SKILL.md",
			},
			diags: []string{
				fill("root/s/evals", "root/s", 1, "files/SKILL.md"),
				fill("root/s/references", "root/s", 2, "example/SKILL.md, s/SKILL.md"),
				fill("root/s/sub/Examples", "root/s/sub", 1, "x/SKILL.md"),
				fill("root/s/sub/docs/templates", "root/s/sub", 1, "t/SKILL.md"),
				fill("root/s/tests", "root/s", 3, "SKILL.md, fixtures/a/SKILL.md, fixtures/b/SKILL.md"),
			},
		},
		{
			name: "a root that is a skill reports its own fixtures",
			files: []string{
				"root/SKILL.md", "root/assets/1/SKILL.md", "root/assets/2/SKILL.md", "root/assets/3/SKILL.md",
				"root/assets/4/SKILL.md", "root/assets/5/SKILL.md", "root/assets/6/SKILL.md", "root/assets/7/SKILL.md",
			},
			want: []string{"root@root/SKILL.md"},
			diags: []string{
				fill("root/assets", "root", 7, "1/SKILL.md, 2/SKILL.md, 3/SKILL.md, 4/SKILL.md, 5/SKILL.md and 2 more"),
			},
		},
		{
			name:  "a fixture directory given as a root lists its skills, and is not reported",
			files: []string{"root/s/SKILL.md", "root/s/references/example/SKILL.md", "root/s/references/other/SKILL.md"},
			roots: []string{"root/s/references", "root"},
			want: []string{
				"example@root/s/references/example/SKILL.md", "other@root/s/references/other/SKILL.md", "s@root/s/SKILL.md",
			},
		},
		{
			name:  "a sub-skill named like the skill above it is a duplicate; the one above is used",
			files: []string{"root/SKILL.md"},
			named: [][2]string{{"root/skills/copy/SKILL.md", "root"}},
			want:  []string{"root@root/SKILL.md", "root@root/skills/copy/SKILL.md"},
			diags: []string{
				`$TMP/root/skills/copy/SKILL.md:2: error discovery.duplicateName: skill "root" is defined twice in one root: $TMP/root/SKILL.md and $TMP/root/skills/copy/SKILL.md; $TMP/root/SKILL.md is used, as the first in path order (given as separate roots, the earlier root's skill is used and the later one is shadowed)`,
			},
		},
		{
			name:  "MaxDepth bounds the search below a skill",
			files: []string{"root/SKILL.md", "root/a/SKILL.md", "root/a/b/SKILL.md", "root/a/references/r/SKILL.md"},
			opts:  Options{MaxDepth: 1},
			want:  []string{"root@root/SKILL.md", "a@root/a/SKILL.md"},
		},
		{
			name:  "a symlinked skills folder is listed once, under its real path",
			files: []string{"root/skills/a/SKILL.md", "root/skills/b/SKILL.md"},
			links: [][2]string{
				{"root/.agents/skills", "../skills"}, {"root/.claude/skills", "../skills"},
				{"root/.github/skills", "../.agents/skills"},
			},
			want: []string{"a@root/skills/a/SKILL.md", "b@root/skills/b/SKILL.md"},
		},
		{
			name:  "a link reached only through the link is listed under the real path",
			files: []string{"root/node_modules/dep/SKILL.md"},
			links: [][2]string{{"root/.claude/skills/dep", "../../node_modules/dep"}},
			want:  []string{"dep@root/node_modules/dep/SKILL.md"},
		},
		{
			name:  "a link from a skill's references to another skill does not make it a fixture",
			files: []string{"root/s/SKILL.md", "root/t/SKILL.md"},
			links: [][2]string{{"root/s/references/t", "../../t"}, {"root/a-link", "s/references"}},
			want:  []string{"s@root/s/SKILL.md", "t@root/t/SKILL.md"},
		},
		{
			name:  "a link into a skill's fixtures leaves them fixtures",
			files: []string{"root/s/SKILL.md", "root/s/examples/x/SKILL.md"},
			links: [][2]string{{"root/a-link", "s/examples/x"}},
			want:  []string{"s@root/s/SKILL.md"},
			diags: []string{fill("root/s/examples", "root/s", 1, "x/SKILL.md")},
		},
		{
			name:  "symlink loops terminate",
			files: []string{"root/a/SKILL.md", "root/x/one/SKILL.md", "root/z/two/SKILL.md"},
			links: [][2]string{
				{"root/a/back", ".."}, {"root/a/self", "."},
				{"root/x/to-z", "../z"}, {"root/z/to-x", "../x"},
				{"root/p", "q"}, {"root/q", "p"},
			},
			want: []string{"a@root/a/SKILL.md", "one@root/x/one/SKILL.md", "two@root/z/two/SKILL.md"},
			diags: []string{
				"$TMP/root/a/back: warning discovery.symlinkLoop: symlink to $TMP/root leads back to one of its own parent directories; not followed",
				"$TMP/root/a/self: warning discovery.symlinkLoop: symlink to $TMP/root/a leads back to one of its own parent directories; not followed",
				"$TMP/root/p: warning discovery.symlinkLoop: symlink loops (too many levels of links); not followed",
				"$TMP/root/q: warning discovery.symlinkLoop: symlink loops (too many levels of links); not followed",
			},
		},
		{
			name:  "a link leaving the root is skipped, as before",
			files: []string{"root/s/SKILL.md", "elsewhere/e/SKILL.md"},
			links: [][2]string{{"root/s/more", "../../elsewhere"}},
			want:  []string{"s@root/s/SKILL.md"},
			diags: []string{
				"$TMP/root/s/more: warning discovery.escapesRoot: symlink resolves to $TMP/elsewhere, outside the skills root $TMP/root; skipped",
			},
		},
		{
			name:  "a SKILL.md linked from outside its skill is an error, never a silent skip",
			files: []string{"root/shared/s/SKILL.md", "elsewhere/e/SKILL.md"},
			links: [][2]string{{"root/in/SKILL.md", "../shared/s/SKILL.md"}, {"root/out/SKILL.md", "../../elsewhere/e/SKILL.md"}},
			want:  []string{"s@root/shared/s/SKILL.md"},
			diags: []string{
				"$TMP/root/in/SKILL.md: error discovery.linkLeavesSkill: SKILL.md is a symlink to $TMP/root/shared/s/SKILL.md, outside its skill directory $TMP/root/in; the skill is not listed (copy the file into the skill, or link the whole skill directory)",
				"$TMP/root/out/SKILL.md: error discovery.linkLeavesSkill: SKILL.md is a symlink to $TMP/elsewhere/e/SKILL.md, outside its skill directory $TMP/root/out; the skill is not listed (copy the file into the skill, or link the whole skill directory)",
			},
		},
		{
			name:  "a SKILL.md given as the root and linked from outside is an error",
			files: []string{"elsewhere/e/SKILL.md"},
			links: [][2]string{{"root/SKILL.md", "../elsewhere/e/SKILL.md"}},
			roots: []string{"root/SKILL.md"},
			diags: []string{
				"$TMP/root/SKILL.md: error discovery.linkLeavesSkill: SKILL.md is a symlink to $TMP/elsewhere/e/SKILL.md, outside its skill directory $TMP/root; the skill is not listed (copy the file into the skill, or link the whole skill directory)",
			},
		},
		{
			name:  "dangling and looping SKILL.md links are listed, and unreadable",
			links: [][2]string{{"root/d/SKILL.md", "gone.md"}, {"root/l/SKILL.md", "SKILL.md"}},
			want:  []string{"@root/d/SKILL.md", "@root/l/SKILL.md"},
			diags: []string{
				"$TMP/root/d/SKILL.md: error file.unreadable: cannot read: open: no such file or directory",
				"$TMP/root/l/SKILL.md: error file.unreadable: cannot read: open: too many levels of symbolic links",
			},
		},
		{
			name:  "a SKILL.md linked within its skill is the skill's, listed once",
			files: []string{"root/s/sub/SKILL.md"},
			named: [][2]string{{"root/s/src/skill.txt", "s"}},
			links: [][2]string{{"root/s/SKILL.md", "src/skill.txt"}, {"root/s/sub/again/SKILL.md", "../SKILL.md"}},
			want:  []string{"s@root/s/SKILL.md", "sub@root/s/sub/SKILL.md"},
			diags: []string{
				"$TMP/root/s/sub/again/SKILL.md: error discovery.linkLeavesSkill: SKILL.md is a symlink to $TMP/root/s/sub/SKILL.md, outside its skill directory $TMP/root/s/sub/again; the skill is not listed (copy the file into the skill, or link the whole skill directory)",
			},
		},
		{
			name:  "two skill directories linked to one are listed once",
			files: []string{"root/real/SKILL.md"},
			links: [][2]string{{"root/l1", "real"}, {"root/l2", "real"}, {"root/.claude/skills/real", "../../real"}},
			want:  []string{"real@root/real/SKILL.md"},
		},
		{
			name:  "a file linked from outside the root is no finding; a looping one is",
			files: []string{"root/s/SKILL.md", "elsewhere/tool.sh"},
			links: [][2]string{{"root/s/tool.sh", "../../elsewhere/tool.sh"}, {"root/s/gone.sh", "nowhere"}, {"root/s/spin", "spin"}},
			want:  []string{"s@root/s/SKILL.md"},
			diags: []string{
				"$TMP/root/s/spin: warning discovery.symlinkLoop: symlink loops (too many levels of links); not followed",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmp, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range tt.files {
				tt.named = append(tt.named, [2]string{f, filepath.Base(filepath.Dir(f))})
			}
			for _, f := range tt.named {
				writeFile(t, filepath.Join(tmp, filepath.FromSlash(f[0])), minimalSkill(f[1]))
			}
			for _, l := range tt.links {
				p := filepath.Join(tmp, filepath.FromSlash(l[0]))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				symlink(t, filepath.FromSlash(l[1]), p)
			}
			roots := tt.roots
			if roots == nil {
				roots = []string{"root"}
			}
			for i, r := range roots {
				roots[i] = filepath.Join(tmp, filepath.FromSlash(r))
			}
			cat, ds := Discover(roots, tt.opts)
			var got []string
			for _, s := range cat.All() {
				rel, _ := filepath.Rel(tmp, s.File)
				got = append(got, s.Name+"@"+filepath.ToSlash(rel))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("catalog\n got %q\nwant %q", got, tt.want)
			}
			var gotDiags []string
			for _, d := range ds {
				gotDiags = append(gotDiags, strings.ReplaceAll(d.String(), tmp, "$TMP"))
			}
			if !slices.Equal(gotDiags, tt.diags) {
				t.Errorf("diagnostics\n got %s\nwant %s", strings.Join(gotDiags, "\n     "), strings.Join(tt.diags, "\n     "))
			}
		})
	}
}
