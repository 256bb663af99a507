package neigh

import (
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/fib"
	"github.com/wirespeed/wirespeed/frame"
)

// hostRoutes records the /32 routes the table adds.
type hostRoutes struct {
	routes map[netip.Addr]uint32
	fail   bool
}

func (h *hostRoutes) AddHost(a netip.Addr, nh uint32) error {
	if h.fail {
		return errors.New("refused")
	}
	h.routes[a] = nh
	return nil
}

func (h *hostRoutes) DeleteHost(a netip.Addr) error {
	delete(h.routes, a)
	return nil
}

const nhSubnet = 1

func newSubnetRig(t *testing.T, count int, edit ...func(*Config)) (*rig, *hostRoutes) {
	h := &hostRoutes{routes: map[netip.Addr]uint32{}}
	r := newRig(t, append([]func(*Config){func(c *Config) {
		c.Hosts = h
		c.HostNextHops = IndexRange{First: 100, Count: count}
	}}, edit...)...)
	if err := r.tab.AddSubnet(nhSubnet, 0); err != nil {
		t.Fatal(err)
	}
	return r, h
}

// holdTo holds an IPv4 packet to dst routed to next hop nh.
func (r *rig) holdTo(nh uint32, dst netip.Addr) {
	r.t.Helper()
	b := r.held(nh, 0, 80, 0)
	d := b.Bytes(0)
	d[14] = 0x45
	a := dst.As4()
	copy(d[30:34], a[:])
	r.tab.Hold(b, r.out)
}

// TestSubnetHost: a frame routed to a subnet's next hop makes its destination a host with a next
// hop and a /32 route, resolved like any other; a host that does not answer loses both.
func TestSubnetHost(t *testing.T) {
	r, h := newSubnetRig(t, 4)
	if nh := r.nextHop(nhSubnet); nh.Flags != fib.NextHopUnresolved || nh.Ifindex != 0 {
		t.Fatalf("subnet next hop %+v", nh)
	}
	r.holdTo(nhSubnet, hostN)
	r.holdTo(nhSubnet, hostN)
	if e := r.entry(0, hostN); e.State != StateIncomplete || len(e.NextHops) != 1 || e.NextHops[0] != 100 || e.Held != 2 {
		t.Fatalf("entry %+v", e)
	}
	if nh, ok := h.routes[hostN]; !ok || nh != 100 || len(h.routes) != 1 {
		t.Fatalf("routes %v", h.routes)
	}
	if nh := r.nextHop(100); nh.Flags != fib.NextHopUnresolved || nh.Ifindex != 0 {
		t.Fatalf("host next hop %+v", nh)
	}
	if s := r.drainOut(); len(s) != 1 || s[0].tpa != hostN || s[0].ethDst != macBC {
		t.Fatalf("sent %+v", s)
	}
	r.replyFrom(0, macA, hostN, own0, mac0)
	r.poll()
	if nh := r.nextHop(100); nh.Flags != 0 || nh.DstMAC != macA {
		t.Fatalf("host next hop %+v", nh)
	}
	if len(r.ready.Frames) != 2 || r.ready.Frames[0].Meta != nhSubnet {
		t.Fatalf("%d ready", len(r.ready.Frames))
	}
	r.ready.Free()

	// A host that never answers.
	r.holdTo(nhSubnet, hostM)
	if nh := h.routes[hostM]; nh != 101 {
		t.Fatalf("routes %v", h.routes)
	}
	for d := time.Second; d <= 3*time.Second; d += time.Second {
		r.at(d)
		r.poll()
	}
	if _, ok := h.routes[hostM]; ok {
		t.Fatalf("route of a failed host kept: %v", h.routes)
	}
	if e := r.entry(0, hostM); e.State != StateFailed || len(e.NextHops) != 0 {
		t.Fatalf("entry %+v", e)
	}
	if nh := r.nextHop(101); nh.Flags != fib.NextHopUnresolved {
		t.Fatalf("freed host next hop %+v", nh)
	}
	if len(r.failed.Frames) != 1 {
		t.Fatalf("%d failed", len(r.failed.Frames))
	}
	r.failed.Free()
	// Traffic again: a new host next hop, from the end of the free list (101 was freed last).
	r.holdTo(nhSubnet, hostM)
	if nh := h.routes[hostM]; nh != 102 {
		t.Fatalf("routes %v", h.routes)
	}
	if e := r.entry(0, hostM); e.State != StateIncomplete {
		t.Fatalf("entry %+v", e)
	}
	c := r.tab.Counters()
	if c.Hosts != 3 || c.HostsRemoved != 1 {
		t.Fatalf("counters %+v", c)
	}
	r.drainOut()
	r.checkConserved()
}

// TestSubnetLimits: frames the table cannot make a host for are counted as HoldNoHost.
func TestSubnetLimits(t *testing.T) {
	r, h := newSubnetRig(t, 2)
	r.holdTo(nhSubnet, netip.MustParseAddr("10.0.0.10"))
	r.holdTo(nhSubnet, netip.MustParseAddr("10.0.0.11"))
	r.holdTo(nhSubnet, netip.MustParseAddr("10.0.0.12")) // host next hops used up
	r.holdTo(nhSubnet, own0)                             // ours
	r.holdTo(nhSubnet, netip.MustParseAddr("224.0.0.9")) // not a host
	b := r.held(nhSubnet, 0, 80, 0)                      // not IPv4
	b.Bytes(0)[14] = 0x60
	r.tab.Hold(b, r.out)
	b = r.held(nhSubnet, 0, 30, 0) // too short for an IPv4 header
	r.tab.Hold(b, r.out)
	h.fail = true
	r.holdTo(nhSubnet, netip.MustParseAddr("10.0.0.13"))
	c := r.tab.Counters()
	if c.HoldNoHost != 6 || c.Held != 2 || c.Hosts != 2 {
		t.Fatalf("counters %+v", c)
	}
	if e := r.entry(0, netip.MustParseAddr("10.0.0.12")); e.State != StateNone {
		t.Fatalf("entry without a host next hop: %+v", e)
	}
	if len(h.routes) != 2 || len(r.tab.Entries()) != 2 {
		t.Fatalf("routes %v, entries %+v", h.routes, r.tab.Entries())
	}
	r.drainOut()
	r.checkConserved()
}

// TestSubnetRemove: RemoveSubnet, Delete and eviction take hosts' routes and next hops away; a
// host next hop's index cannot be added by hand.
func TestSubnetRemove(t *testing.T) {
	r, h := newSubnetRig(t, 8, func(c *Config) { c.MaxEntries = 3 })
	for i := range 3 {
		r.at(time.Duration(i) * time.Millisecond)
		r.holdTo(nhSubnet, netip.AddrFrom4([4]byte{10, 0, 0, byte(10 + i)}))
	}
	if err := r.tab.Delete(0, netip.MustParseAddr("10.0.0.10")); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.routes[netip.MustParseAddr("10.0.0.10")]; ok || len(h.routes) != 2 {
		t.Fatalf("routes %v", h.routes)
	}
	r.at(3 * time.Millisecond)
	r.holdTo(nhSubnet, netip.MustParseAddr("10.0.0.13"))
	// A full table: a next hop evicts the oldest host.
	if err := r.tab.AddNextHop(5, 0, netip.MustParseAddr("10.0.0.99")); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.routes[netip.MustParseAddr("10.0.0.11")]; ok || len(h.routes) != 2 {
		t.Fatalf("routes %v", h.routes)
	}
	r.tab.RemoveSubnet(nhSubnet)
	if len(h.routes) != 0 || len(r.tab.Entries()) != 1 {
		t.Fatalf("routes %v, entries %+v", h.routes, r.tab.Entries())
	}
	r.holdTo(nhSubnet, netip.MustParseAddr("10.0.0.14"))
	if c := r.tab.Counters(); c.HoldNoNeighbour != 1 {
		t.Fatalf("counters %+v", c)
	}
	if err := r.tab.AddNextHop(100, 0, hostN); !errors.Is(err, ErrNextHop) {
		t.Fatalf("AddNextHop in the host range: %v", err)
	}
	if err := r.tab.AddSubnet(107, 0); !errors.Is(err, ErrNextHop) {
		t.Fatalf("AddSubnet in the host range: %v", err)
	}
	r2 := newRig(t)
	if err := r2.tab.AddSubnet(1, 0); !errors.Is(err, ErrConfig) {
		t.Fatalf("AddSubnet without Hosts: %v", err)
	}
	if _, err := New(&Config{HostNextHops: IndexRange{First: fib.MaxNextHop, Count: 2}}); !errors.Is(err, ErrConfig) {
		t.Fatalf("host range beyond MaxNextHop: %v", err)
	}
	r.out.Free()
	r.failed.Free()
	r.poll()
	r.drainOut()
	r.failed.Free()
	r.checkConserved()
}

// TestSubnetFIB: with FIBHosts, the host's /32 route is in the fib table the workers look up.
func TestSubnetFIB(t *testing.T) {
	routes := fib.New()
	if err := routes.Insert(netip.MustParsePrefix("10.0.0.0/24"), nhSubnet); err != nil {
		t.Fatal(err)
	}
	r := newRig(t, func(c *Config) {
		c.Hosts = FIBHosts(routes)
		c.HostNextHops = IndexRange{First: 1000, Count: 16}
	})
	if err := r.tab.AddSubnet(nhSubnet, 0); err != nil {
		t.Fatal(err)
	}
	r.holdTo(nhSubnet, hostN)
	if nh, ok := routes.Lookup(hostN); !ok || nh != 1000 {
		t.Fatalf("lookup %v: %d %v", hostN, nh, ok)
	}
	if nh, _ := routes.Lookup(hostM); nh != nhSubnet {
		t.Fatalf("lookup %v: %d", hostM, nh)
	}
	r.tab.Delete(0, hostN)
	if nh, _ := routes.Lookup(hostN); nh != nhSubnet {
		t.Fatalf("lookup %v after Delete: %d", hostN, nh)
	}
	r.drainOut()
	r.failed = frame.NewBatch(8)
	r.poll()
	r.failed.Free()
	r.checkConserved()
}

// TestSubnetHostFailsOnHold: a host whose resolution fails in the Hold that brings it more traffic
// becomes a host again at once (a new next hop and route), the new frame held there.
func TestSubnetHostFailsOnHold(t *testing.T) {
	r, h := newSubnetRig(t, 4)
	r.holdTo(nhSubnet, hostM)
	r.at(time.Second)
	r.poll()
	r.at(2 * time.Second)
	r.poll()
	r.at(3 * time.Second)
	r.holdTo(h.routes[hostM], hostM) // the /32 route's next hop
	if nh, ok := h.routes[hostM]; !ok || nh != 101 {
		t.Fatalf("routes %v", h.routes)
	}
	if e := r.entry(0, hostM); e.State != StateIncomplete || len(e.NextHops) != 1 || e.NextHops[0] != 101 || e.Held != 1 {
		t.Fatalf("entry %+v", e)
	}
	r.poll()
	if len(r.failed.Frames) != 1 {
		t.Fatalf("%d failed", len(r.failed.Frames))
	}
	r.failed.Free()
	r.drainOut()
	r.checkConserved()
}
