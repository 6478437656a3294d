package coordinator

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"math"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/skillfleet/skillfleet/internal/httpserve"
)

// Token is one bearer token the API accepts, with the name limits and logs know its holder by.
type Token struct {
	Name, Secret string
}

// ParseTokens reads a token file: one token per line, "NAME TOKEN" or a bare token (named
// "line N"); blank lines and lines starting with # are ignored. source names the file in
// errors. A file with no token is an error: an empty file must not turn authentication off.
func ParseTokens(text, source string) ([]Token, error) {
	var out []Token
	names, secrets := map[string]int{}, map[string]int{}
	for i, line := range strings.Split(text, "\n") {
		n := i + 1
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var t Token
		switch f := strings.Fields(line); len(f) {
		case 1:
			t = Token{Name: fmt.Sprintf("line %d", n), Secret: f[0]}
		case 2:
			t = Token{Name: f[0], Secret: f[1]}
		default:
			return nil, fmt.Errorf("%s:%d: want \"NAME TOKEN\" or a bare token, got %d fields", source, n, len(f))
		}
		if prev, ok := names[t.Name]; ok {
			return nil, fmt.Errorf("%s:%d: token name %q already used on line %d", source, n, t.Name, prev)
		}
		if prev, ok := secrets[t.Secret]; ok {
			return nil, fmt.Errorf("%s:%d: the same token as on line %d", source, n, prev)
		}
		names[t.Name], secrets[t.Secret] = n, n
		out = append(out, t)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no token: an empty token file would leave the API open", source)
	}
	return out, nil
}

// tokens are the configured tokens: Tokens, and Token as one named "default".
func (cfg APIConfig) tokens() []Token {
	out := append([]Token(nil), cfg.Tokens...)
	if cfg.Token != "" {
		out = append(out, Token{Name: "default", Secret: cfg.Token})
	}
	return out
}

// auth admits a request to h: with tokens, one of them as a bearer token (its name becomes the
// request's principal); without, only a request a browser on another site cannot forge.
func (a *api) auth(h http.HandlerFunc) http.HandlerFunc {
	tokens := a.cfg.tokens()
	if len(tokens) == 0 {
		return func(w http.ResponseWriter, r *http.Request) {
			if code, err := checkAnonymous(r); err != nil {
				writeError(w, code, err, nil)
				return
			}
			h(w, r.WithContext(withPrincipal(r.Context(), "")))
		}
	}
	return func(w http.ResponseWriter, r *http.Request) {
		// An address that has guessed wrong too often is refused before any token is
		// compared: a right guess must not get through either, or the limit would not slow
		// the guessing.
		if retry, blocked := a.cfg.Guesses.Blocked(r); blocked {
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(retry.Seconds()))))
			writeError(w, http.StatusTooManyRequests, fmt.Errorf("too many wrong tokens from this address: try again in %s", retry.Round(time.Second)), nil)
			return
		}
		// The scheme is case-insensitive (RFC 9110).
		scheme, got, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		name, ok := "", false
		if strings.EqualFold(scheme, "Bearer") {
			// Every token is compared, in constant time, so timing tells neither a token nor
			// which one matched.
			for _, t := range tokens {
				if subtle.ConstantTimeCompare([]byte(got), []byte(t.Secret)) == 1 {
					name, ok = t.Name, true
				}
			}
		}
		if !ok {
			a.cfg.Guesses.Failed(r)
			w.Header().Set("WWW-Authenticate", `Bearer realm="skillfleet"`)
			writeError(w, http.StatusUnauthorized, errors.New("missing or wrong bearer token"), nil)
			return
		}
		h(w, r.WithContext(withPrincipal(r.Context(), name)))
	}
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
	if r.Method == http.MethodPost {
		mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || mt != "application/x-tar" {
			return http.StatusUnsupportedMediaType, fmt.Errorf("an upload must have Content-Type application/x-tar, got %q", r.Header.Get("Content-Type"))
		}
	}
	return 0, nil
}
