package fib

import (
	"sync"
	"sync/atomic"
)

// NextHop is what the forwarding path needs to send a frame to one next hop: the egress interface and
// the neighbour's Ethernet address. Everything else of the egress L2 header (the source address, VLAN
// tags, a switch port) belongs to the egress interface, which the forwarder knows by Ifindex. It is a
// small value type without pointers.
type NextHop struct {
	Ifindex uint16  // egress interface index (the forwarder's own numbering)
	DstMAC  [6]byte // destination MAC address to write (the neighbour's)
	Flags   NextHopFlags
}

// NextHopFlags qualify a next hop.
type NextHopFlags uint16

const (
	// NextHopDrop: discard frames routed here (blackhole, unreachable, prohibit routes).
	NextHopDrop NextHopFlags = 1 << iota
	// NextHopLocal: the destination is this host; deliver rather than forward.
	NextHopLocal
	// NextHopUnresolved: the neighbour's MAC address is not known yet (DstMAC is not valid).
	NextHopUnresolved
	// NextHopGroup: the entry is an ECMP group (set by NextHopChange.Members): each flow takes one of
	// its members, chosen by NextHopView.Pick; Ifindex and DstMAC are not used.
	NextHopGroup
)

// NextHopChange is one element of NextHops.Apply: set entry Index to Entry, or remove it if Delete is set.
// With Members, entry Index becomes an ECMP group of those next hops (Entry.Flags gets NextHopGroup);
// without, it is a plain next hop (NextHopGroup is cleared). A group's members are plain next hops: a
// member that is itself a group is not followed (the forwarding path counts its frames as not
// forwardable).
type NextHopChange struct {
	Index   uint32
	Entry   NextHop
	Delete  bool
	Members []Member
}

// NextHops maps next-hop indices (the values a Table returns, 0..MaxNextHop) to NextHop entries.
//
// Concurrency contract (RCU style): View, Get and NextHopView's methods may be called from any number of
// goroutines at any time; they never lock, never write shared memory and hold no reference count. View is
// one atomic pointer load of the current immutable version; a forwarding worker calls it once per batch of
// frames and reads every entry it needs from that view. Set, Delete and Apply are serialized by a mutex;
// each copies the entry array, changes the copy, and publishes it with one atomic store, so entries are
// always replaced whole and a view never changes. Old versions are reclaimed by the garbage collector.
// An update costs O(number of entries); use Apply to change many at once.
//
// The zero value is an empty table ready to use. A NextHops must not be copied after first use.
type NextHops struct {
	_   [0]sync.Mutex
	cur atomic.Pointer[NextHopView]
	mu  sync.Mutex
}

// NextHopView is one immutable version of a NextHops table.
type NextHopView struct {
	entries []NextHop
	present []uint64 // bitmap over entries
	groups  []*group // per entry, its group (NextHopGroup); nil (or shorter) while there is none
}

var emptyView = &NextHopView{}

// View returns the current version (never nil).
func (h *NextHops) View() *NextHopView {
	if v := h.cur.Load(); v != nil {
		return v
	}
	return emptyView
}

// Get returns entry i of the current version.
func (h *NextHops) Get(i uint32) (NextHop, bool) { return h.View().Get(i) }

// Get returns entry i and whether it is set.
func (v *NextHopView) Get(i uint32) (NextHop, bool) {
	if uint64(i) >= uint64(len(v.entries)) || v.present[i/64]&(1<<(i%64)) == 0 {
		return NextHop{}, false
	}
	return v.entries[i], true
}

// At returns a pointer to entry i, or nil when it is not set. The entry must not be modified.
func (v *NextHopView) At(i uint32) *NextHop {
	if uint64(i) >= uint64(len(v.entries)) || v.present[i/64]&(1<<(i%64)) == 0 {
		return nil
	}
	return &v.entries[i]
}

// Len returns one more than the highest index that was ever set in this version's history (the size of
// the index space, not the number of set entries).
func (v *NextHopView) Len() int { return len(v.entries) }

// Set sets entry i (0..MaxNextHop) and publishes the new version.
func (h *NextHops) Set(i uint32, e NextHop) error {
	return h.Apply([]NextHopChange{{Index: i, Entry: e}})
}

// Delete removes entry i and publishes the new version. Removing an absent entry is not an error.
func (h *NextHops) Delete(i uint32) error {
	return h.Apply([]NextHopChange{{Index: i, Delete: true}})
}

// Apply applies changes in order and publishes the result once. If an index is above MaxNextHop, nothing
// is applied and the error is a *ChangeError wrapping ErrNextHopRange; likewise, with ErrGroup, for a
// change with a bad member list.
func (h *NextHops) Apply(changes []NextHopChange) error {
	need := 0
	var gs []*group // the new groups, by change
	for k, c := range changes {
		if c.Index > MaxNextHop {
			return &ChangeError{Index: k, Err: ErrNextHopRange}
		}
		if !c.Delete {
			need = max(need, int(c.Index)+1)
		}
		if len(c.Members) > 0 && !c.Delete {
			g, err := newGroup(c.Members)
			if err != nil {
				return &ChangeError{Index: k, Err: err}
			}
			if gs == nil {
				gs = make([]*group, len(changes))
			}
			gs[k] = g
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	old := h.View()
	n := max(len(old.entries), need)
	nv := &NextHopView{entries: make([]NextHop, n), present: make([]uint64, (n+63)/64)}
	copy(nv.entries, old.entries)
	copy(nv.present, old.present)
	if old.groups != nil || gs != nil {
		nv.groups = make([]*group, n)
		copy(nv.groups, old.groups)
	}
	for k, c := range changes {
		i := c.Index
		if nv.groups != nil && uint64(i) < uint64(n) {
			nv.groups[i] = nil
		}
		if c.Delete {
			if uint64(i) < uint64(n) {
				nv.entries[i] = NextHop{}
				nv.present[i/64] &^= 1 << (i % 64)
			}
			continue
		}
		e := c.Entry
		e.Flags &^= NextHopGroup
		if gs != nil && gs[k] != nil {
			e.Flags |= NextHopGroup
			nv.groups[i] = gs[k]
		}
		nv.entries[i] = e
		nv.present[i/64] |= 1 << (i % 64)
	}
	if nv.groups != nil && !hasGroup(nv.groups) {
		nv.groups = nil
	}
	h.cur.Store(nv)
	return nil
}

func hasGroup(gs []*group) bool {
	for _, g := range gs {
		if g != nil {
			return true
		}
	}
	return false
}
