// Package skill is the SKILL.md model: it parses a skill file, validates it against the Agent
// Skills specification and the "Skill Dependencies and Testing" RFC (requires, test), lints it
// against best practices, discovers skills below layered roots, and resolves requires into a
// dependency graph.
//
// Every finding is a diag.Diagnostic naming file, line and a stable rule id (Rules lists them all);
// bad input never panics, hangs or errors out: it becomes a diagnostic.
//
// # Stages
//
//   - Parse / ParseFile: encoding (UTF-8, no NUL, at most MaxFileSize), the frontmatter split
//     (a first line ---, closed by the next line that is exactly ---; trailing blanks, CRLF and
//     a BOM tolerated), YAML syntax, duplicate keys, anchors/aliases (rejected outright, as the
//     reference validator's strictyaml does, so alias bombs cannot expand), nesting depth and
//     frontmatter size.
//   - Validate: the specification's field rules, the RFC's field shapes, unknown fields.
//   - Lint: best practices; warnings and info only.
//   - Discover: finds and parses skills on a bounded worker pool.
//   - Resolve: requires presence, SemVer minimums, self-references and cycles.
//
// # Decisions where the specification is silent
//
//   - An empty or whitespace-only name or description is name.required / description.required
//     ("must not be empty"); a present-but-empty compatibility is compatibility.empty.
//   - Lengths count runes; the description is measured after trimming surrounding whitespace
//     (a folded block's final newline does not count).
//   - A YAML null (`license:` with nothing after it) means absent for license, allowed-tools,
//     metadata and requires; it is compatibility.empty for compatibility, name.required and
//     description.required for those, test.type for test, and metadata.valueType for a
//     metadata value.
//   - Unquoted non-string metadata values (version: 1.0, a boolean) are errors that say to
//     quote the value; the value is still kept, as written, in Skill.Metadata. An unquoted
//     date is a string, as YAML 1.2 (the specification's and skills-ref's) reads it.
//   - requires entries and their versions must be strings too (version: 1.2 is an error); an
//     entry with a wrong-typed value is dropped, one with an unknown extra key is reported and
//     kept; a repeated skill is a requires.duplicate warning.
//   - test.config.runs can only be auto, with test.config.max_runs (1 to MaxTestRuns),
//     confidence, delta, alpha and beta in (0, 1]: the defaults of the skill's cases.
//   - test.config.timeout is a positive number of seconds, at most MaxTestTimeout; "30s" is an
//     error that says to write 30. test.cases must be relative, stay inside the skill and name
//     an existing file.
//   - A dependency without metadata.version does not satisfy a minimum version
//     (requires.version). A non-SemVer metadata.version is an error where a minimum depends on
//     it and a warning otherwise. "1.0" and "1" are 1.0.0 (Masterminds/semver's lenient parse).
//   - A skill directory is searched like any other: skills below it are skills (a repository
//     with a SKILL.md at its root lists its skills). SKILL.md files below a skill's resource
//     directories (references, assets, scripts, examples, templates, test fixtures) are
//     examples, not skills: reported (discovery.nested) with their count, never skipped
//     silently. Symlinked directories are followed inside the root after what is reachable
//     without links; each real directory is listed once, under its real path.
//   - Options.Strict changes only which top-level fields are accepted; requires and test are
//     still type-checked and resolved.
//
// # Lint heuristics
//
// Tokens are estimated as characters/4. The trigger phrases of description-quality, the vague
// phrases of no-generic-instructions and the defaults-over-menus heuristic are documented next
// to their regular expressions in lint.go; all skip fenced code blocks and inline code.
// references.broken checks every relative Markdown link (inline, image, reference definition)
// and, to avoid flagging paths of the user's project, inline-code or prose paths only when they
// start in scripts/, references/ or assets/ or in a directory the skill has. Footnotes ([^1]
// and their definitions), plugin slash commands (/plugin:skill) and inline-code paths shown as
// examples ("e.g. `src/app/main.py`", "such as", "for example", "like") are not references.
//
// A body over 500 lines with nothing split out is progressive-disclosure, reported instead of
// context-budget: one finding per oversized body, naming the fix that applies.
//
// # Suppression
//
// A body silences lint rules for its next line (<!-- skillfleet-lint-disable-next-line RULE -->)
// or for the file (<!-- skillfleet-lint-disable RULE -->); see suppress.go. Only lint rules can
// be silenced, and a comment naming anything else is a lint.suppression warning.
package skill
