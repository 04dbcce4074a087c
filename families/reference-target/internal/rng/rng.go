// Package rng is a tiny deterministic random number generator (SplitMix64).
// Bundles and corpora must be byte-identical for the same inputs on every Go
// release, so they never use the standard library's random streams.
package rng

// Source is a SplitMix64 generator.
type Source struct{ state uint64 }

// New returns a generator seeded with seed.
func New(seed uint64) *Source { return &Source{state: seed} }

// Uint64 returns the next value.
func (s *Source) Uint64() uint64 {
	s.state += 0x9e3779b97f4a7c15
	z := s.state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// IntN returns a value in [0, n); n must be positive.
func (s *Source) IntN(n int) int { return int(s.Uint64() % uint64(n)) }

// Range returns a value in [lo, hi].
func (s *Source) Range(lo, hi int) int { return lo + s.IntN(hi-lo+1) }
