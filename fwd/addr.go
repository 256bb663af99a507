package fwd

import (
	"fmt"
	"sync/atomic"
)

// Address classes by first octet (RFC 1812 §5.3.7, RFC 5735).
const (
	classNormal    = 0
	classZero      = 1 << iota // 0/8
	classLoopback              // 127/8
	classMulticast             // 224/4
	classReserved              // 240/4, 255.255.255.255 included
)

// dstClass and srcClass map an address's first octet to its class: 0 for the ordinary unicast
// space, so that one OR of two table loads tells whether either address needs a closer look.
var dstClass, srcClass [256]uint8

// martian is non-zero for the first octets of either class table: one table for both addresses of
// the forwarding path's test (the two tables flag the same octets, for different reasons).
var martian [256]uint8

func init() {
	for o := range 256 {
		dstClass[o] = addrClass(uint32(o) << 24)
		srcClass[o] = dstClass[o]
		martian[o] = dstClass[o] | srcClass[o]
	}
}

func addrClass(a uint32) uint8 {
	switch o := a >> 24; {
	case o == 0:
		return classZero
	case o == 127:
		return classLoopback
	case o >= 240:
		return classReserved
	case o >= 224:
		return classMulticast
	}
	return classNormal
}

const limitedBroadcast = 0xffffffff

// Kinds of the router's own addresses.
const (
	kindOwn       = 1 // an address of the router
	kindBroadcast = 2 // a connected subnet's broadcast address
)

type addrEntry struct {
	addr  uint32
	kind  uint8
	iface uint16 // the interface it belongs to
}

// addrSet is the router's addresses: a 2^16-bit filter (a bit per 16-bit hash of an address; 8 KiB)
// that tells the forwarding path with one multiply, one shift and one load per frame that a packet
// is not for the router (a random destination hits a set bit with a chance of entries/65536), and
// an open-addressing hash table for the addresses themselves. Slot key 0 is empty (0.0.0.0 is never
// an entry: it is a martian).
type addrSet struct {
	filter *[1 << 10]uint64
	keys   []uint32
	vals   []addrEntry
	shift  uint8
}

// filterHash is a's hash for the filter: its top 10 bits pick the word, its low 6 bits the bit
// (the low bits of a multiplicative hash depend only on a's low bits, which differ between the
// addresses of one subnet; the forwarding path tests the bit with one instruction, which takes the
// bit number modulo 64 itself).
func filterHash(a uint32) uint32 { return a * filterMul }

const filterMul = 0x9e3779b1

func newAddrSet(es []addrEntry) (addrSet, error) {
	n := 64
	for n < 16*len(es) {
		n *= 2
	}
	if n > 1<<20 {
		return addrSet{}, fmt.Errorf("%d local addresses: too many", len(es))
	}
	s := addrSet{filter: new([1 << 10]uint64), keys: make([]uint32, n), vals: make([]addrEntry, n)}
	for uint64(1)<<(32-s.shift) > uint64(n) { // (uint64: 1<<32 overflows a 32-bit int)
		s.shift++
	}
	for _, e := range es {
		i := s.slot(e.addr)
		for s.keys[i] != 0 && s.keys[i] != e.addr {
			i = (i + 1) & uint32(n-1)
		}
		if s.keys[i] == e.addr {
			old := s.vals[i]
			switch {
			case old.kind == kindOwn && e.kind == kindOwn && old.iface != e.iface:
				// The same address on two interfaces: local either way; the first one stays.
			case old.kind != e.kind:
				return addrSet{}, fmt.Errorf("%v is both an address and a subnet broadcast address", ip4(e.addr))
			}
			continue
		}
		s.keys[i], s.vals[i] = e.addr, e
		h := filterHash(e.addr)
		s.filter[h>>22] |= 1 << (h & 63)
	}
	return s, nil
}

func (s *addrSet) slot(a uint32) uint32 { return (a * 0x9e3779b1) >> s.shift }

// maybe reports whether a's filter bit is set: false means a is surely not in the set.
func (s *addrSet) maybe(a uint32) bool {
	h := filterHash(a)
	return s.filter[h>>22]&(1<<(h&63)) != 0
}

// find returns a's entry.
func (s *addrSet) find(a uint32) (addrEntry, bool) {
	m := uint32(len(s.keys) - 1)
	for i := s.slot(a) & m; s.keys[i] != 0; i = (i + 1) & m {
		if s.keys[i] == a {
			return s.vals[i], true
		}
	}
	return addrEntry{}, false
}

type ip4 uint32

func (a ip4) String() string {
	return fmt.Sprintf("%d.%d.%d.%d", byte(a>>24), byte(a>>16), byte(a>>8), byte(a))
}

// limiter is a token bucket shared by the router's workers, touched only when an ICMP error is to
// be sent. Tokens are counted in nanoseconds of credit: each message costs 1e9/rate.
type limiter struct {
	off        bool
	cost, cap  int64
	now        func() int64
	credit     atomic.Int64 // the credit's time origin: credit = now - origin, capped at cap
	suppressed atomic.Uint64
}

func (l *limiter) init(rate, burst int, now func() int64) {
	if rate < 0 {
		l.off = true
		return
	}
	l.cost = int64(1e9) / int64(rate)
	if l.cost == 0 {
		l.cost = 1
	}
	l.cap = l.cost * int64(burst)
	l.now = now
	l.credit.Store(now() - l.cap) // a full bucket
}

// allow takes one token.
func (l *limiter) allow() bool {
	if l.off {
		l.suppressed.Add(1)
		return false
	}
	t := l.now()
	for {
		o := l.credit.Load()
		origin := o
		if t-origin > l.cap {
			origin = t - l.cap
		}
		if t-origin < l.cost {
			l.suppressed.Add(1)
			return false
		}
		if l.credit.CompareAndSwap(o, origin+l.cost) {
			return true
		}
	}
}
