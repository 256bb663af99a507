package trunkgen

import (
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wirespeed/wirespeed/examples/internal/app"
	"github.com/wirespeed/wirespeed/fib"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/neigh"
	"github.com/wirespeed/wirespeed/vlan"
	"github.com/wirespeed/wirespeed/xmit"
)

// TestBuildRouterRefuses: configurations that name what does not exist, or that a parser would
// silently change, are errors that name the flag and wrap the sentinel.
func TestBuildRouterRefuses(t *testing.T) {
	dir := t.TempDir()
	file := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	gz := filepath.Join(dir, "hostbits.gz")
	f, err := os.Create(gz)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	zw.Write([]byte("10.0.0.0/8 0\n198.18.0.1/15 3\n"))
	zw.Close()
	f.Close()
	for _, c := range []struct {
		name string
		plan Plan
		err  error  // errors.Is; nil: any error
		want string // in the message
	}{
		{"vlans 0", Plan{VLANs: 0}, nil, "-vlans 0"},
		{"vlans 201", Plan{VLANs: 201}, nil, "-vlans 201"},
		{"nexthop vlan999", Plan{VLANs: 20, Neighbours: app.Neighbours{"vlan999": {2}}}, ErrNoInterface, "-nexthop vlan999"},
		{"nexthop vlan121", Plan{VLANs: 20, Neighbours: app.Neighbours{"vlan121": {2}}}, ErrNoInterface, "-nexthop vlan121"},
		{"nexthop vlan0101", Plan{VLANs: 20, Neighbours: app.Neighbours{"vlan0101": {2}}}, ErrNoInterface, "-nexthop vlan0101"},
		{"nexthop eth0", Plan{VLANs: 20, Neighbours: app.Neighbours{"eth0": {2}}}, ErrNoInterface, "-nexthop eth0"},
		{"next hop 999", Plan{VLANs: 20, Routes: file("nh", "10.0.0.0/8 0\n10.9.0.0/16 999\n")}, ErrNoNextHop, "next hop 999"},
		{"next hop 21", Plan{VLANs: 20, Routes: file("nh21", "10.9.0.0/16 21\n")}, ErrNoNextHop, "next hop 21"},
		{"host bits", Plan{VLANs: 20, Routes: file("hb", "# table\n10.1.2.3/16 1\n")}, fib.ErrSyntax, "line 2: syntax error: host bits set in 10.1.2.3/16"},
		{"host bits gzip", Plan{VLANs: 20, Routes: gz}, fib.ErrSyntax, "line 2: syntax error: host bits set in 198.18.0.1/15"},
		{"host bits ip route", Plan{VLANs: 20, IPRoute: true, Routes: file("hbip", "10.1.2.3/16 dev vlan101\n")}, fib.ErrSyntax, "host bits set in 10.1.2.3/16"},
		{"unknown device", Plan{VLANs: 20, IPRoute: true, Routes: file("dev", "10.1.0.0/16 dev wlan0\n")}, ErrNoInterface, "wlan0"},
		{"missing file", Plan{VLANs: 20, Routes: filepath.Join(dir, "none")}, os.ErrNotExist, "-routes"},
		{"gateway off the uplink", Plan{VLANs: 20, Gateway: netip.MustParseAddr("10.0.1.2")}, ErrGateway, "-gateway 10.0.1.2"},
		{"gateway the router", Plan{VLANs: 20, Gateway: netip.MustParseAddr("192.0.2.1")}, ErrGateway, "-gateway 192.0.2.1"},
		{"gateway broadcast", Plan{VLANs: 20, Gateway: netip.MustParseAddr("192.0.2.255")}, ErrGateway, "-gateway 192.0.2.255"},
		{"nexthop multicast", Plan{VLANs: 20, Neighbours: app.Neighbours{"vlan105": {1, 0, 0, 0, 0, 1}}}, neigh.ErrMAC, "-nexthop vlan105"},
		{"via off its device", Plan{VLANs: 20, IPRoute: true, Routes: file("via", "198.18.0.0/15 via 10.0.3.9 dev vlan102\n")}, ErrGateway, "via 10.0.3.9 dev vlan102"},
		{"via the router", Plan{VLANs: 20, IPRoute: true, Routes: file("viar", "198.18.0.0/15 via 10.0.2.1 dev vlan102\n")}, ErrGateway, "via 10.0.2.1"},
		{"via nowhere", Plan{VLANs: 20, IPRoute: true, Routes: file("vian", "default via 172.16.0.1\n")}, ErrGateway, "via 172.16.0.1"},
	} {
		_, err := BuildRouter(c.plan, RouterMAC, nil)
		switch {
		case err == nil:
			t.Errorf("%s: accepted", c.name)
		case c.err != nil && !errors.Is(err, c.err):
			t.Errorf("%s: %v, not %v", c.name, err, c.err)
		case !strings.Contains(err.Error(), c.want):
			t.Errorf("%s: %q does not say %q", c.name, err, c.want)
		}
	}
	// What is right is accepted.
	for _, p := range []Plan{
		{VLANs: 20, Neighbours: app.Neighbours{"uplink": {2}, "trunk": {2}, "*": {2}, "vlan101": {2}, "vlan120": {2}}},
		{VLANs: 20, Routes: file("ok", "10.0.0.0/8 0\n198.18.0.0/15 20 # last VLAN\n")},
		{VLANs: 20, IPRoute: true, Routes: file("okip", "default via 192.0.2.2 dev uplink\n10.0.7.0/24 dev vlan107 proto kernel scope link src 10.0.7.1\n")},
		{VLANs: 20, IPRoute: true, Routes: file("okvia", "default via 192.0.2.254\n198.18.0.0/15 via 10.0.2.9 dev vlan102\n")},
		{VLANs: 20, Gateway: netip.MustParseAddr("192.0.2.254")},
	} {
		if _, err := BuildRouter(p, RouterMAC, nil); err != nil {
			t.Errorf("%+v: %v", p, err)
		}
	}
}

// writeRoutes writes a routes file for a test and returns its path.
func writeRoutes(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "routes")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// failingPort fails every Recv and every Send (releasing what it is given, as Send must).
type failingPort struct{ sends int }

var errFailing = errors.New("failing port")

func (p *failingPort) Name() string                     { return "failing" }
func (p *failingPort) Recv(b *frame.Batch) (int, error) { return 0, errFailing }
func (p *failingPort) Send(b *frame.Batch) (int, error) { p.sends++; b.Free(); return 0, errFailing }
func (p *failingPort) Stats() xmit.Stats                { return xmit.Stats{} }
func (p *failingPort) Close() error                     { return nil }

// TestPollCountsPortErrors: Poll counts the errors its Recv and Send calls return and keeps the
// first; the report shows them.
func TestPollCountsPortErrors(t *testing.T) {
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 64})
	trunkMAC := func(int) frame.MAC { return RouterMAC(1) } // one MAC for every VLAN, as SendTraffic wants
	// The gateway's MAC permanent, so that the frames go out at once.
	r, err := BuildRouter(Plan{VLANs: 20, Pool: pool, Neighbours: app.Neighbours{"uplink": GatewayMAC}}, trunkMAC, nil)
	if err != nil {
		t.Fatal(err)
	}
	trunk, far := xmit.Pipe(pool, nil)
	if n, err := SendTraffic(far, pool, RouterMAC(1), true, 5); n != 5 || err != nil { // upstream: to the uplink, one batch
		t.Fatalf("queued %d: %v", n, err)
	}
	up := &failingPort{}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	e := Poll(ctx, r, app.NewResolver(r.Table, r.Demux, 8), []xmit.Port{trunk, up}, nil, 8, nil, 0)
	// Two sends on the uplink: the router's announcement, the forwarded batch.
	if up.sends != 2 || e.Send != 2 || e.Recv < 1 || !errors.Is(e.First, errFailing) {
		t.Fatalf("%d sends: %+v", up.sends, e)
	}
	drain(far)
	if pool.InUse() != 0 {
		t.Fatalf("%d buffers leaked", pool.InUse())
	}
	var out strings.Builder
	Result{Errors: e}.Report(&out)
	if !strings.Contains(out.String(), "send 2 (first: failing port)") {
		t.Fatalf("report:\n%s", out.String())
	}
}

// drain empties p's receive queue and returns how many frames of each EtherType it held (the tag
// of a tagged frame skipped).
func drain(p xmit.Port) map[uint16]int {
	got := map[uint16]int{}
	b := frame.NewBatch(64)
	for n, _ := p.Recv(b); n > 0; n, _ = p.Recv(b) {
		for i := range b.Frames {
			d := b.Bytes(i)
			et := frame.Ether(d).Type()
			if et == vlan.TPID8021Q {
				et = binary.BigEndian.Uint16(d[16:])
			}
			got[et]++
		}
		b.Free()
	}
	return got
}

// lateSender is an empty port that, on its nth Recv, has frames queued on another port and ends
// the context: the last frames arrive while the worker is in a pass that saw nothing yet.
type lateSender struct {
	xmit.Port
	calls, at int
	send      func()
}

func (p *lateSender) Recv(b *frame.Batch) (int, error) {
	if p.calls++; p.calls == p.at {
		p.send()
	}
	return p.Port.Recv(b)
}

// TestPollDrainsLateFrames: frames queued just before ctx ends, after the worker polled their port
// in its current pass and after it has long been idle, are still forwarded before Poll returns.
func TestPollDrainsLateFrames(t *testing.T) {
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 256})
	trunkMAC := func(int) frame.MAC { return RouterMAC(1) } // one MAC for every VLAN, as SendTraffic wants
	r, err := BuildRouter(Plan{VLANs: 20, Pool: pool, Neighbours: app.Neighbours{"uplink": GatewayMAC}}, trunkMAC, nil)
	if err != nil {
		t.Fatal(err)
	}
	trunk, far := xmit.Pipe(pool, nil)
	upR, upFar := xmit.Pipe(pool, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	up := &lateSender{Port: upR, at: 20, send: func() {
		if n, err := SendTraffic(far, pool, RouterMAC(1), true, 10); n != 10 || err != nil {
			t.Errorf("queued %d: %v", n, err)
		}
		cancel()
	}}
	if e := Poll(ctx, r, app.NewResolver(r.Table, r.Demux, 8), []xmit.Port{trunk, up}, nil, 8, nil, 0); e.Recv+e.Send != 0 {
		t.Fatal(e)
	}
	if rx := trunk.Stats().RxPackets; rx != 10 {
		t.Fatalf("the worker received %d of the 10 frames queued before ctx ended", rx)
	}
	if got := drain(upFar); got[frame.TypeIPv4] != 10 {
		t.Fatalf("%d of 10 frames forwarded (%v)", got[frame.TypeIPv4], got)
	}
	drain(far)
}

// TestIPRouteNextHops: an `ip route` file's blackhole routes lead to the drop next hop, its local
// routes are skipped, a route with a device and no gateway is the device's subnet (resolved by
// destination), the uplink's gateway is next hop 0 and every other distinct gateway a next hop of
// its own, on the device named or the interface whose subnet holds it.
func TestIPRouteNextHops(t *testing.T) {
	p := filepath.Join(t.TempDir(), "r")
	os.WriteFile(p, []byte("blackhole 203.0.113.0/24 proto static\n"+
		"local 10.0.7.1 dev vlan107 proto kernel scope host src 10.0.7.1\n"+
		"10.0.7.0/24 dev vlan107 proto kernel scope link src 10.0.7.1\n"+
		"192.0.2.0/24 dev eth9 proto kernel scope link src 192.0.2.1\n"+
		"default via 192.0.2.2 dev eth9\n"+
		"198.18.0.0/16 via 10.0.2.9 dev vlan102\n"+
		"198.19.0.0/16 via 10.0.2.9\n"+
		"198.20.0.0/16 via 192.0.2.77 dev uplink\n"), 0o644)
	hops := map[uint32]hop{}
	plan := Plan{VLANs: 20, IPRoute: true, Routes: p, Gateway: DefaultGateway}
	rs, err := loadRoutes(plan, map[string]uint32{"vlan107": 7, "vlan102": 2, "eth9": 0, "uplink": 0}, hops)
	if err != nil {
		t.Fatal(err)
	}
	gw1, gw2 := UplinkSubnet(20)+1, UplinkSubnet(20)+2
	want := map[string]uint32{"203.0.113.0/24": DropNextHop(20), "10.0.7.0/24": 7, "192.0.2.0/24": UplinkSubnet(20),
		"0.0.0.0/0": 0, "198.18.0.0/16": gw1, "198.19.0.0/16": gw1, "198.20.0.0/16": gw2}
	if len(rs) != len(want) {
		t.Fatalf("routes %v", rs)
	}
	for _, r := range rs {
		if nh, ok := want[r.Prefix.String()]; !ok || nh != r.NextHop {
			t.Errorf("%v -> %d", r.Prefix, r.NextHop)
		}
	}
	wantHops := map[uint32]hop{7: {iface: 7}, UplinkSubnet(20): {iface: IfUplink}, 0: {iface: IfUplink, addr: DefaultGateway},
		gw1: {iface: 2, addr: netip.MustParseAddr("10.0.2.9")}, gw2: {iface: IfUplink, addr: netip.MustParseAddr("192.0.2.77")}}
	if len(hops) != len(wantHops) {
		t.Errorf("next hops %v, want %v", hops, wantHops)
	}
	for idx, h := range wantHops {
		if hops[idx] != h {
			t.Errorf("next hop %d: %+v, want %+v", idx, hops[idx], h)
		}
	}
}

// TestHostRoutes: the neighbour table's host routes come into effect at once when none did lately
// (the first one), and whatever was queued after it is applied, in order, by FlushRoutes: a host
// added, removed and added again ends with its last next hop, a removed one has no route.
func TestHostRoutes(t *testing.T) {
	rt := fib.New()
	h := &hostRoutes{t: rt}
	a, b, c := netip.MustParseAddr("10.0.1.5"), netip.MustParseAddr("10.0.2.6"), netip.MustParseAddr("10.0.3.7")
	if err := h.AddHost(a, 1030); err != nil {
		t.Fatal(err)
	}
	if nh, ok := rt.Lookup(a); !ok || nh != 1030 {
		t.Fatalf("the first host route is not in at once: %d %v", nh, ok)
	}
	h.AddHost(b, 1031)
	h.AddHost(c, 1032)
	h.DeleteHost(a)
	h.AddHost(a, 1033)
	h.DeleteHost(c)
	(&Router{hosts: h}).FlushRoutes()
	for _, w := range []struct {
		a  netip.Addr
		nh uint32
		ok bool
	}{{a, 1033, true}, {b, 1031, true}, {c, 0, false}} {
		if nh, ok := rt.Lookup(w.a); ok != w.ok || ok && nh != w.nh {
			t.Errorf("%v: next hop %d %v, want %d %v", w.a, nh, ok, w.nh, w.ok)
		}
	}
	if err := h.AddHost(netip.MustParseAddr("::1"), 1); err == nil {
		t.Error("an IPv6 host route accepted")
	}
}
