package judge

import (
	"container/list"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strconv"
	"sync"

	"github.com/skillfleet/skillfleet/internal/text"
)

// Cache stores decided verdicts. Implementations must be safe for concurrent use.
type Cache interface {
	Get(key string) (Verdict, bool)
	Put(key string, v Verdict)
}

// cacheKey identifies a verdict: the judge model, the prompt version, the number of votes, the
// criterion, the case's input (a criterion may refer to it, and the judge sees it) and the
// output's digest; with a reference, also the reference prompt's version and the reference's
// digest, appended so that a key without a reference is what it was before references existed.
// Fields are length-prefixed so that no two different tuples collide.
func cacheKey(model string, votes int, criterion, input, reference, output string) string {
	h := sha256.New()
	var n [8]byte
	field := func(s string) {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	digest := func(s string) string {
		d := sha256.Sum256([]byte(s))
		return hex.EncodeToString(d[:])
	}
	field("skillfleet-judge-cache")
	field(model)
	field(PromptVersion)
	field(strconv.Itoa(votes))
	field(criterion)
	field(digest(input))
	field(digest(output))
	if reference != "" {
		field(ReferencePromptVersion)
		field(digest(reference))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// DefaultCacheEntries bounds an LRU made with a non-positive size.
const DefaultCacheEntries = 10000

// maxCachedEvidence bounds the evidence kept per entry, so memory is bounded by entries.
const maxCachedEvidence = 1024

// LRU is an in-memory Cache that keeps the most recently used entries.
type LRU struct {
	mu  sync.Mutex
	max int
	ll  *list.List
	m   map[string]*list.Element
}

type lruEntry struct {
	key string
	v   Verdict
}

// NewLRU makes a cache of at most maxEntries verdicts (DefaultCacheEntries when ≤ 0).
func NewLRU(maxEntries int) *LRU {
	if maxEntries <= 0 {
		maxEntries = DefaultCacheEntries
	}
	return &LRU{max: maxEntries, ll: list.New(), m: make(map[string]*list.Element)}
}

// Get returns the verdict under key and marks it recently used.
func (c *LRU) Get(key string) (Verdict, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if !ok {
		return Verdict{}, false
	}
	c.ll.MoveToFront(e)
	return e.Value.(*lruEntry).v, true
}

// Put stores v under key, evicting the least recently used entry when full.
func (c *LRU) Put(key string, v Verdict) {
	v.Evidence = text.ClipBytes(v.Evidence, maxCachedEvidence)
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[key]; ok {
		e.Value.(*lruEntry).v = v
		c.ll.MoveToFront(e)
		return
	}
	c.m[key] = c.ll.PushFront(&lruEntry{key: key, v: v})
	for c.ll.Len() > c.max {
		last := c.ll.Back()
		c.ll.Remove(last)
		delete(c.m, last.Value.(*lruEntry).key)
	}
}

// Len is the number of entries.
func (c *LRU) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ll.Len()
}
