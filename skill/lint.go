package skill

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/skillfleet/skillfleet/diag"
)

// Budgets of the lint rules, from the specification's progressive-disclosure guidance.
const (
	// BodyLineBudget and BodyTokenBudget: "keep SKILL.md under 500 lines", "< 5000 tokens".
	BodyLineBudget  = 500
	BodyTokenBudget = 5000
	// CharsPerToken estimates tokens without a tokenizer: about four characters per token for
	// English prose, which is what the budget is written for.
	CharsPerToken = 4
	// ProgressiveDisclosureLines is the body size from which detail should live in references/.
	ProgressiveDisclosureLines = 200
	// GotchasLines is the body size from which a Gotchas-style section is expected.
	GotchasLines = 50
)

// Lint checks a skill against best practices. Unlike Validate, its findings never make a skill
// invalid: they are warnings, and info for gotchas-present. It reads the file system only to
// check the body's references against Dir.
func Lint(s *Skill) diag.Diagnostics {
	if s == nil || (s.parsed && !s.decoded) {
		return nil
	}
	lines := splitBody(s.Body, s.BodyLine)
	var ds diag.Diagnostics
	ds = append(ds, lintContextBudget(s, lines)...)
	ds = append(ds, lintDescriptionQuality(s)...)
	ds = append(ds, lintGenericInstructions(s, lines)...)
	refs := references(lines)
	ds = append(ds, lintProgressiveDisclosure(s, lines, refs)...)
	ds = append(ds, lintDefaultsOverMenus(s, lines)...)
	ds = append(ds, lintGotchas(s, lines)...)
	ds = append(ds, lintBrokenReferences(s, refs)...)
	ds.Sort()
	return ds
}

func bodyStart(s *Skill) int { return max(s.BodyLine, 1) }

func lintContextBudget(s *Skill, lines []bodyLine) diag.Diagnostics {
	tokens := utf8.RuneCountInString(s.Body) / CharsPerToken
	if len(lines) <= BodyLineBudget && tokens <= BodyTokenBudget {
		return nil
	}
	return diag.Diagnostics{diag.Warning(RuleLintContextBudget, s.File, bodyStart(s), fmt.Sprintf(
		"body is %d lines and about %d tokens (estimated as characters/%d); the budget is %d lines and %d tokens, because agents load the whole body on activation: move detail into references/",
		len(lines), tokens, CharsPerToken, BodyLineBudget, BodyTokenBudget))}
}

// triggerRE matches the clauses that tell an agent when to activate a skill: "use when",
// "use this/it/this skill when|whenever|for|if", "use for", "whenever", "when to use",
// "trigger(s|ed)", "invoke/activate (this skill) when", and "when the user / when users".
var triggerRE = regexp.MustCompile(`(?i)\b(?:use(?: this(?: skill)?| it)? (?:when|whenever|for|if)\b|whenever\b|when to use\b|trigger|(?:invoke|activate)(?: this skill)? when\b|when (?:the |a )?users?\b)`)

func lintDescriptionQuality(s *Skill) diag.Diagnostics {
	if strings.TrimSpace(s.Description) == "" || triggerRE.MatchString(s.Description) {
		return nil
	}
	return diag.Diagnostics{diag.Warning(RuleLintDescriptionQuality, s.File, s.Line("description"),
		`description says what the skill does but not when to use it; add a trigger clause such as "Use when the user asks to ..."`)}
}

// genericRE matches the vague instructions the specification's linter names, and close
// variants: "handle errors appropriately/properly/gracefully", "follow (the) best practices",
// "use proper/appropriate error handling".
var genericRE = regexp.MustCompile(`(?i)\bhandle (?:all |any )?(?:the )?(?:errors?|exceptions?|failures?|edge cases) (?:appropriately|properly|gracefully|correctly|as appropriate|as needed)\b|\bfollow (?:the |all |standard |common |general |industry |coding |recommended |established )*best[- ]practices\b|\b(?:use|add|implement|include|ensure|apply) (?:proper|appropriate|adequate|good|robust) error[- ]handling\b`)

func lintGenericInstructions(s *Skill, lines []bodyLine) diag.Diagnostics {
	var ds diag.Diagnostics
	for _, bl := range lines {
		if bl.code {
			continue
		}
		for _, m := range genericRE.FindAllString(bl.prose, -1) {
			ds = append(ds, diag.Warning(RuleLintNoGenericInstruction, s.File, bl.line, fmt.Sprintf(
				"vague instruction %q: say exactly what to do (which check, which command, which message)", m)))
		}
	}
	return ds
}

func lintProgressiveDisclosure(s *Skill, lines []bodyLine, refs []reference) diag.Diagnostics {
	if len(lines) < ProgressiveDisclosureLines {
		return nil
	}
	if s.Dir != "" {
		if info, err := os.Stat(filepath.Join(s.Dir, "references")); err == nil && info.IsDir() {
			return nil
		}
	}
	for _, r := range refs {
		if r.isDocInSubdir() {
			return nil
		}
	}
	return diag.Diagnostics{diag.Warning(RuleLintProgressive, s.File, bodyStart(s), fmt.Sprintf(
		"body is %d lines with no references/ directory and no links to documents in subdirectories; move supplementary detail into references/ and link to it",
		len(lines)))}
}

// The defaults-over-menus heuristic, kept conservative: a prose sentence fires when it
//  1. offers a choice: "you/we can|could|may|might (also) (either) use|choose|pick|select|try|
//     go with|opt for", "choose|pick|select between|from|one of|any of", "use either|any of|
//     one of";
//  2. lists at least two alternatives joined by "or" after that phrase; and
//  3. states no default or criterion on its line or on the next line of the paragraph:
//     default, prefer(red), recommend(ed), usually, typically, ideally, unless, otherwise, if,
//     when, first, start with, fall back, best, should, only.
var (
	menuRE    = regexp.MustCompile(`(?i)\b(?:(?:you|we) (?:can|could|may|might)(?: also)? (?:either )?(?:use|choose|pick|select|try|go with|opt for)|(?:choose|pick|select) (?:between|from|one of|any of)|use (?:either|any of|one of))\b`)
	orRE      = regexp.MustCompile(`(?i)\bor\b`)
	defaultRE = regexp.MustCompile(`(?i)\b(?:defaults?|prefer(?:red|ably)?|recommend(?:ed)?|usually|typically|ideally|unless|otherwise|if|when|first|start with|fall ?back|best|should|only)\b`)
	sentEndRE = regexp.MustCompile(`[.!?;](?:\s|$)`)
)

func lintDefaultsOverMenus(s *Skill, lines []bodyLine) diag.Diagnostics {
	var ds diag.Diagnostics
	for i, bl := range lines {
		if bl.code || bl.prose == "" {
			continue
		}
		loc := menuRE.FindStringIndex(bl.prose)
		if loc == nil {
			continue
		}
		// The sentence around the menu phrase.
		start := 0
		for _, e := range sentEndRE.FindAllStringIndex(bl.prose[:loc[0]], -1) {
			start = e[1]
		}
		rest := bl.prose[loc[1]:]
		if e := sentEndRE.FindStringIndex(rest); e != nil {
			rest = rest[:e[0]]
		}
		sentence := bl.prose[start:loc[1]] + rest
		if !orRE.MatchString(rest) || defaultRE.MatchString(bl.prose) || defaultRE.MatchString(nextProse(lines, i)) {
			continue
		}
		ds = append(ds, diag.Warning(RuleLintDefaultsOverMenus, s.File, bl.line, fmt.Sprintf(
			"%q offers alternatives without a default; name the one to use and when to switch",
			strings.TrimSpace(sentence))))
	}
	return ds
}

// nextProse returns the line after lines[i] when it continues the paragraph.
func nextProse(lines []bodyLine, i int) string {
	if i+1 < len(lines) && !lines[i+1].code {
		return lines[i+1].prose
	}
	return ""
}

var gotchasRE = regexp.MustCompile(`(?i)gotcha|caveat|pitfall|edge[- ]cases?`)

func lintGotchas(s *Skill, lines []bodyLine) diag.Diagnostics {
	if len(lines) <= GotchasLines {
		return nil
	}
	for _, bl := range lines {
		if !bl.code && gotchasRE.MatchString(heading(bl.text)) {
			return nil
		}
	}
	return diag.Diagnostics{diag.Info(RuleLintGotchasPresent, s.File, bodyStart(s), fmt.Sprintf(
		"body is %d lines with no Gotchas, Caveats, Pitfalls or Edge cases heading; add a ## Gotchas section listing the mistakes an agent is likely to make",
		len(lines)))}
}

func lintBrokenReferences(s *Skill, refs []reference) diag.Diagnostics {
	if s.Dir == "" {
		return nil
	}
	var ds diag.Diagnostics
	for _, r := range refs {
		if !r.checkable(s.Dir) {
			continue
		}
		if why := r.problem(s.Dir); why != "" {
			ds = append(ds, diag.Warning(RuleReferencesBroken, s.File, r.line, fmt.Sprintf("%q %s", r.target, why)))
		}
	}
	return ds
}
