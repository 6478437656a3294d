package skill

import (
	"fmt"
	"math"
	"path"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
	"golang.org/x/text/unicode/norm"

	"github.com/skillfleet/skillfleet/diag"
	"github.com/skillfleet/skillfleet/internal/yamlstrict"
)

// Limits on the frontmatter, so that hostile YAML costs a diagnostic and not memory or time.
// Real frontmatter is well under a kilobyte; descriptions are capped at 1024 characters.
const (
	// MaxFrontmatterSize bounds the YAML text; it also bounds the node count (a node takes at
	// least two bytes of source), which bounds the memory the YAML parser allocates.
	MaxFrontmatterSize = 64 << 10
	// MaxYAMLDepth bounds nesting of mappings and lists.
	MaxYAMLDepth = 64
)

// decodeFrontmatter decodes the YAML between the delimiters into s. Form problems (syntax,
// duplicate keys, aliases, depth) are returned; problems with field types are kept in s for
// Validate. yamlLine is the file line of the first YAML line.
func decodeFrontmatter(s *Skill, text []byte, yamlLine int) diag.Diagnostics {
	d := &decoder{s: s, file: s.File, offset: yamlLine - 1}
	doc, problems := yamlstrict.Parse(text, yamlstrict.Options{
		MaxBytes: MaxFrontmatterSize, MaxDepth: MaxYAMLDepth, DuplicateKeys: true,
	})
	var form diag.Diagnostics
	for _, p := range problems {
		form = append(form, d.problem(p, len(text)))
	}
	if form.HasErrors() && doc == nil {
		return form
	}
	if doc == nil {
		// Nothing but comments or blank lines: an empty mapping, so Validate reports the
		// required fields by name instead of a vaguer "not a mapping".
		s.decoded = true
		return nil
	}
	if doc.Kind != yaml.MappingNode {
		return append(form, diag.Error(RuleFrontmatterNotMapping, s.File, d.line(doc.Line),
			fmt.Sprintf("frontmatter must be a YAML mapping of fields, not %s", describe(doc))))
	}
	s.decoded = true
	d.fields(doc)
	return form
}

// problem words a refusal of the YAML reader as a frontmatter diagnostic.
func (d *decoder) problem(p yamlstrict.Problem, size int) diag.Diagnostic {
	switch p.Kind {
	case yamlstrict.TooLarge:
		return diag.Error(RuleFrontmatterTooLarge, d.file, d.offset,
			fmt.Sprintf("frontmatter is %d bytes; the limit is %d", size, MaxFrontmatterSize))
	case yamlstrict.Alias:
		return diag.Error(RuleFrontmatterAlias, d.file, d.line(p.Line),
			fmt.Sprintf("YAML %s: anchors and aliases are not allowed in frontmatter", p.Message))
	case yamlstrict.TooDeep:
		return diag.Error(RuleFrontmatterTooDeep, d.file, d.line(p.Line),
			fmt.Sprintf("frontmatter nests deeper than %d levels", MaxYAMLDepth))
	case yamlstrict.DuplicateKey:
		return diag.Error(RuleFrontmatterDuplicateKey, d.file, d.line(p.Line),
			fmt.Sprintf("key %q repeats the one on line %d", clip(p.Message), d.line(p.FirstLine)))
	default:
		return diag.Error(RuleFrontmatterYAML, d.file, d.line(p.Line), "invalid YAML: "+p.Message)
	}
}

type decoder struct {
	s      *Skill
	file   string
	offset int // file line = offset + line within the frontmatter
}

// line converts a line within the frontmatter to a file line.
func (d *decoder) line(yamlLine int) int {
	return d.offset + yamlLine
}

// pairs yields the key/value pairs of a mapping, skipping repeated keys (reported by the reader)
// and non-scalar keys (reported with rule).
func (d *decoder) pairs(m *yaml.Node, rule, where string, yield func(key string, k, v *yaml.Node)) {
	var seen map[string]bool
	if len(m.Content) > 32 {
		seen = make(map[string]bool, len(m.Content)/2)
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.typeErr(rule, "", k.Line, fmt.Sprintf("%s has a key that is %s; keys must be plain strings", where, describe(k)))
			continue
		}
		// A repeated key is reported by the reader; the first value is used.
		if seen != nil {
			if seen[k.Value] {
				continue
			}
			seen[k.Value] = true
		} else if repeatedKey(m, i) {
			continue
		}
		yield(k.Value, k, v)
	}
}

// repeatedKey reports whether the key at index i of a small mapping repeats an earlier one.
func repeatedKey(m *yaml.Node, i int) bool {
	k := m.Content[i]
	for j := 0; j < i; j += 2 {
		if p := m.Content[j]; p.Kind == yaml.ScalarNode && p.Value == k.Value {
			return true
		}
	}
	return false
}

// typeErr records a field problem for Validate. field, when set, marks the field as having the
// wrong type so Validate does not pile value checks on top.
func (d *decoder) typeErr(rule, field string, yamlLine int, msg string) {
	d.s.decodeDiags = append(d.s.decodeDiags, diag.Error(rule, d.file, d.line(yamlLine), msg))
	if field != "" {
		if d.s.badType == nil {
			d.s.badType = map[string]bool{}
		}
		d.s.badType[field] = true
	}
}

func (d *decoder) typeWarn(rule string, yamlLine int, msg string) {
	d.s.decodeDiags = append(d.s.decodeDiags, diag.Warning(rule, d.file, d.line(yamlLine), msg))
}

func (d *decoder) fields(m *yaml.Node) {
	s := d.s
	d.pairs(m, RuleFrontmatterYAML, "frontmatter", func(key string, k, v *yaml.Node) {
		s.Lines[key] = d.line(k.Line)
		s.keys = append(s.keys, key)
		switch key {
		case "name":
			if str, ok := d.stringField(key, RuleNameType, k, v); ok {
				s.Name = NormalizeName(str)
			}
		case "description":
			if str, ok := d.stringField(key, RuleDescriptionType, k, v); ok {
				s.Description = strings.TrimSpace(str)
			}
		case "license":
			s.License, _ = d.stringField(key, RuleLicenseType, k, v)
		case "compatibility":
			s.Compatibility, _ = d.stringField(key, RuleCompatibilityType, k, v)
		case "allowed-tools":
			s.AllowedTools, _ = d.stringField(key, RuleAllowedToolsType, k, v)
		case "metadata":
			d.metadata(k, v)
		case "requires":
			d.requires(k, v)
		case "test":
			d.test(k, v)
		case "disable-model-invocation":
			// Only a YAML true turns model invocation off; a quoted "true" is a string,
			// which the platform does not read as the flag either.
			s.modelInvocationOff = v.Kind == yaml.ScalarNode && v.ShortTag() == "!!bool" && strings.EqualFold(v.Value, "true")
		case "when_to_use":
			if isString(v) {
				s.whenToUse = strings.TrimSpace(v.Value)
			}
		}
	})
}

// stringField decodes a string-valued field. null decodes as "" (ok) so that Validate can tell
// "present but empty" from "wrong type"; other non-strings are type errors.
func (d *decoder) stringField(field, rule string, k, v *yaml.Node) (string, bool) {
	if isNull(v) {
		return "", true
	}
	if isString(v) {
		return v.Value, true
	}
	msg := fmt.Sprintf("%s must be a string, not %s", field, describe(v))
	if v.Kind == yaml.ScalarNode {
		msg += fmt.Sprintf("; quote it: %s: %q", field, clip(v.Value))
	} else if field == "allowed-tools" && v.Kind == yaml.SequenceNode {
		msg += "; write the tools space-separated on one line: allowed-tools: Read Grep Bash"
	}
	d.typeErr(rule, field, k.Line, msg)
	return "", false
}

func (d *decoder) metadata(k, v *yaml.Node) {
	s := d.s
	if isNull(v) {
		return
	}
	if v.Kind != yaml.MappingNode {
		d.typeErr(RuleMetadataType, "metadata", k.Line, fmt.Sprintf("metadata must be a mapping of string keys to string values, not %s", describe(v)))
		return
	}
	s.Metadata = make(map[string]string, len(v.Content)/2)
	d.pairs(v, RuleMetadataType, "metadata", func(key string, mk, mv *yaml.Node) {
		s.Lines["metadata."+key] = d.line(mk.Line)
		qkey := clip(key)
		switch {
		case isString(mv):
			s.Metadata[key] = mv.Value
		case isNull(mv):
			d.typeErr(RuleMetadataValueType, "", mk.Line, fmt.Sprintf("metadata.%s has no value; metadata values must be strings (write \"\" for an empty one)", qkey))
		case mv.Kind == yaml.ScalarNode:
			// Kept as written so tooling still sees e.g. the version, but reported: YAML
			// reads `1.0` as a number and `1.10` as 1.1, which is how versions get mangled.
			s.Metadata[key] = mv.Value
			d.typeErr(RuleMetadataValueType, "", mk.Line, fmt.Sprintf("metadata.%s must be a string, not %s; quote it: %s: %q", qkey, describe(mv), qkey, clip(mv.Value)))
		default:
			d.typeErr(RuleMetadataValueType, "", mk.Line, fmt.Sprintf("metadata.%s must be a string, not %s", qkey, describe(mv)))
		}
	})
	s.Version = s.Metadata["version"]
}

func (d *decoder) requires(k, v *yaml.Node) {
	if isNull(v) {
		return
	}
	const shape = "requires must be a list of entries like `- skill: name` with an optional `version: \"1.2.0\"`"
	if v.Kind != yaml.SequenceNode {
		d.typeErr(RuleRequiresType, "requires", k.Line, fmt.Sprintf("%s, not %s", shape, describe(v)))
		return
	}
	seen := map[string]int{}
	for i, item := range v.Content {
		where := fmt.Sprintf("requires[%d]", i)
		if item.Kind != yaml.MappingNode {
			msg := fmt.Sprintf("%s must be a mapping with a skill key, not %s", where, describe(item))
			if isString(item) {
				msg += fmt.Sprintf("; write `- skill: %s`", clip(item.Value))
			}
			d.typeErr(RuleRequiresType, "", item.Line, msg)
			continue
		}
		req := Requirement{Line: d.line(item.Line)}
		hasSkill, ok := false, true
		d.pairs(item, RuleRequiresType, where, func(key string, ik, iv *yaml.Node) {
			switch key {
			case "skill":
				hasSkill = true
				switch {
				case isString(iv) && strings.TrimSpace(iv.Value) != "":
					req.Skill = NormalizeName(iv.Value)
				case isString(iv) || isNull(iv):
					d.typeErr(RuleRequiresType, "", ik.Line, where+".skill must name a skill, not be empty")
					ok = false
				default:
					d.typeErr(RuleRequiresType, "", ik.Line, fmt.Sprintf("%s.skill must be a string, not %s", where, describe(iv)))
					ok = false
				}
			case "version":
				switch {
				case isNull(iv):
				case isString(iv):
					req.Version = strings.TrimSpace(iv.Value)
				case iv.Kind == yaml.ScalarNode:
					d.typeErr(RuleRequiresType, "", ik.Line, fmt.Sprintf("%s.version must be a string, not %s; quote it: version: %q", where, describe(iv), clip(iv.Value)))
					ok = false
				default:
					d.typeErr(RuleRequiresType, "", ik.Line, fmt.Sprintf("%s.version must be a string, not %s", where, describe(iv)))
					ok = false
				}
			default:
				d.typeErr(RuleRequiresType, "", ik.Line, fmt.Sprintf("%s has unknown key %q; an entry has only skill and version", where, clip(key)))
			}
		})
		if !hasSkill {
			d.typeErr(RuleRequiresType, "", item.Line, where+" has no skill key")
			continue
		}
		if !ok {
			continue
		}
		if first, dup := seen[req.Skill]; dup {
			d.typeWarn(RuleRequiresDuplicate, item.Line, fmt.Sprintf("%s repeats skill %q already required on line %d", where, clip(req.Skill), d.line(first)))
			continue
		}
		seen[req.Skill] = item.Line
		d.s.Requires = append(d.s.Requires, req)
	}
}

func (d *decoder) test(k, v *yaml.Node) {
	s := d.s
	if v.Kind != yaml.MappingNode {
		d.typeErr(RuleTestType, "test", k.Line, fmt.Sprintf("test must be a mapping with cases (a path) and an optional config, not %s", describe(v)))
		return
	}
	tc := &TestConfig{Timeout: DefaultTestTimeout, Parallel: true, Line: d.line(k.Line)}
	hasCases := false
	d.pairs(v, RuleTestType, "test", func(key string, tk, tv *yaml.Node) {
		s.Lines["test."+key] = d.line(tk.Line)
		switch key {
		case "cases":
			hasCases = true
			if !isString(tv) || strings.TrimSpace(tv.Value) == "" {
				what := "empty"
				if !isNull(tv) && !isString(tv) {
					what = describe(tv)
				}
				d.typeErr(RuleTestCases, "test.cases", tk.Line, fmt.Sprintf("test.cases must be the relative path of the cases file, not %s", what))
				return
			}
			tc.Cases = strings.TrimSpace(tv.Value)
			if msg := checkRelativePath(tc.Cases); msg != "" {
				d.typeErr(RuleTestCases, "test.cases", tk.Line, fmt.Sprintf("test.cases %q %s", clip(tc.Cases), msg))
			}
		case "config":
			d.testConfig(tc, tk, tv)
		default:
			d.typeErr(RuleTestType, "", tk.Line, fmt.Sprintf("test has unknown key %q; it has only cases and config", clip(key)))
		}
	})
	if !hasCases {
		d.typeErr(RuleTestCases, "test.cases", k.Line, "test needs cases: the relative path of the cases file")
	}
	s.Test = tc
}

func (d *decoder) testConfig(tc *TestConfig, k, v *yaml.Node) {
	if isNull(v) {
		return
	}
	if v.Kind != yaml.MappingNode {
		d.typeErr(RuleTestConfig, "", k.Line, fmt.Sprintf("test.config must be a mapping with timeout, parallel and the runs: auto settings, not %s", describe(v)))
		return
	}
	d.pairs(v, RuleTestConfig, "test.config", func(key string, ck, cv *yaml.Node) {
		d.s.Lines["test.config."+key] = d.line(ck.Line)
		switch key {
		case "timeout":
			secs, err := positiveSeconds(cv)
			if err != "" {
				d.typeErr(RuleTestConfig, "", ck.Line, "test.config.timeout "+err)
				return
			}
			tc.Timeout = secs
		case "parallel":
			if cv.Kind != yaml.ScalarNode || cv.ShortTag() != "!!bool" {
				d.typeErr(RuleTestConfig, "", ck.Line, fmt.Sprintf("test.config.parallel must be true or false, not %s", describeValue(cv)))
				return
			}
			tc.Parallel = cv.Value == "true" || cv.Value == "True" || cv.Value == "TRUE"
		case "runs":
			if cv.Kind != yaml.ScalarNode || cv.ShortTag() != "!!str" || cv.Value != "auto" {
				d.typeErr(RuleTestConfig, "", ck.Line, fmt.Sprintf("test.config.runs can only be auto (a sequential test for every case), not %s; give a fixed runs per case", describeValue(cv)))
				return
			}
			tc.Sequential = true
		case "max_runs":
			n, err := strconv.Atoi(cv.Value)
			if cv.Kind != yaml.ScalarNode || cv.ShortTag() != "!!int" || err != nil || n < 1 || n > MaxTestRuns {
				d.typeErr(RuleTestConfig, "", ck.Line, fmt.Sprintf("test.config.max_runs must be an integer from 1 to %d, not %s", MaxTestRuns, describeValue(cv)))
				return
			}
			tc.MaxRuns = n
		case "confidence", "delta", "alpha", "beta":
			f, err := strconv.ParseFloat(cv.Value, 64)
			tag := cv.ShortTag()
			if cv.Kind != yaml.ScalarNode || (tag != "!!int" && tag != "!!float") || err != nil || !(f > 0 && f <= 1) {
				d.typeErr(RuleTestConfig, "", ck.Line, fmt.Sprintf("test.config.%s must be a number in (0, 1], not %s", key, describeValue(cv)))
				return
			}
			switch key {
			case "confidence":
				tc.Confidence = f
			case "delta":
				tc.Delta = f
			case "alpha":
				tc.Alpha = f
			default:
				tc.Beta = f
			}
		default:
			d.typeErr(RuleTestConfig, "", ck.Line, fmt.Sprintf("test.config has unknown key %q; it has only timeout, parallel, runs (auto), confidence, max_runs, delta, alpha and beta", clip(key)))
		}
	})
}

// positiveSeconds decodes a timeout given as a number of seconds.
func positiveSeconds(v *yaml.Node) (time.Duration, string) {
	tag := v.ShortTag()
	if v.Kind != yaml.ScalarNode || (tag != "!!int" && tag != "!!float") {
		hint := ""
		if isString(v) {
			if _, err := time.ParseDuration(v.Value); err == nil {
				hint = "; write the number of seconds unquoted, e.g. timeout: 30"
			}
		}
		return 0, fmt.Sprintf("must be a number of seconds, not %s%s", describeValue(v), hint)
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(v.Value, "_", ""), 64)
	if err != nil {
		if i, ierr := strconv.ParseInt(strings.ReplaceAll(v.Value, "_", ""), 0, 64); ierr == nil {
			f, err = float64(i), nil
		}
	}
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Sprintf("must be a finite number of seconds, not %s", v.Value)
	}
	if f <= 0 {
		return 0, fmt.Sprintf("must be positive, not %s", v.Value)
	}
	if f > MaxTestTimeout.Seconds() {
		return 0, fmt.Sprintf("must be at most %d seconds (24 hours), not %s", int(MaxTestTimeout.Seconds()), v.Value)
	}
	return time.Duration(f * float64(time.Second)), ""
}

// checkRelativePath returns why p is not a relative path inside the skill directory, or "".
func checkRelativePath(p string) string {
	slashed := strings.ReplaceAll(p, `\`, "/")
	if path.IsAbs(slashed) || (len(slashed) >= 2 && slashed[1] == ':') {
		return "must be relative to the skill directory, not absolute"
	}
	if c := path.Clean(slashed); c == ".." || strings.HasPrefix(c, "../") {
		return "leaves the skill directory"
	}
	return ""
}

// NormalizeName returns a skill name the way the reference validator compares names:
// NFKC-normalised, surrounding whitespace trimmed.
func NormalizeName(name string) string {
	return norm.NFKC.String(strings.TrimSpace(name))
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// isString reports whether n is a string as YAML 1.2 reads it, which the specification's
// frontmatter and skills-ref follow: its core schema has no timestamp type, so an unquoted date
// (2025-01-15), which the YAML 1.1 resolver tags !!timestamp, is a string. Only an explicit
// !!timestamp tag makes a date.
func isString(n *yaml.Node) bool {
	if n.Kind != yaml.ScalarNode {
		return false
	}
	switch n.ShortTag() {
	case "!!str":
		return true
	case "!!timestamp":
		return n.Style&yaml.TaggedStyle == 0
	}
	return false
}

// describe names the YAML type of n for messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.DocumentNode:
		return "a document"
	case yaml.AliasNode:
		return "an alias"
	}
	switch tag := n.ShortTag(); tag {
	case "!!str":
		return "a string"
	case "!!int":
		return "an integer (" + n.Value + ")"
	case "!!float":
		return "a number (" + n.Value + ")"
	case "!!bool":
		return "a boolean (" + n.Value + ")"
	case "!!null":
		return "null"
	case "!!timestamp":
		return "a date (" + n.Value + ")"
	case "!!binary":
		return "binary data"
	default:
		return "a value tagged " + tag
	}
}

// describeValue is describe, quoting strings so the reader sees what was written.
func describeValue(n *yaml.Node) string {
	if isString(n) {
		return fmt.Sprintf("the string %q", n.Value)
	}
	return describe(n)
}
