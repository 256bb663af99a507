package fib

import (
	"math/rand/v2"
	"net/netip"
)

// refLPM is the naive reference: one map per prefix length, searched longest first.
type refLPM struct {
	m [33]map[uint32]uint32
}

func newRef() *refLPM {
	r := &refLPM{}
	for i := range r.m {
		r.m[i] = make(map[uint32]uint32)
	}
	return r
}

func maskOf(l int) uint32 {
	if l == 0 {
		return 0
	}
	return ^uint32(0) << (32 - l)
}

func (r *refLPM) insert(a uint32, l int, nh uint32) { r.m[l][a&maskOf(l)] = nh }

func (r *refLPM) delete(a uint32, l int) bool {
	k := a & maskOf(l)
	_, ok := r.m[l][k]
	delete(r.m[l], k)
	return ok
}

func (r *refLPM) lookup(a uint32) (uint32, bool) {
	for l := 32; l >= 0; l-- {
		if nh, ok := r.m[l][a&maskOf(l)]; ok {
			return nh, true
		}
	}
	return NoRoute, false
}

func (r *refLPM) len() int {
	n := 0
	for _, m := range r.m {
		n += len(m)
	}
	return n
}

func pfx(a uint32, l int) netip.Prefix { return netip.PrefixFrom(u32ToAddr(a&maskOf(l)), l) }

// realLenWeights is the prefix-length histogram of the 901,899 IPv4 prefixes in bart's test table
// (internal/tests/testdata/prefixes.txt.gz), per length 0..32.
var realLenWeights = [33]int{
	8: 16, 9: 13, 10: 38, 11: 103, 12: 299, 13: 581, 14: 1203, 15: 2100, 16: 13490, 17: 8235,
	18: 13798, 19: 24870, 20: 42611, 21: 50750, 22: 108623, 23: 96510, 24: 537698, 25: 20, 26: 3,
	27: 11, 28: 18, 29: 17, 30: 3, 31: 3, 32: 886,
}

// sampler draws prefix lengths with given weights.
type sampler struct {
	cum   [33]int
	total int
}

func newSampler(w [33]int) *sampler {
	s := &sampler{}
	for i, x := range w {
		s.total += x
		s.cum[i] = s.total
	}
	return s
}

func (s *sampler) draw(rng *rand.Rand) int {
	x := rng.IntN(s.total)
	for i, c := range s.cum {
		if x < c {
			return i
		}
	}
	return 32
}

// synthTable makes n routes with the real table's length distribution (plus a default route and a few
// short prefixes), clustered into allocated regions as real tables are, with next hops in [0, nhs).
func synthTable(rng *rand.Rand, n int, nhs uint32) []Route {
	s := newSampler(realLenWeights)
	regions := make([]uint32, n/64+8)
	for i := range regions {
		regions[i] = rng.Uint32() & maskOf(14)
	}
	routes := make([]Route, 0, n+8)
	routes = append(routes, Route{pfx(0, 0), rng.Uint32N(nhs)})
	for range 4 {
		routes = append(routes, Route{pfx(rng.Uint32(), 1+rng.IntN(7)), rng.Uint32N(nhs)})
	}
	for len(routes) < n {
		l := s.draw(rng)
		a := rng.Uint32()
		if l > 14 {
			a = regions[rng.IntN(len(regions))] | a&^maskOf(14)
		}
		routes = append(routes, Route{pfx(a, l), rng.Uint32N(nhs)})
	}
	return routes
}

// randomTable makes n routes with uniformly random lengths, in a small address window when narrow is set
// (so that prefixes nest and collide a lot).
func randomTable(rng *rand.Rand, n int, nhs uint32, narrow bool) []Route {
	routes := make([]Route, n)
	for i := range routes {
		a := rng.Uint32()
		if narrow {
			a = 0x0A000000 | a&0x0003FFFF
		}
		routes[i] = Route{pfx(a, rng.IntN(33)), rng.Uint32N(nhs)}
	}
	return routes
}

func refFrom(routes []Route) *refLPM {
	r := newRef()
	for _, rt := range routes {
		a, l, _ := prefixKey(rt.Prefix)
		r.insert(a, l, rt.NextHop)
	}
	return r
}

// probes returns random addresses, random hosts inside table prefixes, and the first and last address
// of each of (up to 20,000) table prefixes and their neighbours.
func probes(rng *rand.Rand, routes []Route, nRandom int) []uint32 {
	out := make([]uint32, 0, nRandom*2+len(routes)*4)
	for range nRandom {
		out = append(out, rng.Uint32())
	}
	for range nRandom {
		if len(routes) == 0 {
			break
		}
		a, l, _ := prefixKey(routes[rng.IntN(len(routes))].Prefix)
		out = append(out, a|rng.Uint32()&^maskOf(l))
	}
	for i, rt := range routes {
		if i >= 20000 {
			break
		}
		a, l, _ := prefixKey(rt.Prefix)
		last := a | ^maskOf(l)
		out = append(out, a, a-1, last, last+1)
	}
	return out
}
