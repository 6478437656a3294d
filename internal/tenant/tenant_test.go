package tenant

import (
	"context"
	"testing"
)

func TestCanReadAndChange(t *testing.T) {
	a := Principal{Name: "a", Team: "teamA", Role: Member}
	v := Principal{Name: "v", Team: "teamA", Role: Viewer}
	adm := Principal{Name: "root", Team: "ops", Role: Admin}
	def := Principal{Name: "old", Team: "", Role: Member}
	none := Principal{Name: "x", Team: "teamA"}
	for _, c := range []struct {
		p            Principal
		team         string
		read, change bool
	}{
		{a, "teamA", true, true},
		{a, "teamB", false, false},
		{a, "", false, false},
		{v, "teamA", true, false},
		{v, "teamB", false, false},
		{adm, "teamA", true, true},
		{adm, "", true, true},
		{def, "", true, true},
		{def, "default", true, true},
		{def, "teamA", false, false},
		{none, "teamA", false, false},
	} {
		if got := c.p.CanRead(c.team); got != c.read {
			t.Errorf("%+v CanRead(%q) = %v, want %v", c.p, c.team, got, c.read)
		}
		if got := c.p.CanChange(c.team); got != c.change {
			t.Errorf("%+v CanChange(%q) = %v, want %v", c.p, c.team, got, c.change)
		}
	}
}

func TestParseRoleAndTeam(t *testing.T) {
	for _, s := range []string{"admin", "member", "viewer"} {
		r, err := ParseRole(s)
		if err != nil || r.String() != s {
			t.Errorf("ParseRole(%q) = %v, %v", s, r, err)
		}
	}
	for _, s := range []string{"", "Admin", "root", "viewer "} {
		if _, err := ParseRole(s); err == nil {
			t.Errorf("ParseRole(%q) accepted", s)
		}
	}
	for _, s := range []string{"teamA", "a", "t-1_x"} {
		if err := CheckTeam(s); err != nil {
			t.Errorf("CheckTeam(%q): %v", s, err)
		}
	}
	for _, s := range []string{"", "-a", "a.b", "a/b", "a b", string(make([]byte, 65))} {
		if err := CheckTeam(s); err == nil {
			t.Errorf("CheckTeam(%q) accepted", s)
		}
	}
}

func TestFrom(t *testing.T) {
	if p := Of(context.Background()); p != Anonymous {
		t.Errorf("Of(no principal) = %+v, want Anonymous", p)
	}
	want := Principal{Name: "a", Team: "teamA", Role: Viewer}
	p, ok := From(With(context.Background(), want))
	if !ok || p != want {
		t.Errorf("From = %+v, %v", p, ok)
	}
}
