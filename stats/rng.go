package stats

import "hash/fnv"

// splitMix is the SplitMix64 generator (Steele, Lea & Flood 2014): one add and two multiplies
// per 64 random bits, which keeps a bootstrap of a hundred thousand cases cheap, and good
// enough for resampling (it passes BigCrush).
type splitMix struct{ state uint64 }

// newStream returns the generator of one group of a comparison: the caller's seed mixed with
// the group's name, so a skill's result does not depend on which other skills were compared.
func newStream(seed uint64, group string) *splitMix {
	h := fnv.New64a()
	h.Write([]byte(group))
	r := &splitMix{state: seed ^ h.Sum64()}
	r.next()
	return r
}

func (r *splitMix) next() uint64 {
	r.state += 0x9e3779b97f4a7c15
	z := r.state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
