package linuxcp

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"github.com/wirespeed/wirespeed/fib"
	"github.com/wirespeed/wirespeed/internal/nettest"
)

// kernelRig is a Mirror of a fresh namespace R, whose link r1 (router interface 0) is a veth to
// namespace P: R has 10.1.0.1/24 on r1, P has 10.1.0.2/24 on p1.
type kernelRig struct {
	*mirrorRig
	r, p   *nettest.NS
	r1, p1 string
	p1MAC  net.HardwareAddr
}

func newKernelRig(t *testing.T, wrap func(Source) Source, edit ...func(*MirrorConfig)) *kernelRig {
	t.Helper()
	nettest.RequirePriv(t)
	k := &kernelRig{r: nettest.NewNS(t, "cpr"), p: nettest.NewNS(t, "cpp")}
	k.r1, k.p1 = nettest.Veth(t, k.r, k.p, "r", "p")
	k.r.Exec(t, "ip", "addr", "add", "10.1.0.1/24", "dev", k.r1)
	k.p.Exec(t, "ip", "addr", "add", "10.1.0.2/24", "dev", k.p1)
	out := k.p.Exec(t, "cat", "/sys/class/net/"+k.p1+"/address")
	var err error
	if k.p1MAC, err = net.ParseMAC(strings.TrimSpace(out)); err != nil {
		t.Fatal(err)
	}
	h, err := netns.GetFromName(k.r.Name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	var src Source = &NetlinkSource{NS: h}
	if wrap != nil {
		src = wrap(src)
	}
	g := &mirrorRig{t: t, routes: fib.New(), nhs: new(fib.NextHops)}
	cfg := &MirrorConfig{Source: src, IfaceNames: map[string]uint16{k.r1: 0}, Routes: g.routes, NextHops: g.nhs,
		Logf: t.Logf}
	for _, e := range edit {
		e(cfg)
	}
	if g.m, err = NewMirror(cfg); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	g.cancel, g.done = cancel, make(chan error, 1)
	go func() { g.done <- g.m.Run(ctx) }()
	t.Cleanup(g.stop)
	select {
	case <-g.m.Synced():
	case <-time.After(20 * time.Second):
		t.Fatal("no first sync")
	}
	k.mirrorRig = g
	return k
}

// eventually waits until cond holds (the kernel's notifications are asynchronous).
func (k *kernelRig) eventually(what string, cond func() bool) {
	k.t.Helper()
	for start := time.Now(); !cond(); time.Sleep(2 * time.Millisecond) {
		if time.Since(start) > 20*time.Second {
			k.t.Fatalf("%s: timed out; stats %+v; routes %v", what, k.m.Stats(), k.routes.Routes())
		}
	}
}

func (k *kernelRig) lookup(a string) (fib.NextHop, bool) {
	idx, ok := k.routes.Lookup(netip.MustParseAddr(a))
	if !ok {
		return fib.NextHop{}, false
	}
	return k.nhs.Get(idx)
}

// TestMirrorKernel: ip route add, replace and del, ip neigh, multipath routes and a link going down
// in a namespace reach the FIB.
func TestMirrorKernel(t *testing.T) {
	k := newKernelRig(t, nil)
	if e, ok := k.lookup("10.1.0.1"); !ok || e.Flags != fib.NextHopLocal {
		t.Fatalf("own address: %+v %v", e, ok)
	}
	if e, ok := k.lookup("10.1.0.77"); !ok || e != (fib.NextHop{Ifindex: 0, Flags: fib.NextHopUnresolved}) {
		t.Fatalf("connected subnet: %+v %v", e, ok)
	}
	if got := k.m.Addrs(0); len(got) != 1 || got[0] != netip.MustParsePrefix("10.1.0.1/24") {
		t.Fatalf("Addrs(0) = %v", got)
	}
	k.r.Exec(t, "ip", "route", "add", "198.18.0.0/16", "via", "10.1.0.2")
	k.eventually("route add", func() bool {
		e, ok := k.lookup("198.18.3.4")
		return ok && e == fib.NextHop{Ifindex: 0, Flags: fib.NextHopUnresolved}
	})
	// The kernel resolves the gateway (a ping from R); the next hop gets P's MAC, and P becomes a
	// host of the connected subnet.
	k.r.Exec(t, "ping", "-c", "1", "-W", "5", "10.1.0.2")
	k.eventually("neighbour", func() bool {
		e, ok := k.lookup("198.18.3.4")
		return ok && e == fib.NextHop{Ifindex: 0, DstMAC: [6]byte(k.p1MAC)}
	})
	if e, ok := k.lookup("10.1.0.2"); !ok || e.DstMAC != [6]byte(k.p1MAC) {
		t.Fatalf("host 10.1.0.2: %+v", e)
	}
	k.r.Exec(t, "ip", "route", "replace", "198.18.0.0/16", "via", "10.1.0.3")
	k.eventually("route replace", func() bool {
		e, ok := k.lookup("198.18.3.4")
		return ok && e.Flags == fib.NextHopUnresolved
	})
	k.r.Exec(t, "ip", "route", "del", "198.18.0.0/16")
	k.eventually("route del", func() bool { _, ok := k.lookup("198.18.3.4"); return !ok })
	k.r.Exec(t, "ip", "route", "add", "blackhole", "192.0.2.0/24")
	k.eventually("blackhole", func() bool { e, ok := k.lookup("192.0.2.1"); return ok && e.Flags == fib.NextHopDrop })
	// Multipath: weights 1 and 3.
	k.r.Exec(t, "ip", "route", "add", "198.19.0.0/16", "nexthop", "via", "10.1.0.2", "weight", "1", "nexthop", "via", "10.1.0.3", "weight", "3")
	k.eventually("multipath", func() bool {
		idx, ok := k.routes.Lookup(netip.MustParseAddr("198.19.0.1"))
		ms := k.nhs.View().Group(idx)
		return ok && len(ms) == 2 && ms[0].Weight+ms[1].Weight == 4
	})
	// r1 goes down: the kernel drops its routes silently (the local one stays); so does the mirror.
	k.r.Exec(t, "ip", "link", "set", k.r1, "down")
	k.eventually("link down", func() bool {
		_, ok1 := k.lookup("10.1.0.77")
		_, ok2 := k.lookup("198.19.0.1")
		e, ok3 := k.lookup("10.1.0.1")
		return !ok1 && !ok2 && ok3 && e.Flags == fib.NextHopLocal
	})
	k.r.Exec(t, "ip", "link", "set", k.r1, "up")
	k.eventually("link up", func() bool { _, ok := k.lookup("10.1.0.77"); return ok })
}

// TestMirrorKernelResolve: Resolve makes the kernel resolve a gateway no packet of its own went to,
// and a host of the connected subnet; the Mirror fills their MACs in.
func TestMirrorKernelResolve(t *testing.T) {
	k := newKernelRig(t, nil)
	k.r.Exec(t, "ip", "route", "add", "198.18.0.0/16", "via", "10.1.0.2")
	var idx uint32
	k.eventually("route add", func() bool {
		var ok bool
		idx, ok = k.routes.Lookup(netip.MustParseAddr("198.18.3.4"))
		return ok
	})
	if !k.m.Resolve(idx, netip.Addr{}) {
		t.Fatal("the request was not queued")
	}
	k.eventually("the gateway resolved", func() bool {
		e, ok := k.lookup("198.18.3.4")
		return ok && e == fib.NextHop{Ifindex: 0, DstMAC: [6]byte(k.p1MAC)}
	})
	// A second address of P on the subnet, resolved through the subnet's next hop.
	k.p.Exec(t, "ip", "addr", "add", "10.1.0.3/24", "dev", k.p1)
	sub, _ := k.routes.Lookup(netip.MustParseAddr("10.1.0.3"))
	k.m.Resolve(sub, netip.MustParseAddr("10.1.0.3"))
	k.eventually("the host resolved", func() bool {
		e, ok := k.lookup("10.1.0.3")
		return ok && e.DstMAC == [6]byte(k.p1MAC) && e.Flags == 0
	})
	if st := k.m.Stats(); st.Resolves != 2 {
		t.Fatalf("stats %+v", st)
	}
}

// gatedSource holds a subscription's route updates until open is closed, so that the kernel's
// notifications pile up in the socket's receive buffer.
type gatedSource struct {
	Source
	open chan struct{}
}

func (g *gatedSource) Subscribe(done <-chan struct{}) (*Subscription, error) {
	s, err := g.Source.Subscribe(done)
	if err != nil {
		return nil, err
	}
	routes := make(chan netlink.RouteUpdate)
	go func() {
		defer close(routes)
		for u := range s.Routes {
			select {
			case <-g.open:
			case <-done:
			}
			select {
			case routes <- u:
			case <-done:
				for range s.Routes {
				}
				return
			}
		}
	}()
	c := *s
	c.Routes = routes
	return &c, nil
}

// TestMirrorKernelENOBUFS: 1,000 routes added in one burst while the route subscription's 4 KiB
// receive buffer is not read overflow it (ENOBUFS); the mirror resynchronises from a dump and ends
// with every route, and follows the kernel afterwards.
func TestMirrorKernelENOBUFS(t *testing.T) {
	var gate *gatedSource
	var logMu sync.Mutex
	var logs []string
	k := newKernelRig(t, func(s Source) Source {
		s.(*NetlinkSource).ReceiveBuffer = 4096
		s.(*NetlinkSource).queue = 1
		gate = &gatedSource{Source: s, open: make(chan struct{})}
		return gate
	}, func(c *MirrorConfig) {
		c.Logf = func(f string, a ...any) {
			logMu.Lock()
			logs = append(logs, fmt.Sprintf(f, a...))
			logMu.Unlock()
		}
	})
	const n = 1000
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "route add 10.%d.%d.0/24 via 10.1.0.2\n", 100+i/256, i%256)
	}
	file := filepath.Join(t.TempDir(), "routes")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	k.r.Exec(t, "ip", "-batch", file)
	close(gate.open)
	k.eventually("all routes after the overflow", func() bool {
		return k.m.Stats().Errors > 0 && k.routes.Len() >= n+3
	})
	for i := range n {
		a := fmt.Sprintf("10.%d.%d.9", 100+i/256, i%256)
		if e, ok := k.lookup(a); !ok || e.Flags != fib.NextHopUnresolved || e.Ifindex != 0 {
			t.Fatalf("%s: %+v %v", a, e, ok)
		}
	}
	logMu.Lock()
	found := false
	for _, l := range logs {
		found = found || strings.Contains(l, "no buffer space")
	}
	t.Logf("stats %+v; log %q", k.m.Stats(), logs)
	logMu.Unlock()
	if !found {
		t.Error("no ENOBUFS reported")
	}
	k.r.Exec(t, "ip", "route", "del", "10.100.5.0/24")
	k.eventually("a deletion after the resync", func() bool { _, ok := k.lookup("10.100.5.9"); return !ok })
}
