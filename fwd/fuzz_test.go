package fwd

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/gopacket/gopacket/layers"
	"github.com/wirespeed/wirespeed/frame"
)

// The oracle's view of the test router (rig_test.go's configuration, written out again).
var (
	oracleRoutes = []struct {
		p  netip.Prefix
		nh int
	}{
		{netip.MustParsePrefix("0.0.0.0/0"), nhGW}, {netip.MustParsePrefix("10.0.10.0/24"), nhV10},
		{netip.MustParsePrefix("10.0.10.128/25"), nhMissing}, {netip.MustParsePrefix("192.0.2.0/24"), nhBlackhole},
		{netip.MustParsePrefix("203.0.113.0/24"), nhUnresolved}, {netip.MustParsePrefix("100.64.0.0/24"), nhLocal},
	}
	oracleOwn = map[[4]byte]bool{{198, 51, 100, 1}: true, {10, 0, 10, 1}: true, {10, 0, 20, 1}: true}
	// Subnet broadcast addresses by interface: uplink 0, VLAN 10 is 1, VLAN 20 is 2.
	oracleBcast = map[[4]byte]int{{198, 51, 100, 255}: 0, {10, 0, 10, 255}: 1, {10, 0, 20, 255}: 2}
)

// verdict is what the oracle expects of one frame.
type verdict struct {
	r    Reason // a drop reason, Forwarded, Local or Echoed; Fragmented as fragOut
	frag bool
	icmp bool
}

// oracle judges a frame built by FuzzProcess from the rules of RFC 1812 as the package doc states
// them, on its own decoding of the bytes (no code of the stage).
func oracle(port uint16, vid uint16, macSel uint8, b []byte) verdict {
	ifc := -1
	switch {
	case port == 1 && vid == 0:
		ifc = 0
	case port == 0 && vid == 10:
		ifc = 1
	case port == 0 && vid == 20:
		ifc = 2
	}
	if ifc < 0 {
		return verdict{r: DropVLAN}
	}
	if macSel == 1 {
		return verdict{r: DropNotForUs}
	}
	l2multi := macSel >= 2
	ip := b[14:]
	if vid != 0 {
		ip = b[18:]
	}
	if len(ip) < 20 || ip[0]>>4 != 4 || ip[0]&15 < 5 {
		return verdict{r: DropMalformed}
	}
	hl := int(ip[0]&15) * 4
	tl := int(ip[2])<<8 | int(ip[3])
	if tl < hl || tl > len(ip) {
		return verdict{r: DropMalformed}
	}
	var sum uint32
	for i := 0; i < hl; i += 2 {
		sum += uint32(ip[i])<<8 | uint32(ip[i+1])
	}
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	if sum != 0xffff {
		return verdict{r: DropChecksum}
	}
	ip = ip[:tl]
	src, dst := [4]byte(ip[12:16]), [4]byte(ip[16:20])
	martian := func(a [4]byte) bool { return a[0] == 0 || a[0] == 127 || a[0] >= 224 }
	switch {
	case dst == [4]byte{255, 255, 255, 255} || dst[0] == 224 && dst[1] == 0 && dst[2] == 0:
		if martian(src) && src != ([4]byte{}) {
			return verdict{r: DropMartianSrc}
		}
		return verdict{r: Local}
	case dst[0] >= 224 && dst[0] < 240:
		return verdict{r: DropMulticast}
	case martian(dst):
		return verdict{r: DropMartianDst}
	case martian(src):
		return verdict{r: DropMartianSrc}
	}
	frag := int(binary.BigEndian.Uint16(ip[6:]))
	fragOff, df, mf := frag&0x1fff, frag&0x4000 != 0, frag&0x2000 != 0
	ttl := ip[8]
	icmpOK := fragOff == 0 && !l2multi && !(ip[9] == 1 && (tl <= hl || isICMPErrorOracle(ip[hl])))
	if oracleOwn[dst] {
		m := ip[hl:]
		echo := !l2multi && hl == 20 && ip[9] == 1 && fragOff == 0 && !mf && len(m) >= 8 && m[0] == 8 && m[1] == 0
		if echo {
			var s uint32
			for i := 0; i < len(m); i++ {
				if i%2 == 0 {
					s += uint32(m[i]) << 8
				} else {
					s += uint32(m[i])
				}
			}
			for s > 0xffff {
				s = s>>16 + s&0xffff
			}
			echo = s == 0xffff
		}
		if echo {
			return verdict{r: Echoed}
		}
		return verdict{r: Local}
	}
	if bi, ok := oracleBcast[dst]; ok {
		if bi == ifc {
			return verdict{r: Local}
		}
		return verdict{r: DropDirectedBroadcast}
	}
	if l2multi {
		return verdict{r: DropL2Broadcast}
	}
	if ttl <= 1 {
		return verdict{r: DropTTL, icmp: icmpOK}
	}
	best, nh := -1, -1
	a := netip.AddrFrom4(dst)
	for _, rt := range oracleRoutes {
		if rt.p.Contains(a) && rt.p.Bits() > best {
			best, nh = rt.p.Bits(), rt.nh
		}
	}
	mtu := 1500
	switch nh {
	case -1, nhMissing:
		return verdict{r: DropNoRoute, icmp: icmpOK}
	case nhBlackhole:
		return verdict{r: DropBlackhole}
	case nhUnresolved:
		return verdict{r: DropUnresolved}
	case nhLocal:
		return verdict{r: Local}
	case nhGW:
		mtu = 1000
	}
	if tl > mtu {
		if df {
			return verdict{r: DropTooBig, icmp: icmpOK}
		}
		return verdict{r: Forwarded, frag: true}
	}
	return verdict{r: Forwarded}
}

func isICMPErrorOracle(t uint8) bool {
	return !(t == 0 || t == 8 || t == 9 || t == 10 || (t >= 13 && t <= 18))
}

// FuzzProcess builds a frame from the fuzzer's fields (addresses, TTL, flags, protocol, ICMP type,
// size, Ethernet destination, VLAN) and flips one byte of its IPv4 packet; the stage's verdict,
// ICMP error and fragmentation must be the oracle's, and no buffer may be lost.
func FuzzProcess(f *testing.F) {
	f.Add(uint16(0), uint8(10), uint8(0), uint32(0x0a000a05), uint32(0xc6120001), uint8(64), uint16(0), uint16(30), uint8(17), uint8(0), uint16(0xffff), uint8(0))
	f.Add(uint16(1), uint8(0), uint8(0), uint32(0xc6120001), uint32(0x0a000a07), uint8(1), uint16(0x4000), uint16(1400), uint8(1), uint8(8), uint16(0xffff), uint8(0))
	f.Add(uint16(0), uint8(10), uint8(0), uint32(0x0a000a05), uint32(0x0a000a01), uint8(3), uint16(0), uint16(56), uint8(1), uint8(8), uint16(0xffff), uint8(0))
	f.Add(uint16(0), uint8(10), uint8(0), uint32(0x0a000a05), uint32(0xc6120001), uint8(64), uint16(0), uint16(1500), uint8(17), uint8(0), uint16(6), uint8(0x20))
	f.Add(uint16(0), uint8(20), uint8(2), uint32(0), uint32(0xffffffff), uint8(64), uint16(0), uint16(300), uint8(17), uint8(0), uint16(0xffff), uint8(0))
	g := newRig(f)
	f.Fuzz(func(t *testing.T, port uint16, vidSel, macSel uint8, src, dst uint32, ttl uint8, frag, size uint16,
		proto, icmpType uint8, flipAt uint16, flipVal uint8) {
		port %= 2
		vid := []uint16{0, 10, 20, 11}[vidSel%4]
		macSel %= 4
		size %= 1900
		dstMAC := []frame.MAC{macUp, macHost, macBC, macMC}[macSel]
		if macSel == 0 && vid == 10 {
			dstMAC = macV10
		} else if macSel == 0 && vid == 20 {
			dstMAC = macV20
		}
		p := pkt{vid: vid, dstMAC: dstMAC, src: [4]byte(binary.BigEndian.AppendUint32(nil, src)), dst: [4]byte(binary.BigEndian.AppendUint32(nil, dst)),
			ttl: ttl, size: int(size), df: frag&0x4000 != 0, mf: frag&0x2000 != 0, fragOff: frag & 0x1fff, proto: layers.IPProtocol(proto), icmpType: icmpType}
		if p.src == ([4]byte{}) && src != 0 {
			return
		}
		if proto == 1 && size < 8 {
			p.size = 8
		}
		b := p.bytes(t)
		l3 := 14
		if vid != 0 {
			l3 = 18
		}
		if at := l3 + int(flipAt); int(flipAt) != 0xffff && at < len(b) {
			b[at] ^= flipVal
		}
		want := oracle(port, vid, macSel, b)
		before := g.r.Counters()
		res := g.process(t, port, b)
		c := g.r.Counters()
		if c.Received()-before.Received() != 1 {
			t.Fatalf("%d frames counted", c.Received()-before.Received())
		}
		var got Reason = 255
		switch {
		case c.Forwarded != before.Forwarded || c.Fragmented != before.Fragmented:
			got = Forwarded
		case c.Local != before.Local:
			got = Local
		case c.Echoed != before.Echoed:
			got = Echoed
		default:
			for r := range c.Drops {
				if c.Drops[r] != before.Drops[r] {
					got = Reason(r)
				}
			}
		}
		if got != want.r {
			t.Fatalf("verdict %v, oracle says %v", got, want.r)
		}
		if frag := c.Fragmented != before.Fragmented; frag != want.frag {
			t.Fatalf("fragmented %v, oracle says %v", frag, want.frag)
		}
		if icmp := c.ICMPErrors != before.ICMPErrors; icmp != want.icmp {
			t.Fatalf("ICMP error sent %v, oracle says %v", icmp, want.icmp)
		}
		if want.icmp && len(res.generated[port]) != 1 {
			t.Fatalf("ICMP error not on the ingress port")
		}
		g.checkNoLeak(t)
	})
}

// FuzzProcessRaw: any bytes on either port, with or without an out-of-band tag, through Process
// with every option on: never a panic, every frame counted once, no buffer lost.
func FuzzProcessRaw(f *testing.F) {
	f.Add(pkt{vid: 10, dstMAC: macV10, dst: far, ttl: 64, size: 30}.bytes(f), uint8(0), false)
	f.Add(pkt{dstMAC: macUp, dst: [4]byte{10, 0, 10, 7}, ttl: 1, size: 0}.bytes(f), uint8(1), false)
	f.Add(pkt{dstMAC: macUp, dst: far, ttl: 64, size: 1200}.bytes(f), uint8(1), true)
	f.Add([]byte{0, 1, 2}, uint8(0), true)
	g := bigRig(f, func(c *Config) { c.HoldUnresolved, c.DirectedBroadcast = true, true })
	f.Fuzz(func(t *testing.T, data []byte, port uint8, oob bool) {
		if len(data) > 2000 {
			data = data[:2000]
		}
		before := g.r.Counters().Received()
		b2 := frame.NewBatch(4)
		g.pool.Alloc(b2, 3)
		for i := range b2.Frames {
			b2.Frames[i].Resize(len(data))
			copy(b2.Bytes(i), data)
			if oob && i == 1 {
				b2.Frames[i].Flags |= frame.FlagVLAN
				b2.Frames[i].TPID, b2.Frames[i].TCI = 0x8100, 10
			}
		}
		o := g.w.Process(uint16(port%2), b2)
		for p := range o.Egress {
			o.Egress[p].Free()
			o.Generated[p].Free()
		}
		o.Local.Free()
		o.Unresolved.Free()
		g.w.Flush()
		if n := g.r.Counters().Received() - before; n != 3 {
			t.Fatalf("3 frames in, %d counted", n)
		}
		g.checkNoLeak(t)
	})
}
