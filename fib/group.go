package fib

import "errors"

// Member is one next hop of an ECMP group (NextHopGroup) and its weight: a member of weight 2 carries
// twice the flows of a member of weight 1. A weight of 0 counts as 1 (a multipath route's nexthop
// carries weight hops+1 in the kernel, so at least 1).
type Member struct {
	NextHop uint32
	Weight  uint32
}

// MaxMembers is the largest number of members of one group.
const MaxMembers = 256

// ErrGroup: a group without members, with more than MaxMembers, with a member above MaxNextHop or
// with a weight sum that does not fit 32 bits.
var ErrGroup = errors.New("fib: bad next-hop group")

// group is one ECMP group as a view stores it: members with cumulative weights, for Pick.
type group struct {
	members []Member // as set (weights of 0 counted as 1)
	cum     []uint32 // cum[k]: sum of the weights of members 0..k
}

func newGroup(ms []Member) (*group, error) {
	if len(ms) == 0 || len(ms) > MaxMembers {
		return nil, ErrGroup
	}
	g := &group{members: make([]Member, len(ms)), cum: make([]uint32, len(ms))}
	var sum uint64
	for k, m := range ms {
		if m.NextHop > MaxNextHop {
			return nil, ErrGroup
		}
		m.Weight = max(m.Weight, 1)
		sum += uint64(m.Weight)
		if sum > 1<<32-1 {
			return nil, ErrGroup
		}
		g.members[k], g.cum[k] = m, uint32(sum)
	}
	return g, nil
}

// Group returns the members of entry i when it is a group (NextHopGroup), else nil. The slice must not
// be modified.
func (v *NextHopView) Group(i uint32) []Member {
	if uint64(i) >= uint64(len(v.groups)) || v.groups[i] == nil {
		return nil
	}
	return v.groups[i].members
}

// Pick returns the member of group i that a flow of the given hash uses: member k for a share of the
// hash space proportional to its weight, so that many flows spread by weight and one flow always takes
// the same member (for a given version of the group). It returns NoRoute when entry i is not a group.
// It allocates nothing and takes no lock: the forwarding path calls it per frame routed to a group.
func (v *NextHopView) Pick(i uint32, hash uint32) uint32 {
	if uint64(i) >= uint64(len(v.groups)) {
		return NoRoute
	}
	g := v.groups[i]
	if g == nil {
		return NoRoute
	}
	cum := g.cum
	// The multiplication spreads every bit of the hash into the high half, which the range
	// reduction (x * total >> 32, no division) reads.
	x := uint32(uint64(hash*0x9E3779B1) * uint64(cum[len(cum)-1]) >> 32)
	k := 0
	for k < len(cum)-1 && x >= cum[k] {
		k++
	}
	return g.members[k].NextHop
}
