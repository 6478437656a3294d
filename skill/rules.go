package skill

import "github.com/skillfleet/skillfleet/diag"

// Rule ids. They are part of the user-facing contract (users filter and suppress by them), so
// they never change meaning. Validation ids follow the table of the agentskills specification;
// the lint ids follow its lint table; the rest are skillfleet's own.
const (
	// Reading the file.
	RuleFileUnreadable = "file.unreadable"
	RuleFileTooLarge   = "file.tooLarge"
	RuleFileBinary     = "file.binary"
	RuleFileEncoding   = "file.encoding"

	// Splitting and decoding the frontmatter.
	RuleFrontmatterMissing      = "frontmatter.missing"
	RuleFrontmatterUnterminated = "frontmatter.unterminated"
	RuleFrontmatterYAML         = "frontmatter.yaml"
	RuleFrontmatterDuplicateKey = "frontmatter.duplicateKey"
	RuleFrontmatterNotMapping   = "frontmatter.notMapping"
	RuleFrontmatterAlias        = "frontmatter.alias"
	RuleFrontmatterTooLarge     = "frontmatter.tooLarge"
	RuleFrontmatterTooDeep      = "frontmatter.tooDeep"
	RuleFrontmatterUnknownField = "frontmatter.unknownField"

	// The specification's fields.
	RuleNameRequired             = "name.required"
	RuleNameType                 = "name.type"
	RuleNameMaxLength            = "name.maxLength"
	RuleNameFormat               = "name.format"
	RuleNameMatchesDirectory     = "name.matchesDirectory"
	RuleDescriptionRequired      = "description.required"
	RuleDescriptionType          = "description.type"
	RuleDescriptionMaxLength     = "description.maxLength"
	RuleCompatibilityType        = "compatibility.type"
	RuleCompatibilityMaxLength   = "compatibility.maxLength"
	RuleCompatibilityEmpty       = "compatibility.empty"
	RuleMetadataType             = "metadata.type"
	RuleMetadataValueType        = "metadata.valueType"
	RuleLicenseType              = "license.type"
	RuleAllowedToolsType         = "allowed-tools.type"
	RuleRequiresType             = "requires.type"
	RuleRequiresDuplicate        = "requires.duplicate"
	RuleTestType                 = "test.type"
	RuleTestCases                = "test.cases"
	RuleTestConfig               = "test.config"
	RuleRequiresMissing          = "requires.missing"
	RuleRequiresVersion          = "requires.version"
	RuleRequiresCycle            = "requires.cycle"
	RuleRequiresInvalidVersion   = "requires.invalidVersion"
	RuleRequiresSelf             = "requires.self"
	RuleDiscoveryRoot            = "discovery.root"
	RuleDiscoveryEmpty           = "discovery.empty"
	RuleDiscoveryShadowed        = "discovery.shadowed"
	RuleDiscoveryDuplicateName   = "discovery.duplicateName"
	RuleDiscoverySymlinkLoop     = "discovery.symlinkLoop"
	RuleDiscoveryEscapesRoot     = "discovery.escapesRoot"
	RuleDiscoveryUnreadable      = "discovery.unreadable"
	RuleDiscoveryNested          = "discovery.nested"
	RuleDiscoveryLinkLeavesSkill = "discovery.linkLeavesSkill"
	RuleLintContextBudget        = "context-budget"
	RuleLintDescriptionQuality   = "description-quality"
	RuleLintNoGenericInstruction = "no-generic-instructions"
	RuleLintProgressive          = "progressive-disclosure"
	RuleLintDefaultsOverMenus    = "defaults-over-menus"
	RuleLintGotchasPresent       = "gotchas-present"
	RuleReferencesBroken         = "references.broken"
	RuleReferencesOutside        = "references.outside"
	RuleLintSuppression          = "lint.suppression"
)

// RuleInfo describes one rule for documentation and for tools that list the rules.
type RuleInfo struct {
	ID       string
	Severity diag.Severity // the usual severity; a few rules vary with Options (see Summary)
	Stage    string        // parse, validate, resolve, discover or lint
	Summary  string
}

// Rules lists every rule id this package can emit.
func Rules() []RuleInfo {
	e, w, i := diag.SeverityError, diag.SeverityWarning, diag.SeverityInfo
	return []RuleInfo{
		{RuleFileUnreadable, e, "parse", "SKILL.md cannot be opened or read, or is not a regular file"},
		{RuleFileTooLarge, e, "parse", "SKILL.md is larger than MaxFileSize"},
		{RuleFileBinary, e, "parse", "SKILL.md contains NUL bytes (binary or UTF-16)"},
		{RuleFileEncoding, e, "parse", "SKILL.md is not valid UTF-8"},
		{RuleFrontmatterMissing, e, "parse", "the file does not begin with a --- line"},
		{RuleFrontmatterUnterminated, e, "parse", "no closing --- line"},
		{RuleFrontmatterYAML, e, "parse", "the frontmatter is not valid YAML"},
		{RuleFrontmatterDuplicateKey, e, "parse", "a mapping repeats a key"},
		{RuleFrontmatterNotMapping, e, "parse", "the frontmatter is not a YAML mapping"},
		{RuleFrontmatterAlias, e, "parse", "YAML anchors and aliases are not allowed (guards against alias bombs; the reference validator rejects them too)"},
		{RuleFrontmatterTooLarge, e, "parse", "the frontmatter is larger than MaxFrontmatterSize"},
		{RuleFrontmatterTooDeep, e, "parse", "the frontmatter nests deeper than MaxYAMLDepth"},
		{RuleFrontmatterUnknownField, w, "validate", "a top-level field outside the specification (an error with Options.Strict)"},
		{RuleNameRequired, e, "validate", "name is missing or empty"},
		{RuleNameType, e, "validate", "name is not a string"},
		{RuleNameMaxLength, e, "validate", "name is longer than 64 characters"},
		{RuleNameFormat, e, "validate", "name is not lowercase letters, digits and single inner hyphens"},
		{RuleNameMatchesDirectory, e, "validate", "name differs from the directory name"},
		{RuleDescriptionRequired, e, "validate", "description is missing, empty or only whitespace"},
		{RuleDescriptionType, e, "validate", "description is not a string"},
		{RuleDescriptionMaxLength, e, "validate", "description is longer than 1024 characters"},
		{RuleCompatibilityType, e, "validate", "compatibility is not a string"},
		{RuleCompatibilityMaxLength, e, "validate", "compatibility is longer than 500 characters"},
		{RuleCompatibilityEmpty, e, "validate", "compatibility is present but empty (the specification asks for 1-500 characters)"},
		{RuleMetadataType, e, "validate", "metadata is not a mapping, or has a non-scalar key"},
		{RuleMetadataValueType, e, "validate", "a metadata value is not a string"},
		{RuleLicenseType, e, "validate", "license is not a string"},
		{RuleAllowedToolsType, e, "validate", "allowed-tools is not a string"},
		{RuleRequiresType, e, "validate", "requires is not a list of {skill, version} mappings"},
		{RuleRequiresDuplicate, w, "validate", "requires names the same skill twice"},
		{RuleTestType, e, "validate", "test is not a mapping of cases and config"},
		{RuleTestCases, e, "validate", "test.cases is missing, not a relative path inside the skill, or names no file"},
		{RuleTestConfig, e, "validate", "test.config has a bad timeout or parallel value or an unknown key"},
		{RuleRequiresMissing, e, "resolve", "a required skill is not in the skills root (a warning with Options.Force)"},
		{RuleRequiresVersion, e, "resolve", "a required skill's version is lower than the minimum, or it has no version"},
		{RuleRequiresCycle, e, "resolve", "requires forms a cycle"},
		{RuleRequiresInvalidVersion, e, "resolve", "a version is not SemVer (a warning for a metadata.version nobody constrains)"},
		{RuleRequiresSelf, e, "resolve", "a skill requires itself"},
		{RuleDiscoveryRoot, e, "discover", "a root does not exist or is not a directory"},
		{RuleDiscoveryEmpty, e, "discover", "a path given to validate, lint or deps holds no skill at any depth"},
		{RuleDiscoveryShadowed, i, "discover", "a later root's skill is hidden by an earlier root's skill of the same name"},
		{RuleDiscoveryDuplicateName, e, "discover", "two skills of one name inside one root"},
		{RuleDiscoverySymlinkLoop, w, "discover", "a symlinked directory leads back to one of its ancestors"},
		{RuleDiscoveryEscapesRoot, w, "discover", "a symlink resolves outside the root; it is skipped"},
		{RuleDiscoveryUnreadable, w, "discover", "a directory cannot be listed; it is skipped"},
		{RuleDiscoveryLinkLeavesSkill, e, "discover", "a SKILL.md is a symlink to a file outside its skill directory; the directory is not listed as a skill"},
		{RuleDiscoveryNested, w, "discover", "SKILL.md files below a skill's references, assets, scripts, examples, templates or test fixtures: named, counted and not listed as skills"},
		{RuleLintContextBudget, w, "lint", "body over 500 lines or about 5000 tokens"},
		{RuleLintDescriptionQuality, w, "lint", `opt-in: description has no "Use when"-style trigger clause`},
		{RuleLintNoGenericInstruction, w, "lint", `opt-in: vague instructions such as "follow best practices"`},
		{RuleLintProgressive, w, "lint", "a body over 500 lines with no references/ directory and no links to documents in subdirectories (reported instead of context-budget)"},
		{RuleLintDefaultsOverMenus, w, "lint", "opt-in: an instruction offers equal alternatives without a default"},
		{RuleLintGotchasPresent, i, "lint", "opt-in: a body over 50 lines has no Gotchas-style section (Gotchas, Pitfalls, Troubleshooting, Common mistakes, Anti-patterns, Constraints, Critical rules, ...) and no list of what not to do, unless the skill is about troubleshooting"},
		{RuleReferencesBroken, w, "lint", "a link, or a path in prose, inline code or a command, names a file that exists neither in the skill directory nor above it (a near miss is suggested), or is absolute"},
		{RuleReferencesOutside, i, "lint", "a relative link or path in the body resolves only outside the skill directory (a sibling skill, a shared directory above it): whether it does where the skill is installed the linter cannot know"},
		{RuleLintSuppression, w, "lint", "a skillfleet-lint-disable comment names an unknown rule, a rule that is not a lint rule, or no rule"},
	}
}
