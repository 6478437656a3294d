package skill

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/skillfleet/skillfleet/diag"
	"github.com/skillfleet/skillfleet/internal/textdist"
)

// The suppression comments a body may carry. They are HTML comments, so they do not render:
//
//	<!-- skillfleet-lint-disable-next-line RULE[,RULE...] -->   the line after the comment
//	<!-- skillfleet-lint-disable RULE[,RULE...] -->             the whole file
//
// Only lint rules can be silenced: validation, parse and resolution findings are about
// whether a skill works at all, and Lint never sees them. A comment must fit on one line; one
// inside fenced code or inline code is an example, not a directive.
const (
	suppressFile     = "skillfleet-lint-disable"
	suppressNextLine = "skillfleet-lint-disable-next-line"
)

// suppressRE finds a comment that starts like a suppression; the directive is checked apart,
// so that a misspelt one ("-disable-nextline") is reported rather than ignored.
var suppressRE = regexp.MustCompile(`<!--\s*(skillfleet-lint\S*)(.*?)-->`)

// suppressions are the rules a body's comments silence, and the problems with the comments.
type suppressions struct {
	file  map[string]bool
	lines map[int]map[string]bool // line silenced -> rules
	diags diag.Diagnostics        // lint.suppression findings, which cannot be silenced
}

// SilenceableRules returns the ids a suppression comment may name: the lint rules, except the
// one that reports bad suppression comments.
func SilenceableRules() []string {
	var ids []string
	for _, r := range Rules() {
		if r.Stage == "lint" && r.ID != RuleLintSuppression {
			ids = append(ids, r.ID)
		}
	}
	return ids
}

// parseSuppressions reads the suppression comments of a body.
func parseSuppressions(s *Skill, lines []bodyLine) suppressions {
	var sp suppressions
	var known []string
	for _, bl := range lines {
		if bl.code || !strings.Contains(bl.prose, "skillfleet-lint") {
			continue
		}
		for _, m := range suppressRE.FindAllStringSubmatch(bl.prose, -1) {
			if known == nil {
				known = SilenceableRules()
			}
			directive, args := m[1], m[2]
			if directive != suppressFile && directive != suppressNextLine {
				sp.diags = append(sp.diags, diag.Warning(RuleLintSuppression, s.File, bl.line, fmt.Sprintf(
					"unknown suppression comment %q; write %s or %s followed by rule ids", clip(directive), suppressNextLine, suppressFile)))
				continue
			}
			ids := strings.FieldsFunc(args, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' })
			if len(ids) == 0 {
				sp.diags = append(sp.diags, diag.Warning(RuleLintSuppression, s.File, bl.line, fmt.Sprintf(
					"%s names no rule; list the rule ids to silence (skillfleet lint --rules lists them)", directive)))
			}
			for _, id := range ids {
				if !slices.Contains(known, id) {
					sp.diags = append(sp.diags, diag.Warning(RuleLintSuppression, s.File, bl.line, unknownRuleMessage(id, known)))
					continue
				}
				if directive == suppressFile {
					sp.file = addRule(sp.file, id)
					continue
				}
				if sp.lines == nil {
					sp.lines = map[int]map[string]bool{}
				}
				sp.lines[bl.line+1] = addRule(sp.lines[bl.line+1], id)
			}
		}
	}
	return sp
}

func addRule(set map[string]bool, id string) map[string]bool {
	if set == nil {
		set = map[string]bool{}
	}
	set[id] = true
	return set
}

// unknownRuleMessage says why id cannot be silenced, and suggests the rule probably meant.
func unknownRuleMessage(id string, known []string) string {
	if id == RuleLintSuppression {
		return fmt.Sprintf("%q cannot be silenced: fix or remove the suppression comment it reports", id)
	}
	if slices.ContainsFunc(Rules(), func(r RuleInfo) bool { return r.ID == id }) {
		return fmt.Sprintf("%q is not a lint rule and cannot be silenced; only lint findings can", id)
	}
	msg := fmt.Sprintf("unknown rule %q in suppression comment, so it silences nothing", clip(id))
	best, bestDist := "", 4
	for _, k := range known {
		if d := textdist.Levenshtein(strings.ToLower(id), k); d < bestDist {
			best, bestDist = k, d
		}
	}
	if best != "" {
		return msg + fmt.Sprintf("; did you mean %q?", best)
	}
	return msg + "; the lint rules are " + strings.Join(known, ", ")
}

// silenced reports whether a comment silences d.
func (sp suppressions) silenced(d diag.Diagnostic) bool {
	return sp.file[d.Rule] || sp.lines[d.Line][d.Rule]
}
