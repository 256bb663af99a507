//go:build linux

package linuxcp

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/wirespeed/wirespeed/fib"
	"golang.org/x/sys/unix"
)

// kernelModel is the kernel's state as a sequence of updates leaves it: what a dump would return.
type kernelModel struct {
	links  map[int]uint32 // flags
	addrs  map[string]netlink.Addr
	routes map[string]netlink.Route
	neighs map[string]netlink.Neigh
}

func routeID(r netlink.Route) string {
	return fmt.Sprintf("%d %v %d %d", r.Table, r.Dst, r.Tos, r.Priority)
}

func (k *kernelModel) snapshot() Snapshot {
	var s Snapshot
	for _, i := range sortedKeys(k.links) {
		s.Links = append(s.Links, mkLink(i, fmt.Sprintf("eth%d", i), k.links[i]))
	}
	for _, a := range sortedKeys(k.addrs) {
		s.Addrs = append(s.Addrs, k.addrs[a])
	}
	for _, r := range sortedKeys(k.routes) {
		s.Routes = append(s.Routes, k.routes[r])
	}
	for _, n := range sortedKeys(k.neighs) {
		s.Neighs = append(s.Neighs, k.neighs[n])
	}
	return s
}

func sortedKeys[K int | string, V any](m map[K]V) []K {
	var ks []K
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// resolved is what the forwarding path makes of a prefix's next hop, independent of index values.
func resolved(t *fib.Table, h *fib.NextHops) map[netip.Prefix]string {
	v := h.View()
	out := map[netip.Prefix]string{}
	for _, r := range t.Routes() {
		e := v.At(r.NextHop)
		if e == nil {
			out[r.Prefix] = "missing"
			continue
		}
		if e.Flags&fib.NextHopGroup == 0 {
			out[r.Prefix] = fmt.Sprintf("%+v", *e)
			continue
		}
		var ms []string
		for _, m := range v.Group(r.NextHop) {
			me := v.At(m.NextHop)
			if me == nil {
				ms = append(ms, "missing")
				continue
			}
			ms = append(ms, fmt.Sprintf("%+v*%d", *me, m.Weight))
		}
		slices.Sort(ms)
		out[r.Prefix] = "group " + strings.Join(ms, " ")
	}
	return out
}

// TestMirrorModel: after every step of random sequences of link, address, route and neighbour
// updates, the tables a Mirror keeps up to date incrementally resolve exactly as those of a fresh
// Mirror that read the same state from one dump; and the next-hop entries no route uses are
// released.
func TestMirrorModel(t *testing.T) {
	for seed := range uint64(10) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { modelRun(t, seed, 80) })
	}
}

func modelRun(t *testing.T, seed uint64, steps int) {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	k := &kernelModel{links: map[int]uint32{2: upRunning, 3: upRunning, 9: upRunning}, addrs: map[string]netlink.Addr{},
		routes: map[string]netlink.Route{}, neighs: map[string]netlink.Neigh{}}
	src := newFakeSource()
	src.snap = k.snapshot()
	cfg := func(s Source, routes *fib.Table, nhs *fib.NextHops) *MirrorConfig {
		return &MirrorConfig{Source: s, Ifaces: map[int]uint16{2: 0}, IfaceNames: map[string]uint16{"eth3": 1},
			Routes: routes, NextHops: nhs}
	}
	routes, nhs := fib.New(), new(fib.NextHops)
	m, err := NewMirror(cfg(src, routes, nhs))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.resync(); err != nil {
		t.Fatal(err)
	}
	links := []int{2, 3, 9}
	gws := []string{"10.0.2.2", "10.0.2.3", "10.0.3.2", "10.0.3.3", "10.0.9.2", "10.0.4.4"}
	prefixes := []string{"0.0.0.0/0", "198.18.0.0/16", "198.18.1.0/24", "10.0.2.7/32", "10.0.2.3/32", "203.0.113.0/24", "10.0.3.0/24"}
	macs := []net.HardwareAddr{{2, 0, 0, 0, 0, 1}, {2, 0, 0, 0, 0, 2}}
	states := []int{unix.NUD_REACHABLE, unix.NUD_STALE, unix.NUD_INCOMPLETE, unix.NUD_FAILED, unix.NUD_PERMANENT, unix.NUD_DELAY}
	pick := func(n int) int { return r.IntN(n) }
	for step := range steps {
		var desc string
		switch op := pick(10); {
		case op == 0: // a link's flags
			l := links[pick(3)]
			flags := []uint32{upRunning, unix.IFF_UP, 0}[pick(3)]
			if k.links[l]&unix.IFF_UP != 0 && flags&unix.IFF_UP == 0 {
				for id, rt := range k.routes {
					all := true
					hops := rt.MultiPath
					if len(hops) == 0 {
						all = rt.LinkIndex == l
					}
					for _, h := range hops {
						all = all && h.LinkIndex == l
					}
					if all && rt.Type != unix.RTN_LOCAL {
						delete(k.routes, id)
					}
				}
				for id, n := range k.neighs {
					if n.LinkIndex == l {
						delete(k.neighs, id)
					}
				}
			}
			k.links[l] = flags
			m.link(mkLink(l, fmt.Sprintf("eth%d", l), flags), false)
			desc = fmt.Sprintf("link %d flags %#x", l, flags)
		case op == 1: // an address
			l := links[pick(3)]
			a := fmt.Sprintf("10.0.%d.1/24", []int{2, 3, 9, 4}[pick(4)])
			id := fmt.Sprint(l, a)
			add := pick(2) == 0
			if add {
				k.addrs[id] = netlink.Addr{IPNet: ipnet(a), LinkIndex: l}
			} else {
				delete(k.addrs, id)
			}
			m.addr(l, *ipnet(a), add)
			desc = fmt.Sprintf("addr %s on %d add %v", a, l, add)
		case op <= 6: // a route added or replaced
			var rt netlink.Route
			dst := prefixes[pick(len(prefixes))]
			switch pick(6) {
			case 0:
				rt = connected(dst, links[pick(3)])
			case 1:
				rt = local(strings.Split(dst, "/")[0], links[pick(3)])
				rt.Dst = ipnet(dst)
			case 2:
				rt = netlink.Route{Family: netlink.FAMILY_V4, Table: unix.RT_TABLE_MAIN, Type: unix.RTN_BLACKHOLE, Dst: ipnet(dst)}
			case 3:
				rt = via(dst, gws[0], 0)
				rt.Gw = nil
				for range 2 + pick(2) {
					rt.MultiPath = append(rt.MultiPath, &netlink.NexthopInfo{LinkIndex: links[pick(3)], Gw: ip(gws[pick(len(gws))]), Hops: pick(3)})
				}
			default:
				rt = via(dst, gws[pick(len(gws))], links[pick(3)])
			}
			rt.Priority = []int{0, 0, 10}[pick(3)]
			k.routes[routeID(rt)] = rt
			m.route(&rt, false)
			desc = fmt.Sprintf("route %+v", rt)
		case op == 7: // a route deleted
			ids := sortedKeys(k.routes)
			if len(ids) == 0 {
				continue
			}
			rt := k.routes[ids[pick(len(ids))]]
			delete(k.routes, routeID(rt))
			m.route(&rt, true)
			desc = fmt.Sprintf("del route %v", routeID(rt))
		default: // a neighbour
			l := links[pick(3)]
			gw := gws[pick(len(gws))]
			if l == 9 && pick(2) == 0 {
				gw = "10.0.9.2"
			}
			n := neighbour(gw, l, states[pick(len(states))], macs[pick(2)])
			id := fmt.Sprint(l, gw)
			del := pick(5) == 0
			if del {
				delete(k.neighs, id)
			} else if k.links[l]&unix.IFF_UP != 0 {
				k.neighs[id] = n
			} else {
				continue // a link that is down has no neighbours
			}
			m.neigh(&n, del)
			desc = fmt.Sprintf("neigh %s on %d state %#x del %v", gw, l, n.State, del)
		}
		if pick(3) != 0 && step != steps-1 {
			continue // batches of several updates
		}
		m.flush()
		// The oracle: a fresh mirror of the same state.
		src2 := newFakeSource()
		src2.snap = k.snapshot()
		r2, n2 := fib.New(), new(fib.NextHops)
		m2, _ := NewMirror(cfg(src2, r2, n2))
		if err := m2.resync(); err != nil {
			t.Fatal(err)
		}
		got, want := resolved(routes, nhs), resolved(r2, n2)
		for _, p := range sortedPrefixes(got, want) {
			if got[p] != want[p] {
				t.Fatalf("step %d (%s): %v: incremental %q, from a dump %q", step, desc, p, got[p], want[p])
			}
		}
		// Next hops: exactly those the routes use (and their groups' members).
		used := map[uint32]bool{}
		v := nhs.View()
		for _, rt := range routes.Routes() {
			used[rt.NextHop] = true
			for _, mb := range v.Group(rt.NextHop) {
				used[mb.NextHop] = true
			}
		}
		live := 0
		for i := range uint32(v.Len()) {
			if v.At(i) != nil {
				live++
				if !used[i] {
					t.Fatalf("step %d (%s): next hop %d (%+v) is set but unused", step, desc, i, *v.At(i))
				}
			}
		}
		if live != len(used) || m.Stats().NextHops != live {
			t.Fatalf("step %d: %d next hops set, %d used, %d counted", step, live, len(used), m.Stats().NextHops)
		}
	}
}

func sortedPrefixes(a, b map[netip.Prefix]string) []netip.Prefix {
	var ps []netip.Prefix
	for p := range a {
		ps = append(ps, p)
	}
	for p := range b {
		if _, ok := a[p]; !ok {
			ps = append(ps, p)
		}
	}
	slices.SortFunc(ps, func(x, y netip.Prefix) int { return strings.Compare(x.String(), y.String()) })
	return ps
}

// FuzzMirrorModel is TestMirrorModel with the fuzzer choosing the sequence (by its seed and length).
func FuzzMirrorModel(f *testing.F) {
	f.Add(uint64(0), uint8(40))
	f.Add(uint64(77), uint8(200))
	f.Fuzz(func(t *testing.T, seed uint64, steps uint8) { modelRun(t, seed, 1+int(steps)%120) })
}

// FuzzMirrorNeighbour: a neighbour update with any fields (link, family, state, flags, address and
// link-layer address of any length), as an update and in a dump, leaves the Mirror's tables
// consistent: every route's next hop is set, a neighbour gets a MAC only when it is valid. (The
// netlink library parses the kernel's messages, which are trusted input; it does not check lengths
// of malformed ones.)
func FuzzMirrorNeighbour(f *testing.F) {
	f.Add(int32(link2), uint8(unix.AF_INET), uint16(unix.NUD_REACHABLE), uint8(0), []byte{10, 0, 2, 2}, []byte{2, 0, 0, 0, 2, 2}, true)
	f.Add(int32(link1), uint8(unix.AF_INET), uint16(unix.NUD_STALE), uint8(0), []byte{10, 0, 1, 9}, []byte{2, 0, 0, 0, 1, 9}, false)
	f.Fuzz(func(t *testing.T, link int32, family uint8, state uint16, flags uint8, ipb, mac []byte, del bool) {
		n := netlink.Neigh{LinkIndex: int(link), Family: int(family), State: int(state), Flags: int(flags), IP: net.IP(ipb), HardwareAddr: mac}
		src := newFakeSource()
		src.snap = baseSnapshot()
		src.snap.Neighs = append(src.snap.Neighs, n)
		routes, nhs := fib.New(), new(fib.NextHops)
		m, _ := NewMirror(&MirrorConfig{Source: src, Ifaces: map[int]uint16{link1: 0, link2: 1}, Routes: routes, NextHops: nhs})
		if err := m.resync(); err != nil {
			t.Fatal(err)
		}
		m.neigh(&n, del)
		m.flush()
		v := nhs.View()
		for _, r := range routes.Routes() {
			e := v.At(r.NextHop)
			if e == nil {
				t.Fatalf("%v: next hop %d not set", r.Prefix, r.NextHop)
			}
			if e.Flags == 0 && e.DstMAC == ([6]byte{}) {
				t.Fatalf("%v: a resolved next hop without a MAC: %+v", r.Prefix, *e)
			}
		}
		if a, ok := netip.AddrFromSlice(ipb); ok && a.Unmap().Is4() && !del && (state&nudValid == 0 || len(mac) != 6) {
			if idx, ok := routes.Get(netip.PrefixFrom(a.Unmap(), 32)); ok {
				if e := v.At(idx); e != nil && e.Flags == 0 && link == link2 && a.Unmap() == netip.MustParseAddr("10.0.2.2") {
					t.Fatalf("an invalid neighbour resolved its /32: %+v", *e)
				}
			}
		}
	})
}
