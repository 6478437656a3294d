// Package assert evaluates the deterministic assertions of a case against what a job produced.
// It is pure: no I/O, no clock, no package-level state; every function is safe for concurrent use.
//
// # Flow
//
// The planner calls [Compile] on every assertion it reads, so that a bad pattern or an empty
// substring becomes a plan error (the caller adds file, line and rule id). The worker calls
// [EvaluateAll] with the job's [Observation]; [Evaluate] does one assertion. semantic_match is
// represented here but never decided here: Evaluate returns [ErrNeedsJudge] for it and EvaluateAll
// lists it as pending, with a placeholder Result that is errored (never passed) until the judge's
// result replaces it. Evaluate never returns a passing Result together with an error.
//
// # Substring tests
//
// Prompt cases (RFC: output_contains, output_not_contains) are case-insensitive, as the RFC says.
// Command cases (seed 003: stdout_contains, stderr_contains, not_contains) are case-sensitive:
// they check deterministic scripts whose authors know the exact bytes, the seed does not ask for
// case-insensitivity, and "ERROR" in a not-contains list should not trip over "no errors". When a
// case-sensitive test fails or only narrowly passes because the text appears with different case,
// the message says so.
//
// Both sides are put in Unicode Normalization Form C first, so a composed "é" (U+00E9) and a
// decomposed "e" + U+0301 are the same text in both modes. Case-insensitive tests then apply full
// Unicode case folding (golang.org/x/text/cases.Fold, CaseFolding.txt C+F mappings; not Go's
// simple folding in strings.EqualFold) and normalise again, so:
//
//   - "STRASSE" matches "straße" and "ẞ" (full folding maps ß and ẞ to "ss");
//   - Σ, σ and final ς are the same letter ("ΟΔΟΣ" matches "οδος");
//   - folding is language-neutral: Turkish dotted İ folds to "i" + U+0307 and dotless ı stays ı, so
//     "istanbul" matches "ISTANBUL" but neither "İSTANBUL" nor "ıstanbul";
//   - a match may not end in the middle of a combining sequence: "e" is not found in "é" in any
//     form, nor "q" in "q" + U+0301 (a following rune with a non-zero canonical combining class
//     rejects the match).
//
// Bytes that are not valid UTF-8 are compared as U+FFFD. The Actual excerpt is cut from the
// original text around the match (positions are mapped back through normalisation and folding).
// not_contains checks stdout and stderr separately, so a match never spans the two streams.
// EvaluateAll prepares (normalises, folds) each stream once for all the assertions of a case.
//
// # Regular expressions
//
// output_matches uses Go's RE2 syntax on the raw output, as written: case-sensitive unless the
// pattern says (?i), "^" and "$" anchor the whole output unless it says (?m), "." does not match a
// newline unless it says (?s). Each pattern is its own assertion. An empty pattern is a compile
// error; a pattern that matches the empty string (".*", "^") passes on any output, even empty.
//
// Matching runs in the worker, outside the sandbox, and costs time in proportion to the output's
// length times the pattern's compiled size, so Compile refuses a pattern over MaxPatternBytes or
// MaxPatternInsts (and a substring over MaxSubstringBytes) with ErrTooLarge, and
// EvaluateAllContext stops a match still running at the job's deadline and errors it.
//
// # Trajectory assertions
//
// A prompt case may also check what its agent did, from [Observation.Trajectory] (the worker
// fills it from the agent's transcript; nil errors these assertions):
//
//   - skill_activated, skill_not_activated: a skill's SKILL.md entered (or never entered) the
//     model's context. Names compare exactly.
//   - tool_called: the calls of a tool whose JSON arguments match ArgsMatch (RE2, with
//     output_matches's size limits; "" counts every call) number at least Min and, with MaxSet,
//     at most Max. New gives Min 1 (the suite reader gives 0 when a case file says max: 0 and no min). Min 0 without a max can never fail and is a compile error;
//     Max 0 with a pattern says "never called like this". The arguments are the agent's record,
//     which the built-in agent clips at 4 KiB.
//   - tool_not_called: no call of the tool at all.
//   - tool_order: the first call of each named tool comes before the first call of the next;
//     a tool never called fails, naming it.
//   - max_turns, max_tool_calls, max_tokens: the run took at most N model turns, tool calls, or
//     prompt+completion tokens (the agent's, not the judge's). Exceeding one fails the case; a
//     limit of 0 turns or tokens can never pass and is a compile error.
//
// Every call counts, refused and failed ones too: the model chose to make it. When the calls
// or activations are not known to be complete ([Trajectory.ToolsSeen] or
// [Trajectory.ActivationsSeen] false: an agent CLI whose conversation the gateway could not
// follow whole), the assertions that read them are errored rather than decided on a partial
// list: "no call was seen" is not "no call was made". Messages name the counts and the calls per tool, e.g.
// `tool "bash" was called 0 times whose arguments match /rm -rf/; want at least 1 time;
// calls: read_file×3, bash×1`.
//
// # File assertions
//
// A case may check the files its job left behind, from [Observation.Files] (the worker gathers
// the paths the case names after the agent or the command ended; nil errors these assertions).
// A prompt case's paths are relative to the agent's work directory, a command case's to the
// command's directory; Compile refuses an absolute path or one that leaves the directory
// (ErrPath), and cleans the rest.
//
//   - file_exists, file_not_exists: something (a file, a directory) is, or is not, at the path.
//   - file_contains: the file holds the text, case-sensitively (a file's bytes are exact; use
//     file_matches with (?i) to ignore case).
//   - file_matches: RE2 on the file's content, with output_matches's syntax and limits.
//   - file_json: the file is one JSON document that the expected one matches partially,
//     exactly like stdout_json.
//
// Never a false pass: a path whose state the worker could not establish ([FileUnknown]: a
// directory that cannot be searched, a symbolic link that leads out of the directory, a file
// that cannot be read) errors every assertion on it, file_not_exists included. The worker
// reads at most MaxFileReadBytes of a file; on a file read in part only a file_contains that
// finds its text passes, and the other content assertions are errored, saying so.
//
// [Type.Form] says how a case file writes each kind's value and [PromptTypes] which kinds a
// prompt case may use, so the case reader decodes kinds by form and a new kind in an existing
// form changes this package only.
//
// # stdout_json
//
// Stdout must be exactly one JSON document, surrounding whitespace (and a UTF-8 byte order mark)
// allowed; anything else fails with the parse error and an excerpt around its offset. The
// expected document is a deep partial match:
//
//   - objects: every key given must be present with a matching value; extra keys are fine.
//     Expected {"user": {"name": "ann"}} matches {"user": {"name": "ann", "id": 7}, "ok": true}.
//   - arrays: positional, with the same length; each element is matched partially.
//     Expected [{"id": 1}, {"id": 2}] matches [{"id": 1, "x": 0}, {"id": 2}] but neither
//     [{"id": 1}] nor [{"id": 1}, {"id": 2}, {"id": 3}], nor [{"id": 2}, {"id": 1}].
//     Lengths must be equal because a list's size is usually part of the answer (three results
//     where two were expected is a bug, and a prefix rule would pass it silently); an element
//     that does not matter is written {} (any object) — there is no wildcard for other types.
//   - numbers compare by exact decimal value: 1, 1.0, 1e0 and 10e-1 are equal, and integers of any
//     size keep their precision (stdout is decoded with UseNumber).
//   - strings compare exactly (case-sensitive), composed and decomposed accents being equal
//     (both sides NFC).
//   - types must agree: the string "1" is not the number 1; true is not "true".
//   - null in the expected document matches only null; a missing key is not null.
//
// A difference is reported with its path, JSONPath-like: $.items[2].name, or $["a key"] for a
// key that is not an identifier. The first difference in document order (object keys sorted)
// is reported, with the count of the others.
//
// # Truncated output
//
// When the worker capped the output ([Observation].OutputTruncated), every failing text
// assertion says so in the message: the part that was cut off was not checked. A
// *_not_contains that finds nothing in truncated output is errored, not passed: absence cannot
// be shown in text that was not kept (never a false pass).
package assert
