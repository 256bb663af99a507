package fwd

import (
	"encoding/binary"
	"fmt"
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

// icmpWant is the ICMP error a row expects in Output.Generated (type 0: none).
type icmpWant struct {
	typ, code uint8
	mtu       uint16
}

// TestVerdicts is RFC 1812's receive and forwarding rules, one row per rule: each frame alone, its
// verdict counted once, its frame where the verdict says, and the ICMP error (if any) decoded by
// gopacket.
func TestVerdicts(t *testing.T) {
	up := func(p pkt) pkt { // arriving on the uplink, untagged, to the router's uplink MAC
		if p.dstMAC == (frame.MAC{}) {
			p.dstMAC = macUp
		}
		if p.ttl == 0 {
			p.ttl = 64
		}
		if p.size == 0 {
			p.size = 30
		}
		return p
	}
	v10 := func(p pkt) pkt { // arriving tagged on VLAN 10
		if p.vid == 0 {
			p.vid = 10
		}
		if p.dstMAC == (frame.MAC{}) {
			p.dstMAC = macV10
		}
		return up(p)
	}
	const uplink, trunk = 1, 0
	rows := []struct {
		name    string
		port    uint16
		p       pkt
		verdict Reason
		egress  int // port of the forwarded frame, -1 none
		icmp    icmpWant
	}{
		{"forwarded to the uplink", trunk, v10(pkt{dst: far}), Forwarded, uplink, icmpWant{}},
		{"forwarded to VLAN 10", uplink, up(pkt{dst: [4]byte{10, 0, 10, 7}, src: far}), Forwarded, trunk, icmpWant{}},
		{"TTL 2 is forwarded", trunk, v10(pkt{dst: far, ttl: 2}), Forwarded, uplink, icmpWant{}},
		{"IP options forwarded untouched", trunk, v10(pkt{dst: far, options: []layers.IPv4Option{{OptionType: 1}, {OptionType: 1}, {OptionType: 1}, {OptionType: 0}}}), Forwarded, uplink, icmpWant{}},
		{"a non-first fragment is forwarded", trunk, v10(pkt{dst: far, fragOff: 100}), Forwarded, uplink, icmpWant{}},
		{"unknown VLAN", trunk, v10(pkt{dst: far, vid: 11}), DropVLAN, -1, icmpWant{}},
		{"unicast to another MAC", trunk, v10(pkt{dst: far, dstMAC: macUp}), DropNotForUs, -1, icmpWant{}},
		{"truncated", trunk, v10(pkt{dst: far, truncate: 30}), DropMalformed, -1, icmpWant{}},
		{"bad checksum", trunk, v10(pkt{dst: far, badSum: true}), DropChecksum, -1, icmpWant{}},
		{"Ethernet broadcast, unicast IP (§5.3.4)", trunk, v10(pkt{dst: far, dstMAC: macBC}), DropL2Broadcast, -1, icmpWant{}},
		{"Ethernet multicast, unicast IP (§5.3.4)", trunk, v10(pkt{dst: far, dstMAC: macMC}), DropL2Broadcast, -1, icmpWant{}},
		{"limited broadcast is local (§5.3.5.1)", trunk, v10(pkt{dst: [4]byte{255, 255, 255, 255}, dstMAC: macBC}), Local, -1, icmpWant{}},
		{"DHCP discover (source 0.0.0.0) is local", trunk, v10(pkt{dst: [4]byte{255, 255, 255, 255}, src: [4]byte{}, dstMAC: macBC}), Local, -1, icmpWant{}},
		{"224.0.0.5 is local", trunk, v10(pkt{dst: [4]byte{224, 0, 0, 5}, dstMAC: macMC}), Local, -1, icmpWant{}},
		{"routable multicast is not routed", trunk, v10(pkt{dst: [4]byte{239, 1, 2, 3}, dstMAC: macMC}), DropMulticast, -1, icmpWant{}},
		{"destination 0/8", trunk, v10(pkt{dst: [4]byte{0, 1, 2, 3}}), DropMartianDst, -1, icmpWant{}},
		{"destination 127/8", trunk, v10(pkt{dst: [4]byte{127, 0, 0, 1}}), DropMartianDst, -1, icmpWant{}},
		{"destination 240/4", trunk, v10(pkt{dst: [4]byte{240, 0, 0, 1}}), DropMartianDst, -1, icmpWant{}},
		{"source 0/8", trunk, v10(pkt{dst: far, src: [4]byte{0, 0, 0, 1}}), DropMartianSrc, -1, icmpWant{}},
		{"source 127/8", trunk, v10(pkt{dst: far, src: [4]byte{127, 0, 0, 1}}), DropMartianSrc, -1, icmpWant{}},
		{"source 224/4", trunk, v10(pkt{dst: far, src: [4]byte{224, 0, 0, 1}}), DropMartianSrc, -1, icmpWant{}},
		{"source 240/4", trunk, v10(pkt{dst: far, src: [4]byte{250, 0, 0, 1}}), DropMartianSrc, -1, icmpWant{}},
		{"source 255.255.255.255", trunk, v10(pkt{dst: far, src: [4]byte{255, 255, 255, 255}}), DropMartianSrc, -1, icmpWant{}},
		{"TTL 1: time exceeded (§5.3.1)", trunk, v10(pkt{dst: far, ttl: 1}), DropTTL, -1, icmpWant{typ: 11}},
		{"TTL 0: time exceeded", trunk, func() pkt { p := v10(pkt{dst: far, size: 1}); p.ttl = 0; return p }(), DropTTL, -1, icmpWant{typ: 11}},
		{"TTL 1 of a non-first fragment: no ICMP", trunk, v10(pkt{dst: far, ttl: 1, fragOff: 10}), DropTTL, -1, icmpWant{}},
		{"TTL 1 of an ICMP error: no ICMP", trunk, v10(pkt{dst: far, ttl: 1, proto: layers.IPProtocolICMPv4, icmpType: 3}), DropTTL, -1, icmpWant{}},
		{"TTL 1 of an echo request: ICMP", trunk, v10(pkt{dst: far, ttl: 1, proto: layers.IPProtocolICMPv4, icmpType: 8}), DropTTL, -1, icmpWant{typ: 11}},
		{"TTL 1 to the router is local", trunk, v10(pkt{dst: addrV10, ttl: 1}), Local, -1, icmpWant{}},
		{"no route: net unreachable (§5.2.7.1)", trunk, v10(pkt{dst: [4]byte{10, 0, 10, 200}}), DropNoRoute, -1, icmpWant{typ: 3, code: 0}},
		{"blackhole: silent", trunk, v10(pkt{dst: [4]byte{192, 0, 2, 1}}), DropBlackhole, -1, icmpWant{}},
		{"unresolved next hop", uplink, up(pkt{dst: [4]byte{203, 0, 113, 9}, src: far}), DropUnresolved, -1, icmpWant{}},
		{"local next hop", uplink, up(pkt{dst: [4]byte{100, 64, 0, 9}, src: far}), Local, -1, icmpWant{}},
		{"too big with DF: frag needed with the MTU (RFC 1191)", trunk, v10(pkt{dst: far, size: 1200, df: true}), DropTooBig, -1, icmpWant{typ: 3, code: 4, mtu: 1000}},
		{"exactly the MTU with DF is forwarded", trunk, v10(pkt{dst: far, size: 1000 - 28, df: true}), Forwarded, uplink, icmpWant{}},
		{"one byte over the MTU with DF", trunk, v10(pkt{dst: far, size: 1000 - 27, df: true}), DropTooBig, -1, icmpWant{typ: 3, code: 4, mtu: 1000}},
		{"own address is local", trunk, v10(pkt{dst: addrV10}), Local, -1, icmpWant{}},
		{"another interface's address is local", trunk, v10(pkt{dst: addrUp}), Local, -1, icmpWant{}},
		{"echo request to the router is answered", trunk, v10(pkt{dst: addrV10, proto: layers.IPProtocolICMPv4, icmpType: 8}), Echoed, trunk, icmpWant{}},
		{"echo request to the router by Ethernet broadcast is local", trunk, v10(pkt{dst: addrV10, dstMAC: macBC, proto: layers.IPProtocolICMPv4, icmpType: 8}), Local, -1, icmpWant{}},
		{"ingress subnet broadcast is local", trunk, v10(pkt{dst: [4]byte{10, 0, 10, 255}, dstMAC: macBC}), Local, -1, icmpWant{}},
		{"directed broadcast to another subnet (§5.3.5.2)", trunk, v10(pkt{dst: [4]byte{10, 0, 20, 255}}), DropDirectedBroadcast, -1, icmpWant{}},
		{"ARP to the router is local", trunk, v10(pkt{dst: far, dstMAC: macBC, etype: layers.EthernetTypeARP}), Local, -1, icmpWant{}},
		{"ARP to another MAC", trunk, v10(pkt{dst: far, dstMAC: macHost, etype: layers.EthernetTypeARP}), DropNotForUs, -1, icmpWant{}},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			g := newRig(t)
			res := g.process(t, row.port, row.p.bytes(t))
			c := g.r.Counters()
			if c.Received() != 1 {
				t.Fatalf("counted %d frames: %+v", c.Received(), c)
			}
			var got uint64
			switch row.verdict {
			case Forwarded:
				got = c.Forwarded
			case Local:
				got = c.Local
			case Echoed:
				got = c.Echoed
			default:
				got = c.Drops[row.verdict]
			}
			if got != 1 {
				t.Fatalf("want verdict %v; counters %+v", row.verdict, c)
			}
			for p := range 2 {
				want := 0
				if p == row.egress {
					want = 1
				}
				if len(res.egress[p]) != want {
					t.Errorf("port %d: %d frames out, want %d", p, len(res.egress[p]), want)
				}
			}
			if wl := b2i(row.verdict == Local); len(res.local) != wl {
				t.Errorf("%d local frames, want %d", len(res.local), wl)
			}
			// The ICMP error goes back out the ingress port.
			gen := res.generated[row.port]
			if len(res.generated[1-row.port]) != 0 {
				t.Errorf("generated frames on the other port")
			}
			if row.icmp.typ == 0 {
				if len(gen) != 0 || c.ICMPErrors != 0 {
					t.Fatalf("unexpected ICMP: %v", gen)
				}
			} else {
				if len(gen) != 1 || c.ICMPErrors != 1 {
					t.Fatalf("%d ICMP errors, want 1 (%+v)", len(gen), c)
				}
				checkICMPError(t, gen[0], row.p, row.icmp)
			}
			if row.verdict == Echoed {
				checkEchoReply(t, res.egress[trunk][0], row.p)
			}
			if row.verdict == Forwarded {
				p := res.egress[row.egress][0]
				ip := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
				checkIP(t, ip, row.p.ttl-1)
				if len(row.p.options) > 0 && len(ip.Options) != len(row.p.options) {
					t.Errorf("options %v, sent %v", ip.Options, row.p.options)
				}
			}
			g.checkNoLeak(t)
		})
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// checkIP: TTL as expected and the checksum the stage wrote equals gopacket's full recomputation.
func checkIP(t testing.TB, ip *layers.IPv4, ttl uint8) {
	t.Helper()
	if ip.TTL != ttl {
		t.Errorf("TTL %d, want %d", ip.TTL, ttl)
	}
	got := ip.Checksum
	buf := gopacket.NewSerializeBuffer()
	c := *ip
	c.Checksum = 0
	if err := c.SerializeTo(buf, gopacket.SerializeOptions{ComputeChecksums: true}); err != nil {
		t.Fatal(err)
	}
	if want := binary.BigEndian.Uint16(buf.Bytes()[10:12]); got != want {
		t.Errorf("checksum %#04x, gopacket computes %#04x", got, want)
	}
}

// checkICMPError decodes an ICMP error the stage generated about sent: addressed to the sender's
// MAC and IP from the router's address on the ingress interface, tagged as sent, the checksums
// right, the quote the packet as received.
func checkICMPError(t testing.TB, p gopacket.Packet, sent pkt, want icmpWant) {
	t.Helper()
	if p.ErrorLayer() != nil {
		t.Fatalf("ICMP error does not decode: %v", p.ErrorLayer().Error())
	}
	eth := p.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
	if frame.MAC(eth.DstMAC) != macHost {
		t.Errorf("ICMP to %v, want the sender %v", eth.DstMAC, macHost)
	}
	q, _ := p.Layer(layers.LayerTypeDot1Q).(*layers.Dot1Q)
	if (q == nil) != (sent.vid == 0) || q != nil && q.VLANIdentifier != sent.vid {
		t.Errorf("ICMP tagged %v, the frame came with VID %d", q, sent.vid)
	}
	ip := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	wantSrc := addrUp
	if sent.vid == 10 {
		wantSrc, sent.dstMAC = addrV10, macV10
	}
	if [4]byte(ip.SrcIP.To4()) != wantSrc || [4]byte(ip.DstIP.To4()) != sent.srcOr() {
		t.Errorf("ICMP %v -> %v", ip.SrcIP, ip.DstIP)
	}
	checkIP(t, ip, 64)
	ic := p.Layer(layers.LayerTypeICMPv4).(*layers.ICMPv4)
	if ic.TypeCode.Type() != want.typ || ic.TypeCode.Code() != want.code {
		t.Errorf("ICMP %v, want type %d code %d", ic.TypeCode, want.typ, want.code)
	}
	msg := append(ic.Contents, ic.Payload...)
	if frame.Checksum(msg) != 0 {
		t.Errorf("ICMP checksum wrong")
	}
	if got := binary.BigEndian.Uint16(msg[6:8]); got != want.mtu {
		t.Errorf("next-hop MTU %d, want %d", got, want.mtu)
	}
	orig := sent.bytes(t)[14+4*b2i(sent.vid != 0):]
	if tl := int(binary.BigEndian.Uint16(orig[2:])); tl < len(orig) {
		orig = orig[:tl]
	}
	quote := msg[8:]
	if n := min(len(orig), icmpMaxLen-28); len(quote) != n || string(quote) != string(orig[:n]) {
		t.Errorf("quote %d bytes, want the first %d of the packet as received", len(quote), n)
	}
	if int(ip.Length) > icmpMaxLen {
		t.Errorf("ICMP error of %d bytes", ip.Length)
	}
}

func checkEchoReply(t testing.TB, p gopacket.Packet, req pkt) {
	t.Helper()
	eth := p.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
	ip := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	ic, _ := p.Layer(layers.LayerTypeICMPv4).(*layers.ICMPv4)
	if ic == nil || ic.TypeCode.Type() != 0 || frame.MAC(eth.DstMAC) != req.srcMACOr() {
		t.Fatalf("echo reply: %v", p)
	}
	if [4]byte(ip.SrcIP.To4()) != req.dst || [4]byte(ip.DstIP.To4()) != req.srcOr() {
		t.Errorf("echo reply %v -> %v", ip.SrcIP, ip.DstIP)
	}
	if ic.Id != 7 || ic.Seq != 9 || frame.Checksum(append(ic.Contents, ic.Payload...)) != 0 {
		t.Errorf("echo reply id %d seq %d or checksum wrong", ic.Id, ic.Seq)
	}
	checkIP(t, ip, 64)
}

func (p pkt) srcOr() [4]byte {
	if p.src == ([4]byte{}) {
		return hostV10
	}
	return p.src
}

func (p pkt) srcMACOr() frame.MAC {
	if p.srcMAC == (frame.MAC{}) {
		return macHost
	}
	return p.srcMAC
}

// TestAccountingBatch: a mixed batch through Forward: every frame counted once, forwarded frames
// and ICMP errors on the wire, no buffer lost.
func TestAccountingBatch(t *testing.T) {
	g := newRig(t)
	var ports []xmit.Port
	var peers []*xmit.MemPort
	for range 2 {
		a, z := xmit.Pipe(g.pool, nil)
		ports, peers = append(ports, a), append(peers, z)
	}
	var in [][]byte
	for i := range 60 {
		p := pkt{vid: 10, dstMAC: macV10, dst: far, ttl: uint8(i % 4), size: 30 + i}
		in = append(in, p.bytes(t))
	}
	g.w.Forward(0, g.batch(t, in...), ports)
	g.w.Flush()
	c := g.r.Counters()
	if c.Received() != 60 || c.Forwarded != 30 || c.Drops[DropTTL] != 30 || c.ICMPErrors != 30 {
		t.Fatalf("counters %+v", c)
	}
	sink := frame.NewBatch(64)
	if n, _ := peers[1].Recv(sink); n != 30 {
		t.Fatalf("uplink got %d", n)
	}
	sink.Free()
	if n, _ := peers[0].Recv(sink); n != 30 {
		t.Fatalf("trunk got %d ICMP errors", n)
	}
	sink.Free()
	g.checkNoLeak(t)
}

// TestICMPRateLimit: the token bucket lets a burst through, then one per 1/rate, and counts the
// rest.
func TestICMPRateLimit(t *testing.T) {
	g := newRig(t, func(c *Config) { c.ICMPRate, c.ICMPBurst = 100, 5 })
	expired := pkt{vid: 10, dstMAC: macV10, dst: far, ttl: 1, size: 10}.bytes(t)
	many := make([][]byte, 20)
	for i := range many {
		many[i] = expired
	}
	g.process(t, 0, many...)
	if c := g.r.Counters(); c.ICMPErrors != 5 || c.ICMPRateLimited != 15 || c.Drops[DropTTL] != 20 {
		t.Fatalf("burst: %+v", c)
	}
	g.now += 25e6 // 25 ms at 100/s: 2.5 tokens
	g.process(t, 0, many...)
	if c := g.r.Counters(); c.ICMPErrors != 7 {
		t.Fatalf("after 25 ms: %d errors, want 7", c.ICMPErrors)
	}
	g.now += 10e9 // refilled, but never beyond the burst
	g.process(t, 0, many...)
	if c := g.r.Counters(); c.ICMPErrors != 12 {
		t.Fatalf("after 10 s: %d errors, want 12", c.ICMPErrors)
	}
	off := newRig(t, func(c *Config) { c.ICMPRate = -1 })
	off.process(t, 0, expired)
	if c := off.r.Counters(); c.ICMPErrors != 0 || c.ICMPRateLimited != 1 {
		t.Fatalf("ICMP off: %+v", c)
	}
	g.checkNoLeak(t)
}

// TestHoldUnresolved: with HoldUnresolved the frame comes back as received with its next-hop index.
func TestHoldUnresolved(t *testing.T) {
	g := newRig(t, func(c *Config) { c.HoldUnresolved = true })
	p := pkt{dstMAC: macUp, dst: [4]byte{203, 0, 113, 9}, src: far, ttl: 9, size: 20}
	res := g.process(t, 1, p.bytes(t))
	if len(res.held) != 1 || res.heldMeta[0] != nhUnresolved || g.r.Counters().Held != 1 {
		t.Fatalf("held %d (meta %v), counters %+v", len(res.held), res.heldMeta, g.r.Counters())
	}
	if ip := res.held[0].Layer(layers.LayerTypeIPv4).(*layers.IPv4); ip.TTL != 9 {
		t.Errorf("held frame's TTL %d: it must be as received", ip.TTL)
	}
	g.checkNoLeak(t)
}

// TestNoEchoAndDirectedBroadcast: the options that change verdicts.
func TestNoEchoAndDirectedBroadcast(t *testing.T) {
	g := newRig(t, func(c *Config) { c.NoEcho, c.DirectedBroadcast = true, true })
	echo := pkt{vid: 10, dstMAC: macV10, dst: addrV10, ttl: 64, proto: layers.IPProtocolICMPv4, icmpType: 8}
	bc := pkt{vid: 10, dstMAC: macV10, dst: [4]byte{10, 0, 20, 255}, ttl: 64, size: 10}
	res := g.process(t, 0, echo.bytes(t), bc.bytes(t))
	if len(res.local) != 1 || len(res.egress[0]) != 1 {
		t.Fatalf("local %d, egress %d", len(res.local), len(res.egress[0]))
	}
	out := res.egress[0][0]
	eth := out.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
	q := out.Layer(layers.LayerTypeDot1Q).(*layers.Dot1Q)
	if frame.MAC(eth.DstMAC) != macBC || frame.MAC(eth.SrcMAC) != macV20 || q.VLANIdentifier != 20 {
		t.Fatalf("directed broadcast sent as %v", out)
	}
	checkIP(t, out.Layer(layers.LayerTypeIPv4).(*layers.IPv4), 63)
	g.checkNoLeak(t)
}

// TestEchoBadChecksumIsLocal: an echo request whose ICMP checksum is wrong is not answered.
func TestEchoBadChecksumIsLocal(t *testing.T) {
	g := newRig(t)
	b := pkt{vid: 10, dstMAC: macV10, dst: addrV10, ttl: 64, proto: layers.IPProtocolICMPv4, icmpType: 8, size: 4}.bytes(t)
	b[18+20+8+3] ^= 1 // the last payload byte (gopacket pads the frame to 60)
	if res := g.process(t, 0, b); len(res.local) != 1 || len(res.egress[0]) != 0 {
		t.Fatalf("local %d egress %d", len(res.local), len(res.egress[0]))
	}
	g.checkNoLeak(t)
}

// TestConfigErrors: bad configurations are errors that say what is wrong.
func TestConfigErrors(t *testing.T) {
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 8})
	tiny, _ := frame.NewPool(&frame.PoolConfig{Buffers: 8, BufSize: 400})
	d := vlan.NewDemux(2, vlan.Parser{})
	d.Add(vlan.Interface{ID: 0, Port: 1})
	d.Add(vlan.Interface{ID: 1, Port: 0, Outer: vlan.C(10)})
	ifs := func(a ...string) []Iface {
		var ps []netip.Prefix
		for _, s := range a {
			ps = append(ps, netip.MustParsePrefix(s))
		}
		return []Iface{{Name: "a", Addrs: ps}, {Name: "b"}}
	}
	for _, c := range []Config{
		{Ifaces: ifs()[:1], Pool: pool},
		{Ifaces: []Iface{{MTU: 40}, {}}, Pool: pool},
		{Ifaces: ifs("::1/64"), Pool: pool},
		{Ifaces: ifs("127.0.0.1/8"), Pool: pool},
		{Ifaces: ifs("10.0.0.255/24"), Pool: pool},
		{Ifaces: ifs("10.0.0.1/24", "10.0.1.255/32", "10.0.1.1/24"), Pool: pool},
		{Ifaces: ifs(), Pool: tiny},
		{Ifaces: ifs(), Ports: -1, Pool: pool},
	} {
		if _, err := New(d, &c); err == nil || !errorsIs(err, ErrConfig) {
			t.Errorf("%+v: err %v, want ErrConfig", c, err)
		}
	}
	if _, err := New(nil, nil); err == nil {
		t.Error("nil demux accepted")
	}
	if _, err := New(d, &Config{Ifaces: ifs("10.0.0.1/24", "10.0.0.2/32"), Pool: pool}); err != nil {
		t.Errorf("good config: %v", err)
	}
}

func errorsIs(err, target error) bool {
	for e := err; e != nil; {
		if e == target {
			return true
		}
		u, ok := e.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		e = u.Unwrap()
	}
	return false
}

// TestNextHopChanges: the worker's per-next-hop rewrite cache follows every change of the next-hop
// table: a new neighbour address, a move to another interface (tagged to untagged), a blackhole, a
// deletion, and a next hop that appears later.
func TestNextHopChanges(t *testing.T) {
	g := newRig(t)
	toHost := func() []byte {
		return pkt{dstMAC: macUp, dst: [4]byte{10, 0, 10, 7}, src: far, ttl: 64, size: 30}.bytes(t)
	}
	toNH2 := func() []byte {
		return pkt{dstMAC: macUp, dst: [4]byte{10, 0, 10, 200}, src: far, ttl: 64, size: 30}.bytes(t)
	}
	expect := func(step string, res result, port int, dst frame.MAC, vid uint16) {
		t.Helper()
		out := res.egress[port]
		if len(out) != 1 {
			t.Fatalf("%s: %d frames on port %d", step, len(out), port)
		}
		eth := out[0].Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
		q, _ := out[0].Layer(layers.LayerTypeDot1Q).(*layers.Dot1Q)
		if frame.MAC(eth.DstMAC) != dst || (q == nil) != (vid == 0) || q != nil && q.VLANIdentifier != vid {
			t.Fatalf("%s: %v", step, out[0])
		}
	}
	nh := g.r.NextHops()
	expect("initial", g.process(t, 1, toHost()), 0, macHost, 10)
	other := frame.MAC{2, 7, 7, 7, 7, 7}
	nh.Set(nhV10, fib.NextHop{Ifindex: 1, DstMAC: other})
	expect("new neighbour address", g.process(t, 1, toHost()), 0, other, 10)
	nh.Set(nhV10, fib.NextHop{Ifindex: 0, DstMAC: macGW})
	expect("moved to the untagged uplink", g.process(t, 1, toHost()), 1, macGW, 0)
	nh.Set(nhV10, fib.NextHop{Ifindex: 0, DstMAC: macGW, Flags: fib.NextHopDrop})
	g.process(t, 1, toHost())
	nh.Delete(nhV10)
	g.process(t, 1, toHost())
	g.process(t, 1, toNH2())
	nh.Set(nhMissing, fib.NextHop{Ifindex: 1, DstMAC: other})
	expect("next hop 2 added", g.process(t, 1, toNH2()), 0, other, 10)
	if c := g.r.Counters(); c.Drops[DropNoRoute] != 2 || c.Drops[DropBlackhole] != 1 || c.Forwarded != 4 {
		t.Fatalf("counters %+v", c)
	}
	g.checkNoLeak(t)
}

// TestMisconfiguredEgress: configurations the router cannot serve cost a counted drop, never a
// panic or a frame counted as sent: an interface the demux gained after New (no Iface for it), a
// next hop whose interface sits on a physical port the router was not given, and a next hop to an
// interface that does not exist.
func TestMisconfiguredEgress(t *testing.T) {
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 256})
	d := vlan.NewDemux(3, vlan.Parser{})
	d.Add(vlan.Interface{ID: 0, Port: 1})
	d.Add(vlan.Interface{ID: 1, Port: 0, Outer: vlan.C(10)})
	d.Add(vlan.Interface{ID: 2, Port: 2, Outer: vlan.C(30)}) // port 2: beyond the router's 2 ports
	var st Static
	st.Add(netip.MustParsePrefix("0.0.0.0/0"), 0)
	st.Add(netip.MustParsePrefix("10.9.0.0/16"), 1)
	var nh fib.NextHops
	nh.Set(0, fib.NextHop{Ifindex: 2, DstMAC: macGW})
	nh.Set(1, fib.NextHop{Ifindex: 9, DstMAC: macGW})
	r, err := New(d, &Config{Ports: 2, Ifaces: []Iface{{Name: "up", MAC: macUp}, {Name: "v10", MAC: macV10}, {Name: "v30", MAC: frame.MAC{2, 0, 0, 0, 0, 3}}},
		Routes: &st, NextHops: &nh, Pool: pool})
	if err != nil {
		t.Fatal(err)
	}
	d.Add(vlan.Interface{ID: 3, Port: 0, Outer: vlan.C(20)}) // after New: no Iface entry
	g := &rig{pool: pool, r: r, w: r.NewWorker(64)}
	g.process(t, 1, pkt{dstMAC: macUp, dst: far, ttl: 64, size: 30}.bytes(t), pkt{dstMAC: macUp, dst: [4]byte{10, 9, 0, 1}, ttl: 64, size: 30}.bytes(t))
	g.process(t, 0, pkt{vid: 20, dstMAC: macV10, dst: far, ttl: 64, size: 30}.bytes(t))
	c := g.r.Counters()
	if c.Drops[DropEgress] != 2 || c.Drops[DropVLAN] != 1 || c.Forwarded != 0 {
		t.Fatalf("counters %+v, want two egress drops and one VLAN drop", c)
	}
	if s := g.r.IfaceStats(2); s.TxPackets != 0 {
		t.Fatalf("interface on the missing port counts %d frames sent", s.TxPackets)
	}
	g.checkNoLeak(t)
}

// TestProcessPanicsOnUnemptiedOutput: a caller that forgets an Output would lose its frames.
func TestProcessPanicsOnUnemptiedOutput(t *testing.T) {
	g := newRig(t)
	g.w.Process(0, g.batch(t, pkt{vid: 10, dstMAC: macV10, dst: far, ttl: 64, size: 30}.bytes(t)))
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	g.w.Process(0, frame.NewBatch(4))
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
			base := be32(rt.Addr().As4())
			switch rt.Bits() {
			case 0:
			case 32:
				a = base
			default:
				a = base | a&(^uint32(0)>>rt.Bits())
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

func TestReasonNames(t *testing.T) {
	seen := map[string]bool{}
	for r := Reason(0); r < NumVerdicts; r++ {
		s := r.String()
		if s == "" || s == "?" || seen[s] {
			t.Errorf("%d: name %q", r, s)
		}
		seen[s] = true
	}
	if Reason(200).String() != "?" {
		t.Error("unknown reason")
	}
	_ = fmt.Sprint(Forwarded)
}

// TestResumeAndUnreachable: held frames come back through Resume once their next hop resolves, and
// through Unreachable as ICMP host unreachable once it fails.
func TestResumeAndUnreachable(t *testing.T) {
	g := newRig(t, func(c *Config) { c.HoldUnresolved = true })
	p := pkt{vid: 10, dstMAC: macV10, dst: [4]byte{203, 0, 113, 9}, ttl: 9, size: 20}
	o := g.w.Process(0, g.batch(t, p.bytes(t), p.bytes(t)))
	held := frame.NewBatch(8)
	held.Adopt(o.Unresolved)
	held.Frames = append(held.Frames, o.Unresolved.Frames...)
	o.Unresolved.Reset()
	if len(held.Frames) != 2 {
		t.Fatalf("held %d", len(held.Frames))
	}
	// The next hop resolves: the first frame goes on as if it had just arrived.
	g.r.NextHops().Set(nhUnresolved, fib.NextHop{Ifindex: 0, DstMAC: macGW})
	one := frame.NewBatch(8)
	one.Adopt(held)
	one.Frames = append(one.Frames, held.Frames[0])
	held.Frames = held.Frames[1:]
	o = g.w.Resume(one)
	if len(o.Egress[1].Frames) != 1 {
		t.Fatalf("resumed frame not forwarded: %+v", g.r.Counters())
	}
	ip := frame.IPv4(o.Egress[1].Bytes(0)[14:])
	if ip.TTL() != 8 || ip.Dst() != 0xcb007109 {
		t.Fatalf("resumed frame TTL %d dst %x", ip.TTL(), ip.Dst())
	}
	o.Egress[1].Free()
	// The other fails: host unreachable back to the sender, tagged as it came.
	o = g.w.Unreachable(held)
	if len(o.Generated[0].Frames) != 1 {
		t.Fatalf("%d ICMP errors", len(o.Generated[0].Frames))
	}
	pk := gopacket.NewPacket(append([]byte(nil), o.Generated[0].Bytes(0)...), layers.LayerTypeEthernet, gopacket.Default)
	o.Generated[0].Free()
	checkICMPError(t, pk, p, icmpWant{typ: 3, code: 1})
	g.w.Flush()
	if c := g.r.Counters(); c.Held != 2 || c.Forwarded != 1 || c.ICMPErrors != 1 || c.Received() != 3 {
		t.Fatalf("counters %+v", c)
	}
	g.checkNoLeak(t)
}

// TestAddrSetFilter: the filter never misses one of the router's addresses, and passes few others
// on to the slow path.
func TestAddrSetFilter(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var es []addrEntry
	for i := range 64 {
		es = append(es, addrEntry{addr: 0x0a000000 | r.Uint32()&0xffffff, kind: kindOwn, iface: uint16(i)})
	}
	s, err := newAddrSet(es)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if !s.maybe(e.addr) {
			t.Fatalf("%v filtered out", ip4(e.addr))
		}
		if got, ok := s.find(e.addr); !ok || got != e {
			t.Fatalf("%v: found %+v %v", ip4(e.addr), got, ok)
		}
	}
	hits := 0
	const n = 1 << 20
	for range n {
		if a := r.Uint32(); s.maybe(a) {
			hits++
			if _, ok := s.find(a); ok {
				continue
			}
		}
	}
	if rate := float64(hits) / n; rate > 0.005 {
		t.Fatalf("%.3f %% of random addresses pass the filter, with %d entries", 100*rate, len(es))
	}
}
