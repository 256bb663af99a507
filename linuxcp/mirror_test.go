//go:build linux

package linuxcp

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/wirespeed/wirespeed/fib"
	"golang.org/x/sys/unix"
)

// fakeSource is a Source driven by the test: Dump returns snap (which the test may change), and
// each Subscribe opens fresh channels the test sends on.
type fakeSource struct {
	mu    sync.Mutex
	snap  Snapshot
	sub   chan *fakeSub
	subs  int
	dumps int
}

type fakeSub struct {
	links  chan netlink.LinkUpdate
	addrs  chan netlink.AddrUpdate
	routes chan netlink.RouteUpdate
	neighs chan netlink.NeighUpdate
	errs   chan error
}

func newFakeSource() *fakeSource { return &fakeSource{sub: make(chan *fakeSub, 16)} }

func (f *fakeSource) Subscribe(done <-chan struct{}) (*Subscription, error) {
	s := &fakeSub{links: make(chan netlink.LinkUpdate), addrs: make(chan netlink.AddrUpdate),
		routes: make(chan netlink.RouteUpdate), neighs: make(chan netlink.NeighUpdate), errs: make(chan error, 1)}
	f.mu.Lock()
	f.subs++
	f.mu.Unlock()
	f.sub <- s
	return &Subscription{Links: s.links, Addrs: s.addrs, Routes: s.routes, Neighs: s.neighs, Errors: s.errs}, nil
}

func (f *fakeSource) Dump() (*Snapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dumps++
	s := Snapshot{Links: slices.Clone(f.snap.Links), Addrs: slices.Clone(f.snap.Addrs),
		Routes: slices.Clone(f.snap.Routes), Neighs: slices.Clone(f.snap.Neighs)}
	return &s, nil
}

func (f *fakeSource) edit(fn func(s *Snapshot)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(&f.snap)
}

// Kernel links of the tests: 2 (eth1, router interface 0), 3 (eth2, router interface 1, mirrored by
// name), 9 (mgmt, not mirrored).
const (
	link1, link2, linkMgmt = 2, 3, 9
)

var (
	macGW1  = net.HardwareAddr{2, 0, 0, 0, 1, 2}
	macGW2  = net.HardwareAddr{2, 0, 0, 0, 2, 2}
	macHost = net.HardwareAddr{2, 0, 0, 0, 1, 5}
)

func mkLink(idx int, name string, flags uint32) netlink.Link {
	return &netlink.Device{LinkAttrs: netlink.LinkAttrs{Index: idx, Name: name, RawFlags: flags}}
}

const upRunning = unix.IFF_UP | unix.IFF_RUNNING

func ipnet(s string) *net.IPNet {
	p := netip.MustParsePrefix(s)
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), 32)}
}

func ip(s string) net.IP { return netip.MustParseAddr(s).AsSlice() }

func via(dst, gw string, link int) netlink.Route {
	return netlink.Route{Family: netlink.FAMILY_V4, Table: unix.RT_TABLE_MAIN, Type: unix.RTN_UNICAST, Dst: ipnet(dst), Gw: ip(gw), LinkIndex: link, Protocol: unix.RTPROT_BOOT}
}

func connected(dst string, link int) netlink.Route {
	return netlink.Route{Family: netlink.FAMILY_V4, Table: unix.RT_TABLE_MAIN, Type: unix.RTN_UNICAST, Dst: ipnet(dst), LinkIndex: link,
		Protocol: unix.RTPROT_KERNEL, Scope: netlink.SCOPE_LINK}
}

func local(addr string, link int) netlink.Route {
	return netlink.Route{Family: netlink.FAMILY_V4, Table: unix.RT_TABLE_LOCAL, Type: unix.RTN_LOCAL, Dst: ipnet(addr + "/32"), LinkIndex: link,
		Protocol: unix.RTPROT_KERNEL, Scope: netlink.SCOPE_HOST}
}

func neighbour(addr string, link int, state int, mac net.HardwareAddr) netlink.Neigh {
	return netlink.Neigh{Family: netlink.FAMILY_V4, LinkIndex: link, State: state, IP: ip(addr), HardwareAddr: mac}
}

// baseSnapshot is a router with two mirrored interfaces and a management one.
func baseSnapshot() Snapshot {
	mp := via("198.19.0.0/16", "10.0.1.2", 0)
	mp.Gw, mp.LinkIndex = nil, 0
	mp.MultiPath = []*netlink.NexthopInfo{{LinkIndex: link1, Gw: ip("10.0.1.2"), Hops: 0}, {LinkIndex: link2, Gw: ip("10.0.2.2"), Hops: 2}}
	bh := netlink.Route{Family: netlink.FAMILY_V4, Table: unix.RT_TABLE_MAIN, Type: unix.RTN_BLACKHOLE, Dst: ipnet("192.0.2.0/24")}
	return Snapshot{
		Links: []netlink.Link{mkLink(1, "lo", upRunning), mkLink(link1, "eth1", upRunning), mkLink(link2, "eth2", upRunning), mkLink(linkMgmt, "mgmt", upRunning)},
		Addrs: []netlink.Addr{{IPNet: ipnet("10.0.1.1/24"), LinkIndex: link1}, {IPNet: ipnet("10.0.2.1/24"), LinkIndex: link2},
			{IPNet: ipnet("172.16.0.1/24"), LinkIndex: linkMgmt}},
		Routes: []netlink.Route{
			connected("10.0.1.0/24", link1), connected("10.0.2.0/24", link2), connected("172.16.0.0/24", linkMgmt),
			local("10.0.1.1", link1), local("10.0.2.1", link2),
			via("198.18.0.0/16", "10.0.1.2", link1), mp, bh,
			via("0.0.0.0/0", "172.16.0.254", linkMgmt),
		},
		Neighs: []netlink.Neigh{
			neighbour("10.0.1.2", link1, unix.NUD_REACHABLE, macGW1),
			neighbour("10.0.2.2", link2, unix.NUD_INCOMPLETE, nil),
			neighbour("10.0.1.5", link1, unix.NUD_STALE, macHost),
			neighbour("172.16.0.254", linkMgmt, unix.NUD_REACHABLE, macGW1),
		},
	}
}

type mirrorRig struct {
	t      *testing.T
	src    *fakeSource
	m      *Mirror
	routes *fib.Table
	nhs    *fib.NextHops
	cancel context.CancelFunc
	done   chan error
	cur    *fakeSub
	sent   uint64
}

func newMirrorRig(t *testing.T, snap Snapshot, edit ...func(*MirrorConfig)) *mirrorRig {
	t.Helper()
	g := &mirrorRig{t: t, src: newFakeSource(), routes: fib.New(), nhs: new(fib.NextHops)}
	g.src.snap = snap
	cfg := &MirrorConfig{Source: g.src, Ifaces: map[int]uint16{link1: 0}, IfaceNames: map[string]uint16{"eth2": 1},
		Routes: g.routes, NextHops: g.nhs, NextHopBase: 100, BatchWait: -1}
	for _, e := range edit {
		e(cfg)
	}
	var err error
	if g.m, err = NewMirror(cfg); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	g.cancel, g.done = cancel, make(chan error, 1)
	go func() { g.done <- g.m.Run(ctx) }()
	t.Cleanup(g.stop)
	g.cur = <-g.src.sub
	select {
	case <-g.m.Synced():
	case <-time.After(10 * time.Second):
		t.Fatal("no first sync")
	}
	return g
}

func (g *mirrorRig) stop() {
	if g.cancel != nil {
		g.cancel()
		<-g.done
		g.cancel = nil
	}
}

// send hands the mirror one update and waits until it is applied.
func (g *mirrorRig) send(u any) {
	g.t.Helper()
	switch u := u.(type) {
	case netlink.LinkUpdate:
		g.cur.links <- u
	case netlink.AddrUpdate:
		g.cur.addrs <- u
	case netlink.RouteUpdate:
		g.cur.routes <- u
	case netlink.NeighUpdate:
		g.cur.neighs <- u
	default:
		g.t.Fatalf("update %T", u)
	}
	g.sent++
	g.wait(func() bool {
		g.m.mu.Lock()
		defer g.m.mu.Unlock()
		return g.m.flushedAt >= g.sent
	})
}

func (g *mirrorRig) wait(cond func() bool) {
	g.t.Helper()
	for start := time.Now(); !cond(); time.Sleep(time.Millisecond) {
		if time.Since(start) > 10*time.Second {
			g.t.Fatalf("timed out; stats %+v", g.m.Stats())
		}
	}
}

// hop looks addr up and returns its next hop entry (which must exist).
func (g *mirrorRig) hop(addr string) (uint32, fib.NextHop) {
	g.t.Helper()
	idx, ok := g.routes.Lookup(netip.MustParseAddr(addr))
	if !ok {
		g.t.Fatalf("%s: no route", addr)
	}
	e, ok := g.nhs.Get(idx)
	if !ok {
		g.t.Fatalf("%s: next hop %d not in the table", addr, idx)
	}
	return idx, e
}

func (g *mirrorRig) noRoute(addr string) {
	g.t.Helper()
	if idx, ok := g.routes.Lookup(netip.MustParseAddr(addr)); ok {
		e, _ := g.nhs.Get(idx)
		g.t.Fatalf("%s: routed to %d %+v", addr, idx, e)
	}
}

func mac6(m net.HardwareAddr) [6]byte { return [6]byte(m) }

// TestMirrorDump: the first dump becomes routes and next hops as the Mirror's doc says.
func TestMirrorDump(t *testing.T) {
	var notes []string
	var mu sync.Mutex
	g := newMirrorRig(t, baseSnapshot(), func(c *MirrorConfig) {
		c.OnAddrs = func(id uint16, as []netip.Prefix) {
			mu.Lock()
			notes = append(notes, fmt.Sprint(id, as))
			mu.Unlock()
		}
	})
	gw1, e := g.hop("198.18.7.7")
	if e != (fib.NextHop{Ifindex: 0, DstMAC: mac6(macGW1)}) {
		t.Fatalf("198.18/16: %+v", e)
	}
	// The group: gw1 weight 1, gw2 (unresolved) weight 3.
	grp, e := g.hop("198.19.1.1")
	if e.Flags&fib.NextHopGroup == 0 {
		t.Fatalf("198.19/16: %+v, want a group", e)
	}
	ms := g.nhs.View().Group(grp)
	if len(ms) != 2 || ms[0] != (fib.Member{NextHop: gw1, Weight: 1}) || ms[1].Weight != 3 {
		t.Fatalf("group members %v (gw1 %d)", ms, gw1)
	}
	if e, _ := g.nhs.Get(ms[1].NextHop); e != (fib.NextHop{Ifindex: 1, Flags: fib.NextHopUnresolved}) {
		t.Fatalf("gw2: %+v", e)
	}
	// The connected subnet: hosts the kernel knows get a /32 with their MAC; others are unresolved.
	if _, e := g.hop("10.0.1.5"); e != (fib.NextHop{Ifindex: 0, DstMAC: mac6(macHost)}) {
		t.Fatalf("host 10.0.1.5: %+v", e)
	}
	if idx, e := g.hop("10.0.1.2"); idx != gw1 || e.DstMAC != mac6(macGW1) {
		t.Fatalf("the gateway as a host: %d %+v", idx, e)
	}
	if _, e := g.hop("10.0.1.9"); e != (fib.NextHop{Ifindex: 0, Flags: fib.NextHopUnresolved}) {
		t.Fatalf("10.0.1.9: %+v", e)
	}
	if _, e := g.hop("10.0.2.9"); e != (fib.NextHop{Ifindex: 1, Flags: fib.NextHopUnresolved}) {
		t.Fatalf("10.0.2.9: %+v", e)
	}
	if _, e := g.hop("10.0.1.1"); e.Flags != fib.NextHopLocal {
		t.Fatalf("own address: %+v", e)
	}
	if _, e := g.hop("192.0.2.1"); e.Flags != fib.NextHopDrop {
		t.Fatalf("blackhole: %+v", e)
	}
	// The management interface is not mirrored: no default route, no 172.16/24.
	g.noRoute("8.8.8.8")
	g.noRoute("172.16.0.254")
	if got := g.m.Addrs(0); !slices.Equal(got, []netip.Prefix{netip.MustParsePrefix("10.0.1.1/24")}) {
		t.Fatalf("Addrs(0) = %v", got)
	}
	if got := g.m.Addrs(1); !slices.Equal(got, []netip.Prefix{netip.MustParsePrefix("10.0.2.1/24")}) {
		t.Fatalf("Addrs(1) = %v (mirrored by name)", got)
	}
	mu.Lock()
	if len(notes) != 2 {
		t.Errorf("OnAddrs calls %v", notes)
	}
	mu.Unlock()
	st := g.m.Stats()
	// Routes: 198.18/16, 198.19/16, 192.0.2/24, two subnets, two local, two hosts (10.0.1.2, .5).
	if st.Routes != 9 || g.routes.Len() != 9 || st.Resyncs != 1 {
		t.Fatalf("stats %+v, table %d routes", st, g.routes.Len())
	}
	// Next hops: local, drop, gw1, gw2, group, two subnets, host .5.
	if st.NextHops != 8 {
		t.Fatalf("%d next hops", st.NextHops)
	}
}

// TestMirrorUpdates: route, neighbour, address and link updates change the tables as the kernel's do.
func TestMirrorUpdates(t *testing.T) {
	g := newMirrorRig(t, baseSnapshot())
	grp, _ := g.hop("198.19.0.1")
	gw2 := g.nhs.View().Group(grp)[1].NextHop

	// The second gateway resolves: its next hop gets the MAC, under the same index.
	g.send(netlink.NeighUpdate{Type: unix.RTM_NEWNEIGH, Neigh: neighbour("10.0.2.2", link2, unix.NUD_REACHABLE, macGW2)})
	if e, _ := g.nhs.Get(gw2); e != (fib.NextHop{Ifindex: 1, DstMAC: mac6(macGW2)}) {
		t.Fatalf("gw2 after REACHABLE: %+v", e)
	}
	// A replacement moves 198.18/16 to gw2; a deletion removes it.
	g.send(netlink.RouteUpdate{Type: unix.RTM_NEWROUTE, NlFlags: unix.NLM_F_REPLACE, Route: via("198.18.0.0/16", "10.0.2.2", link2)})
	if idx, _ := g.hop("198.18.0.1"); idx != gw2 {
		t.Fatalf("198.18/16 on %d after replace, want %d", idx, gw2)
	}
	g.send(netlink.RouteUpdate{Type: unix.RTM_DELROUTE, Route: via("198.18.0.0/16", "10.0.2.2", link2)})
	g.noRoute("198.18.0.1")
	// A new host appears, then fails.
	g.noRouteHost(t, "10.0.1.77")
	g.send(netlink.NeighUpdate{Type: unix.RTM_NEWNEIGH, Neigh: neighbour("10.0.1.77", link1, unix.NUD_REACHABLE, macHost)})
	if _, e := g.hop("10.0.1.77"); e.DstMAC != mac6(macHost) {
		t.Fatalf("new host: %+v", e)
	}
	g.send(netlink.NeighUpdate{Type: unix.RTM_NEWNEIGH, Neigh: neighbour("10.0.1.77", link1, unix.NUD_FAILED, nil)})
	g.noRouteHost(t, "10.0.1.77")
	// The first gateway goes stale (still valid), then is deleted: the group's member and
	// 198.19/16 stay, unresolved.
	g.send(netlink.NeighUpdate{Type: unix.RTM_NEWNEIGH, Neigh: neighbour("10.0.1.2", link1, unix.NUD_STALE, macGW1)})
	gw1 := g.nhs.View().Group(grp)[0].NextHop
	if e, _ := g.nhs.Get(gw1); e.DstMAC != mac6(macGW1) || e.Flags != 0 {
		t.Fatalf("stale gw1: %+v", e)
	}
	g.send(netlink.NeighUpdate{Type: unix.RTM_DELNEIGH, Neigh: neighbour("10.0.1.2", link1, 0, nil)})
	if e, _ := g.nhs.Get(gw1); e.Flags != fib.NextHopUnresolved {
		t.Fatalf("deleted gw1: %+v", e)
	}
	// A second address on eth1 and its subnet; its removal.
	g.send(netlink.AddrUpdate{LinkIndex: link1, LinkAddress: *ipnet("10.0.5.1/24"), NewAddr: true})
	if got := g.m.Addrs(0); len(got) != 2 {
		t.Fatalf("Addrs(0) = %v", got)
	}
	g.send(netlink.AddrUpdate{LinkIndex: link1, LinkAddress: *ipnet("10.0.5.1/24"), NewAddr: false})
	if got := g.m.Addrs(0); len(got) != 1 {
		t.Fatalf("Addrs(0) = %v", got)
	}
	// eth2 loses its carrier: routes through it leave the table (the group becomes gw1 alone),
	// and come back with it.
	g.send(netlink.LinkUpdate{Header: unix.NlMsghdr{Type: unix.RTM_NEWLINK}, Link: mkLink(link2, "eth2", unix.IFF_UP)})
	g.noRoute("10.0.2.9")
	if idx, _ := g.hop("198.19.0.1"); idx != gw1 {
		t.Fatalf("198.19/16 without eth2: %d, want gw1 %d", idx, gw1)
	}
	g.send(netlink.LinkUpdate{Header: unix.NlMsghdr{Type: unix.RTM_NEWLINK}, Link: mkLink(link2, "eth2", upRunning)})
	grp, e := g.hop("198.19.0.1")
	if e.Flags&fib.NextHopGroup == 0 || len(g.nhs.View().Group(grp)) != 2 {
		t.Fatalf("198.19/16 with eth2 back: %d %+v", grp, e)
	}
	g.hop("10.0.2.9")
	// eth2 goes down: the kernel deletes its routes and neighbours without a word; so does the
	// mirror, and they do not come back with the link (the kernel re-adds its connected route).
	// A multipath route keeps its next hop through the link (dead while it is down, revived when
	// it comes up, as the kernel's fib_sync_up does).
	g.send(netlink.LinkUpdate{Header: unix.NlMsghdr{Type: unix.RTM_NEWLINK}, Link: mkLink(link2, "eth2", 0)})
	if idx, _ := g.hop("198.19.0.1"); idx != gw1 {
		t.Fatalf("198.19/16 while eth2 is down: %d, want gw1 %d", idx, gw1)
	}
	g.send(netlink.LinkUpdate{Header: unix.NlMsghdr{Type: unix.RTM_NEWLINK}, Link: mkLink(link2, "eth2", upRunning)})
	g.noRoute("10.0.2.9")
	if grp, e := g.hop("198.19.0.1"); e.Flags&fib.NextHopGroup == 0 || len(g.nhs.View().Group(grp)) != 2 {
		t.Fatalf("198.19/16 after eth2 came back: %d %+v", grp, e)
	}
	g.send(netlink.RouteUpdate{Type: unix.RTM_NEWROUTE, Route: connected("10.0.2.0/24", link2)})
	g.hop("10.0.2.9")
	// The multipath route goes: the group and its members are released.
	mp := baseSnapshot().Routes[6]
	g.send(netlink.RouteUpdate{Type: unix.RTM_DELROUTE, Route: mp})
	g.noRoute("198.19.0.1")
	if _, ok := g.nhs.Get(grp); ok {
		t.Fatal("the group's entry remains")
	}
	// Next hops: local, drop, two subnets, host .5 (gw1 and gw2 went with the group). Routes: two
	// subnets, two local addresses (the kernel keeps the local route of a link that goes down),
	// the blackhole, host .5.
	if st := g.m.Stats(); st.NextHops != 5 || st.Routes != 6 {
		t.Log(g.routes.Routes())
		t.Fatalf("stats %+v", st)
	}
}

func (g *mirrorRig) noRouteHost(t *testing.T, a string) {
	t.Helper()
	if _, e := g.hop(a); e.Flags != fib.NextHopUnresolved {
		t.Fatalf("%s: %+v, want the subnet's unresolved next hop", a, e)
	}
	if _, ok := g.routes.Get(netip.PrefixFrom(netip.MustParseAddr(a), 32)); ok {
		t.Fatalf("%s has a /32", a)
	}
}

// TestMirrorResync: after ENOBUFS the mirror subscribes again, dumps, and writes only the difference:
// routes added, changed and removed meanwhile; routes that did not change resolve all along.
func TestMirrorResync(t *testing.T) {
	snap := baseSnapshot()
	for i := range 200 {
		snap.Routes = append(snap.Routes, via(fmt.Sprintf("203.0.%d.0/24", i), "10.0.1.2", link1))
	}
	g := newMirrorRig(t, snap)
	before := g.m.Stats()
	// Meanwhile: 20 added (on gw2), 10 changed (to gw2), 15 removed; 198.18/16 untouched.
	g.src.edit(func(s *Snapshot) {
		var rs []netlink.Route
		for _, r := range s.Routes {
			var a [4]byte
			copy(a[:], r.Dst.IP.To4())
			switch {
			case a[0] == 203 && a[2] < 10:
				rs = append(rs, via(fmt.Sprintf("203.0.%d.0/24", a[2]), "10.0.2.2", link2))
			case a[0] == 203 && a[2] >= 185:
			default:
				rs = append(rs, r)
			}
		}
		for i := range 20 {
			rs = append(rs, via(fmt.Sprintf("198.51.100.%d/32", i), "10.0.2.2", link2))
		}
		s.Routes = rs
	})
	// Readers look up unchanged routes throughout.
	var stop atomic.Bool
	var misses atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			for _, a := range []uint32{0xC6120001, 0xCB006401, 0x0A000105} { // 198.18.0.1, 203.0.100.1, 10.0.1.5
				if _, ok := g.routes.LookupU32(a); !ok {
					misses.Add(1)
				}
			}
		}
	}()
	g.cur.errs <- fmt.Errorf("route subscription: %w", syscall.ENOBUFS)
	g.cur = <-g.src.sub
	g.wait(func() bool { return g.m.Stats().Resyncs == 2 })
	stop.Store(true)
	wg.Wait()
	if misses.Load() != 0 {
		t.Fatalf("%d lookups of unchanged routes missed during the resync", misses.Load())
	}
	after := g.m.Stats()
	if d := after.Changes - before.Changes; d != 45 {
		t.Fatalf("the resync wrote %d changes, want 45 (20 added, 10 changed, 15 removed)", d)
	}
	if after.Errors != 1 || after.Resyncs != 2 {
		t.Fatalf("stats %+v", after)
	}
	_, gw2 := g.hop("10.0.2.2")
	idx2, _ := g.hop("203.0.3.1")
	if e, _ := g.nhs.Get(idx2); e != gw2 {
		t.Fatalf("changed route: %+v", e)
	}
	g.hop("203.0.184.1")
	g.noRoute("203.0.185.1")
	g.hop("198.51.100.19")
	if g.routes.Len() != after.Routes || after.Routes != 9+200+20-15 {
		t.Fatalf("%d routes (%d in the table)", after.Routes, g.routes.Len())
	}
	// Updates flow on the new subscription.
	g.send(netlink.RouteUpdate{Type: unix.RTM_DELROUTE, Route: via("198.18.0.0/16", "10.0.1.2", link1)})
	g.noRoute("198.18.0.1")
}

// TestMirrorClosedSubscription: a subscription whose channel closes (its socket failed) is
// replaced, and the updates it missed are found in the dump.
func TestMirrorClosedSubscription(t *testing.T) {
	g := newMirrorRig(t, baseSnapshot())
	g.src.edit(func(s *Snapshot) { s.Routes = append(s.Routes, via("100.64.0.0/10", "10.0.1.2", link1)) })
	close(g.cur.routes)
	g.cur = <-g.src.sub
	g.wait(func() bool { return g.m.Stats().Resyncs == 2 })
	g.hop("100.64.1.1")
}

// TestMirrorRawNeighbour: a neighbour notification as the kernel writes it (ndmsg, NDA_DST,
// NDA_LLADDR), parsed by the netlink library, resolves a gateway.
func TestMirrorRawNeighbour(t *testing.T) {
	g := newMirrorRig(t, baseSnapshot())
	grp, _ := g.hop("198.19.0.1")
	gw2 := g.nhs.View().Group(grp)[1].NextHop
	// struct ndmsg: family, pad[3], ifindex (s32), state (u16), flags, type.
	msg := []byte{unix.AF_INET, 0, 0, 0}
	msg = binary.NativeEndian.AppendUint32(msg, link2)
	msg = binary.NativeEndian.AppendUint16(msg, unix.NUD_REACHABLE)
	msg = append(msg, 0, unix.RTN_UNICAST)
	attr := func(typ uint16, v []byte) {
		msg = binary.NativeEndian.AppendUint16(msg, uint16(4+len(v)))
		msg = binary.NativeEndian.AppendUint16(msg, typ)
		msg = append(msg, v...)
		for len(msg)%4 != 0 {
			msg = append(msg, 0)
		}
	}
	attr(unix.NDA_DST, []byte{10, 0, 2, 2})
	attr(unix.NDA_LLADDR, macGW2)
	n, err := netlink.NeighDeserialize(msg)
	if err != nil {
		t.Fatal(err)
	}
	g.send(netlink.NeighUpdate{Type: unix.RTM_NEWNEIGH, Neigh: *n})
	if e, _ := g.nhs.Get(gw2); e != (fib.NextHop{Ifindex: 1, DstMAC: mac6(macGW2)}) {
		t.Fatalf("gw2: %+v (parsed %+v)", e, n)
	}
}

// TestMirrorMetricAndLocal: of two routes to a prefix the lower metric wins, the other takes over
// when it goes; the local table wins over main; a route with no usable next hop yields to the next.
func TestMirrorMetricAndLocal(t *testing.T) {
	g := newMirrorRig(t, baseSnapshot())
	a := via("100.64.0.0/16", "10.0.1.2", link1)
	a.Priority = 10
	b := via("100.64.0.0/16", "10.0.2.2", link2)
	b.Priority = 20
	g.send(netlink.RouteUpdate{Type: unix.RTM_NEWROUTE, Route: b})
	g.send(netlink.RouteUpdate{Type: unix.RTM_NEWROUTE, Route: a})
	gw1, _ := g.hop("10.0.1.2")
	if idx, _ := g.hop("100.64.0.1"); idx != gw1 {
		t.Fatal("the higher metric won")
	}
	g.send(netlink.RouteUpdate{Type: unix.RTM_DELROUTE, Route: a})
	if idx, e := g.hop("100.64.0.1"); idx == gw1 || e.Ifindex != 1 {
		t.Fatalf("after the better route went: %d %+v", idx, e)
	}
	g.send(netlink.RouteUpdate{Type: unix.RTM_NEWROUTE, Route: local("100.64.0.0", link1)})
	if _, e := g.hop("100.64.0.0"); e.Flags != fib.NextHopLocal {
		t.Fatalf("local table: %+v", e)
	}
	// A route through the management interface only is not mirrored.
	g.send(netlink.RouteUpdate{Type: unix.RTM_NEWROUTE, Route: via("100.65.0.0/16", "172.16.0.254", linkMgmt)})
	g.noRoute("100.65.0.1")
}

// TestMirrorNextHopRange: routes beyond the next-hop index range are left out and counted.
func TestMirrorNextHopRange(t *testing.T) {
	s := baseSnapshot()
	for i := range 10 {
		s.Routes = append(s.Routes, via(fmt.Sprintf("100.64.%d.0/24", i), fmt.Sprintf("10.0.1.%d", 100+i), link1))
	}
	g := newMirrorRig(t, s, func(c *MirrorConfig) { c.NextHopBase, c.NextHopCount = 10, 12 })
	st := g.m.Stats()
	if st.NextHops > 12 || st.NextHops < 10 || st.NoNextHop == 0 {
		t.Fatalf("stats %+v", st)
	}
	for i := range uint32(200) {
		if e, ok := g.nhs.Get(i); ok && (i < 10 || i >= 22) {
			t.Fatalf("next hop %d (%+v) outside the range", i, e)
		}
	}
}

func TestMirrorConfigErrors(t *testing.T) {
	for _, c := range []*MirrorConfig{nil, {}, {Routes: fib.New()},
		{Routes: fib.New(), NextHops: new(fib.NextHops), NextHopBase: fib.MaxNextHop, NextHopCount: 2}} {
		if _, err := NewMirror(c); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
}
