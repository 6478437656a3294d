package skill

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode"
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
	// ProgressiveDisclosureLines is the body size beyond which detail should live in
	// references/: the specification's "keep SKILL.md under 500 lines, move detailed reference
	// material to separate files", so the same number as BodyLineBudget.
	ProgressiveDisclosureLines = BodyLineBudget
	// GotchasLines is the body size from which a Gotchas-style section is expected.
	GotchasLines = 50
)

// OptInRules are the lint rules that run only when asked for (`lint --rules=ID,...`): measured
// on public skills nobody tuned them on, each was wrong more often than one finding in ten
// (docs/lint-precision.md), so by default they would bury the findings that are right.
func OptInRules() []string {
	return []string{RuleLintDescriptionQuality, RuleLintNoGenericInstruction, RuleLintDefaultsOverMenus, RuleLintGotchasPresent}
}

// Lint checks a skill against best practices: the default rules, and the opt-in rules named in
// optIn (see OptInRules; a name that is not an opt-in rule changes nothing). Unlike Validate,
// its findings never make a skill invalid: they are warnings, and info for gotchas-present and
// references.outside. It reads the file system only to check the body's references against
// Dir. Findings that the body's suppression comments silence are left out (see suppress.go);
// problems with those comments are lint.suppression.
func Lint(s *Skill, optIn ...string) diag.Diagnostics {
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
	ds = slices.DeleteFunc(ds, func(d diag.Diagnostic) bool {
		return slices.Contains(OptInRules(), d.Rule) && !slices.Contains(optIn, d.Rule)
	})
	sp := parseSuppressions(s, lines)
	ds = slices.DeleteFunc(ds, sp.silenced)
	ds = oneSizeFinding(ds)
	ds = append(ds, sp.diags...)
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

// triggerRE matches the clauses that tell an agent when to activate a skill. Descriptions word
// them in many ways; each alternative below is one family seen in published skills, kept
// apart so that a missed phrasing is added where it belongs rather than by widening another.
var triggerRE = regexp.MustCompile(`(?i)\b(?:` + strings.Join([]string{
	// "Use when ...", "Use this skill for ...", "Use it if ...", "Use after a deploy", "Use
	// before committing".
	`use(?: this(?: skill)?| it)? (?:when|whenever|for|if|after|before)\b`,
	// "Use `analysis-agent` when ...", "Use with task-agent or review-agent for ...": the
	// agent or the tool the skill goes with, then the trigger, a few words on. Only a
	// sentence that opens with "Use": "for use in reports if needed" is no trigger.
	"(?:^|[.;:!]\\s+)use (?:[^\\s.]+ ){1,5}?(?:when|whenever|for|if)\\b",
	// "For analysis agents working on ...", "Auto-invoked for ...", "not for work without
	// ...", "Skip requests with ...": whom and when, or when not, which draws the same line.
	`^for\b|auto-?invoked\b|\binvoked (?:for|when|on)\b|\bnot for\b|\bdo not use\b|\bskip (?:\w+ )?(?:when|if|for|requests?|work|tasks?)\b`,
	// "This skill should be used when ...", "Should be used for ...", "must be used if ...".
	`(?:should|must|can) be used (?:when|whenever|for|if|after|before)\b`,
	// "Load this skill when ...", "Invoke when ...", "Always invoke for ...", "Apply when
	// ...", "Activate for ...": the verbs a description uses for its own activation. "for"
	// only after invoke and activate: "apply for a grant" and "load for" are no triggers.
	`(?:load|invoke|activate|apply)(?: this(?: skill)?| it)? (?:when|whenever|if|after|before)\b`,
	`(?:invoke|activate)(?: this(?: skill)?| it)? for\b`,
	// "Whenever the user ...", "When to use: ...".
	`whenever\b`,
	`when to use\b`,
	// "TRIGGER - ...", "Triggers on ...", "Triggered by ...".
	`trigger`,
	// "Drafts replies when the user asks ...", "when users ...".
	`when (?:the |a )?users?\b`,
	// "User wants to send a message ...", "the user asks for ...": the situation itself, the
	// "Use when" left implied.
	`^(?:the |a )?users? (?:wants?|needs?|asks?|requests?|is asking|mentions?)\b`,
}, "|") + `)`)

// cjkTriggerRE is a trigger clause in Japanese or Chinese: "…ときに使う", "「…」などで使用",
// "…時に参照", "当用户…时使用". It stands apart from triggerRE, whose \b (ASCII word
// boundaries) never matches between CJK characters.
var cjkTriggerRE = regexp.MustCompile(`(?:とき|時|際|場合)(?:に|は)?(?:使|利用|参照|呼|起動)|(?:で|に)使用|使用する|时(?:使用|调用|触发)|用于|适用于`)

// hasTrigger reports whether a description says when to use the skill.
func hasTrigger(d string) bool { return triggerRE.MatchString(d) || cjkTriggerRE.MatchString(d) }

// situationRE is a description that opens in lower case with the situation an implied "Use
// when" would introduce: "deciding whether to ship", "a hypothesis has failed and ...", "an
// agent has drafted ...". A description of what the skill does starts with a capital ("Builds
// ...", "Toolkit for ..."); a lower-case product name ("pandas helpers") starts with neither
// an article nor an -ing word.
var situationRE = regexp.MustCompile(`^(?:(?:a|an|actively|currently|about to)\s|[a-z]+ing\s)`)

func lintDescriptionQuality(s *Skill) diag.Diagnostics {
	// With disable-model-invocation: true only the user invokes the skill, so no trigger
	// clause is read; with when_to_use the trigger clause is kept apart from the description.
	if s.modelInvocationOff || s.whenToUse != "" {
		return nil
	}
	if strings.TrimSpace(s.Description) == "" || hasTrigger(s.Description) || situationRE.MatchString(s.Description) {
		return nil
	}
	return diag.Diagnostics{diag.Warning(RuleLintDescriptionQuality, s.File, s.Line("description"),
		`description says what the skill does but not when to use it; add a trigger clause such as "Use when the user asks to ..."`)}
}

// genericRE matches the vague instructions the specification's linter names, and close
// variants: "handle errors appropriately/properly/gracefully", "follow (the) best practices",
// "use proper/appropriate error handling".
var genericRE = regexp.MustCompile(`(?i)\bhandle (?:all |any )?(?:the )?(?:errors?|exceptions?|failures?|edge cases) (?:appropriately|properly|gracefully|correctly|as appropriate|as needed)\b|\bfollow (?:the |all |standard |common |general |industry |coding |recommended |established )*best[- ]practices\b|\b(?:use|add|implement|include|ensure|apply) (?:proper|appropriate|adequate|good|robust) error[- ]handling\b`)

// A skill often quotes a vague instruction to warn against it: `Don't write "Handle errors
// appropriately"`, or lists it under a "Bad:" label. Such a phrase is an anti-example, not an
// instruction, and the rule spares it:
//   - quoted (straight or curly, double or single quotes) on a line that says it is bad (bad,
//     avoid, don't, do not, never, instead of, not, vague, generic, wrong, anti-pattern); or
//   - quoted or not, inside an anti-example: the rest of a line labelled "Bad:", "Don't:",
//     "Avoid:", "Wrong:" (or such a heading), and the lines under it up to a blank line after
//     them, a heading, or a "Good:"/"Do:"/"Better:"/"Instead:" label.
//
// A plain instruction ("Handle errors appropriately, not silently.") still fires.
var (
	antiCueRE   = regexp.MustCompile(`(?i)\b(?:bad|avoid|avoided|avoiding|don'?t|don’t|do not|never|instead of|not|vague|generic|wrong|anti-?patterns?)\b`)
	antiLabelRE = regexp.MustCompile(`(?i)^(?:bad|don'?t|don’t|do not|avoid|wrong|incorrect|anti-?patterns?)(?: examples?| patterns?| phrasing)?[*_]*\s*(?::|$)`)
	goodLabelRE = regexp.MustCompile(`(?i)^(?:good|do|better|correct|instead|prefer|preferred)(?: examples?| patterns?| phrasing)?[*_]*\s*(?::|$)`)
)

func lintGenericInstructions(s *Skill, lines []bodyLine) diag.Diagnostics {
	var ds diag.Diagnostics
	anti := antiExampleLines(lines)
	shown := exampleTagLines(lines)
	for i, bl := range lines {
		if bl.code || anti[i] || shown[i] {
			continue
		}
		var quotes [][2]int
		q := 0 // matches come in order, so the quote spans are walked once per line
		for _, loc := range genericRE.FindAllStringIndex(bl.prose, -1) {
			if quotes == nil {
				quotes = quoteSpans(bl.prose)
			}
			for q < len(quotes) && quotes[q][1] < loc[1] {
				q++
			}
			quoted := q < len(quotes) && quotes[q][0] <= loc[0]
			if quoted && (antiCueRE.MatchString(bl.prose) || quotedItemRE.MatchString(bl.prose)) {
				continue
			}
			if specificsFollow(lines, i, bl.prose[loc[1]:]) || asked(bl.prose, loc[1]) {
				continue
			}
			ds = append(ds, diag.Warning(RuleLintNoGenericInstruction, s.File, bl.line, fmt.Sprintf(
				"vague instruction %q: say exactly what to do (which check, which command, which message)", bl.prose[loc[0]:loc[1]])))
		}
	}
	return ds
}

// The rule asks for specifics, so a vague phrase that is followed by them is a summary, not
// a vague instruction: "Handle errors gracefully: add a pause for manual intervention", "Use
// proper error handling with custom error classes", a heading "Handle errors gracefully" over
// a code block, "Implement robust error handling for API requests:" over a code block or a
// list, a table row whose next cell says what to do. A phrase with nothing after it, or with
// only its scope ("Follow best practices for file handling"), still fires.
var (
	// specificsRE is what introduces specifics after the phrase on its own line: a colon or
	// dash and then at least three words, or a preposition that says how.
	specificsRE = regexp.MustCompile(`(?i)^[*_]*\s*(?:[:;—–(]|\s-\s|,?\s+(?:by|with|using|via|through|such as|e\.g\.|for example|including|like|so that|and then)\s)\s*[*_]*\s*\S+\s+\S+\s+\S+`)
	// leadInRE is a line that hands over to what follows: nothing but emphasis and a colon or
	// full stop after the phrase, or a scope and a colon.
	leadInRE = regexp.MustCompile(`^[^.!?]*:[*_\s]*$|^[*_.\s]*$`)
	// listItemRE is a list item: its marker's indentation and the marker.
	listItemRE = regexp.MustCompile(`^(\s*)(?:[-*+]|\d+[.)])\s`)
	// quotedItemRE is a list item made of quoted phrases: `- "TBD" / "Add appropriate error
	// handling"`, a list of phrases talked about, not instructions.
	quotedItemRE = regexp.MustCompile(`^\s*(?:[-*+]|\d+[.)])\s+["“'‘]`)
)

// specificsFollow reports whether specifics follow a vague phrase on lines[i], rest being the
// line's prose after it.
func specificsFollow(lines []bodyLine, i int, rest string) bool {
	if specificsRE.MatchString(rest) {
		return true
	}
	bl := lines[i]
	if bl.table {
		// The next cell of the row, when it has text, is the specifics ("| Handle edge cases
		// gracefully | Return an error for inputs over 1 MiB |").
		if _, after, ok := strings.Cut(rest, "|"); ok && strings.Trim(after, " \t|*_") != "" {
			return true
		}
		return false
	}
	if !leadInRE.MatchString(rest) {
		return false
	}
	next := i + 1
	for next < len(lines) && strings.TrimSpace(lines[next].text) == "" {
		next++
	}
	if next >= len(lines) {
		return false
	}
	n := lines[next]
	if n.code {
		return true // a code block shows exactly what to do
	}
	m := listItemRE.FindStringSubmatch(n.text)
	if m == nil {
		return false
	}
	// A list under a heading or a lead-in ending in a colon says what the phrase means; under
	// a list item, only a nested one does (the next item of the same list is another point).
	if own := listItemRE.FindStringSubmatch(bl.text); own != nil && heading(bl.text) == "" {
		return len(m[1]) > len(own[1])
	}
	return heading(bl.text) != "" || strings.HasSuffix(strings.TrimRight(rest, " \t*_"), ":")
}

// A question is no instruction: "Do they handle errors gracefully?" in a review checklist
// asks what to check in someone else's work. Nor is what an example shows: the lines between
// <example> and </example> (or <commentary>) tags, the form agent definitions use for sample
// dialogues ("User wants their files to follow best practices").
var exampleTagRE = regexp.MustCompile(`(?i)<(/?)(?:examples?|commentary)>`)

// asked reports whether the sentence of prose that goes on at offset end is a question.
func asked(prose string, end int) bool {
	rest := prose[end:]
	if e := strings.IndexAny(rest, ".!?"); e >= 0 {
		return rest[e] == '?'
	}
	return false
}

// exampleTagLines marks the lines inside <example> and <commentary> tags.
func exampleTagLines(lines []bodyLine) []bool {
	in := make([]bool, len(lines))
	depth := 0
	for i, bl := range lines {
		if bl.code {
			in[i] = depth > 0
			continue
		}
		was := depth
		for _, m := range exampleTagRE.FindAllStringSubmatch(bl.text, -1) {
			if m[1] == "" {
				depth++
			} else if depth > 0 {
				depth--
			}
		}
		in[i] = was > 0 || depth > 0
	}
	return in
}

// antiExampleLines marks the lines that belong to an anti-example (see above).
func antiExampleLines(lines []bodyLine) []bool {
	anti := make([]bool, len(lines))
	in, seen := false, false // inside an anti-example; a non-blank line followed its label
	for i, bl := range lines {
		if bl.code {
			seen = seen || in
			continue
		}
		label, cross := exampleLabel(bl.prose)
		switch {
		case antiLabelRE.MatchString(label):
			in, seen = true, false
			anti[i] = true
			continue
		case goodLabelRE.MatchString(label) || heading(bl.text) != "":
			in = false
		case strings.TrimSpace(bl.prose) == "":
			if seen {
				in = false
			}
		case in:
			anti[i], seen = true, true
		case cross:
			anti[i] = true // a line marked with a cross is an anti-example by itself
		}
	}
	return anti
}

// exampleLabel strips what may decorate a label at the start of a line (heading marks, block
// quotes, list markers, emphasis, check marks), so "- **Bad:**" reads "Bad:**", and reports
// whether the line starts with a cross mark (❌ ✗ ✘ 🚫 ⛔ 👎).
func exampleLabel(t string) (label string, cross bool) {
	if h := heading(t); h != "" {
		t = h
	}
	t = strings.TrimLeft(t, " \t>-+*_0123456789.)")
	for _, mark := range []string{"❌", "✗", "✘", "🚫", "⛔", "👎"} {
		if rest, ok := strings.CutPrefix(t, mark); ok {
			t, cross = rest, true
			break
		}
	}
	return strings.TrimLeft(t, " \t*_✅✓✔👍"), cross
}

// quoteSpans returns the byte ranges inside quotation marks. Straight double quotes pair up in
// order, curly ones “ with ”. A single quote (' or ‘’) opens after a non-letter and closes
// before one, so the apostrophe of "don't" is no quote.
func quoteSpans(t string) [][2]int {
	var out [][2]int
	double, curly, single := -1, -1, -1 // where the open quote's text starts, -1 when none
	prev := ' '
	for i, r := range t {
		_, w := utf8.DecodeRuneInString(t[i:]) // not RuneLen: an invalid byte is one byte wide
		next, _ := utf8.DecodeRuneInString(t[i+w:])
		switch {
		case r == '"' && double >= 0:
			out, double = append(out, [2]int{double, i}), -1
		case r == '"':
			double = i + w
		case r == '“':
			curly = i + w
		case r == '”' && curly >= 0:
			out, curly = append(out, [2]int{curly, i}), -1
		case (r == '\'' || r == '’') && single >= 0 && !isLetter(next):
			out, single = append(out, [2]int{single, i}), -1
		case (r == '\'' || r == '‘') && single < 0 && !isLetter(prev):
			single = i + w
		}
		prev = r
	}
	return out
}

func isLetter(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// lintProgressiveDisclosure fires on a body over the line budget that has nothing split out:
// no references/ directory and no link to a document in a subdirectory. Its message carries
// the size against the budget, so for such a body it replaces context-budget (see Lint).
func lintProgressiveDisclosure(s *Skill, lines []bodyLine, refs []reference) diag.Diagnostics {
	if len(lines) <= ProgressiveDisclosureLines {
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
		"body is %d lines and about %d tokens, over the budget of %d lines, with no references/ directory and no links to documents in subdirectories; move supplementary detail into references/ and link to it, saying when to read it",
		len(lines), utf8.RuneCountInString(s.Body)/CharsPerToken, ProgressiveDisclosureLines))}
}

// oneSizeFinding drops context-budget when progressive-disclosure is left after suppression:
// both say the body is too long, and progressive-disclosure also says nothing is split out
// yet. Silencing progressive-disclosure brings context-budget back, so the size is still
// reported.
func oneSizeFinding(ds diag.Diagnostics) diag.Diagnostics {
	if !slices.ContainsFunc(ds, func(d diag.Diagnostic) bool { return d.Rule == RuleLintProgressive }) {
		return ds
	}
	return slices.DeleteFunc(ds, func(d diag.Diagnostic) bool { return d.Rule == RuleLintContextBudget })
}

// The defaults-over-menus heuristic, kept conservative: a prose sentence fires when it
//  1. offers a choice: "you/we can|could|may|might (also) (either) use|choose|pick|select|try|
//     go with|opt for", "choose|pick|select between|from|one of|any of", "use either|any of|
//     one of";
//  2. lists at least two alternatives joined by "or" after that phrase;
//  3. states no default or criterion on its line or on the next line of the paragraph:
//     default, prefer(red), recommend(ed), usually, typically, ideally, unless, otherwise, if,
//     when, first, start with, fall back, best, should, only; and
//  4. is not a rule that the alternatives exclude each other ("use either X or Y, never
//     both", "not both", "but not both", "either ... never"): that is a constraint, not a menu.
//
// Table rows are data (a cell saying "use either A or B" describes an option), so they never
// fire.
var (
	menuRE      = regexp.MustCompile(`(?i)\b(?:(?:you|we) (?:can|could|may|might)(?: also)? (?:either )?(?:use|choose|pick|select|try|go with|opt for)|(?:choose|pick|select) (?:between|from|one of|any of)|use (?:either|any of|one of))\b`)
	orRE        = regexp.MustCompile(`(?i)\bor\b`)
	defaultRE   = regexp.MustCompile(`(?i)\b(?:defaults?|prefer(?:red|ably)?|recommend(?:ed)?|usually|typically|ideally|unless|otherwise|if|when|first|start with|fall ?back|best|should|only)\b`)
	exclusiveRE = regexp.MustCompile(`(?i)\b(?:never|not) both\b|\beither\b.*\bnever\b`)
	sentEndRE   = regexp.MustCompile(`[.!?;](?:\s|$)`)
	fullStopRE  = regexp.MustCompile(`[.!?](?:\s|$)`)
)

func lintDefaultsOverMenus(s *Skill, lines []bodyLine) diag.Diagnostics {
	var ds diag.Diagnostics
	shown := exampleTagLines(lines)
	situation := underWhenToUse(lines)
	for i, bl := range lines {
		if bl.code || bl.table || bl.prose == "" {
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
		// The exclusion may follow a semicolon: "use either X or Y; never both".
		clause := bl.prose[start:]
		if e := fullStopRE.FindStringIndex(bl.prose[loc[1]:]); e != nil {
			clause = bl.prose[start : loc[1]+e[0]]
		}
		if !orRE.MatchString(rest) || defaultRE.MatchString(bl.prose) || defaultRE.MatchString(nextProse(lines, i)) || exclusiveRE.MatchString(clause) {
			continue
		}
		if eachSaysWhen(rest) || toEndUser(lines, i, bl.prose, loc[0]) || shown[i] || asked(bl.prose, loc[1]) || situation[i] || purposeRE.MatchString(bl.prose) {
			continue
		}
		ds = append(ds, diag.Warning(RuleLintDefaultsOverMenus, s.File, bl.line, fmt.Sprintf(
			"%q offers alternatives without a default; name the one to use and when to switch",
			strings.TrimSpace(sentence))))
	}
	return ds
}

// Two more kinds of sentence offer alternatives and are no menu for the agent:
//   - alternatives that each say what they are for: "you can use pdfplumber for tables or
//     pypdf for plain text" names the criterion, which is what a default is for;
//   - text the agent shows the end user, whose choice it is: a block quote, a quoted
//     message, or a line after "tell the user", "reply with" and the like.
var (
	altSplitRE   = regexp.MustCompile(`(?i),\s*(?:or\s+)?|\s+or\s+`)
	criterionRE  = regexp.MustCompile(`(?i)\b(?:for|to|with|on|in|where|after|before|during|against)\b`)
	userCueRE    = regexp.MustCompile(`(?i)\b(?:tell|inform|ask|remind|show|offer) the user\b|\bto the user\b|\blet the user know\b|\b(?:reply|respond|answer) with\b|\b(?:say|message|reply|response|output|template)\s*:`)
	blockQuoteRE = regexp.MustCompile(`^\s{0,3}>`)
)

// eachSaysWhen reports whether every alternative after a menu phrase carries its own
// criterion ("for tables", "in scripts").
func eachSaysWhen(rest string) bool {
	var alts []string
	for _, a := range altSplitRE.Split(rest, -1) {
		if a = strings.TrimSpace(a); a != "" {
			alts = append(alts, a)
		}
	}
	if len(alts) < 2 {
		return false
	}
	for _, a := range alts {
		if !criterionRE.MatchString(a) {
			return false
		}
	}
	return true
}

// toEndUser reports whether the menu phrase at offset at of lines[i] is addressed to the end
// user rather than to the agent.
func toEndUser(lines []bodyLine, i int, prose string, at int) bool {
	if blockQuoteRE.MatchString(lines[i].text) || userCueRE.MatchString(prose[:at]) {
		return true
	}
	for _, q := range quoteSpans(prose) {
		if q[0] <= at && at < q[1] {
			return true
		}
	}
	if i > 0 && !lines[i-1].code {
		return userCueRE.MatchString(lines[i-1].prose)
	}
	return false
}

// Two more are no menu either: a line under a "When to use" heading describes the situation
// the skill is for ("You need to choose between a skill, a prompt or an agent"), and a step's
// "Purpose:" or "Goal:" line names the choice the step then makes.
var (
	whenToUseRE = regexp.MustCompile(`(?i)^when (?:to|you should) (?:use|run|invoke|apply|activate|trigger)\b`)
	purposeRE   = regexp.MustCompile(`(?i)^[\s>*_+\-]*(?:purpose|goal|objective)[*_]*\s*:`)
)

// underWhenToUse marks the lines under a "When to use" heading, up to the next heading.
func underWhenToUse(lines []bodyLine) []bool {
	in := make([]bool, len(lines))
	on := false
	for i, bl := range lines {
		if h := heading(bl.text); h != "" && !bl.code {
			on = whenToUseRE.MatchString(h)
			continue
		}
		in[i] = on
	}
	return in
}

// nextProse returns the line after lines[i] when it continues the paragraph.
func nextProse(lines []bodyLine, i int) string {
	if i+1 < len(lines) && !lines[i+1].code {
		return lines[i+1].prose
	}
	return ""
}

// gotchasRE matches the headings under which published skills keep what the rule asks for,
// the mistakes an agent is likely to make. Each alternative is one family seen in published
// skills: the spec's words; troubleshooting and common or known problems; anti-patterns,
// don'ts, mistakes and red flags; rules stated as ones never to break ("Critical Rules (Apply
// Always)", "Hard rules", "Forbidden", "Rules"); limits the agent must keep to
// ("Constraints", "Guardrails", "Safety", "Boundaries", "Hard gate", "Core rules", "Component
// rules", "Runtime completion doctrine", and the same words in Chinese and Japanese: 必须遵守,
// 注意事项, ルール); and the excuses to
// reject ("Rationalizations to Reject"). "When NOT to use" is scope, not a gotcha, and does
// not count.
var gotchasRE = regexp.MustCompile(`(?i)` + strings.Join([]string{
	`gotcha|caveat|pitfall|edge[- ]cases?|foot-?guns?|\btraps?\b|watch out|beware|\bcaution`,
	`troubleshoot|debugging|common (?:\w+ )?(?:issues|problems|errors|causes|failures|failure modes|mistakes)|known (?:issues|problems|limitations|bugs)|failure modes|what (?:can|could) go wrong`,
	`anti-?patterns?|don'?ts\b|don’ts\b|do not\b|never\b|avoid|mistakes|red flags|warnings?\b|limitations`,
	`\brules\b|forbidden|prohibited|must not|important (?:notes?|considerations)|doctrine`,
	`constraints?\b|guardrails?|\bsafety\b|boundar(?:y|ies)\b|hard[- ]gates?|restrictions?\b|\blimits\b|约束|注意|禁止|遵守|规则|ルール|注意|禁止|制約`,
	`rationali[sz]ations?|excuses`,
}, "|"))

// warnLineRE is a prose line that warns the agent off a mistake: a rule that starts "Never",
// "Do not", "Don't", "Avoid", "Must not" (after a list marker or emphasis), or a warning
// label ("Warning:", "Important:", "⚠️"). A skill with several of them keeps its gotchas as a
// Do-NOT list wherever it put them, which is what the rule asks for, under any heading.
var warnLineRE = regexp.MustCompile(`(?i)^[\s>*_+\-0-9.)]*(?:❌|⚠️?|🚫|⛔)|^[\s>*_+\-0-9.)]*(?:never|do not|don'?t|don’t|avoid|must not|must never|warning|important|caution|critical)\b|\*\*(?:never|do not|don'?t|must not|avoid)\b|\b(?-i:NEVER|DO NOT|MUST NOT|DON'T)\b`)

// labelRE is a line that labels what follows as a section would: short, emphasised or ending
// in a colon ("**Core rules (do not break):**", "Constraints:").
var labelRE = regexp.MustCompile(`^[\s>*_+\-]*([^:]{3,60}):[*_\s]*$`)

// warnLines is how many such lines make a Do-NOT list.
const warnLines = 3

// troubleshootingRE is a skill that is about what goes wrong: its name says so, or its
// description's first sentence opens with it ("Diagnoses failing builds", "Use when debugging
// ...", "Troubleshooting guide for ..."). A word further on ("... with debug logging") is not
// what the skill is about.
var (
	troubleshootingNameRE = regexp.MustCompile(`(?i)troubleshoot|debug|diagnos`)
	troubleshootingRE     = regexp.MustCompile(`(?i)^\W*(?:[\w'-]+\s+){0,3}(?:troubleshoot|debug|diagnos|fix(?:es|ing)? (?:\w+ )?(?:errors|failures|issues|problems|bugs))`)
)

func lintGotchas(s *Skill, lines []bodyLine) diag.Diagnostics {
	if len(lines) <= GotchasLines {
		return nil
	}
	first, _, _ := strings.Cut(s.Description, ". ")
	if troubleshootingNameRE.MatchString(s.Name) || troubleshootingRE.MatchString(first) {
		return nil
	}
	warns := 0
	for _, bl := range lines {
		if bl.code {
			continue
		}
		h := heading(bl.text)
		// Only a line ending in a colon can be a label; the test spares the regular
		// expression most lines.
		if h == "" && strings.HasSuffix(strings.TrimRight(bl.text, " \t*_"), ":") {
			if m := labelRE.FindStringSubmatch(bl.text); m != nil {
				h = m[1]
			}
		}
		if h != "" && gotchasRE.MatchString(h) && !whenNotRE.MatchString(h) {
			return nil
		}
		if warnLineRE.MatchString(bl.text) {
			if warns++; warns >= warnLines {
				return nil
			}
		}
	}
	return diag.Diagnostics{diag.Info(RuleLintGotchasPresent, s.File, bodyStart(s), fmt.Sprintf(
		"body is %d lines with no Gotchas-style section (Gotchas, Pitfalls, Troubleshooting, Common mistakes, Anti-patterns, Constraints, Critical rules ...) and no list of what not to do; add a ## Gotchas section listing the mistakes an agent is likely to make",
		len(lines)))}
}

// whenNotRE is the scope heading "When not to use", which says when the skill does not
// apply, not what goes wrong when it does.
var whenNotRE = regexp.MustCompile(`(?i)^when (?:not|never) to|^when (?:to )?not\b|^do not use`)

// skillsSubjectRE is a name or description about skills themselves: writing, reviewing or
// managing them ("Guide for creating effective skills", "Audits agent skills", "skill-creator",
// "the SKILL.md frontmatter"). "Use this skill when" does not count: the verb must act on
// skills.
var skillsSubjectRE = regexp.MustCompile(`(?i)SKILL\.md|\bskill[-_ ](?:creat|author|writ|build|develop|design|review|audit|lint|manag|scaffold|templat|guide|improv|optimi|packag|valid)|\b(?:creat|author|writ|build|develop|design|review|audit|scaffold|improv|refactor|optimi[sz]|packag|validat|manag|maintain|edit|updat|lint|evaluat|structur|organi[sz])\w*\s+(?:(?:new|an?|the|your|their|agent|claude|custom|existing|effective|good|high-quality|well-structured|reusable)\s+){0,3}skills?\b(?:\s+(?:files?|definitions?|directories|folders?|packages?))?`)

// aboutSkills reports whether a skill is a guide to writing or managing skills: what it says
// is about other skills' files, so the paths it shows are examples.
func aboutSkills(s *Skill) bool {
	return skillsSubjectRE.MatchString(s.Name) || skillsSubjectRE.MatchString(s.Description)
}

func lintBrokenReferences(s *Skill, refs []reference) diag.Diagnostics {
	if s.Dir == "" {
		return nil
	}
	var ds diag.Diagnostics
	guide := aboutSkills(s)
	for _, r := range refs {
		if !r.checkable(s.Dir) {
			continue
		}
		// A guide to writing skills names files of the skill its reader will write ("put
		// the script in `scripts/rotate_pdf.py`"): in its prose and code, a path that does
		// not exist is an illustration. Its links are still the guide's own.
		if guide && r.kind != refLink && !exists(filepath.Join(s.Dir, filepath.FromSlash(path.Clean(r.target)))) {
			continue
		}
		broken, outside := r.problem(s.Dir)
		if broken != "" {
			ds = append(ds, diag.Warning(RuleReferencesBroken, s.File, r.line, fmt.Sprintf("%q %s", r.target, broken)))
		}
		if outside != "" {
			ds = append(ds, diag.Info(RuleReferencesOutside, s.File, r.line, fmt.Sprintf("%q %s", r.target, outside)))
		}
	}
	return ds
}
