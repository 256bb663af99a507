package neigh_test

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/wirespeed/wirespeed/fib"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/fwd"
	"github.com/wirespeed/wirespeed/neigh"
	"github.com/wirespeed/wirespeed/vlan"
)

// The wired router: interface 0 is port 0 untagged (10.0.0.1/24), interface 1 is VLAN 10 on port
// 1 (192.168.1.1/24) with the gateway 192.168.1.254 to 198.18.0.0/15.
var (
	rMAC0  = frame.MAC{2, 0, 0, 0, 0, 0x10}
	rMAC1  = frame.MAC{2, 0, 0, 0, 0, 0x11}
	gwMAC  = frame.MAC{2, 0x99, 0, 0, 0, 1}
	hMAC   = frame.MAC{2, 0x88, 0, 0, 0, 2}
	bcast  = frame.MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	gwIP   = netip.MustParseAddr("192.168.1.254")
	hostIP = netip.MustParseAddr("10.0.0.7")
	farIP  = netip.MustParseAddr("198.18.0.1")
)

const (
	nhSub0 = 1 // 10.0.0.0/24
	nhSub1 = 2 // 192.168.1.0/24
	nhGW   = 5
)

type wired struct {
	t      *testing.T
	pool   *frame.Pool
	demux  *vlan.Demux
	vw     *vlan.Worker // the caller's, for the L2 header of ARP frames
	router *fwd.Router
	w      *fwd.Worker
	tab    *neigh.Table
	routes *fib.Table
	now    time.Time
}

func newWired(t *testing.T) *wired {
	pool, err := frame.NewPool(&frame.PoolConfig{Buffers: 1024})
	if err != nil {
		t.Fatal(err)
	}
	g := &wired{t: t, pool: pool, now: time.Unix(1000, 0)}
	g.demux = vlan.NewDemux(2, vlan.Parser{})
	g.demux.Add(vlan.Interface{ID: 0, Port: 0})
	g.demux.Add(vlan.Interface{ID: 1, Port: 1, Outer: vlan.C(10)})
	g.vw = g.demux.NewWorker()
	p0, p1 := netip.MustParsePrefix("10.0.0.1/24"), netip.MustParsePrefix("192.168.1.1/24")
	hops := new(fib.NextHops)
	g.routes = fib.New()
	g.routes.Insert(p0.Masked(), nhSub0)
	g.routes.Insert(p1.Masked(), nhSub1)
	g.routes.Insert(netip.MustParsePrefix("198.18.0.0/15"), nhGW)
	g.tab, err = neigh.New(&neigh.Config{
		Ifaces:       []neigh.Iface{{MAC: rMAC0, Addrs: []netip.Prefix{p0}}, {MAC: rMAC1, Addrs: []netip.Prefix{p1}}},
		NextHops:     hops,
		Pool:         pool,
		Now:          func() time.Time { return g.now },
		Hosts:        neigh.FIBHosts(g.routes),
		HostNextHops: neigh.IndexRange{First: 1000, Count: 64},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{g.tab.AddNextHop(nhGW, 1, gwIP), g.tab.AddSubnet(nhSub0, 0), g.tab.AddSubnet(nhSub1, 1)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	g.router, err = fwd.New(g.demux, &fwd.Config{
		Ifaces: []fwd.Iface{{Name: "lan", MAC: rMAC0, Addrs: []netip.Prefix{p0}}, {Name: "wan", MAC: rMAC1, Addrs: []netip.Prefix{p1}}},
		Routes: g.routes, NextHops: hops, Pool: pool, HoldUnresolved: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	g.w = g.router.NewWorker(64)
	return g
}

func serialize(t *testing.T, vid uint16, ls ...gopacket.SerializableLayer) []byte {
	t.Helper()
	eth := ls[0].(*layers.Ethernet)
	if vid != 0 {
		q := &layers.Dot1Q{VLANIdentifier: vid, Type: eth.EthernetType}
		eth.EthernetType = layers.EthernetTypeDot1Q
		ls = append([]gopacket.SerializableLayer{eth, q}, ls[1:]...)
	}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), buf.Bytes()...)
}

func udpTo(t *testing.T, vid uint16, dstMAC, srcMAC frame.MAC, src, dst netip.Addr) []byte {
	s, d := src.As4(), dst.As4()
	ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: s[:], DstIP: d[:]}
	udp := &layers.UDP{SrcPort: 1, DstPort: 2}
	udp.SetNetworkLayerForChecksum(ip)
	return serialize(t, vid, &layers.Ethernet{SrcMAC: net.HardwareAddr(srcMAC[:]), DstMAC: net.HardwareAddr(dstMAC[:]), EthernetType: layers.EthernetTypeIPv4},
		ip, udp, gopacket.Payload(make([]byte, 40)))
}

func arpFrame(t *testing.T, vid uint16, op uint16, dstMAC, sha frame.MAC, spa netip.Addr, tha frame.MAC, tpa netip.Addr) []byte {
	s, d := spa.As4(), tpa.As4()
	return serialize(t, vid, &layers.Ethernet{SrcMAC: net.HardwareAddr(sha[:]), DstMAC: net.HardwareAddr(dstMAC[:]), EthernetType: layers.EthernetTypeARP},
		&layers.ARP{AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4, HwAddressSize: 6, ProtAddressSize: 4,
			Operation: op, SourceHwAddress: sha[:], SourceProtAddress: s[:], DstHwAddress: tha[:], DstProtAddress: d[:]})
}

// rx makes a received batch of the pool.
func (g *wired) rx(frames ...[]byte) *frame.Batch {
	b := frame.NewBatch(64)
	g.pool.Alloc(b, len(frames))
	for i, d := range frames {
		b.Frames[i].Resize(len(d))
		copy(b.Bytes(i), d)
	}
	return b
}

// process runs in through the stage on physical port: ARP frames of Local go to Input, the rest of
// Local is released, Unresolved goes to Hold; it returns the egress frames by port, and the
// table's frames with their egress L2 header (the interface's vlan.Rewrite) applied.
func (g *wired) process(port uint16, in *frame.Batch) (egress [][]byte, arp [][]byte) {
	o := g.w.Process(port, in)
	out := frame.NewBatch(64)
	g.tab.Input(o.Local, out)
	o.Local.Free()
	g.tab.Hold(o.Unresolved, out)
	for p := range o.Egress {
		for i := range o.Egress[p].Frames {
			egress = append(egress, append([]byte{byte(p)}, o.Egress[p].Bytes(i)...))
		}
		o.Egress[p].Free()
		o.Generated[p].Free()
	}
	return egress, append(arp, g.tagARP(out)...)
}

// tagARP gives the table's frames their egress L2 header and returns them with their port first.
func (g *wired) tagARP(out *frame.Batch) [][]byte {
	var s [][]byte
	for i := range out.Frames {
		f := &out.Frames[i]
		d := out.Bytes(i)
		if f.L3 != 14 {
			g.t.Fatalf("L3 %d", f.L3)
		}
		rw, err := g.demux.Rewrite(f.Out, frame.MAC(d[0:6]), frame.MAC(d[6:12]), frame.TypeARP)
		if err != nil || g.vw.Apply(out, i, &rw) != nil {
			g.t.Fatalf("rewrite for interface %d: %v", f.Out, err)
		}
		s = append(s, append([]byte{byte(rw.Port())}, out.Bytes(i)...))
	}
	out.Free()
	return s
}

// decodeARP checks that d (port byte first) is an ARP frame on port with VLAN vid and returns it.
func decodeARP(t *testing.T, d []byte, port byte, vid uint16) *layers.ARP {
	t.Helper()
	if d[0] != port {
		t.Fatalf("ARP frame on port %d, want %d", d[0], port)
	}
	p := gopacket.NewPacket(d[1:], layers.LayerTypeEthernet, gopacket.Default)
	q, _ := p.Layer(layers.LayerTypeDot1Q).(*layers.Dot1Q)
	if (vid == 0) != (q == nil) || (q != nil && q.VLANIdentifier != vid) {
		t.Fatalf("ARP frame tagged %+v, want VLAN %d", q, vid)
	}
	a, _ := p.Layer(layers.LayerTypeARP).(*layers.ARP)
	if a == nil {
		t.Fatalf("not ARP: %x", d[1:])
	}
	return a
}

// TestWithFwd wires a Table into fwd's stage: a packet to an unresolved gateway is held, the
// request goes out tagged on its VLAN, the gateway's reply comes in through the stage's local
// batch, and the held packet, run through the stage again, goes out to the gateway's MAC; a packet
// to a host of a connected subnet makes it a host with a /32 route, resolved the same way.
func TestWithFwd(t *testing.T) {
	g := newWired(t)
	// LAN host -> far: held for the gateway.
	eg, arp := g.process(0, g.rx(udpTo(t, 0, rMAC0, hMAC, hostIP, farIP)))
	if len(eg) != 0 || len(arp) != 1 {
		t.Fatalf("%d forwarded, %d ARP", len(eg), len(arp))
	}
	a := decodeARP(t, arp[0], 1, 10)
	if a.Operation != 1 || netip.AddrFrom4([4]byte(a.DstProtAddress)) != gwIP || netip.AddrFrom4([4]byte(a.SourceProtAddress)) != netip.MustParseAddr("192.168.1.1") {
		t.Fatalf("request %+v", a)
	}
	// The gateway's reply, tagged, on port 1.
	eg, arp = g.process(1, g.rx(arpFrame(t, 10, 2, rMAC1, gwMAC, gwIP, rMAC1, netip.MustParseAddr("192.168.1.1"))))
	if len(eg)+len(arp) != 0 {
		t.Fatalf("%d forwarded, %d ARP", len(eg), len(arp))
	}
	out, ready, failed := frame.NewBatch(64), frame.NewBatch(64), frame.NewBatch(64)
	g.tab.Poll(out, ready, failed)
	if len(ready.Frames) != 1 || ready.Frames[0].Port != 0 || ready.Frames[0].Meta != nhGW {
		t.Fatalf("ready %+v", ready.Frames)
	}
	eg, _ = g.process(0, ready) // interface 0 is port 0, untagged
	if len(eg) != 1 || eg[0][0] != 1 {
		t.Fatalf("forwarded %d", len(eg))
	}
	p := gopacket.NewPacket(eg[0][1:], layers.LayerTypeEthernet, gopacket.Default)
	eth := p.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
	ip := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	if frame.MAC(eth.DstMAC) != gwMAC || frame.MAC(eth.SrcMAC) != rMAC1 || ip.TTL != 63 || p.Layer(layers.LayerTypeDot1Q) == nil {
		t.Fatalf("forwarded %v", p)
	}
	// Straight through now.
	if eg, arp = g.process(0, g.rx(udpTo(t, 0, rMAC0, hMAC, hostIP, farIP))); len(eg) != 1 || len(arp) != 0 {
		t.Fatalf("%d forwarded, %d ARP", len(eg), len(arp))
	}

	// far -> LAN host: a connected subnet's host.
	eg, arp = g.process(1, g.rx(udpTo(t, 10, rMAC1, gwMAC, farIP, hostIP)))
	if len(eg) != 0 || len(arp) != 1 {
		t.Fatalf("%d forwarded, %d ARP", len(eg), len(arp))
	}
	if a := decodeARP(t, arp[0], 0, 0); netip.AddrFrom4([4]byte(a.DstProtAddress)) != hostIP {
		t.Fatalf("request %+v", a)
	}
	if nh, _ := g.routes.Lookup(hostIP); nh != 1000 {
		t.Fatalf("host route to %d", nh)
	}
	// The host asks for us first (learned: the held packet is ready), and we answer it.
	_, arp = g.process(0, g.rx(arpFrame(t, 0, 1, bcast, hMAC, hostIP, frame.MAC{}, netip.MustParseAddr("10.0.0.1"))))
	if len(arp) != 1 {
		t.Fatalf("%d ARP", len(arp))
	}
	if a := decodeARP(t, arp[0], 0, 0); a.Operation != 2 || frame.MAC(a.DstHwAddress) != hMAC {
		t.Fatalf("reply %+v", a)
	}
	g.tab.Poll(out, ready, failed)
	if len(ready.Frames) != 1 || ready.Frames[0].Port != 1 {
		t.Fatalf("ready %+v", ready.Frames)
	}
	eg, _ = g.process(1, ready) // interface 1 is port 1; the tag is still in the frame's bytes
	if len(eg) != 1 || eg[0][0] != 0 {
		t.Fatalf("forwarded %d", len(eg))
	}
	if eth := gopacket.NewPacket(eg[0][1:], layers.LayerTypeEthernet, gopacket.Default).Layer(layers.LayerTypeEthernet).(*layers.Ethernet); frame.MAC(eth.DstMAC) != hMAC {
		t.Fatalf("to %v", eth.DstMAC)
	}
	for _, e := range g.tab.Entries() {
		t.Logf("%v %v %v %v", e.Iface, e.Addr, e.MAC, e.State)
	}
	if n := g.pool.InUse(); n != 0 {
		t.Fatalf("%d buffers in use", n)
	}
}
