package history

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// actions lists entries' actions in order.
func actions(es []AuditEntry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Action)
	}
	return out
}

func TestAudit(t *testing.T) {
	forEachBackend(t, func(t *testing.T, target string) {
		s := open(t, target)
		// a1…a7 in order, in two appends; teamA has a1, a3, a5, a7.
		var es []AuditEntry
		for i := 1; i <= 7; i++ {
			team := "teamB"
			if i%2 == 1 {
				team = "teamA"
			}
			es = append(es, AuditEntry{At: t0.Add(time.Duration(i) * time.Second), Actor: "tok", Team: team, Role: "member",
				Action: fmt.Sprint("a", i), Object: "run/r" + fmt.Sprint(i), Outcome: "ok"})
		}
		if err := s.AppendAudit(ctx(), es[:3]...); err != nil {
			t.Fatal(err)
		}
		if err := s.AppendAudit(ctx(), es[3:]...); err != nil {
			t.Fatal(err)
		}
		if err := s.AppendAudit(ctx()); err != nil {
			t.Errorf("appending nothing: %v", err)
		}
		all, err := s.Audit(ctx(), AuditQuery{})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := actions(all), []string{"a7", "a6", "a5", "a4", "a3", "a2", "a1"}; !slices.Equal(got, want) {
			t.Fatalf("every team's entries %v, want %v", got, want)
		}
		first := all[len(all)-1]
		if want := (AuditEntry{ID: first.ID, At: t0.Add(time.Second), Actor: "tok", Team: "teamA", Role: "member", Action: "a1",
			Object: "run/r1", Outcome: "ok"}); first != want {
			t.Errorf("entry %+v\nwant  %+v", first, want)
		}
		for i := 1; i < len(all); i++ {
			if all[i].ID >= all[i-1].ID {
				t.Errorf("ids not newest first: %d after %d", all[i].ID, all[i-1].ID)
			}
		}

		tests := []struct {
			name   string
			q      AuditQuery
			before string // the page starts after this entry's ID ("" the newest)
			want   []string
		}{
			{"one team", AuditQuery{Team: "teamA"}, "", []string{"a7", "a5", "a3", "a1"}},
			{"the other team", AuditQuery{Team: "teamB"}, "", []string{"a6", "a4", "a2"}},
			{"no such team", AuditQuery{Team: "teamC"}, "", nil},
			{"a page", AuditQuery{Limit: 2}, "", []string{"a7", "a6"}},
			{"the next page", AuditQuery{Limit: 2}, "a6", []string{"a5", "a4"}},
			{"a team's next page", AuditQuery{Team: "teamA", Limit: 2}, "a5", []string{"a3", "a1"}},
			{"the last page", AuditQuery{Limit: 2}, "a2", []string{"a1"}},
			{"past the last", AuditQuery{}, "a1", nil},
		}
		id := map[string]int64{}
		for _, e := range all {
			id[e.Action] = e.ID
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				q := tt.q
				q.BeforeID = id[tt.before]
				got, err := s.Audit(ctx(), q)
				if err != nil || !slices.Equal(actions(got), tt.want) {
					t.Errorf("Audit(%+v) = %v, %v; want %v", q, actions(got), err, tt.want)
				}
			})
		}
	})
}

func TestAuditLimits(t *testing.T) {
	forEachBackend(t, func(t *testing.T, target string) {
		s := open(t, target)
		es := make([]AuditEntry, 1005)
		for i := range es {
			es[i] = AuditEntry{At: t0, Team: "teamA", Action: "denied", Object: fmt.Sprint("run/", i), Outcome: "denied"}
		}
		if err := s.AppendAudit(ctx(), es...); err != nil {
			t.Fatal(err)
		}
		for _, tt := range []struct{ limit, want int }{{0, 100}, {-3, 100}, {7, 7}, {1000, 1000}, {5000, 1000}} {
			got, err := s.Audit(ctx(), AuditQuery{Limit: tt.limit})
			if err != nil || len(got) != tt.want {
				t.Errorf("Limit %d: %d entries, %v; want %d", tt.limit, len(got), err, tt.want)
			}
			if len(got) > 0 && got[0].Object != "run/1004" {
				t.Errorf("Limit %d: the first is %s, want the newest run/1004", tt.limit, got[0].Object)
			}
		}
	})
}

// TestAuditClipsHostileInput: fields are bounded in bytes on a rune boundary, and bytes
// PostgreSQL would refuse (invalid UTF-8, NUL) are replaced rather than losing the entry.
func TestAuditClipsHostileInput(t *testing.T) {
	forEachBackend(t, func(t *testing.T, target string) {
		s := open(t, target)
		huge := strings.Repeat("é", 1<<20) // 2 MiB of two-byte runes
		e := AuditEntry{At: t0, Actor: "\xff\x00eve" + huge, Team: "teamA", Role: "viewer", Action: "login.refused",
			Object: "x" + huge, Outcome: "refused", Detail: "x" + huge}
		if err := s.AppendAudit(ctx(), e); err != nil {
			t.Fatal(err)
		}
		got, err := s.Audit(ctx(), AuditQuery{Team: "teamA"})
		if err != nil || len(got) != 1 {
			t.Fatalf("%d entries, %v", len(got), err)
		}
		g := got[0]
		for _, f := range []struct {
			name, value, prefix string
			max                 int
		}{
			{"actor", g.Actor, "\uFFFD\uFFFDeve", maxAuditField},
			{"object", g.Object, "xé", maxAuditField},
			{"detail", g.Detail, "xé", maxAuditDetail},
		} {
			if len(f.value) > f.max || len(f.value) < f.max-4 || !utf8.ValidString(f.value) ||
				!strings.HasPrefix(f.value, f.prefix) || !strings.HasSuffix(f.value, "é…") {
				t.Errorf("%s: %d bytes (valid UTF-8 %v) %q…%q; want %s…é… within %d bytes", f.name, len(f.value), utf8.ValidString(f.value),
					f.value[:min(len(f.value), 12)], f.value[max(0, len(f.value)-8):], f.prefix, f.max)
			}
		}
		if g.Team != "teamA" || g.Action != "login.refused" || g.Outcome != "refused" {
			t.Errorf("short fields changed: %+v", g)
		}
	})
}

// TestAuditRetention: the retention sweep deletes audit entries older than its cutoff, in
// batches, and keeps the rest.
func TestAuditRetention(t *testing.T) {
	forEachBackend(t, func(t *testing.T, target string) {
		s := open(t, target)
		cutoff := t0.Add(-400 * 24 * time.Hour)
		var es []AuditEntry
		for i := range 7 {
			es = append(es, AuditEntry{At: cutoff.Add(-time.Duration(i+1) * time.Hour), Action: fmt.Sprint("old", i)})
		}
		es = append(es, AuditEntry{At: cutoff, Action: "at-cutoff"}, AuditEntry{At: t0, Action: "new"})
		if err := s.AppendAudit(ctx(), es...); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.DeleteBefore(ctx(), cutoff, 3); err != nil { // batches of 3: several rounds
			t.Fatal(err)
		}
		got, err := s.Audit(ctx(), AuditQuery{})
		if want := []string{"new", "at-cutoff"}; err != nil || !slices.Equal(actions(got), want) {
			t.Errorf("after the sweep: %v, %v; want %v", actions(got), err, want)
		}
	})
}
