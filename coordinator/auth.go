package coordinator

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"math"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/skillfleet/skillfleet/diag"
	"github.com/skillfleet/skillfleet/internal/httpserve"
	"github.com/skillfleet/skillfleet/internal/tenant"
)

// Token is one bearer token the API accepts, with the name limits and logs know its holder
// by, and the team and role that decide what its holder may read and change.
type Token struct {
	Name, Secret string
	// Team is the holder's team ("" is tenant.DefaultTeam).
	Team string
	// Role is what the holder may do (0 is tenant.Member).
	Role tenant.Role
}

// Principal is the caller a token authenticates.
func (t Token) Principal() tenant.Principal {
	role := t.Role
	if role == 0 {
		role = tenant.Member
	}
	return tenant.Principal{Name: t.Name, Team: tenant.Team(t.Team), Role: role}
}

// ParseTokens reads a token file: one token per line, "NAME TOKEN [team=TEAM]
// [role=admin|member|viewer]" or a bare token (named "line N"); blank lines and lines starting
// with # are ignored. A token without team= is in the team "default" and one without role= a
// member, so a file written before teams gives every token what it had: the one team's work.
// source names the file in errors. A file with no token is an error: an empty file must not
// turn authentication off.
//
// A line of any other shape is an error naming the file, the line and the rule (*TokenFileError),
// never what the line holds, which may be a token: a KEY=VALUE where the token belongs (a token
// forgotten, so an option would have become the token), a name holding '=', an unknown or
// repeated key, more than four fields, a bad team or role. A token may end in '=' padding
// (base64) but hold no other '='.
func ParseTokens(text, source string) ([]Token, error) {
	var out []Token
	names, secrets := map[string]int{}, map[string]int{}
	for i, line := range strings.Split(text, "\n") {
		n := i + 1
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		t, err := parseTokenLine(strings.Fields(line), n)
		if err != nil {
			err.File, err.Line = source, n
			return nil, err
		}
		if prev, ok := names[t.Name]; ok {
			return nil, tokenError(source, n, "tokens.name-repeated", "the name on this line is already the name of line %d's token", prev)
		}
		if prev, ok := secrets[t.Secret]; ok {
			return nil, tokenError(source, n, "tokens.token-repeated", "the same token as on line %d", prev)
		}
		names[t.Name], secrets[t.Secret] = n, n
		out = append(out, t)
	}
	if len(out) == 0 {
		return nil, tokenError(source, 0, "tokens.empty", "the file holds no token: an empty token file would leave the API open")
	}
	return out, nil
}

// TokenFileError is a token file's line that is not a token: its file, line, rule and what is
// wrong, never the line's text.
type TokenFileError struct {
	File       string
	Line       int
	Rule, What string
}

// Error renders the error as a diagnostic: "FILE:LINE: error RULE: what".
func (e *TokenFileError) Error() string {
	return diag.Error(e.Rule, e.File, e.Line, e.What).String()
}

func tokenError(file string, line int, rule, format string, args ...any) *TokenFileError {
	return &TokenFileError{File: file, Line: line, Rule: rule, What: fmt.Sprintf(format, args...)}
}

// tokenLineShape is what every line of a token file must look like, for errors.
const tokenLineShape = `want "NAME TOKEN [team=TEAM] [role=admin|member|viewer]" or a bare token`

// parseTokenLine reads one line's fields (line n); the error's file and line are the caller's
// to fill.
func parseTokenLine(f []string, n int) (Token, *TokenFileError) {
	switch {
	case len(f) > 4:
		return Token{}, tokenError("", 0, "tokens.fields", "%d fields: %s", len(f), tokenLineShape)
	case isOption(f[len(f)-1]) && len(f) <= 2:
		// "ci-x team=platform-engineering": the token was forgotten, and the option would
		// have become the token.
		return Token{}, tokenError("", 0, "tokens.token-missing", "a KEY=VALUE option where the token belongs: the token is missing (%s)", tokenLineShape)
	case len(f) == 1:
		return Token{Name: fmt.Sprintf("line %d", n), Secret: f[0]}, nil
	case strings.Contains(f[0], "="):
		return Token{}, tokenError("", 0, "tokens.name", "the name (field 1) holds '=': %s", tokenLineShape)
	case isOption(f[1]):
		return Token{}, tokenError("", 0, "tokens.token-missing", "a KEY=VALUE option where the token belongs (field 2): the token is missing (%s)", tokenLineShape)
	}
	t := Token{Name: f[0], Secret: f[1]}
	seen := map[string]bool{}
	for i, opt := range f[2:] {
		field := i + 3
		k, v, ok := strings.Cut(opt, "=")
		if !ok || (k != "team" && k != "role") {
			// Not the field itself: a token misplaced here would be shown.
			return Token{}, tokenError("", 0, "tokens.option", "field %d is not team=TEAM or role=admin|member|viewer", field)
		}
		if seen[k] {
			return Token{}, tokenError("", 0, "tokens.option-repeated", "%s= given twice", k)
		}
		seen[k] = true
		if k == "team" {
			if err := tenant.CheckTeam(v); err != nil {
				return Token{}, tokenError("", 0, "tokens.team", "%v", err)
			}
			t.Team = v
			continue
		}
		role, err := tenant.ParseRole(v)
		if err != nil {
			return Token{}, tokenError("", 0, "tokens.role", "%v", err)
		}
		t.Role = role
	}
	return t, nil
}

// isOption reports whether a field has the shape of a KEY=VALUE option rather than a token's:
// an '=' with something after it (a base64 token's '=' padding comes only at its end).
func isOption(field string) bool {
	return strings.Contains(strings.TrimRight(field, "="), "=")
}

// tokens are the configured tokens: Tokens, and Token as one named "default".
func (cfg APIConfig) tokens() []Token {
	out := append([]Token(nil), cfg.Tokens...)
	if cfg.Token != "" {
		out = append(out, Token{Name: "default", Secret: cfg.Token})
	}
	return out
}

// auth admits a request to h as a principal: the holder of one of the tokens presented as a
// bearer token, or the user an authenticating proxy names (APIConfig.Proxy); without tokens
// or a proxy, anyone whose request a browser on another site cannot forge, as
// tenant.Anonymous.
func (a *api) auth(h http.HandlerFunc) http.HandlerFunc {
	tokens := a.cfg.tokens()
	if len(tokens) == 0 && !a.cfg.Proxy.Enabled() {
		return func(w http.ResponseWriter, r *http.Request) {
			if code, err := checkAnonymous(r); err != nil {
				writeError(w, code, err, nil)
				return
			}
			h(w, r.WithContext(tenant.With(r.Context(), tenant.Anonymous)))
		}
	}
	return func(w http.ResponseWriter, r *http.Request) {
		p, ok, err := a.cfg.Proxy.FromRequest(r)
		if err != nil {
			a.c.audit(tenant.Principal{}, "", "auth", "api", outcomeRefused, err.Error())
			writeError(w, http.StatusUnauthorized, err, nil)
			return
		}
		if ok {
			// The proxy authenticates a browser by its cookie, which a page of another site
			// sends too: a change must come from this site, or be a request no form can make.
			if code, err := checkBrowser(r); err != nil {
				writeError(w, code, err, nil)
				return
			}
			h(w, r.WithContext(tenant.With(r.Context(), p)))
			return
		}
		got, presented := bearerToken(r)
		if !presented {
			// No guess, so no cost: any page a browser visits can make it send requests
			// without a token, and counting them would let that page lock its visitor's
			// address (or a whole NAT) out of the API and the login.
			w.Header().Set("WWW-Authenticate", `Bearer realm="skillfleet"`)
			writeError(w, http.StatusUnauthorized, errors.New("missing bearer token"), nil)
			return
		}
		// An address that has guessed wrong too often is refused before any token is
		// compared: a right guess must not get through either, or the limit would not slow
		// the guessing.
		if retry, blocked := a.cfg.Guesses.Blocked(r); blocked {
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(retry.Seconds()))))
			writeError(w, http.StatusTooManyRequests, fmt.Errorf("too many wrong tokens from this address: try again in %s", retry.Round(time.Second)), nil)
			return
		}
		// Every token is compared, in constant time, so timing tells neither a token nor
		// which one matched.
		for _, t := range tokens {
			if subtle.ConstantTimeCompare([]byte(got), []byte(t.Secret)) == 1 {
				p, ok = t.Principal(), true
			}
		}
		if !ok {
			a.cfg.Guesses.Failed(r)
			a.c.audit(tenant.Principal{}, "", "auth", "api", outcomeRefused, "wrong bearer token from "+r.RemoteAddr)
			w.Header().Set("WWW-Authenticate", `Bearer realm="skillfleet", error="invalid_token"`)
			writeError(w, http.StatusUnauthorized, errors.New("wrong bearer token"), nil)
			return
		}
		h(w, r.WithContext(tenant.With(r.Context(), p)))
	}
}

// bearerToken is the token of r's "Authorization: Bearer" header, and whether it presents
// one: another scheme, or the scheme alone, presents none. The scheme is case-insensitive
// (RFC 9110).
func bearerToken(r *http.Request) (string, bool) {
	scheme, got, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	got = strings.TrimSpace(got)
	return got, strings.EqualFold(scheme, "Bearer") && got != ""
}

// checkAnonymous refuses what a token-less API must not serve: a Host that is not loopback (a
// DNS-rebinding page reaches a loopback port under its own name), any Origin (a browser page of
// another site), and an upload that is not a tar (a cross-origin form POST needs no preflight
// only with a form or text content type).
func checkAnonymous(r *http.Request) (int, error) {
	if !httpserve.LoopbackHost(r.Host) {
		return http.StatusForbidden, fmt.Errorf("without a bearer token the API serves only loopback hosts (127.0.0.1, ::1, localhost), not %q: configure a token to serve others", r.Host)
	}
	if r.Header.Get("Origin") != "" {
		return http.StatusForbidden, errors.New("without a bearer token the API refuses browser requests (an Origin header): configure a token")
	}
	return checkUpload(r)
}

// checkBrowser refuses a request of a user a proxy authenticated that a page of another site
// could have made: one with another site's Origin, or a POST a form could send.
func checkBrowser(r *http.Request) (int, error) {
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || u.Host != r.Host {
			return http.StatusForbidden, fmt.Errorf("a request of origin %q is not this site's (%s)", o, r.Host)
		}
	}
	return checkUpload(r)
}

// checkUpload refuses a POST that is not a tar: a cross-origin form POST needs no preflight
// only with a form or text content type.
func checkUpload(r *http.Request) (int, error) {
	if r.Method == http.MethodPost {
		mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || mt != "application/x-tar" {
			return http.StatusUnsupportedMediaType, fmt.Errorf("an upload must have Content-Type application/x-tar, got %q", r.Header.Get("Content-Type"))
		}
	}
	return 0, nil
}
