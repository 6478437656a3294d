package skill

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/diag"
	"github.com/skillfleet/skillfleet/internal/testutil"
)

// ruleCase is one fixture run through the whole pipeline (discover, parse, validate, lint,
// resolve). fires lists rules that must fire, quiet rules that must not: together they give
// every rule id a firing and a non-firing case (TestRuleCoverage checks that).
type ruleCase struct {
	name  string   // fixture directory under testdata/cases, and golden file name
	roots []string // roots relative to the fixture; default: the fixture itself
	opts  Options
	// setup builds the fixture in a temporary directory instead (for symlinks, huge files
	// and unreadable files, which do not belong in the repository); it returns the roots.
	setup func(t *testing.T, dir string) []string
	// readDir replaces os.ReadDir during discovery, to simulate unreadable directories even
	// when tests run as root.
	readDir func(string) ([]os.DirEntry, error)
	fires   []string
	quiet   []string
}

func ruleCases() []ruleCase {
	all := func() []string {
		var ids []string
		for _, r := range Rules() {
			ids = append(ids, r.ID)
		}
		return ids
	}
	return []ruleCase{
		{name: "valid-minimal", quiet: all()},
		{name: "valid-full", quiet: all()},

		// parse
		{name: "parse-bom-crlf", quiet: []string{RuleFrontmatterMissing, RuleFrontmatterUnterminated, RuleFileEncoding, RuleFrontmatterYAML}},
		{name: "parse-binary", fires: []string{RuleFileBinary}},
		{name: "parse-invalid-utf8", fires: []string{RuleFileEncoding}, quiet: []string{RuleFileBinary}},
		{name: "parse-utf16", fires: []string{RuleFileEncoding}, quiet: []string{RuleFileBinary}},
		{name: "parse-no-frontmatter", fires: []string{RuleFrontmatterMissing}},
		{name: "parse-leading-blank", fires: []string{RuleFrontmatterMissing}},
		{name: "parse-unterminated", fires: []string{RuleFrontmatterUnterminated}, quiet: []string{RuleFrontmatterMissing}},
		{name: "parse-bad-yaml", fires: []string{RuleFrontmatterYAML}},
		{name: "parse-duplicate-key", fires: []string{RuleFrontmatterDuplicateKey}, quiet: []string{RuleFrontmatterYAML}},
		{name: "parse-not-mapping", fires: []string{RuleFrontmatterNotMapping}},
		{name: "parse-scalar", fires: []string{RuleFrontmatterNotMapping}},
		{name: "parse-alias-bomb", fires: []string{RuleFrontmatterAlias}},
		{name: "parse-too-deep", fires: []string{RuleFrontmatterTooDeep}},
		{name: "parse-deep-ok", quiet: []string{RuleFrontmatterTooDeep, RuleFrontmatterYAML, RuleFrontmatterAlias}},
		{name: "parse-empty-frontmatter", fires: []string{RuleNameRequired, RuleDescriptionRequired}, quiet: []string{RuleFrontmatterNotMapping}},
		{name: "file-too-large", setup: setupTooLarge, fires: []string{RuleFileTooLarge, RuleFrontmatterTooLarge}},
		{name: "file-unreadable", setup: setupUnreadable, fires: []string{RuleFileUnreadable}},

		// name
		{name: "name-missing", fires: []string{RuleNameRequired}},
		{name: "name-empty", fires: []string{RuleNameRequired}, quiet: []string{RuleNameFormat}},
		{name: "name-type", fires: []string{RuleNameType}, quiet: []string{RuleNameRequired, RuleNameFormat}},
		{name: strings.Repeat("a", 65), fires: []string{RuleNameMaxLength}, quiet: []string{RuleNameFormat, RuleNameMatchesDirectory}},
		{name: strings.Repeat("b", 64), quiet: []string{RuleNameMaxLength, RuleNameFormat, RuleNameMatchesDirectory}},
		{name: "Code-Review", fires: []string{RuleNameFormat}, quiet: []string{RuleNameMatchesDirectory}},
		{name: "my_skill", fires: []string{RuleNameFormat}},
		{name: "-x", fires: []string{RuleNameFormat}},
		{name: "a--b", fires: []string{RuleNameFormat}},
		{name: "café", quiet: []string{RuleNameFormat, RuleNameMatchesDirectory}},
		{name: "技能", quiet: []string{RuleNameFormat, RuleNameMatchesDirectory}},
		{name: "cafe", quiet: []string{RuleNameFormat, RuleNameMatchesDirectory}}, // fullwidth name, NFKC-equal
		{name: "name-mismatch", fires: []string{RuleNameMatchesDirectory}, quiet: []string{RuleNameFormat}},

		// description
		{name: "description-missing", fires: []string{RuleDescriptionRequired}},
		{name: "description-blank", fires: []string{RuleDescriptionRequired}},
		{name: "description-type", fires: []string{RuleDescriptionType}, quiet: []string{RuleDescriptionRequired}},
		{name: "description-too-long", fires: []string{RuleDescriptionMaxLength, RuleLintDescriptionQuality}},
		{name: "description-1024-multibyte", quiet: []string{RuleDescriptionMaxLength, RuleLintDescriptionQuality}},
		{name: "description-folded", quiet: []string{RuleDescriptionType, RuleLintDescriptionQuality}},

		// other spec fields
		{name: "compatibility-type", fires: []string{RuleCompatibilityType}},
		{name: "compatibility-too-long", fires: []string{RuleCompatibilityMaxLength}},
		{name: "compatibility-500", quiet: []string{RuleCompatibilityMaxLength, RuleCompatibilityType, RuleCompatibilityEmpty}},
		{name: "compatibility-empty", fires: []string{RuleCompatibilityEmpty}, quiet: []string{RuleCompatibilityMaxLength}},
		{name: "metadata-type", fires: []string{RuleMetadataType}},
		{name: "metadata-unquoted-version", fires: []string{RuleMetadataValueType}, quiet: []string{RuleMetadataType}},
		{name: "metadata-quoted", quiet: []string{RuleMetadataValueType, RuleMetadataType}},
		{name: "license-type", fires: []string{RuleLicenseType}},
		{name: "allowed-tools-type", fires: []string{RuleAllowedToolsType}},

		// unknown fields
		{name: "unknown-field", fires: []string{RuleFrontmatterUnknownField}},
		{name: "extension-fields", quiet: []string{RuleFrontmatterUnknownField}},
		{name: "strict-fields", fires: []string{RuleFrontmatterUnknownField}, opts: Options{Strict: true}},
		{name: "strict-fields", quiet: []string{RuleFrontmatterUnknownField, RuleTestCases}},

		// RFC field shapes
		{name: "requires-type", fires: []string{RuleRequiresType}},
		{name: "requires-not-list", fires: []string{RuleRequiresType}},
		{name: "requires-duplicate", fires: []string{RuleRequiresDuplicate}, quiet: []string{RuleRequiresType, RuleRequiresMissing}},
		{name: "test-type", fires: []string{RuleTestType}},
		{name: "test-cases-missing", fires: []string{RuleTestCases}},
		{name: "test-cases-escape", fires: []string{RuleTestCases}},
		{name: "test-cases-absolute", fires: []string{RuleTestCases}},
		{name: "test-cases-nofile", fires: []string{RuleTestCases}},
		{name: "test-config-bad", fires: []string{RuleTestConfig, RuleTestType}, quiet: []string{RuleTestCases}},
		{name: "test-config-range", fires: []string{RuleTestConfig}},
		{name: "test-ok", quiet: []string{RuleTestType, RuleTestCases, RuleTestConfig}},

		// resolution
		{name: "requires-missing", fires: []string{RuleRequiresMissing}},
		{name: "requires-missing-force", opts: Options{Force: true}, fires: []string{RuleRequiresMissing}},
		{name: "requires-version", fires: []string{RuleRequiresVersion}},
		{name: "requires-cycle", fires: []string{RuleRequiresCycle}},
		{name: "requires-acyclic", quiet: []string{RuleRequiresCycle, RuleRequiresMissing, RuleRequiresVersion, RuleRequiresSelf}},
		{name: "requires-invalid-version", fires: []string{RuleRequiresInvalidVersion}},
		{name: "requires-self", fires: []string{RuleRequiresSelf}, quiet: []string{RuleRequiresCycle}},

		// discovery
		{name: "discovery-duplicate", fires: []string{RuleDiscoveryDuplicateName}, quiet: []string{RuleDiscoveryShadowed}},
		{name: "discovery-shadowed", roots: []string{"first", "second"}, fires: []string{RuleDiscoveryShadowed}, quiet: []string{RuleDiscoveryDuplicateName}},
		{name: "discovery-layout", fires: []string{RuleDiscoveryNested}, quiet: []string{RuleDiscoveryDuplicateName, RuleDiscoveryUnreadable, RuleDiscoveryRoot, RuleDiscoveryEmpty}},
		{name: "discovery-root-missing", roots: []string{"does-not-exist"}, fires: []string{RuleDiscoveryRoot}, quiet: []string{RuleDiscoveryEmpty}},
		{name: "discovery-empty", setup: setupEmptyRoot, fires: []string{RuleDiscoveryEmpty}},
		{name: "discovery-symlinks", setup: setupSymlinks, fires: []string{RuleDiscoverySymlinkLoop, RuleDiscoveryEscapesRoot, RuleDiscoveryLinkLeavesSkill}},
		{name: "discovery-symlinks-inside", setup: setupSymlinksInside, quiet: []string{RuleDiscoverySymlinkLoop, RuleDiscoveryEscapesRoot, RuleDiscoveryDuplicateName, RuleDiscoveryNested, RuleDiscoveryLinkLeavesSkill}},
		{name: "discovery-unreadable", roots: []string{"../discovery-layout"}, readDir: failReadDir("deep"), fires: []string{RuleDiscoveryUnreadable}},

		// lint
		{name: "lint-context-lines", fires: []string{RuleLintContextBudget}, quiet: []string{RuleLintProgressive, RuleLintGotchasPresent}},
		{name: "lint-context-ok", quiet: []string{RuleLintContextBudget}},
		{name: "lint-context-tokens", fires: []string{RuleLintContextBudget}, quiet: []string{RuleLintProgressive}},
		{name: "lint-description", fires: []string{RuleLintDescriptionQuality}},
		{name: "lint-description-phrasings", quiet: []string{RuleLintDescriptionQuality}},
		{name: "lint-generic", fires: []string{RuleLintNoGenericInstruction}},
		{name: "lint-generic-quoted", fires: []string{RuleLintNoGenericInstruction}},
		// Over 500 lines with nothing split out: progressive-disclosure, which replaces
		// context-budget; with references, context-budget alone.
		{name: "lint-progressive", fires: []string{RuleLintProgressive}, quiet: []string{RuleLintContextBudget}},
		{name: "lint-progressive-500", quiet: []string{RuleLintProgressive, RuleLintContextBudget}},
		{name: "lint-progressive-refs", fires: []string{RuleLintContextBudget}, quiet: []string{RuleLintProgressive}},
		{name: "lint-progressive-links", fires: []string{RuleLintContextBudget}, quiet: []string{RuleLintProgressive, RuleReferencesBroken}},
		{name: "lint-menus", fires: []string{RuleLintDefaultsOverMenus}},
		{name: "lint-menus-rules", fires: []string{RuleLintDefaultsOverMenus}},
		{name: "lint-gotchas", fires: []string{RuleLintGotchasPresent}},
		{name: "lint-gotchas-ok", quiet: []string{RuleLintGotchasPresent, RuleLintDefaultsOverMenus, RuleLintNoGenericInstruction}},
		{name: "lint-references", fires: []string{RuleReferencesBroken, RuleReferencesOutside}},
		{name: "lint-references-footnotes", fires: []string{RuleReferencesBroken}},
		{name: "lint-references-examples", fires: []string{RuleReferencesBroken}},
		{name: "lint-references-plugins", fires: []string{RuleReferencesBroken}},
		{name: "lint-suppress", fires: []string{RuleLintNoGenericInstruction, RuleLintDefaultsOverMenus, RuleReferencesBroken},
			quiet: []string{RuleLintDescriptionQuality, RuleLintSuppression}},
		{name: "lint-suppress-bad", fires: []string{RuleLintSuppression, RuleNameMatchesDirectory, RuleLintNoGenericInstruction, RuleReferencesBroken}},
	}
}

// runPipeline runs everything the CLI runs on roots and returns the sorted diagnostics.
func runPipeline(roots []string, opts Options, readDir func(string) ([]os.DirEntry, error)) diag.Diagnostics {
	cat, ds := discover(roots, opts, readDir)
	ds = append(ds, cat.EmptyRoots(ds)...)
	for _, s := range cat.All() {
		ds = append(ds, Validate(s, opts)...)
		ds = append(ds, Lint(s, OptInRules()...)...)
	}
	_, rds := Resolve(cat, opts)
	ds = append(ds, rds...)
	ds.Sort()
	return ds
}

func TestRules(t *testing.T) {
	for _, tc := range ruleCases() {
		golden := tc.name
		if tc.opts.Strict {
			golden += ".strict"
		}
		if tc.opts.Force {
			golden += ".force"
		}
		t.Run(golden, func(t *testing.T) {
			var roots []string
			tmp := ""
			if tc.setup != nil {
				tmp = t.TempDir()
				roots = tc.setup(t, tmp)
			} else {
				dir := filepath.Join("testdata", "cases", tc.name)
				if tc.roots == nil {
					roots = []string{dir}
				}
				for _, r := range tc.roots {
					roots = append(roots, filepath.Join(dir, r))
				}
			}
			ds := runPipeline(roots, tc.opts, tc.readDir)
			fired := map[string]bool{}
			for _, d := range ds {
				fired[d.Rule] = true
			}
			for _, r := range tc.fires {
				if !fired[r] {
					t.Errorf("rule %s did not fire", r)
				}
			}
			for _, r := range tc.quiet {
				if fired[r] {
					t.Errorf("rule %s fired", r)
				}
			}
			var b strings.Builder
			for _, d := range ds {
				b.WriteString(d.String())
				b.WriteByte('\n')
			}
			got := b.String()
			if tmp != "" {
				got = strings.ReplaceAll(got, tmp, "$TMP")
			}
			checkGolden(t, filepath.Join("testdata", "golden", golden+".golden"), got)
		})
	}
}

// TestRuleCoverage checks that every rule id has a case where it fires and one where it does
// not.
func TestRuleCoverage(t *testing.T) {
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range ruleCases() {
		for _, r := range tc.fires {
			fires[r] = true
		}
		for _, r := range tc.quiet {
			quiet[r] = true
		}
	}
	for _, r := range Rules() {
		if !fires[r.ID] {
			t.Errorf("rule %s has no firing case", r.ID)
		}
		if !quiet[r.ID] {
			t.Errorf("rule %s has no non-firing case", r.ID)
		}
	}
	ids := map[string]bool{}
	for _, r := range Rules() {
		if ids[r.ID] {
			t.Errorf("rule %s listed twice", r.ID)
		}
		ids[r.ID] = true
	}
	for r := range fires {
		if !ids[r] {
			t.Errorf("case refers to unknown rule %s", r)
		}
	}
}

func checkGolden(t *testing.T, path, got string) {
	t.Helper()
	testutil.Golden(t, path, []byte(got))
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("symlinks unavailable: %v", err)
	}
}

func minimalSkill(name string) string {
	return "---\nname: " + name + "\ndescription: A fixture. Use when testing.\n---\n\nRun `make`.\n"
}

// setupTooLarge writes a SKILL.md over MaxFileSize and one whose frontmatter is over
// MaxFrontmatterSize.
func setupTooLarge(t *testing.T, dir string) []string {
	writeFile(t, filepath.Join(dir, "huge", FileName), minimalSkill("huge")+strings.Repeat("x", MaxFileSize))
	big := "---\nname: big-frontmatter\ndescription: A fixture. Use when testing.\nmetadata:\n  blob: \"" +
		strings.Repeat("y", MaxFrontmatterSize) + "\"\n---\nbody\n"
	writeFile(t, filepath.Join(dir, "big-frontmatter", FileName), big)
	return []string{dir}
}

// setupUnreadable makes SKILL.md a dangling symlink and a directory's SKILL.md a FIFO.
func setupUnreadable(t *testing.T, dir string) []string {
	if err := os.MkdirAll(filepath.Join(dir, "dangling"), 0o755); err != nil {
		t.Fatal(err)
	}
	symlink(t, "nowhere.md", filepath.Join(dir, "dangling", FileName))
	if err := os.MkdirAll(filepath.Join(dir, "fifo"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := mkfifo(filepath.Join(dir, "fifo", FileName)); err != nil {
		t.Logf("no FIFO: %v", err)
	}
	return []string{dir}
}

// setupSymlinks builds a root with a link back to an ancestor, a self-referencing link chain,
// a link to a skill outside the root, and a SKILL.md linked from outside its skill.
func setupSymlinks(t *testing.T, dir string) []string {
	root := filepath.Join(dir, "root")
	writeFile(t, filepath.Join(root, "team", "inside", FileName), minimalSkill("inside"))
	writeFile(t, filepath.Join(dir, "outside", "escaped", FileName), minimalSkill("escaped"))
	symlink(t, "..", filepath.Join(root, "team", "loop"))
	symlink(t, "chain-b", filepath.Join(root, "chain-a"))
	symlink(t, "chain-a", filepath.Join(root, "chain-b"))
	symlink(t, filepath.Join(dir, "outside"), filepath.Join(root, "external"))
	if err := os.MkdirAll(filepath.Join(root, "linked"), 0o755); err != nil {
		t.Fatal(err)
	}
	symlink(t, filepath.Join(dir, "outside", "escaped", FileName), filepath.Join(root, "linked", FileName))
	return []string{root}
}

// setupSymlinksInside builds the common layout where .claude/skills links to ../skills, plus
// a link to a skill elsewhere in the root: each skill is found once.
func setupSymlinksInside(t *testing.T, dir string) []string {
	root := filepath.Join(dir, "project")
	writeFile(t, filepath.Join(root, "skills", "one", FileName), minimalSkill("one"))
	writeFile(t, filepath.Join(root, "vendor", "two", FileName), minimalSkill("two"))
	if err := os.MkdirAll(filepath.Join(root, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	symlink(t, "../skills", filepath.Join(root, ".claude", "skills"))
	symlink(t, "../vendor/two", filepath.Join(root, "skills", "two"))
	return []string{root}
}

// failReadDir fails to list directories named name.
func failReadDir(name string) func(string) ([]os.DirEntry, error) {
	return func(dir string) ([]os.DirEntry, error) {
		if filepath.Base(dir) == name {
			return nil, &os.PathError{Op: "open", Path: dir, Err: os.ErrPermission}
		}
		return os.ReadDir(dir)
	}
}

func TestUnreadableDirectoryReal(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("running as root: permissions do not stop root from listing a directory (TestRules/discovery-unreadable simulates it)")
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "ok", FileName), minimalSkill("ok"))
	locked := filepath.Join(dir, "locked")
	writeFile(t, filepath.Join(locked, "hidden", FileName), minimalSkill("hidden"))
	if err := os.Chmod(locked, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(locked, 0o755) })
	cat, ds := Discover([]string{dir}, Options{})
	if len(cat.Skills()) != 1 || !slices.ContainsFunc(ds, func(d diag.Diagnostic) bool { return d.Rule == RuleDiscoveryUnreadable }) {
		t.Errorf("want 1 skill and discovery.unreadable, got %d skills, %v", len(cat.Skills()), ds)
	}
}

// setupEmptyRoot makes a root with files but no SKILL.md at any depth.
func setupEmptyRoot(t *testing.T, tmp string) []string {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(tmp, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "docs", "README.md"), []byte("no skill here\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return []string{tmp}
}
