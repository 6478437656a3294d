package skill

import (
	"slices"
	"strings"
	"testing"
)

func TestTriggerClause(t *testing.T) {
	tests := []struct {
		desc string
		want bool
	}{
		{"Extract PDF text. Use when working with PDFs.", true},
		{"Creates art. Use this when users request generative art.", true},
		{"Applies brand colors. Use it when brand colors apply.", true},
		{"You should use this skill when the user asks for a poster.", true},
		{"Builds artifacts. Use for complex artifacts with state.", true},
		{"Claude should use this skill whenever asked to write comms.", true},
		{"Reference for the API. TRIGGER - read before opening the file.", true},
		{"Checks data. Triggers on CSV uploads.", true},
		{"Formats code. Use if the repository has a .editorconfig.", true},
		{"When to use: the user asks for a changelog.", true},
		{"Drafts replies when the user asks for an email reply.", true},
		{"Invoke when a deployment fails.", true},
		{"Formats release notes. This skill should be used when a release branch is cut.", true},
		{"Should be used when the user mentions invoices.", true},
		{"Load this skill when editing Terraform.", true},
		{"Checks migrations. Use after generating a migration.", true},
		{"Lints commits. Use before pushing a branch.", true},
		{"Always invoke for questions about billing.", true},
		{"Apply when the repository has a Dockerfile.", true},
		{"Activate for Kubernetes manifests.", true},
		{"Finds use-after-free bugs in C.", false},
		{"Tools that apply formatting.", false},
		{"Helps users apply for grants.", false},
		{"Loads fixtures for the test database.", false},
		{"Helps with PDFs.", false},
		{"Toolkit for testing local web applications using Playwright.", false},
		{"Guidance for distinctive visual design when building new UI.", false},
		{"Tools to reuse for later.", false},
		{"Causes whenevers.", false},
		// The agent or tool named between "use" and the trigger, whom-and-when openers, and
		// the scope said as when not.
		{"Use `analysis-agent` when engineering intent lacks boundaries.", true},
		{"Use with analysis-agent or task-agent for authentication risk.", true},
		{"For analysis agents working on payments; not for Web3 work.", true},
		{"ADR management skill. Auto-invoked for generating architecture decisions.", true},
		{"Builds middleware changes. Skip work without middleware impact.", true},
		{"Run the Meta Ads CLI safely for read-only reporting.", false},
		{"Scaffold an agent skill with Docker runtime support.", false},
		{"Formats tables for use in reports if needed.", false},
		{"侘寂。「これで十分か」と悩んでいるときに使う。", true},
		{"PR をレビューする。「PR レビューして」などで使用。", true},
		{"当用户需要处理 PDF 时使用。", true},
		{"Stripe 決済プラットフォーム全商品のリファレンス。", false},
	}
	for _, tc := range tests {
		if got := hasTrigger(tc.desc); got != tc.want {
			t.Errorf("%q: trigger = %v, want %v", tc.desc, got, tc.want)
		}
	}
}

func TestGenericInstructions(t *testing.T) {
	tests := []struct {
		line string
		want bool
	}{
		{"Handle errors appropriately.", true},
		{"handle all errors properly", true},
		{"Handle exceptions gracefully.", true},
		{"Follow best practices.", true},
		{"Follow the industry best practices for naming.", true},
		{"follow best-practices", true},
		{"Use proper error handling.", true},
		{"Implement appropriate error-handling everywhere.", true},
		{"Proper error handling with actionable messages", false},
		{"## Best Practices", false},
		{"Read the best practices guide in references/.", false},
		{"Handle a 429 by waiting for Retry-After.", false},
	}
	for _, tc := range tests {
		if got := genericRE.MatchString(tc.line); got != tc.want {
			t.Errorf("%q: generic = %v, want %v", tc.line, got, tc.want)
		}
	}
}

// TestGenericAntiExamples: a vague phrase quoted as an anti-example is spared, the plain
// instruction still fires.
func TestGenericAntiExamples(t *testing.T) {
	tests := []struct {
		body string
		want int
	}{
		{`"Handle errors appropriately" is too vague.`, 0},
		{`Tell the user "we handle errors appropriately".`, 1}, // quoted, but nothing says it is bad
		{`Avoid "handle errors appropriately"; name the error.`, 0},
		{`A vague "Follow best practices" tells the agent nothing.`, 0},
		{`Don't write 'follow best practices'.`, 0},
		{`Instead of “use proper error handling”, name the retry policy.`, 0},
		{`Say ‘follow best practices’ is not enough.`, 0},
		{`Handle errors appropriately, not silently.`, 1}, // the cue word alone spares nothing
		{`Don't stop: handle errors appropriately.`, 1},
		{`It's fine to "follow best practices"`, 1},
		{"Bad: handle errors appropriately.", 0},
		{"**Bad:**\n- Handle errors appropriately.\n- Follow best practices.\n\nFollow best practices.", 1},
		{"### Avoid\n\n- Handle errors appropriately.\n\nHandle errors appropriately.", 1},
		{"Don't:\n- follow best practices\nDo:\n- follow best practices", 1},
		{"❌ Follow best practices\nFollow best practices.", 1},
		{"- ✗ Handle exceptions gracefully", 0},
		{"Bad:\n- Handle errors appropriately\n## Next\nHandle errors appropriately", 1},
		{"Avoid using globals. Handle errors appropriately.", 1},
	}
	for _, tc := range tests {
		s := &Skill{File: "s/SKILL.md", Body: tc.body, BodyLine: 5}
		got := lintGenericInstructions(s, splitBody(s.Body, s.BodyLine))
		if len(got) != tc.want {
			t.Errorf("%q: %d findings, want %d: %v", tc.body, len(got), tc.want, got)
		}
	}
}

func TestQuoteSpans(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{`a "b c" d "e"`, []string{"b c", "e"}},
		{`don't 'x y' it's`, []string{"x y"}},
		{`“curly” and ‘single’ and don’t`, []string{"curly", "single"}},
		{`‘don’t stop’`, []string{"don’t stop"}},
		{`unclosed "quote`, nil},
		{`rock 'n' roll`, []string{"n"}},
		{"\xff\"a\xff\" \xff", []string{"a\xff"}},
	}
	for _, tc := range tests {
		var got []string
		for _, q := range quoteSpans(tc.in) {
			got = append(got, tc.in[q[0]:q[1]])
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("quoteSpans(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestDefaultsOverMenus(t *testing.T) {
	tests := []struct {
		body string
		want int
	}{
		{"You can use pdfplumber, PyPDF2, or pymupdf to extract text.", 1},
		{"You can use X or Y or Z.", 1},
		{"Use either npm or yarn.", 1},
		{"Pick one of black, autopep8 or yapf.", 1},
		{"Use pdfplumber by default; you can use PyPDF2 or pymupdf if it fails.", 0},
		{"You can use npm or yarn; prefer npm.", 0},
		{"You can use npm or yarn.\nThe default is npm because the lockfile is committed.", 0},
		{"You can use npm or yarn.\n\nThe default is npm.", 1},
		{"You can use this time productively.", 0},
		{"You can use the CLI or the API when the token is set.", 0},
		{"Run tests or linters.", 0},
		{"```\nyou can use a or b or c\n```", 0},
		{"Consider `you can use a or b` in code.", 0},
		{"You can either use as is or modify if you feel something needs to change.", 0},
		{"Use either npm or yarn, never both.", 0},
		{"Use either npm or yarn; never both.", 0},
		{"You can use npm or yarn, but not both.", 0},
		{"Use either tabs or spaces and never mix them.", 0},
		{"Use either npm or yarn. Never commit node_modules.", 1},
		{"| installer | use either npm or yarn |", 0},
		{"tool | note\n--- | ---\nnpm | you can use npm or yarn\n\nYou can use npm or yarn.", 1},
		{"a | b\nYou can use npm or yarn.", 1}, // a pipe in prose is no table without a delimiter row
	}
	for _, tc := range tests {
		s := &Skill{File: "s/SKILL.md", Body: tc.body, BodyLine: 5}
		got := lintDefaultsOverMenus(s, splitBody(s.Body, s.BodyLine))
		if len(got) != tc.want {
			t.Errorf("%q: %d findings, want %d: %v", tc.body, len(got), tc.want, got)
		}
	}
}

func TestSplitBody(t *testing.T) {
	body := "a `code` b\n```go\nx := `y`\n```\n~~~~\n```\nstill code\n~~~~\nafter\r\n"
	lines := splitBody(body, 10)
	want := []struct {
		code  bool
		prose string
	}{
		{false, "a        b"}, {true, ""}, {true, ""}, {true, ""}, {true, ""}, {true, ""}, {true, ""}, {true, ""}, {false, "after"},
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d", len(lines), len(want))
	}
	for i, w := range want {
		if lines[i].code != w.code || lines[i].prose != w.prose || lines[i].line != 10+i {
			t.Errorf("line %d: %+v, want %+v", i, lines[i], w)
		}
	}
}

func TestMarkTables(t *testing.T) {
	body := "| a | b |\n|---|---|\n| 1 | 2 |\n\nx | y\n:-- | --:\n3 | 4\nend\n\nprose | with pipe\n---\n```\n| in code |\n```"
	var got []bool
	for _, bl := range splitBody(body, 1) {
		got = append(got, bl.table)
	}
	want := []bool{true, true, true, false, true, true, true, false, false, false, false, false, false, false}
	if !slices.Equal(got, want) {
		t.Errorf("table rows %v, want %v", got, want)
	}
}

func TestHeading(t *testing.T) {
	for in, want := range map[string]string{
		"## Gotchas":          "Gotchas",
		"# Common Pitfall ##": "Common Pitfall",
		"   ### Edge cases":   "Edge cases",
		"#hashtag":            "",
		"    # indented code": "",
		"text # not heading":  "",
	} {
		if got := heading(in); got != want {
			t.Errorf("heading(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLintHandBuiltSkill(t *testing.T) {
	// A skill built in code, without a directory, is linted without touching the disk.
	s := &Skill{Name: "x", Description: "Does x.", Body: strings.Repeat("line\n", 60), BodyLine: 4}
	got := ruleSet(Lint(s, OptInRules()...))
	want := []string{RuleLintDescriptionQuality, RuleLintGotchasPresent}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("rules %v, want %v", got, want)
	}
}

// TestDescriptionQualityFields: a skill only the user invokes needs no trigger clause, nor
// one whose trigger clause is in when_to_use; the situation written without "Use when" is a
// trigger clause.
func TestDescriptionQualityFields(t *testing.T) {
	tests := []struct {
		name, front string
		want        int
	}{
		{"no trigger", "description: Formats release notes.", 1},
		{"user-invoked only", "description: Formats release notes.\ndisable-model-invocation: true", 0},
		{"model may invoke", "description: Formats release notes.\ndisable-model-invocation: false", 1},
		{"quoted true is no flag", "description: Formats release notes.\ndisable-model-invocation: \"true\"", 1},
		{"when_to_use", "description: Formats release notes.\nwhen_to_use: A release branch is cut.", 0},
		{"empty when_to_use", "description: Formats release notes.\nwhen_to_use: \"\"", 1},
		{"user wants", "description: user wants to send a chat message or share a link.", 0},
		{"situation", "description: deciding whether to ship or hold a release.", 0},
		{"article", "description: a migration has failed and needs a rollback.", 0},
		{"capitalised -ing", "description: Tracking spend across cloud accounts.", 1},
		{"lower-case product name", "description: pandas helpers for dataframes.", 1},
	}
	for _, tc := range tests {
		s, _ := Parse("x/SKILL.md", []byte("---\nname: x\n"+tc.front+"\n---\nbody\n"))
		if got := lintDescriptionQuality(s); len(got) != tc.want {
			t.Errorf("%s: %d findings, want %d: %v", tc.name, len(got), tc.want, got)
		}
	}
}

// TestGenericSpecificsFollow: the vague phrase followed by what it asks for is spared; alone,
// or with only its scope, it fires.
func TestGenericSpecificsFollow(t *testing.T) {
	tests := []struct {
		body string
		want int
	}{
		{"1. **Handle errors gracefully**: add a pause for manual intervention when a tip runs out", 0},
		{"2. **Implement proper error handling**: Use custom error classes", 0},
		{"- Handle errors properly with try/catch around every await", 0},
		{"- Handle errors gracefully - retry twice, then report the status code", 0},
		{"### Handle Errors Gracefully\n\n```python\ntry:\n    run()\nexcept IOError:\n    pass\n```", 0},
		{"Implement robust error handling for API requests:\n\n```python\nr.raise_for_status()\n```", 0},
		{"Use proper error handling:\n- retry 429 after Retry-After\n- stop on 401", 0},
		{"| Handle edge cases gracefully | Return an error for inputs over 1 MiB |", 0},
		{"- \"TBD\" / \"Add appropriate error handling\" / \"handle edge cases\"", 0},
		{"5. **Follow best practices** for file handling, error checking, and data management", 1},
		{"4. Break workflows into tasks\n5. Implement proper error handling\n\n### Data", 1},
		{"4. **Implement error trapping** - Catch and handle errors gracefully\n5. **Validate inputs**", 1},
		{"The harness must call the target and handle edge cases gracefully.", 1},
		{"### Handle errors gracefully\n\nBe careful.", 1},
		{"Handle errors appropriately:\n\nMore prose.", 1},
		{"| Handle edge cases gracefully |  |", 1},
		{"- Handle errors gracefully\n  - retry twice\n  - then stop", 0},
		{"- Handle errors gracefully\n- Validate input", 1},
		// A question asks what to check; an <example> shows a dialogue.
		{"- Do they handle errors gracefully?", 0},
		{"Does it follow best practices, and why?", 0},
		{"<example>\n<commentary>User wants their files to follow best practices.</commentary>\n</example>", 0},
		{"<example>\nx\n</example>\nFollow best practices.", 1},
	}
	for _, tc := range tests {
		s := &Skill{File: "s/SKILL.md", Body: tc.body, BodyLine: 5}
		got := lintGenericInstructions(s, splitBody(s.Body, s.BodyLine))
		if len(got) != tc.want {
			t.Errorf("%q: %d findings, want %d: %v", tc.body, len(got), tc.want, got)
		}
	}
}

// TestMenusWithCriteria: alternatives that each say what they are for, and choices offered to
// the end user, are no menu; the bare menu still fires.
func TestMenusWithCriteria(t *testing.T) {
	tests := []struct {
		body string
		want int
	}{
		{"You can use pdfplumber for tables or pypdf for plain text.", 0},
		{"You can use the CLI in a terminal, or the API in scripts.", 0},
		{"You can use pdfplumber, pypdf, or pymupdf to extract text.", 1},
		{"You can use pdfplumber or pypdf for plain text.", 1},
		{"> You can use the web app or the desktop app.", 0},
		{"Tell the user: \"You can use the web app or the desktop app.\"", 0},
		{"Reply with:\nYou can pick from monthly or annual billing.", 0},
		{"Run the script.\nYou can use npm or yarn.", 1},
		{"Which one? Can you use npm or yarn?", 0},
		{"<example>\nYou can use npm or yarn.\n</example>", 0},
		{"## When to run\n- You need to choose between a skill, a prompt, or an agent.", 0},
		{"## Steps\n- You need to choose between a skill, a prompt, or an agent.", 1},
		{"**Purpose**: Choose between an async report or an action plan.", 0},
	}
	for _, tc := range tests {
		s := &Skill{File: "s/SKILL.md", Body: tc.body, BodyLine: 5}
		got := lintDefaultsOverMenus(s, splitBody(s.Body, s.BodyLine))
		if len(got) != tc.want {
			t.Errorf("%q: %d findings, want %d: %v", tc.body, len(got), tc.want, got)
		}
	}
}

// TestGotchasHeadings: the section under the names published skills give it, and a skill
// about troubleshooting, satisfy the rule; unrelated headings do not.
func TestGotchasHeadings(t *testing.T) {
	long := strings.Repeat("text\n", GotchasLines)
	tests := []struct {
		name, desc, heading string
		want                int
	}{
		{"x", "Does x.", "## Usage", 1},
		{"x", "Does x.", "## Best Practices", 1},
		{"x", "Does x.", "## When NOT to Use", 1},
		{"x", "Does x.", "## Bootstrap", 1},
		{"x", "Does x.", "## Gotchas", 0},
		{"x", "Does x.", "## Rationalizations to Reject", 0},
		{"x", "Does x.", "## Critical Rules (Apply Always)", 0},
		{"x", "Does x.", "## Other Common Causes", 0},
		{"x", "Does x.", "## Troubleshooting", 0},
		{"x", "Does x.", "### Anti-Patterns", 0},
		{"x", "Does x.", "## Known Issues", 0},
		{"x", "Does x.", "### Don'ts", 0},
		{"x", "Does x.", "## Important Notes", 0},
		{"flaky-test-troubleshooter", "Does x.", "## Usage", 0},
		{"x", "Diagnoses failing CI jobs. Use when CI is red.", "## Usage", 0},
		// Gotchas under other names, and as a Do-NOT list under any heading.
		{"x", "Does x.", "## Constraints", 0},
		{"x", "Does x.", "## Guardrails", 0},
		{"x", "Does x.", "## Rules", 0},
		{"x", "Does x.", "## Common Mistakes", 0},
		{"x", "Does x.", "## Pitfalls", 0},
		{"x", "Does x.", "**Core rules (do not break):**", 0},
		{"x", "Does x.", "- Never push to main.\n- Do not print tokens.\n- Avoid `rm -rf`.", 0},
		{"x", "Does x.", "Run **DO NOT** twice.\nThen NEVER skip.\nAnd **never** guess.", 0},
		{"x", "Does x.", "- Never push to main.\n- Do not print tokens.", 1},
		{"x", "Does x.", "## Rules of thumb for charts", 0},
		{"x", "Does x.", "## Core rules", 0},
		{"x", "Does x.", "## Endpoint rules", 0},
		{"x", "Does x.", "## Runtime completion doctrine", 0},
		{"x", "Does x.", "## Attribution limits", 0},
		{"x", "Does x.", "## 必须遵守", 0},
		{"x", "Does x.", "## Reference index", 1},
		// The exemption is for what the skill is about, not for a word in passing.
		{"x", "Builds REST APIs with debug logging and request tracing.", "## Usage", 1},
		{"x", "Formats code; run it to diagnose style drift later.", "## Usage", 1},
		{"x", "Use when debugging flaky tests.", "## Usage", 0},
		{"x", "Troubleshooting guide for Kafka consumers.", "## Usage", 0},
	}
	for _, tc := range tests {
		s := &Skill{Name: tc.name, Description: tc.desc, File: "s/SKILL.md", Body: tc.heading + "\n" + long, BodyLine: 5}
		if got := lintGotchas(s, splitBody(s.Body, s.BodyLine)); len(got) != tc.want {
			t.Errorf("%s %q: %d findings, want %d", tc.name, tc.heading, len(got), tc.want)
		}
	}
}
