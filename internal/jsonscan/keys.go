package jsonscan

import (
	"bytes"
	"hash/maphash"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// smallObject is how many keys an object compares one by one before Check indexes them in
// a map: below it a linear scan over short keys is cheaper than hashing, and almost every
// object of a chat request is below it; above it a hostile object of a million keys would
// make the scan quadratic.
const smallObject = 16

// keySet holds the keys of the open objects, in the order they were read; each frame owns
// the run from its frame.keys on.
type keySet struct {
	keys []keyRef
	// arena holds the decoded form of keys whose bytes in the text are not their decoded
	// form; it grows and shrinks with the open objects like keys does.
	arena  []byte
	seed   maphash.Seed
	seeded bool
}

// keyRef locates a key's decoded bytes: data[off:end] when off >= 0, or
// arena[-off-1:end] when the key had to be decoded. Offsets, not slices, so that keys
// stay valid as the arena grows, at 16 bytes a key.
type keyRef struct {
	off, end int
	// fold locates the key's folded form the same way (equal to off, end when the key is
	// its own folded form).
	fold, fend int
}

// key returns the decoded bytes of keys[i]. Its data are the scanner's: keySet does not
// keep a reference of its own to the text.
func (s *scanner) key(i int) []byte {
	r := s.keys[i]
	if r.off >= 0 {
		return s.data[r.off:r.end]
	}
	return s.arena[-r.off-1 : r.end]
}

// add records the key data[start:end] (the bytes between the quotes) in the object f and
// reports whether the object already had it, returning its decoded form. plain says the
// bytes need no decoding.
func (s *scanner) add(f *frame, data []byte, start, end int, plain bool) ([]byte, bool) {
	raw := data[start:end]
	var r keyRef
	var k []byte
	if plain || bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		r, k = keyRef{off: start, end: end}, raw
	} else {
		from := len(s.arena)
		s.arena = appendDecoded(s.arena, raw)
		r, k = keyRef{off: -from - 1, end: len(s.arena)}, s.arena[from:]
	}
	// Keys are compared folded, as encoding/json matches a key to a struct field: a checker
	// that decodes into a struct must not read "TYPE" where the upstream reads "type".
	r.fold, r.fend = r.off, r.end
	if needsFold(k) {
		if r.off < 0 {
			// The arena may move as the folded form is appended: k must not dangle.
			k = append([]byte(nil), k...)
		}
		from := len(s.arena)
		s.arena = appendFolded(s.arena, k)
		r.fold, r.fend = -from-1, len(s.arena)
	}
	folded := s.folded(r)
	n := len(s.keys) - f.keys
	if n < smallObject {
		for i := f.keys; i < len(s.keys); i++ {
			if bytes.Equal(s.folded(s.keys[i]), folded) {
				return k, true
			}
		}
		s.keys = append(s.keys, r)
		return k, false
	}
	if !s.seeded {
		s.seed, s.seeded = maphash.MakeSeed(), true
	}
	if f.set == nil {
		f.set = make(map[uint64]int, 2*smallObject)
	}
	if len(f.set) == 0 {
		for i := f.keys; i < len(s.keys); i++ {
			h := maphash.Bytes(s.seed, s.folded(s.keys[i]))
			if _, ok := f.set[h]; !ok {
				f.set[h] = i
			}
		}
	}
	h := maphash.Bytes(s.seed, folded)
	if i, ok := f.set[h]; ok {
		if bytes.Equal(s.folded(s.keys[i]), folded) {
			return k, true
		}
		// Two keys with one 64-bit hash under a random seed: rare enough to pay a scan.
		for i := f.keys; i < len(s.keys); i++ {
			if bytes.Equal(s.folded(s.keys[i]), folded) {
				return k, true
			}
		}
	} else {
		f.set[h] = len(s.keys)
	}
	s.keys = append(s.keys, r)
	return k, false
}

// AppendUnquoted appends the decoded form of raw, the bytes between the quotes of a JSON
// string that Check (or encoding/json's own validity check) accepted, as encoding/json
// decodes them: escapes decoded, a surrogate pair made its rune, a lone surrogate or a byte
// that is not UTF-8 made U+FFFD.
func AppendUnquoted(dst, raw []byte) []byte { return appendDecoded(dst, raw) }

// appendDecoded appends the decoded form of a key's bytes, as encoding/json decodes
// them, so that Check calls two keys the same exactly when a decoder would: escapes are
// decoded, a surrogate pair becomes its rune, and a lone surrogate or a byte that is not
// UTF-8 becomes U+FFFD. The escapes have been checked already.
func appendDecoded(dst, raw []byte) []byte {
	for r := 0; r < len(raw); {
		c := raw[r]
		switch {
		case c == '\\':
			switch raw[r+1] {
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				rr := hex4(raw[r+2:])
				r += 6
				if utf16.IsSurrogate(rr) {
					if r+6 <= len(raw) && raw[r] == '\\' && raw[r+1] == 'u' {
						if dec := utf16.DecodeRune(rr, hex4(raw[r+2:])); dec != utf8.RuneError {
							dst = utf8.AppendRune(dst, dec)
							r += 6
							continue
						}
					}
					rr = utf8.RuneError
				}
				// A lone low surrogate is no scalar value: AppendRune writes U+FFFD.
				dst = utf8.AppendRune(dst, rr)
				continue
			default: // '"', '\\', '/'
				dst = append(dst, raw[r+1])
			}
			r += 2
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			r++
		default:
			rr, size := utf8.DecodeRune(raw[r:])
			if rr == utf8.RuneError && size == 1 {
				dst = utf8.AppendRune(dst, rr)
			} else {
				dst = append(dst, raw[r:r+size]...)
			}
			r += size
		}
	}
	return dst
}

// hex4 decodes the four hex digits that start b; they have been checked.
func hex4(b []byte) rune {
	return rune(hexVal(b[0])<<12 | hexVal(b[1])<<8 | hexVal(b[2])<<4 | hexVal(b[3]))
}

// folded returns a key's folded bytes.
func (s *scanner) folded(r keyRef) []byte {
	if r.fold >= 0 {
		return s.data[r.fold:r.fend]
	}
	return s.arena[-r.fold-1 : r.fend]
}

// needsFold says a key's folded form differs from it: it has a lower-case ASCII letter or a
// rune outside ASCII.
func needsFold(k []byte) bool {
	for _, c := range k {
		if c >= utf8.RuneSelf || 'a' <= c && c <= 'z' {
			return true
		}
	}
	return false
}

// appendFolded appends k folded the way encoding/json folds a key before matching it to a
// field name: ASCII letters upper-cased, other runes mapped to the smallest rune of their
// simple case-folding orbit (so the Kelvin sign folds to K, as "k" does).
func appendFolded(dst, k []byte) []byte {
	for i := 0; i < len(k); {
		if c := k[i]; c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			dst = append(dst, c)
			i++
			continue
		}
		r, n := utf8.DecodeRune(k[i:])
		dst = utf8.AppendRune(dst, foldRune(r))
		i += n
	}
	return dst
}

func foldRune(r rune) rune {
	for {
		r2 := unicode.SimpleFold(r)
		if r2 <= r {
			return r2
		}
		r = r2
	}
}
