package agent

import (
	"fmt"
	"path"
	"regexp"
	"strings"
)

// The built-in agent's tools.
const (
	toolBash  = "bash"
	toolRead  = "read_file"
	toolWrite = "write_file"
)

// toolPolicy is what a skill's allowed-tools field permits.
type toolPolicy struct {
	bash      bool       // bash is offered
	bashAll   bool       // any command; else only commands matching bashRules
	bashRules []bashRule // from entries like Bash(git:*)
	read      bool
	readAll   bool
	readGlobs []string // from entries like Read(/work/**)
	write     bool
	writeAll  bool
	writeGlob []string
	ignored   []string // entries naming tools the built-in agent does not have
}

// bashRule is one Bash(...) pattern: a word prefix (Bash(git:*), Bash(git status *)) or an
// exact command (Bash(npm test)).
type bashRule struct {
	words  []string
	prefix bool
	text   string // as written, for messages
}

// parseAllowedTools reads a skill's allowed-tools field: entries separated by spaces or commas
// (outside parentheses), each a tool name with an optional (pattern). Bash → bash, Read →
// read_file, Write/Edit/MultiEdit → write_file, matched case-insensitively; the tools' own names
// are accepted too. Entries naming other tools (Grep, WebFetch, mcp__…) are ignored: the
// built-in agent does not have them. An empty field allows all three tools.
func parseAllowedTools(field string) (toolPolicy, error) {
	entries, err := splitEntries(field)
	if err != nil {
		return toolPolicy{}, err
	}
	if len(entries) == 0 {
		return toolPolicy{bash: true, bashAll: true, read: true, readAll: true, write: true, writeAll: true}, nil
	}
	var p toolPolicy
	for _, e := range entries {
		name, pattern, hasPattern := e, "", false
		if i := strings.IndexByte(e, '('); i >= 0 {
			if !strings.HasSuffix(e, ")") {
				return toolPolicy{}, fmt.Errorf("allowed-tools: entry %q: unbalanced parentheses", e)
			}
			name, pattern, hasPattern = e[:i], strings.TrimSpace(e[i+1:len(e)-1]), true
		}
		all := !hasPattern || pattern == "" || pattern == "*" || pattern == "**"
		switch strings.ToLower(name) {
		case toolBash:
			p.bash = true
			if all {
				p.bashAll = true
				continue
			}
			r, err := parseBashRule(pattern)
			if err != nil {
				return toolPolicy{}, fmt.Errorf("allowed-tools: entry %q: %w", e, err)
			}
			p.bashRules = append(p.bashRules, r)
		case "read", toolRead:
			p.read = true
			if all {
				p.readAll = true
			} else {
				p.readGlobs = append(p.readGlobs, pattern)
			}
		case "write", "edit", "multiedit", toolWrite:
			p.write = true
			if all {
				p.writeAll = true
			} else {
				p.writeGlob = append(p.writeGlob, pattern)
			}
		default:
			p.ignored = append(p.ignored, e)
		}
	}
	return p, nil
}

// splitEntries splits on spaces and commas outside parentheses.
func splitEntries(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	depth := 0
	flush := func() {
		if t := strings.TrimSpace(cur.String()); t != "" {
			out = append(out, t)
		}
		cur.Reset()
	}
	for _, r := range s {
		switch {
		case r == '(':
			depth++
		case r == ')':
			depth--
			if depth < 0 {
				return nil, fmt.Errorf("allowed-tools: unbalanced parentheses in %q", s)
			}
		case depth == 0 && (r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r'):
			flush()
			continue
		}
		cur.WriteRune(r)
	}
	if depth != 0 {
		return nil, fmt.Errorf("allowed-tools: unbalanced parentheses in %q", s)
	}
	flush()
	return out, nil
}

func parseBashRule(pattern string) (bashRule, error) {
	r := bashRule{text: pattern}
	body := pattern
	switch {
	case strings.HasSuffix(body, ":*"):
		body, r.prefix = strings.TrimSuffix(body, ":*"), true
	case strings.HasSuffix(body, " *"):
		body, r.prefix = strings.TrimSuffix(body, " *"), true
	}
	words, err := simpleCommand(body)
	if err != nil || len(words) == 0 {
		return bashRule{}, fmt.Errorf("bash pattern %q is not a plain command prefix", pattern)
	}
	r.words = words
	return r, nil
}

// allowsBash says whether the policy lets bash run command; the reason says why not.
func (p toolPolicy) allowsBash(command string) (bool, string) {
	if !p.bash {
		return false, "bash is not in the skill's allowed-tools"
	}
	if p.bashAll {
		return true, ""
	}
	var allowed []string
	for _, r := range p.bashRules {
		allowed = append(allowed, "Bash("+r.text+")")
	}
	list := strings.Join(allowed, " ")
	words, err := simpleCommand(command)
	if err != nil {
		return false, "allowed-tools permits only " + list + ", and only as one simple command: " + err.Error()
	}
	for _, r := range p.bashRules {
		if r.matches(words) {
			return true, ""
		}
	}
	return false, "allowed-tools permits only " + list
}

func (r bashRule) matches(words []string) bool {
	if len(words) < len(r.words) || (!r.prefix && len(words) != len(r.words)) {
		return false
	}
	for i, w := range r.words {
		if words[i] != w {
			return false
		}
	}
	return true
}

// allowsPath says whether a read_file or write_file glob list admits abs (a clean absolute
// path). Relative globs are relative to workdir; ** matches across directories, * and ? within
// one.
func allowsPath(all bool, globs []string, abs, workdir string) bool {
	if all {
		return true
	}
	for _, g := range globs {
		g = strings.TrimPrefix(g, "./")
		if !path.IsAbs(g) {
			if workdir == "" {
				continue
			}
			g = workdir + "/" + g
		}
		if globRegexp(g).MatchString(abs) {
			return true
		}
	}
	return false
}

func globRegexp(g string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(g); i++ {
		switch c := g[i]; {
		case c == '*' && i+1 < len(g) && g[i+1] == '*':
			b.WriteString(".*")
			i++
		case c == '*':
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

// simpleCommand splits a shell command into its words when it is one simple command: words,
// quotes and backslash escapes only. Anything that could run a second command or change what
// runs — ; & | newlines, redirections, parentheses, $ expansions and backquotes, even inside
// double quotes — is refused, so a pattern like Bash(git:*) cannot be escaped with
// "git status; rm -rf /".
func simpleCommand(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	end := func() {
		if inWord {
			words = append(words, cur.String())
			cur.Reset()
			inWord = false
		}
	}
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch r {
		case ' ', '\t':
			end()
		case '\'':
			j := i + 1
			for j < len(rs) && rs[j] != '\'' {
				j++
			}
			if j == len(rs) {
				return nil, fmt.Errorf("unterminated single quote")
			}
			cur.WriteString(string(rs[i+1 : j]))
			inWord, i = true, j
		case '"':
			j := i + 1
			for ; j < len(rs) && rs[j] != '"'; j++ {
				switch rs[j] {
				case '$', '`':
					return nil, fmt.Errorf("expansion %q inside double quotes", rs[j])
				case '\\':
					// Inside double quotes a backslash escapes only these; before anything
					// else it is itself.
					if j+1 < len(rs) && strings.ContainsRune("$`\"\\", rs[j+1]) {
						j++
					} else if j+1 < len(rs) && rs[j+1] == '\n' {
						return nil, fmt.Errorf("line continuation")
					}
				}
				cur.WriteRune(rs[j])
			}
			if j == len(rs) {
				return nil, fmt.Errorf("unterminated double quote")
			}
			inWord, i = true, j
		case '\\':
			if i+1 >= len(rs) {
				return nil, fmt.Errorf("trailing backslash")
			}
			if rs[i+1] == '\n' {
				return nil, fmt.Errorf("line continuation")
			}
			i++
			cur.WriteRune(rs[i])
			inWord = true
		case ';', '&', '|', '<', '>', '(', ')', '$', '`', '\n', '\r':
			return nil, fmt.Errorf("shell syntax %q", r)
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	end()
	return words, nil
}
