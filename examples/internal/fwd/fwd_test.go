package fwd

import (
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/wirespeed/wirespeed/fib"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/vlan"
	"github.com/wirespeed/wirespeed/xmit"
)

var (
	macUp   = frame.MAC{2, 0, 0, 0, 0, 1} // router on iface 0 (port 1, untagged)
	macV10  = frame.MAC{2, 0, 0, 0, 0, 2} // router on iface 1 (port 0, VLAN 10)
	macGW   = frame.MAC{2, 9, 9, 9, 9, 9}
	macHost = frame.MAC{2, 8, 8, 8, 8, 8}
)

type rig struct {
	pool  *frame.Pool
	r     *Router
	w     *Worker
	ports []xmit.Port
	peers []*xmit.MemPort
}

func newRig(t testing.TB) *rig {
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 1024})
	d := vlan.NewDemux(2, vlan.Parser{})
	d.Add(vlan.Interface{ID: 0, Port: 1})
	d.Add(vlan.Interface{ID: 1, Port: 0, Outer: vlan.C(10)})
	var st Static
	st.Add(netip.MustParsePrefix("0.0.0.0/0"), 0)
	st.Add(netip.MustParsePrefix("10.0.10.0/24"), 1)
	st.Add(netip.MustParsePrefix("10.0.10.128/25"), 2) // next hop 2 does not exist: counted as no-route
	var nh fib.NextHops
	nh.Set(0, fib.NextHop{Ifindex: 0, DstMAC: macGW})
	nh.Set(1, fib.NextHop{Ifindex: 1, DstMAC: macHost})
	nh.Set(3, fib.NextHop{Ifindex: 0, DstMAC: macGW, Flags: fib.NextHopDrop}) // blackhole
	st.Add(netip.MustParsePrefix("192.0.2.0/24"), 3)
	r, err := New(d, 2, []Iface{{Name: "up", MAC: macUp, MTU: 1000}, {Name: "v10", MAC: macV10}}, &st, &nh)
	if err != nil {
		t.Fatal(err)
	}
	g := &rig{pool: pool, r: r, w: r.NewWorker(64)}
	for i := 0; i < 2; i++ {
		a, z := xmit.Pipe(pool, nil)
		g.ports = append(g.ports, a)
		g.peers = append(g.peers, z)
	}
	return g
}

type pkt struct {
	vid      uint16 // 0: untagged
	dstMAC   frame.MAC
	dst      [4]byte
	ttl      uint8
	size     int // UDP payload
	df       bool
	badSum   bool
	etype    layers.EthernetType
	truncate int
}

func (p pkt) bytes(t testing.TB) []byte {
	eth := &layers.Ethernet{SrcMAC: macHost[:], DstMAC: p.dstMAC[:], EthernetType: layers.EthernetTypeIPv4}
	ls := []gopacket.SerializableLayer{eth}
	if p.vid != 0 {
		eth.EthernetType = layers.EthernetTypeDot1Q
		ls = append(ls, &layers.Dot1Q{VLANIdentifier: p.vid, Type: layers.EthernetTypeIPv4})
	}
	if p.etype != 0 {
		if p.vid != 0 {
			ls[1].(*layers.Dot1Q).Type = p.etype
		} else {
			eth.EthernetType = p.etype
		}
	}
	ip := &layers.IPv4{Version: 4, IHL: 5, TTL: p.ttl, Protocol: layers.IPProtocolUDP, SrcIP: []byte{10, 0, 10, 5}, DstIP: p.dst[:]}
	if p.df {
		ip.Flags = layers.IPv4DontFragment
	}
	udp := &layers.UDP{SrcPort: 40000, DstPort: 40001}
	udp.SetNetworkLayerForChecksum(ip)
	ls = append(ls, ip, udp, gopacket.Payload(make([]byte, p.size)))
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		t.Fatal(err)
	}
	b := append([]byte(nil), buf.Bytes()...)
	if p.badSum {
		off := 14
		if p.vid != 0 {
			off = 18
		}
		b[off+10] ^= 0x55
	}
	if p.truncate > 0 {
		b = b[:p.truncate]
	}
	return b
}

func (g *rig) forward(t testing.TB, port uint16, pkts ...[]byte) {
	b := frame.NewBatch(64)
	g.pool.Alloc(b, len(pkts))
	for i, p := range pkts {
		b.Frames[i].Resize(len(p))
		copy(b.Bytes(i), p)
	}
	g.w.Forward(port, b, g.ports)
	if b.Len() != 0 {
		t.Fatal("Forward left frames in the input batch")
	}
}

func (g *rig) received(t testing.TB, port int) []gopacket.Packet {
	var out []gopacket.Packet
	b := frame.NewBatch(64)
	for {
		n, _ := g.peers[port].Recv(b)
		if n == 0 {
			return out
		}
		for i := 0; i < n; i++ {
			out = append(out, gopacket.NewPacket(append([]byte(nil), b.Bytes(i)...), layers.LayerTypeEthernet, gopacket.Default))
		}
		b.Free()
	}
}

func TestForwardAndDrops(t *testing.T) {
	g := newRig(t)
	up := [4]byte{198, 18, 0, 1}
	g.forward(t, 0,
		pkt{vid: 10, dstMAC: macV10, dst: up, ttl: 64, size: 30}.bytes(t),                                        // → uplink
		pkt{vid: 10, dstMAC: macV10, dst: up, ttl: 2, size: 30, df: true}.bytes(t),                               // → uplink, TTL 1
		pkt{vid: 10, dstMAC: macV10, dst: up, ttl: 1, size: 30}.bytes(t),                                         // ttl
		pkt{vid: 10, dstMAC: macV10, dst: up, ttl: 64, size: 30, badSum: true}.bytes(t),                          // checksum
		pkt{vid: 11, dstMAC: macV10, dst: up, ttl: 64, size: 30}.bytes(t),                                        // vlan
		pkt{vid: 10, dstMAC: macUp, dst: up, ttl: 64, size: 30}.bytes(t),                                         // not for us (wrong iface MAC)
		pkt{vid: 10, dstMAC: macV10, dst: up, ttl: 64, size: 30, etype: layers.EthernetTypeARP}.bytes(t),         // not ipv4
		pkt{vid: 10, dstMAC: macV10, dst: up, ttl: 64, size: 1200, df: true}.bytes(t),                            // too big for uplink MTU 1000
		pkt{vid: 10, dstMAC: macV10, dst: up, ttl: 64, size: 1200}.bytes(t),                                      // fragmentable: forwarded whole (no fragmentation here)
		pkt{vid: 10, dstMAC: macV10, dst: up, ttl: 64, size: 30, truncate: 30}.bytes(t),                          // malformed
		pkt{vid: 10, dstMAC: frame.MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, dst: up, ttl: 64, size: 30}.bytes(t), // broadcast: routed
	)
	g.forward(t, 1,
		pkt{dstMAC: macUp, dst: [4]byte{10, 0, 10, 7}, ttl: 64, size: 30}.bytes(t),   // → VLAN 10 host
		pkt{dstMAC: macUp, dst: [4]byte{10, 0, 10, 200}, ttl: 64, size: 30}.bytes(t), // → nh 2 missing: no-route
		pkt{dstMAC: macUp, dst: [4]byte{192, 0, 2, 1}, ttl: 64, size: 30}.bytes(t),   // → blackhole: no-route
	)
	g.w.Flush()
	c := g.r.Counters()
	want := map[Reason]uint64{DropTTL: 1, DropChecksum: 1, DropVLAN: 1, DropNotForUs: 1, DropNotIPv4: 1, DropTooBig: 1, DropMalformed: 1, DropNoRoute: 2}
	for r := Reason(0); r < NumReasons; r++ {
		if c.Drops[r] != want[r] {
			t.Errorf("%v drops = %d, want %d", r, c.Drops[r], want[r])
		}
	}
	if c.Forwarded != 5 {
		t.Errorf("forwarded %d, want 5", c.Forwarded)
	}
	upOut, vOut := g.received(t, 1), g.received(t, 0)
	if len(upOut) != 4 || len(vOut) != 1 {
		t.Fatalf("uplink got %d, vlan port got %d", len(upOut), len(vOut))
	}
	for i, p := range upOut {
		eth := p.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
		ip, _ := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
		if ip == nil || p.Layer(layers.LayerTypeDot1Q) != nil {
			t.Fatalf("uplink frame %d: %v", i, p)
		}
		if frame.MAC(eth.DstMAC) != macGW || frame.MAC(eth.SrcMAC) != macUp {
			t.Errorf("uplink frame %d MACs %v → %v", i, eth.SrcMAC, eth.DstMAC)
		}
		checkIP(t, ip, []uint8{63, 1, 63, 63}[i])
	}
	p := vOut[0]
	q, _ := p.Layer(layers.LayerTypeDot1Q).(*layers.Dot1Q)
	eth := p.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
	if q == nil || q.VLANIdentifier != 10 || frame.MAC(eth.DstMAC) != macHost || frame.MAC(eth.SrcMAC) != macV10 {
		t.Fatalf("VLAN frame: %v", p)
	}
	checkIP(t, p.Layer(layers.LayerTypeIPv4).(*layers.IPv4), 63)
	if g.pool.InUse() != 0 {
		t.Fatalf("%d buffers leaked", g.pool.InUse())
	}
	if s := g.r.IfaceStats(1); s.RxPackets != 10 || s.TxPackets != 1 {
		t.Errorf("vlan10 stats %+v", s)
	}
}

// checkIP: TTL as expected and the checksum we updated incrementally equals gopacket's full
// recomputation.
func checkIP(t *testing.T, ip *layers.IPv4, ttl uint8) {
	t.Helper()
	if ip.TTL != ttl {
		t.Errorf("TTL %d, want %d", ip.TTL, ttl)
	}
	got := ip.Checksum
	buf := gopacket.NewSerializeBuffer()
	ip.Checksum = 0
	ip.SerializeTo(buf, gopacket.SerializeOptions{ComputeChecksums: true})
	if want := binary.BigEndian.Uint16(buf.Bytes()[10:12]); got != want {
		t.Errorf("checksum %#04x, gopacket computes %#04x", got, want)
	}
}

func TestForwardZeroAllocs(t *testing.T) {
	g := newRig(t)
	p1 := pkt{vid: 10, dstMAC: macV10, dst: [4]byte{198, 18, 0, 1}, ttl: 255, size: 30}.bytes(t)
	p2 := pkt{dstMAC: macUp, dst: [4]byte{10, 0, 10, 7}, ttl: 255, size: 30}.bytes(t)
	b := frame.NewBatch(64)
	sink := frame.NewBatch(64)
	a := testing.AllocsPerRun(100, func() {
		g.pool.Alloc(b, 32)
		for i := range b.Frames {
			p := p1
			b.Frames[i].Resize(len(p))
			copy(b.Bytes(i), p)
		}
		g.w.Forward(0, b, g.ports)
		g.pool.Alloc(b, 32)
		for i := range b.Frames {
			b.Frames[i].Resize(len(p2))
			copy(b.Bytes(i), p2)
		}
		g.w.Forward(1, b, g.ports)
		for _, z := range g.peers {
			z.Recv(sink)
			sink.Free()
		}
	})
	if a != 0 {
		t.Fatalf("Forward: %v allocs per run", a)
	}
}

func TestStaticAgainstNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	var st Static
	type route struct {
		p  netip.Prefix
		nh uint32
	}
	var routes []route
	for i := 0; i < 40; i++ {
		a := r.Uint32()
		bits := r.IntN(33)
		p := netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(a >> 24), byte(a >> 16), byte(a >> 8), byte(a)}), bits).Masked()
		st.Add(p, uint32(i))
		routes = append(routes, route{p, uint32(i)})
	}
	for i := 0; i < 20000; i++ {
		a := r.Uint32()
		if i%2 == 0 { // inside a random route
			rt := routes[r.IntN(len(routes))].p
			a4 := rt.Addr().As4()
			base := binary.BigEndian.Uint32(a4[:])
			a = base | a&^(^uint32(0)<<(32-rt.Bits())&0xffffffff)
			if rt.Bits() == 0 {
				a = r.Uint32()
			} else if rt.Bits() == 32 {
				a = base
			}
		}
		addr := netip.AddrFrom4([4]byte{byte(a >> 24), byte(a >> 16), byte(a >> 8), byte(a)})
		want, best := NoRoute, -1
		for _, rt := range routes { // last added wins among equal prefixes, as Add replaces
			if rt.p.Contains(addr) && rt.p.Bits() >= best {
				want, best = rt.nh, rt.p.Bits()
			}
		}
		if got := st.Lookup(a); got != want {
			t.Fatalf("%v: got %d, want %d", addr, got, want)
		}
	}
	if err := st.Add(netip.MustParsePrefix("::/0"), 1); err == nil {
		t.Fatal("IPv6 prefix accepted")
	}
}

// FuzzForward: any bytes on either port, tagged or not, out-of-band tag or not: Forward never
// panics, and every frame is forwarded or counted under one reason, with no buffer lost.
func FuzzForward(f *testing.F) {
	f.Add(pkt{vid: 10, dstMAC: macV10, dst: [4]byte{198, 18, 0, 1}, ttl: 64, size: 30}.bytes(f), uint8(0), false)
	f.Add(pkt{dstMAC: macUp, dst: [4]byte{10, 0, 10, 7}, ttl: 2, size: 0}.bytes(f), uint8(1), false)
	f.Add(pkt{dstMAC: macUp, dst: [4]byte{10, 0, 10, 7}, ttl: 64, size: 1200, df: true}.bytes(f), uint8(1), true)
	f.Add([]byte{0, 1, 2}, uint8(0), true)
	g := newRig(f)
	sink := frame.NewBatch(64)
	f.Fuzz(func(t *testing.T, data []byte, port uint8, oob bool) {
		if len(data) > 1900 {
			return
		}
		before := g.r.Counters()
		b := frame.NewBatch(4)
		g.pool.Alloc(b, 3)
		for i := range b.Frames {
			b.Frames[i].Resize(len(data))
			copy(b.Bytes(i), data)
			if oob && i == 1 {
				b.Frames[i].Flags |= frame.FlagVLAN
				b.Frames[i].TPID, b.Frames[i].TCI = 0x8100, 10
			}
		}
		g.w.Forward(uint16(port%2), b, g.ports)
		g.w.Flush()
		after := g.r.Counters()
		n := after.Forwarded - before.Forwarded
		for r := range after.Drops {
			n += after.Drops[r] - before.Drops[r]
		}
		if n != 3 {
			t.Fatalf("3 frames in, %d accounted for", n)
		}
		for _, z := range g.peers {
			for {
				if k, _ := z.Recv(sink); k == 0 {
					break
				}
				sink.Free()
			}
		}
		if g.pool.InUse() != 0 {
			t.Fatalf("%d buffers lost", g.pool.InUse())
		}
	})
}

// TestNextHopChanges: the worker's per-next-hop rewrite cache follows every change of the next-hop
// table: a new neighbour address, a move to another interface (tagged to untagged), a blackhole, a
// deletion, and a next hop that appears later.
func TestNextHopChanges(t *testing.T) {
	g := newRig(t)
	toHost := func() []byte { return pkt{dstMAC: macUp, dst: [4]byte{10, 0, 10, 7}, ttl: 64, size: 30}.bytes(t) }
	toNH2 := func() []byte { return pkt{dstMAC: macUp, dst: [4]byte{10, 0, 10, 200}, ttl: 64, size: 30}.bytes(t) }
	expect := func(step string, port int, dst frame.MAC, vid uint16) {
		t.Helper()
		out := g.received(t, port)
		if len(out) != 1 {
			t.Fatalf("%s: %d frames on port %d", step, len(out), port)
		}
		eth := out[0].Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
		q, _ := out[0].Layer(layers.LayerTypeDot1Q).(*layers.Dot1Q)
		if frame.MAC(eth.DstMAC) != dst || (q == nil) != (vid == 0) || q != nil && q.VLANIdentifier != vid {
			t.Fatalf("%s: %v", step, out[0])
		}
	}
	nh := g.r.nh
	g.forward(t, 1, toHost())
	expect("initial", 0, macHost, 10)

	other := frame.MAC{2, 7, 7, 7, 7, 7}
	nh.Set(1, fib.NextHop{Ifindex: 1, DstMAC: other})
	g.forward(t, 1, toHost())
	expect("new neighbour address", 0, other, 10)

	nh.Set(1, fib.NextHop{Ifindex: 0, DstMAC: macGW})
	g.forward(t, 1, toHost())
	expect("moved to the untagged uplink", 1, macGW, 0)

	nh.Set(1, fib.NextHop{Ifindex: 0, DstMAC: macGW, Flags: fib.NextHopDrop})
	g.forward(t, 1, toHost())
	nh.Delete(1)
	g.forward(t, 1, toHost())
	g.forward(t, 1, toNH2())
	nh.Set(2, fib.NextHop{Ifindex: 1, DstMAC: other})
	g.forward(t, 1, toNH2())
	expect("next hop 2 added", 0, other, 10)
	if n := len(g.received(t, 0)) + len(g.received(t, 1)); n != 0 {
		t.Fatalf("%d frames leaked through a dropped next hop", n)
	}
	g.w.Flush()
	if c := g.r.Counters(); c.Drops[DropNoRoute] != 3 || c.Forwarded != 4 {
		t.Fatalf("counters %+v", c)
	}
	if g.pool.InUse() != 0 {
		t.Fatalf("%d buffers leaked", g.pool.InUse())
	}
}

// TestNoRouteWithoutDefault: with no default route, a destination no prefix covers is counted as
// no-route (fib's NoRoute index must not be taken for a cache slot, also where int has 32 bits).
func TestNoRouteWithoutDefault(t *testing.T) {
	g := newRig(t)
	var st Static
	st.Add(netip.MustParsePrefix("10.0.10.0/24"), 1)
	g.r.SetRoutes(&st)
	g.forward(t, 1,
		pkt{dstMAC: macUp, dst: [4]byte{8, 8, 8, 8}, ttl: 64, size: 30}.bytes(t),
		pkt{dstMAC: macUp, dst: [4]byte{10, 0, 10, 7}, ttl: 64, size: 30}.bytes(t))
	g.w.Flush()
	if c := g.r.Counters(); c.Drops[DropNoRoute] != 1 || c.Forwarded != 1 {
		t.Fatalf("counters %+v", c)
	}
	if n := len(g.received(t, 0)); n != 1 {
		t.Fatalf("%d frames on the VLAN port", n)
	}
	if g.pool.InUse() != 0 {
		t.Fatalf("%d buffers leaked", g.pool.InUse())
	}
}

// TestMisconfiguredEgress: configurations the router cannot serve cost a counted drop, never a
// panic or a frame counted as sent: an interface the demux gained after New (no Iface for it), and
// a next hop whose interface sits on a physical port the router was not given.
func TestMisconfiguredEgress(t *testing.T) {
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 256})
	d := vlan.NewDemux(3, vlan.Parser{})
	d.Add(vlan.Interface{ID: 0, Port: 1})
	d.Add(vlan.Interface{ID: 1, Port: 0, Outer: vlan.C(10)})
	d.Add(vlan.Interface{ID: 2, Port: 2, Outer: vlan.C(30)}) // port 2: beyond the router's 2 ports
	var st Static
	st.Add(netip.MustParsePrefix("0.0.0.0/0"), 0)
	var nh fib.NextHops
	nh.Set(0, fib.NextHop{Ifindex: 2, DstMAC: macGW})
	macV30 := frame.MAC{2, 0, 0, 0, 0, 3}
	r, err := New(d, 2, []Iface{{Name: "up", MAC: macUp}, {Name: "v10", MAC: macV10}, {Name: "v30", MAC: macV30}}, &st, &nh)
	if err != nil {
		t.Fatal(err)
	}
	d.Add(vlan.Interface{ID: 3, Port: 0, Outer: vlan.C(20)}) // after New: no Iface entry
	g := &rig{pool: pool, r: r, w: r.NewWorker(64)}
	for i := 0; i < 2; i++ {
		a, z := xmit.Pipe(pool, nil)
		g.ports, g.peers = append(g.ports, a), append(g.peers, z)
	}
	g.forward(t, 1, pkt{dstMAC: macUp, dst: [4]byte{198, 18, 0, 1}, ttl: 64, size: 30}.bytes(t))
	g.forward(t, 0, pkt{vid: 20, dstMAC: macV10, dst: [4]byte{198, 18, 0, 1}, ttl: 64, size: 30}.bytes(t))
	g.w.Flush()
	c := g.r.Counters()
	if c.Drops[DropEgress] != 1 || c.Drops[DropVLAN] != 1 || c.Forwarded != 0 {
		t.Fatalf("counters %+v, want one egress drop and one VLAN drop", c)
	}
	if s := g.r.IfaceStats(2); s.TxPackets != 0 {
		t.Fatalf("interface on the missing port counts %d frames sent", s.TxPackets)
	}
	if g.pool.InUse() != 0 {
		t.Fatalf("%d buffers leaked", g.pool.InUse())
	}
}
