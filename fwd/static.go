package fwd

import (
	"fmt"
	"net/netip"
	"sort"
)

// Static is a tiny longest-prefix-match table for examples and tests: a handful of prefixes checked
// longest first. It is correct for any table and fast only for small ones; package fib is the real
// one.
type Static struct {
	e []staticEntry
}

type staticEntry struct {
	addr, mask uint32
	bits       int
	nh         uint32
}

// Add inserts prefix → next hop (replacing an equal prefix).
func (s *Static) Add(p netip.Prefix, nh uint32) error {
	if !p.Addr().Is4() {
		return fmt.Errorf("fwd: %v is not an IPv4 prefix", p)
	}
	p = p.Masked()
	a4 := p.Addr().As4()
	addr := uint32(a4[0])<<24 | uint32(a4[1])<<16 | uint32(a4[2])<<8 | uint32(a4[3])
	mask := uint32(0)
	if p.Bits() > 0 {
		mask = ^uint32(0) << (32 - p.Bits())
	}
	for i := range s.e {
		if s.e[i].addr == addr && s.e[i].bits == p.Bits() {
			s.e[i].nh = nh
			return nil
		}
	}
	s.e = append(s.e, staticEntry{addr, mask, p.Bits(), nh})
	sort.SliceStable(s.e, func(i, j int) bool { return s.e[i].bits > s.e[j].bits })
	return nil
}

// Lookup returns the next hop of the longest prefix covering a, or NoRoute.
func (s *Static) Lookup(a uint32) uint32 {
	for i := range s.e {
		if a&s.e[i].mask == s.e[i].addr {
			return s.e[i].nh
		}
	}
	return NoRoute
}

// LookupBatch implements Routes.
func (s *Static) LookupBatch(dst, nh []uint32) int {
	n := min(len(dst), len(nh))
	for i, a := range dst[:n] {
		nh[i] = s.Lookup(a)
	}
	return n
}
