package fwd

import (
	"net/netip"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/wirespeed/wirespeed/fib"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/vlan"
)

// The test router: interface 0 is the uplink (port 1, untagged, 198.51.100.1/24, MTU 1000),
// interface 1 VLAN 10 on port 0 (10.0.10.1/24), interface 2 VLAN 20 on port 0 (10.0.20.1/24).
var (
	macUp   = frame.MAC{2, 0, 0, 0, 0, 1}
	macV10  = frame.MAC{2, 0, 0, 0, 0, 2}
	macV20  = frame.MAC{2, 0, 0, 0, 0, 3}
	macGW   = frame.MAC{2, 9, 9, 9, 9, 9}
	macHost = frame.MAC{2, 8, 8, 8, 8, 8}
	macBC   = frame.MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	macMC   = frame.MAC{0x01, 0x00, 0x5e, 0, 0, 5}

	addrUp  = [4]byte{198, 51, 100, 1}
	addrV10 = [4]byte{10, 0, 10, 1}
	hostV10 = [4]byte{10, 0, 10, 5}
	far     = [4]byte{198, 18, 0, 1} // routed to the uplink's gateway
)

// Next hops of the test table.
const (
	nhGW         = 0 // uplink gateway
	nhV10        = 1 // host on VLAN 10
	nhMissing    = 2 // not in the next-hop table
	nhBlackhole  = 3
	nhUnresolved = 4
	nhLocal      = 5
)

type rig struct {
	pool  *frame.Pool
	r     *Router
	w     *Worker
	now   int64
	cfg   Config
	demux *vlan.Demux
}

func testConfig(pool *frame.Pool) Config {
	var st Static
	for _, r := range []struct {
		p  string
		nh uint32
	}{
		{"0.0.0.0/0", nhGW}, {"10.0.10.0/24", nhV10}, {"10.0.10.128/25", nhMissing}, {"192.0.2.0/24", nhBlackhole},
		{"203.0.113.0/24", nhUnresolved}, {"100.64.0.0/24", nhLocal},
	} {
		st.Add(netip.MustParsePrefix(r.p), r.nh)
	}
	nh := new(fib.NextHops)
	nh.Set(nhGW, fib.NextHop{Ifindex: 0, DstMAC: macGW})
	nh.Set(nhV10, fib.NextHop{Ifindex: 1, DstMAC: macHost})
	nh.Set(nhBlackhole, fib.NextHop{Flags: fib.NextHopDrop})
	nh.Set(nhUnresolved, fib.NextHop{Ifindex: 1, Flags: fib.NextHopUnresolved})
	nh.Set(nhLocal, fib.NextHop{Flags: fib.NextHopLocal})
	return Config{
		Ifaces: []Iface{
			{Name: "up", MAC: macUp, MTU: 1000, Addrs: []netip.Prefix{netip.MustParsePrefix("198.51.100.1/24")}},
			{Name: "v10", MAC: macV10, Addrs: []netip.Prefix{netip.MustParsePrefix("10.0.10.1/24")}},
			{Name: "v20", MAC: macV20, Addrs: []netip.Prefix{netip.MustParsePrefix("10.0.20.1/24")}},
		},
		Routes: &st, NextHops: nh, Pool: pool, ICMPBurst: 1 << 20,
	}
}

func newRig(t testing.TB, edit ...func(*Config)) *rig {
	t.Helper()
	pool, err := frame.NewPool(&frame.PoolConfig{Buffers: 1024})
	if err != nil {
		t.Fatal(err)
	}
	d := vlan.NewDemux(2, vlan.Parser{})
	d.Add(vlan.Interface{ID: 0, Port: 1})
	d.Add(vlan.Interface{ID: 1, Port: 0, Outer: vlan.C(10)})
	d.Add(vlan.Interface{ID: 2, Port: 0, Outer: vlan.C(20)})
	g := &rig{pool: pool, demux: d}
	g.cfg = testConfig(pool)
	g.cfg.Now = func() int64 { return g.now }
	for _, e := range edit {
		e(&g.cfg)
	}
	g.pool = g.cfg.Pool
	g.r, err = New(d, &g.cfg)
	if err != nil {
		t.Fatal(err)
	}
	g.w = g.r.NewWorker(64)
	return g
}

// pkt describes a test frame; the zero value's fields mean: untagged, to the router's uplink MAC,
// from hostV10, UDP.
type pkt struct {
	vid      uint16 // 0: untagged
	dstMAC   frame.MAC
	srcMAC   frame.MAC
	src, dst [4]byte
	ttl      uint8
	size     int // L4 payload
	df, mf   bool
	fragOff  uint16 // in 8-byte units
	badSum   bool
	etype    layers.EthernetType
	truncate int
	proto    layers.IPProtocol // 0: UDP
	icmpType uint8
	options  []layers.IPv4Option
	tos      uint8
	id       uint16
}

func (p pkt) bytes(t testing.TB) []byte {
	t.Helper()
	if p.srcMAC == (frame.MAC{}) {
		p.srcMAC = macHost
	}
	if p.src == ([4]byte{}) {
		p.src = hostV10
	}
	eth := &layers.Ethernet{SrcMAC: p.srcMAC[:], DstMAC: p.dstMAC[:], EthernetType: layers.EthernetTypeIPv4}
	ls := []gopacket.SerializableLayer{eth}
	var q *layers.Dot1Q
	if p.vid != 0 {
		eth.EthernetType = layers.EthernetTypeDot1Q
		q = &layers.Dot1Q{VLANIdentifier: p.vid, Type: layers.EthernetTypeIPv4}
		ls = append(ls, q)
	}
	if p.etype != 0 {
		if q != nil {
			q.Type = p.etype
		} else {
			eth.EthernetType = p.etype
		}
	}
	ip := &layers.IPv4{Version: 4, IHL: 5, TTL: p.ttl, TOS: p.tos, Id: p.id, Protocol: layers.IPProtocolUDP, SrcIP: p.src[:], DstIP: p.dst[:],
		FragOffset: p.fragOff, Options: p.options}
	if p.df {
		ip.Flags |= layers.IPv4DontFragment
	}
	if p.mf {
		ip.Flags |= layers.IPv4MoreFragments
	}
	ls = append(ls, ip)
	payload := make([]byte, p.size)
	for i := range payload {
		payload[i] = byte(i*7 + 3)
	}
	switch p.proto {
	case 0, layers.IPProtocolUDP:
		udp := &layers.UDP{SrcPort: 40000, DstPort: 40001}
		udp.SetNetworkLayerForChecksum(ip)
		ls = append(ls, udp)
	case layers.IPProtocolICMPv4:
		ip.Protocol = p.proto
		ls = append(ls, &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(p.icmpType, 0), Id: 7, Seq: 9})
	default:
		ip.Protocol = p.proto
	}
	ls = append(ls, gopacket.Payload(payload))
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		t.Fatal(err)
	}
	b := append([]byte(nil), buf.Bytes()...)
	l3 := 14
	if p.vid != 0 {
		l3 = 18
	}
	if p.badSum {
		b[l3+10] ^= 0x55
	}
	if p.truncate > 0 {
		b = b[:p.truncate]
	}
	return b
}

// batch puts frames into a fresh batch of g's pool.
func (g *rig) batch(t testing.TB, pkts ...[]byte) *frame.Batch {
	t.Helper()
	b := frame.NewBatch(64)
	if n, _ := g.pool.Alloc(b, len(pkts)); n != len(pkts) {
		t.Fatalf("pool: %d of %d buffers", n, len(pkts))
	}
	for i, p := range pkts {
		if !b.Frames[i].Resize(len(p)) {
			t.Fatalf("frame of %d bytes does not fit", len(p))
		}
		copy(b.Bytes(i), p)
	}
	return b
}

// result is an Output decoded and released.
type result struct {
	egress, generated [2][]gopacket.Packet
	local, held       []gopacket.Packet
	heldMeta          []uint32
}

func (g *rig) process(t testing.TB, port uint16, pkts ...[]byte) result {
	t.Helper()
	b := g.batch(t, pkts...)
	o := g.w.Process(port, b)
	if b.Len() != 0 {
		t.Fatal("Process left frames in the input batch")
	}
	var r result
	dec := func(b *frame.Batch) []gopacket.Packet {
		var ps []gopacket.Packet
		for i := range b.Frames {
			ps = append(ps, gopacket.NewPacket(append([]byte(nil), b.Bytes(i)...), layers.LayerTypeEthernet, gopacket.Default))
		}
		b.Free()
		return ps
	}
	for p := range o.Egress {
		r.egress[p] = dec(o.Egress[p])
		r.generated[p] = dec(o.Generated[p])
	}
	for i := range o.Unresolved.Frames {
		r.heldMeta = append(r.heldMeta, o.Unresolved.Frames[i].Meta)
	}
	r.local, r.held = dec(o.Local), dec(o.Unresolved)
	g.w.Flush()
	return r
}

func (g *rig) checkNoLeak(t testing.TB) {
	t.Helper()
	if n := g.pool.InUse(); n != 0 {
		t.Fatalf("%d buffers not returned", n)
	}
}
