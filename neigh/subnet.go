package neigh

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/wirespeed/wirespeed/fib"
	"github.com/wirespeed/wirespeed/frame"
)

// HostRoutes is the route table as the neighbour table needs it for hosts of connected subnets: a
// /32 route to a next hop, and its removal. The table calls it with its mutex held; it must not
// call back into the Table. FIBHosts adapts a *fib.Table.
type HostRoutes interface {
	AddHost(addr netip.Addr, nh uint32) error
	DeleteHost(addr netip.Addr) error
}

// FIBHosts returns the HostRoutes of a fib.Table: /32 routes inserted into and deleted from it
// (the forwarding workers see them at their next lookup, RCU-style).
func FIBHosts(t *fib.Table) HostRoutes { return fibHosts{t} }

type fibHosts struct{ t *fib.Table }

func (h fibHosts) AddHost(a netip.Addr, nh uint32) error {
	return h.t.Insert(netip.PrefixFrom(a, 32), nh)
}
func (h fibHosts) DeleteHost(a netip.Addr) error { return h.t.Delete(netip.PrefixFrom(a, 32)) }

// AddSubnet makes next hop idx the next hop of a connected subnet on interface iface (the route of
// the subnet points at it). The table writes entry idx of the next-hop table, flagged
// fib.NextHopUnresolved, so that fwd hands every frame routed there to Hold. Hold resolves such a
// frame's IPv4 destination on iface: it takes a next-hop index from Config.HostNextHops for the
// host, makes it follow the host's entry (as AddNextHop does), adds a /32 route from the host to
// it through Config.Hosts, and holds the frame there. From then on the host's frames take the /32
// route, and its next hop is resolved, probed and updated like any other. When the host fails to
// answer (FAILED), or its entry is deleted or evicted, the route is deleted and the index goes back
// to the end of the free list (so that a worker still holding an older route table is unlikely to
// meet it reused). It needs Config.Hosts and Config.HostNextHops.
func (t *Table) AddSubnet(idx uint32, ifc uint16) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.now = t.clock()
	if t.c.Hosts == nil || t.c.HostNextHops.Count == 0 {
		return fmt.Errorf("%w: AddSubnet needs Config.Hosts and Config.HostNextHops", ErrConfig)
	}
	if err := t.checkIndex(idx); err != nil {
		return err
	}
	if int(ifc) >= len(t.ifaces) {
		return fmt.Errorf("%w: %d", ErrIface, ifc)
	}
	if i, ok := t.bound[idx]; ok {
		t.unbind(idx, i)
	}
	if _, ok := t.subnets[idx]; ok {
		t.dropSubnet(idx)
	}
	t.subnets[idx] = ifc
	t.nhs.Set(idx, fib.NextHop{Ifindex: ifc, Flags: fib.NextHopUnresolved})
	t.cnt.NextHopPub++
	t.finish(nil)
	return nil
}

// RemoveSubnet stops next hop idx being a subnet's and removes the hosts resolved through it, their
// routes and next hops. Entry idx of the next-hop table is left as it is.
func (t *Table) RemoveSubnet(idx uint32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.now = t.clock()
	if _, ok := t.subnets[idx]; ok {
		t.dropSubnet(idx)
	}
	t.finish(nil)
}

// dropSubnet forgets subnet next hop idx and the hosts resolved through it.
func (t *Table) dropSubnet(idx uint32) {
	delete(t.subnets, idx)
	for i := range t.ents {
		if e := &t.ents[i]; e.live && e.host && e.via == idx {
			t.dropHost(int32(i))
			if len(e.nh) == 0 {
				t.remove(int32(i))
			}
		}
	}
}

// idxRing is a FIFO of next-hop indices.
type idxRing struct {
	buf     []uint32
	head, n int
}

func (q *idxRing) push(x uint32) {
	q.buf[(q.head+q.n)%len(q.buf)] = x
	q.n++
}

func (q *idxRing) pop() uint32 {
	x := q.buf[q.head]
	q.head = (q.head + 1) % len(q.buf)
	q.n--
	return x
}

// checkIndex rejects next-hop indices the table cannot own: beyond fib's range or in the range of
// host next hops.
func (t *Table) checkIndex(idx uint32) error {
	h := t.c.HostNextHops
	if idx > fib.MaxNextHop || (idx >= h.First && uint64(idx) < uint64(h.First)+uint64(h.Count)) {
		return fmt.Errorf("%w: %d", ErrNextHop, idx)
	}
	return nil
}

// glean finds or makes the entry for the IPv4 destination of frame d, routed to subnet next hop
// via on interface ifc, with a host next hop and a /32 route. It reports false when it cannot.
func (t *Table) glean(d []byte, l3 int, ifc uint16, via uint32) (int32, bool) {
	if l3 == 0 {
		l3 = frame.EtherLen
	}
	if l3 > len(d) || len(d)-l3 < 20 || d[l3]>>4 != 4 {
		return 0, false
	}
	dst := binary.BigEndian.Uint32(d[l3+16:])
	if dst == 0 || isBadSender(dst) || t.isOwn(dst) {
		return 0, false
	}
	k := key{ifc, dst}
	i, ok := t.byKey[k]
	if !ok {
		if i, ok = t.create(k, true, false); !ok {
			return 0, false
		}
	}
	if !t.makeHost(i, via) {
		if t.ents[i].state == StateNone {
			t.remove(i)
		}
		return 0, false
	}
	return i, true
}

// makeHost gives entry i, a destination of subnet next hop via, a host next hop and a /32 route,
// unless it has them. A new entry starts resolving. It reports false when there is no free host
// next hop or Hosts refuses the route.
func (t *Table) makeHost(i int32, via uint32) bool {
	e := &t.ents[i]
	if e.host {
		return true
	}
	if t.hostFree.n == 0 {
		return false
	}
	idx := t.hostFree.pop()
	if err := t.c.Hosts.AddHost(addr4(e.key.addr), idx); err != nil {
		t.hostFree.push(idx)
		return false
	}
	if e.state == StateNone {
		t.enterIncomplete(i)
	}
	e.host, e.hostNH, e.via = true, idx, via
	t.bind(i, idx)
	t.cnt.Hosts++
	return true
}

// dropHost undoes glean for entry i: the /32 route is deleted, the host next hop unresolved, unbound
// and freed.
func (t *Table) dropHost(i int32) {
	e := &t.ents[i]
	if !e.host {
		return
	}
	t.c.Hosts.DeleteHost(addr4(e.key.addr))
	t.nhs.Set(e.hostNH, fib.NextHop{Ifindex: e.key.iface, Flags: fib.NextHopUnresolved})
	t.unbind(e.hostNH, i)
	t.hostFree.push(e.hostNH)
	e.host = false
	t.cnt.HostsRemoved++
}
