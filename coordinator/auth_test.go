package coordinator_test

import (
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/internal/tenant"
)

// TestParseTokens: a token file's lines are "NAME TOKEN [team=TEAM] [role=ROLE]" or a bare
// token. A line of any other shape stops the start with an error naming the file, the line and
// the rule, never a token's text: the review's "ci-x team=platform-engineering" (its token
// forgotten) had become the token "team=platform-engineering" in team default.
func TestParseTokens(t *testing.T) {
	const secret = "s3cret-0123456789abcdef"
	for _, tc := range []struct {
		name, text string
		want       []coordinator.Token
		// wantErr is the line and rule of the error ("" for none), as "tokens:LINE: error RULE".
		wantErr string
	}{
		{name: "name and token", text: "ci " + secret + "\n",
			want: []coordinator.Token{{Name: "ci", Secret: secret}}},
		{name: "team and role, either order", text: "# fleet\n\nci " + secret + " role=admin team=ops\n",
			want: []coordinator.Token{{Name: "ci", Secret: secret, Team: "ops", Role: tenant.Admin}}},
		{name: "a bare token", text: "  " + secret + "  \n",
			want: []coordinator.Token{{Name: "line 1", Secret: secret}}},
		{name: "a base64 token with its padding", text: "ci dGhpcyBpcyBhIHRva2VuIQ==\n",
			want: []coordinator.Token{{Name: "ci", Secret: "dGhpcyBpcyBhIHRva2VuIQ=="}}},
		{name: "the token forgotten", text: "ok " + secret + "\nci-x team=platform-engineering\n", wantErr: "tokens:2: error tokens.token-missing"},
		{name: "the token forgotten, a role", text: "ci-x role=admin\n", wantErr: "tokens:1: error tokens.token-missing"},
		{name: "the name forgotten", text: secret + " team=ops\n", wantErr: "tokens:1: error tokens.token-missing"},
		{name: "a bare option", text: "team=platform-engineering\n", wantErr: "tokens:1: error tokens.token-missing"},
		{name: "a name with =", text: "team=ops " + secret + "\n", wantErr: "tokens:1: error tokens.name"},
		{name: "an unknown key", text: "ci " + secret + " teem=ops\n", wantErr: "tokens:1: error tokens.option"},
		{name: "not a key", text: "ci " + secret + " ops\n", wantErr: "tokens:1: error tokens.option"},
		{name: "a repeated key", text: "ci " + secret + " team=ops team=dev\n", wantErr: "tokens:1: error tokens.option-repeated"},
		{name: "too many fields", text: "ci " + secret + " team=ops role=admin x\n", wantErr: "tokens:1: error tokens.fields"},
		{name: "a bad team", text: "ci " + secret + " team=../ops\n", wantErr: "tokens:1: error tokens.team"},
		{name: "an empty team", text: "ci " + secret + " team=\n", wantErr: "tokens:1: error tokens.team"},
		{name: "a bad role", text: "ci " + secret + " role=root\n", wantErr: "tokens:1: error tokens.role"},
		{name: "a name twice", text: "ci " + secret + "\nci other-0123456789abcdef\n", wantErr: "tokens:2: error tokens.name-repeated"},
		{name: "a token twice", text: "ci " + secret + "\ncd " + secret + "\n", wantErr: "tokens:2: error tokens.token-repeated"},
		{name: "no token", text: "# nothing yet\n", wantErr: "tokens: error tokens.empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := coordinator.ParseTokens(tc.text, "tokens")
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != len(tc.want) {
					t.Fatalf("tokens %+v, want %+v", got, tc.want)
				}
				for i := range got {
					if got[i] != tc.want[i] {
						t.Errorf("token %d: %+v, want %+v", i, got[i], tc.want[i])
					}
				}
				return
			}
			if err == nil {
				t.Fatalf("tokens %+v, want the error %q", got, tc.wantErr)
			}
			if !strings.HasPrefix(err.Error(), tc.wantErr) {
				t.Errorf("error %q, want it to start %q", err, tc.wantErr)
			}
			// Whatever sat where a token belongs may be one: the error shows none of it.
			for _, s := range []string{secret, "platform-engineering", "other-0123456789abcdef"} {
				if strings.Contains(err.Error(), s) {
					t.Errorf("error %q shows what may be a token (%q)", err, s)
				}
			}
		})
	}
}
