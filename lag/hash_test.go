package lag

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/wirespeed/wirespeed/frame"
)

// Builders for the hand-made vectors.
var (
	macDst = []byte{0x02, 0, 0, 0, 0, 0x01} // dst[5] = 0x01
	macSrc = []byte{0x02, 0, 0, 0, 0, 0x02} // src[5] = 0x02
	ipA    = []byte{10, 0, 0, 1}
	ipB    = []byte{10, 0, 0, 2}
	ipC    = []byte{192, 168, 1, 1}
	ipD    = []byte{10, 9, 8, 7}
)

func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

func be16(v uint16) []byte { return binary.BigEndian.AppendUint16(nil, v) }

// ipv4 returns a 20-byte IPv4 header (no options).
func ipv4(src, dst []byte, proto uint8, fragField uint16) []byte {
	h := make([]byte, 20)
	h[0] = 0x45
	binary.BigEndian.PutUint16(h[2:], 60)
	binary.BigEndian.PutUint16(h[6:], fragField)
	h[8], h[9] = 64, proto
	copy(h[12:], src)
	copy(h[16:], dst)
	return h
}

func ipv6(src, dst []byte, next uint8) []byte {
	h := make([]byte, 40)
	h[0], h[6], h[7] = 0x60, next, 64
	copy(h[8:], src)
	copy(h[24:], dst)
	return h
}

func ports(s, d uint16) []byte { return cat(be16(s), be16(d), make([]byte, 4)) }

var (
	v6a = []byte{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}
	v6b = []byte{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2}
)

var (
	v6c = []byte{0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0a}
	v6d = []byte{0x20, 0x01, 0x0d, 0xb8, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0b}
)

// icmp6Quoting is an ICMPv6 message of type typ (code 0, identifier 0x1234 where the type has
// one) from v6a to v6b, followed by an IPv6 UDP header from v6c to v6d, ports 53 → 5353, as an
// error quotes the packet that caused it.
func icmp6Quoting(typ uint8) []byte {
	return cat(macDst, macSrc, be16(0x86dd), ipv6(v6a, v6b, 58), []byte{typ, 0, 0, 0, 0x12, 0x34, 0, 1}, ipv6(v6c, v6d, 17), ports(53, 5353))
}

// icmp4Quoting is icmp6Quoting for ICMP over IPv4: ipA → ipB quoting ipC → ipD.
func icmp4Quoting(typ uint8) []byte {
	return cat(macDst, macSrc, be16(0x0800), ipv4(ipA, ipB, 1, 0), []byte{typ, 0, 0, 0, 0x12, 0x34, 0, 1}, ipv4(ipC, ipD, 17, 0), ports(53, 5353))
}

// hashVectors are computed by hand from the kernel's formulas (bond_main.c, flow_dissector.c); the
// derivation of each is in its comment. Notation: LE(a.b.c.d) is the little-endian u32 load of the
// address bytes the kernel does (flow_get_u32_src on x86); fold(h) is h ^= h>>16; h ^= h>>8.
// LE(10.0.0.1) ^ LE(10.0.0.2) = 0x0100000a ^ 0x0200000a = 0x03000000.
var hashVectors = []struct {
	name string
	pol  Policy
	b    []byte
	oob  bool
	tci  uint16
	want uint32
}{
	// bond_eth_hash: dst[5] ^ src[5] ^ be16_to_cpu(h_proto) = 0x01 ^ 0x02 ^ 0x0800.
	{"layer2 ipv4", Layer2, cat(macDst, macSrc, be16(0x0800), ipv4(ipA, ipB, 17, 0), ports(1000, 2000)), false, 0, 0x0803},
	// h = 0x0803 ^ 0x03000000 = 0x03000803; ^>>16 (0x0300) = 0x03000b03; ^>>8 (0x0003000b) = 0x03030b08.
	{"layer2+3 ipv4", Layer23, cat(macDst, macSrc, be16(0x0800), ipv4(ipA, ipB, 17, 0), ports(1000, 2000)), false, 0, 0x03030b08},
	// ports 1000,2000 = bytes 03 e8 07 d0 → LE 0xd007e803; ^0x03000000 = 0xd307e803; ^>>16 (0xd307)
	// = 0xd3073b04; ^>>8 (0x00d3073b) = 0xd3d43c3f; >>1 = 0x69ea1e1f.
	{"layer3+4 udp", Layer34, cat(macDst, macSrc, be16(0x0800), ipv4(ipA, ipB, 17, 0), ports(1000, 2000)), false, 0, 0x69ea1e1f},
	// ICMP echo (type 8, code 0, id 0x1234): icmp key type|code<<8|id<<16 = 0x12340008; ^0x03000000 =
	// 0x11340008; ^>>16 = 0x1134113c; ^>>8 (0x00113411) = 0x1125252d; >>1 = 0x08929296.
	{"layer3+4 icmp echo id", Layer34, cat(macDst, macSrc, be16(0x0800), ipv4(ipA, ipB, 1, 0), []byte{8, 0, 0, 0, 0x12, 0x34, 0, 1}), false, 0, 0x08929296},
	// Later fragment (offset 185): no protocol, ports 0: h = 0x03000000; fold = 0x03030303; >>1 = 0x01818181.
	{"layer3+4 fragment drops ports", Layer34, cat(macDst, macSrc, be16(0x0800), ipv4(ipA, ipB, 17, 185), ports(1000, 2000)), false, 0, 0x01818181},
	// First fragment (MF set): ip_is_fragment too, so also no ports.
	{"layer3+4 first fragment drops ports", Layer34, cat(macDst, macSrc, be16(0x0800), ipv4(ipA, ipB, 17, 0x2000), ports(1000, 2000)), false, 0, 0x01818181},
	// The in-band tag is the accelerated tag: the same hash as untagged.
	{"layer3+4 vlan in band", Layer34, cat(macDst, macSrc, be16(0x8100), be16(0x0064), be16(0x0800), ipv4(ipA, ipB, 17, 0), ports(1000, 2000)), false, 0, 0x69ea1e1f},
	{"layer3+4 vlan out of band", Layer34, cat(macDst, macSrc, be16(0x0800), ipv4(ipA, ipB, 17, 0), ports(1000, 2000)), true, 0x0064, 0x69ea1e1f},
	{"layer2 vlan in band", Layer2, cat(macDst, macSrc, be16(0x8100), be16(0x0064), be16(0x0800), ipv4(ipA, ipB, 17, 0)), false, 0, 0x0803},
	// bond_vlan_srcmac_hash: TCI 0x2064 ^ src[0..2] 0x020000 ^ src[3..5] 0x000002 = 0x022066.
	{"vlan+srcmac out of band", VLANSrcMAC, cat(macDst, macSrc, be16(0x0800), ipv4(ipA, ipB, 17, 0)), true, 0x2064, 0x022066},
	{"vlan+srcmac in band", VLANSrcMAC, cat(macDst, macSrc, be16(0x8100), be16(0x2064), be16(0x0800), ipv4(ipA, ipB, 17, 0)), false, 0, 0x022066},
	// Untagged: vlan = 0: 0x020000 ^ 0x000002.
	{"vlan+srcmac untagged", VLANSrcMAC, cat(macDst, macSrc, be16(0x0800), ipv4(ipA, ipB, 17, 0)), false, 0, 0x020002},
	// QinQ: skb->protocol is the inner TPID 0x8100, not IP: layer2 fallback 0x01 ^ 0x02 ^ 0x8100.
	{"layer3+4 qinq falls back to layer2", Layer34, cat(macDst, macSrc, be16(0x88a8), be16(10), be16(0x8100), be16(20), be16(0x0800), ipv4(ipA, ipB, 17, 0), ports(1000, 2000)), false, 0, 0x8103},
	// encap3+4 goes through the inner tag: the same as the untagged layer3+4 vector.
	{"encap3+4 qinq", Encap34, cat(macDst, macSrc, be16(0x88a8), be16(10), be16(0x8100), be16(20), be16(0x0800), ipv4(ipA, ipB, 17, 0), ports(1000, 2000)), false, 0, 0x69ea1e1f},
	// ARP: the dissector stops good with no address, ports 0: encap3+4 = fold(0) >> 1 = 0.
	{"encap3+4 arp", Encap34, cat(macDst, macSrc, be16(0x0806), make([]byte, 28)), false, 0, 0},
	// encap2+3 ARP: fold(0x01^0x02^0x0806 = 0x0805) = 0x0805 ^ 0x08 = 0x080d (not layer2's 0x0805).
	{"encap2+3 arp folds", Encap23, cat(macDst, macSrc, be16(0x0806), make([]byte, 28)), false, 0, 0x080d},
	{"layer2+3 arp is layer2", Layer23, cat(macDst, macSrc, be16(0x0806), make([]byte, 28)), false, 0, 0x0805},
	// IPv6: ipv6_addr_hash(2001:db8::1) = 0xb80d0120 ^ 0x01000000 = 0xb90d0120, (…::2) = 0xba0d0120,
	// XOR 0x03000000. Ports 443,50000 = 01 bb c3 50 → 0x50c3bb01; ^ = 0x53c3bb01; ^>>16 = 0x53c3e8c2;
	// ^>>8 (0x0053c3e8) = 0x53902b2a; >>1 = 0x29c81595.
	{"layer3+4 ipv6 tcp", Layer34, cat(macDst, macSrc, be16(0x86dd), ipv6(v6a, v6b, 6), ports(443, 50000)), false, 0, 0x29c81595},
	// ICMP error (3/3) quoting 192.168.1.1 → 10.9.8.7 UDP 53 → 5353: bond_flow_dissect re-reads the
	// embedded header. LE(c0a80101) ^ LE(0a090807) = 0x0101a8c0 ^ 0x0708090a = 0x0609a1ca; ports
	// 00 35 14 e9 → 0xe9143500; ^ = 0xef1d94ca; ^>>16 = 0xef1d7bd7; ^>>8 = 0xeff266ac; >>1 = 0x77f93356.
	{"layer3+4 icmp error embedded", Layer34, cat(macDst, macSrc, be16(0x0800), ipv4(ipA, ipB, 1, 0), []byte{3, 3, 0, 0, 0, 0, 0, 0}, ipv4(ipC, ipD, 17, 0), ports(53, 5353)), false, 0, 0x77f93356},
	// layer2+3 descends too: 0x0803 ^ 0x0609a1ca = 0x0609a9c9; ^>>16 = 0x0609afc0; ^>>8 = 0x060fa66f.
	{"layer2+3 icmp error embedded", Layer23, cat(macDst, macSrc, be16(0x0800), ipv4(ipA, ipB, 1, 0), []byte{3, 3, 0, 0, 0, 0, 0, 0}, ipv4(ipC, ipD, 17, 0), ports(53, 5353)), false, 0, 0x060fa66f},
	// IP-in-IP: layer3+4 sees the outer header, protocol 4 has no ports: 0x01818181 as above; encap3+4
	// sees the inner addresses and ports: 0x77f93356 as the ICMP error vector.
	{"layer3+4 ipip outer", Layer34, cat(macDst, macSrc, be16(0x0800), ipv4(ipA, ipB, 4, 0), ipv4(ipC, ipD, 17, 0), ports(53, 5353)), false, 0, 0x01818181},
	{"encap3+4 ipip inner", Encap34, cat(macDst, macSrc, be16(0x0800), ipv4(ipA, ipB, 4, 0), ipv4(ipC, ipD, 17, 0), ports(53, 5353)), false, 0, 0x77f93356},
	// GRE with key, TEB, inner Ethernet + IPv4 192.168.1.1 → 10.9.8.7: encap2+3 hashes the OUTER
	// Ethernet (0x0803) with the INNER addresses: 0x060fa66f as above.
	{"encap2+3 gre teb", Encap23, cat(macDst, macSrc, be16(0x0800), ipv4(ipA, ipB, 47, 0), be16(0x2000), be16(0x6558), []byte{0, 0, 0, 42}, macSrc, macDst, be16(0x0800), ipv4(ipC, ipD, 17, 0), ports(53, 5353)), false, 0, 0x060fa66f},
	// ICMPv6 from 2001:db8::1 to 2001:db8::2 quoting 2001:db8:1::a → 2001:db8:2::b UDP 53 → 5353
	// (icmp6Quoting). Only types 1-4 are errors (icmpv6_is_err) and descend into the quoted header;
	// every other type hashes the outer addresses, whatever its INFOMSG bit.
	// Not an error: layer2+3 h = 0x86de (0x01 ^ 0x02 ^ 0x86dd) ^ 0x03000000 = 0x030086de; ^>>16
	// (0x0300) = 0x030085de; ^>>8 (0x00030085) = 0x0303855b. layer3+4: no ports for ICMPv6 and no
	// identifier for these types, so h = 0x03000000, fold 0x03030303, >>1 = 0x01818181.
	// An error: inner ipv6_addr_hash XOR = (0xb80d0120 ^ 0x100 ^ 0x0a000000) ^ (0xb80d0120 ^ 0x200 ^
	// 0x0b000000) = 0x01000300. layer2+3: 0x86de ^ 0x01000300 = 0x010085de; ^>>16 = 0x010084de; ^>>8
	// (0x00010084) = 0x0101845a. layer3+4: the quoted ports 0xe9143500 ^ 0x01000300 = 0xe8143600;
	// ^>>16 (0xe814) = 0xe814de14; ^>>8 (0x00e814de) = 0xe8fccaca; >>1 = 0x747e6565.
	{"layer2+3 icmpv6 type 0 is no error", Layer23, icmp6Quoting(0), false, 0, 0x0303855b},
	// Type 0 is ICMP's echo reply, and icmp_has_id looks at the number alone: the key carries the
	// identifier, 0x12340000 ^ 0x03000000 = 0x11340000; ^>>16 = 0x11341134; ^>>8 (0x00113411) =
	// 0x11252525; >>1 = 0x08929292.
	{"layer3+4 icmpv6 type 0 is no error", Layer34, icmp6Quoting(0), false, 0, 0x08929292},
	{"layer2+3 icmpv6 type 1 is an error", Layer23, icmp6Quoting(1), false, 0, 0x0101845a},
	{"layer3+4 icmpv6 type 1 is an error", Layer34, icmp6Quoting(1), false, 0, 0x747e6565},
	{"layer2+3 icmpv6 type 4 is an error", Layer23, icmp6Quoting(4), false, 0, 0x0101845a},
	{"layer3+4 icmpv6 type 4 is an error", Layer34, icmp6Quoting(4), false, 0, 0x747e6565},
	{"layer2+3 icmpv6 type 5 is no error", Layer23, icmp6Quoting(5), false, 0, 0x0303855b},
	{"layer3+4 icmpv6 type 5 is no error", Layer34, icmp6Quoting(5), false, 0, 0x01818181},
	{"layer2+3 icmpv6 type 127 is no error", Layer23, icmp6Quoting(127), false, 0, 0x0303855b},
	{"layer3+4 icmpv6 type 127 is no error", Layer34, icmp6Quoting(127), false, 0, 0x01818181},
	// Echo request, identifier 0x1234: layer2+3 as any non-error; layer3+4 hashes the icmp key
	// 0x12340080 ^ 0x03000000 = 0x11340080; ^>>16 (0x1134) = 0x113411b4; ^>>8 (0x00113411) =
	// 0x112525a5; >>1 = 0x089292d2.
	{"layer2+3 icmpv6 type 128", Layer23, icmp6Quoting(128), false, 0, 0x0303855b},
	{"layer3+4 icmpv6 type 128", Layer34, icmp6Quoting(128), false, 0, 0x089292d2},
	// A 4-byte ICMPv6 header (type 1): skb_flow_get_icmp_tci reads nothing from fewer than 8 bytes,
	// the key stays zero, type 0 is no error: the outer addresses as above, not the layer2 fallback.
	{"layer2+3 icmpv6 truncated header", Layer23, cat(macDst, macSrc, be16(0x86dd), ipv6(v6a, v6b, 58), []byte{1, 0, 0, 0}), false, 0, 0x0303855b},
	{"layer3+4 icmpv6 truncated header", Layer34, cat(macDst, macSrc, be16(0x86dd), ipv6(v6a, v6b, 58), []byte{1, 0, 0, 0}), false, 0, 0x01818181},
	// ICMPv4 errors are types 3, 4, 5, 11 and 12 (icmp_is_err), quoting 192.168.1.1 → 10.9.8.7 UDP
	// 53 → 5353 (icmp4Quoting): the embedded vectors above (0x060fa66f, 0x77f93356). Types 2 and
	// 13 are not: layer2+3 0x03030b08 and layer3+4 0x01818181 as for UDP without ports; 13
	// (timestamp) has an identifier: 0x1234000d ^ 0x03000000 = 0x1134000d; ^>>16 = 0x11341139;
	// ^>>8 (0x00113411) = 0x11252528; >>1 = 0x08929294. A 4-byte header is type 0, no error.
	{"layer3+4 icmp type 4 is an error", Layer34, icmp4Quoting(4), false, 0, 0x77f93356},
	{"layer2+3 icmp type 5 is an error", Layer23, icmp4Quoting(5), false, 0, 0x060fa66f},
	{"layer3+4 icmp type 11 is an error", Layer34, icmp4Quoting(11), false, 0, 0x77f93356},
	{"layer3+4 icmp type 12 is an error", Layer34, icmp4Quoting(12), false, 0, 0x77f93356},
	{"layer2+3 icmp type 2 is no error", Layer23, icmp4Quoting(2), false, 0, 0x03030b08},
	{"layer3+4 icmp type 2 is no error", Layer34, icmp4Quoting(2), false, 0, 0x01818181},
	{"layer3+4 icmp type 13 is no error", Layer34, icmp4Quoting(13), false, 0, 0x08929294},
	{"layer3+4 icmp truncated header", Layer34, cat(macDst, macSrc, be16(0x0800), ipv4(ipA, ipB, 1, 0), []byte{3, 3, 0, 0}), false, 0, 0x01818181},
	// ICMPv6's protocol number in IPv4 follows icmpv6_is_err too: type 5 is no error there.
	{"layer3+4 icmpv6 in ipv4 type 5 is no error", Layer34, cat(macDst, macSrc, be16(0x0800), ipv4(ipA, ipB, 58, 0), []byte{5, 0, 0, 0, 0, 0, 0, 0}, ipv4(ipC, ipD, 17, 0), ports(53, 5353)), false, 0, 0x01818181},
	// Shorter than an Ethernet header: bond_eth_hash returns 0.
	{"runt", Layer2, []byte{1, 2, 3}, false, 0, 0},
	// IPv4 EtherType but 19 bytes of header: bond_flow_ip fails, layer2 fallback.
	{"layer3+4 truncated ip", Layer34, cat(macDst, macSrc, be16(0x0800), make([]byte, 19)), false, 0, 0x0803},
}

func TestHashVectors(t *testing.T) {
	for _, v := range hashVectors {
		if got := HashBytes(v.pol, v.b, v.oob, v.tci); got != v.want {
			t.Errorf("%s (%v): HashBytes = %#x, want %#x", v.name, v.pol, got, v.want)
		}
		if got := oracleHash(v.pol, v.b, v.oob, v.tci); got != v.want {
			t.Errorf("%s (%v): oracle = %#x, want %#x", v.name, v.pol, got, v.want)
		}
	}
}

func TestPolicyNames(t *testing.T) {
	for p := Layer2; p <= VLANSrcMAC; p++ {
		q, err := ParsePolicy(p.String())
		if err != nil || q != p {
			t.Errorf("ParsePolicy(%q) = %v, %v", p.String(), q, err)
		}
	}
	if _, err := ParsePolicy("layer5"); err == nil {
		t.Error("ParsePolicy accepted layer5")
	}
	for m := RoundRobin; m <= Broadcast; m++ {
		q, err := ParseMode(m.String())
		if err != nil || q != m {
			t.Errorf("ParseMode(%q) = %v, %v", m.String(), q, err)
		}
	}
}

// TestHashMatchesOracle compares every policy with the naive transcription on many random frames.
func TestHashMatchesOracle(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 50000; i++ {
		f := genFrame(r)
		for p := Layer2; p <= VLANSrcMAC; p++ {
			got, want := HashBytes(p, f.b, f.oob, f.tci), oracleHash(p, f.b, f.oob, f.tci)
			if got != want {
				t.Fatalf("frame %d policy %v oob=%v tci=%#x: got %#x, oracle %#x\n% x", i, p, f.oob, f.tci, got, want, f.b)
			}
		}
	}
}

func TestHashBatchMatchesBytes(t *testing.T) {
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 64})
	b := frame.NewBatch(64)
	r := rand.New(rand.NewPCG(5, 6))
	frames := make([]synthFrame, 64)
	n, _ := pool.Alloc(b, 64)
	for i := 0; i < n; i++ {
		frames[i] = genFrame(r)
		b.Frames[i].Resize(len(frames[i].b))
		copy(b.Bytes(i), frames[i].b)
		if frames[i].oob {
			b.Frames[i].Flags |= frame.FlagVLAN
			b.Frames[i].TPID, b.Frames[i].TCI = 0x8100, frames[i].tci
		}
	}
	for p := Layer2; p <= VLANSrcMAC; p++ {
		for i := 0; i < n; i++ {
			if got, want := Hash(p, b, i), oracleHash(p, frames[i].b, frames[i].oob, frames[i].tci); got != want {
				t.Fatalf("policy %v frame %d: Hash %#x, oracle %#x", p, i, got, want)
			}
		}
	}
	b.Free()
}

// TestPick: pick is usable[h % count], pickHalf usable[(h >> 1) % count] and pick8
// usable[(h >> 8) % count] for every count 1..64, on edge and random hashes, with the usable
// members at arbitrary positions. Exhaustive runs over every 32-bit h (outside this test) agreed
// too: pick, pickHalf and pick8 for counts 1..64.
func TestPick(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for d := uint32(1); d <= MaxMembers; d++ {
		var u [256]uint8
		for i := range d {
			u[i] = uint8(r.IntN(MaxMembers))
		}
		st := &snapshot{usable: u[:d]}
		st.setPick()
		check := func(h uint32) {
			if got := rem(st.mp, st.ds, h); got != uint64(h%d) {
				t.Fatalf("rem(%#x) by %d = %d, want %d", h, d, got, h%d)
			}
			if got, want := pick(&st.members, st.mp, st.ds, h), u[h%d]; got != want {
				t.Fatalf("pick(%#x) with %d members = %d, want usable[%d] = %d", h, d, got, h%d, want)
			}
			if got, want := pick8(&st.members, st.mp>>8, st.ds>>8, h), u[(h>>8)%d]; got != want {
				t.Fatalf("pick8(%#x) with %d members = %d, want usable[%d] = %d", h, d, got, (h>>8)%d, want)
			}
			if got, want := pickHalf(&st.half, st.mp>>1, st.ds, h), u[(h>>1)%d]; got != want {
				t.Fatalf("pickHalf(%#x) with %d members = %d, want usable[%d] = %d", h, d, got, (h>>1)%d, want)
			}
		}
		for _, h := range []uint32{0, 1, d - 1, d, d + 1, 1<<31 - 1, 1 << 31, ^uint32(0), ^uint32(0) - 1, ^uint32(0) - d} {
			check(h)
		}
		for k := uint32(1); k < 1<<26; k <<= 1 { // multiples of d near powers of two, and their neighbours
			q := (^uint32(0) / d / k) * d * k
			check(q)
			check(q - 1)
		}
		for i := 0; i < 20000; i++ {
			check(r.Uint32())
		}
	}
}
