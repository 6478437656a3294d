package judge

import (
	"strings"
	"testing"
)

func TestLRUEvictsLeastRecentlyUsed(t *testing.T) {
	c := NewLRU(2)
	c.Put("a", Verdict{Passed: true, Evidence: "a"})
	c.Put("b", Verdict{Evidence: "b"})
	if _, ok := c.Get("a"); !ok { // a is now the most recent
		t.Fatal("a missing")
	}
	c.Put("c", Verdict{Evidence: "c"})
	if _, ok := c.Get("b"); ok {
		t.Error("b should have been evicted")
	}
	if v, ok := c.Get("a"); !ok || !v.Passed {
		t.Errorf("a = %+v, %v", v, ok)
	}
	if c.Len() != 2 {
		t.Errorf("len = %d", c.Len())
	}
	c.Put("a", Verdict{Evidence: "new"})
	if v, _ := c.Get("a"); v.Evidence != "new" || c.Len() != 2 {
		t.Errorf("update: %+v, len %d", v, c.Len())
	}
	c.Put("big", Verdict{Evidence: strings.Repeat("é", 2000)})
	if v, _ := c.Get("big"); len(v.Evidence) > maxCachedEvidence+len("…") {
		t.Errorf("cached evidence not bounded: %d bytes", len(v.Evidence))
	}
}

func TestCacheKeySeparatesEveryField(t *testing.T) {
	base := cacheKey("m", 1, "crit", "in", "", "out")
	others := []string{
		cacheKey("m2", 1, "crit", "in", "", "out"),
		cacheKey("m", 3, "crit", "in", "", "out"),
		cacheKey("m", 1, "crit2", "in", "", "out"),
		cacheKey("m", 1, "crit", "in2", "", "out"),
		cacheKey("m", 1, "crit", "in", "", "out2"),
		cacheKey("m", 1, "cri", "tin", "", "out"), // length prefixes: no shifting between fields
		cacheKey("m", 1, "crit", "in", "ref", "out"),
	}
	for i, k := range others {
		if k == base {
			t.Errorf("key %d collides with the base key", i)
		}
	}
	if cacheKey("m", 1, "crit", "in", "", "out") != base {
		t.Error("the key is not deterministic")
	}
	if cacheKey("m", 1, "crit", "in", "ref", "out") == cacheKey("m", 1, "crit", "in", "ref2", "out") {
		t.Error("two references share a key")
	}
}

// TestCacheKeyWithoutReferenceIsUnchanged pins a key as computed before references existed,
// so verdicts cached then are still found.
func TestCacheKeyWithoutReferenceIsUnchanged(t *testing.T) {
	const want = "c5ff9538bd2fec84ac5f4195d989cc50878ced4253d0ce07705b5735fc660a9c"
	if got := cacheKey("m", 1, "crit", "in", "", "out"); got != want {
		t.Errorf("key = %s, want %s", got, want)
	}
}
