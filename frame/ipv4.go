package frame

import (
	"encoding/binary"
	"math/bits"
	"net/netip"
)

// IP protocol numbers with L4 ports.
const (
	ProtoICMP    = 1
	ProtoTCP     = 6
	ProtoUDP     = 17
	ProtoSCTP    = 132
	ProtoUDPLite = 136
)

// IPv4MinLen is the length of an IPv4 header without options.
const IPv4MinLen = 20

// IPv4 is a view of an IPv4 packet (header first). Accessors assume a view returned by ParseIPv4;
// a raw IPv4(b) must be at least IPv4MinLen bytes.
type IPv4 []byte

// ParseIPv4 validates the header at the start of b (version 4, IHL >= 5, header and total length
// within b) and returns the view cut to the total length, so trailing Ethernet padding is not
// mistaken for payload. It does not verify the checksum (see IPv4.ChecksumOK).
func ParseIPv4(b []byte) (IPv4, error) {
	if len(b) < IPv4MinLen {
		return nil, ErrTruncated
	}
	if b[0]>>4 != 4 {
		return nil, ErrBadHeader
	}
	hl := int(b[0]&15) * 4
	tl := int(binary.BigEndian.Uint16(b[2:4]))
	if hl < IPv4MinLen || tl < hl {
		return nil, ErrBadHeader
	}
	if tl > len(b) {
		return nil, ErrTruncated
	}
	return IPv4(b[:tl]), nil
}

// HeaderLen is IHL*4.
func (ip IPv4) HeaderLen() int { return int(ip[0]&15) * 4 }

// TOS is the DSCP/ECN byte.
func (ip IPv4) TOS() uint8 { return ip[1] }

// TotalLen is the total length field.
func (ip IPv4) TotalLen() int { return int(binary.BigEndian.Uint16(ip[2:4])) }

// ID is the identification field.
func (ip IPv4) ID() uint16 { return binary.BigEndian.Uint16(ip[4:6]) }

// FragOff is the fragment offset in 8-byte units.
func (ip IPv4) FragOff() int { return int(binary.BigEndian.Uint16(ip[6:8]) & 0x1fff) }

// MoreFragments reports the MF flag.
func (ip IPv4) MoreFragments() bool { return ip[6]&0x20 != 0 }

// DontFragment reports the DF flag.
func (ip IPv4) DontFragment() bool { return ip[6]&0x40 != 0 }

// IsFragment reports whether the packet is any fragment of a larger datagram (MF set or offset > 0).
func (ip IPv4) IsFragment() bool { return binary.BigEndian.Uint16(ip[6:8])&0x3fff != 0 }

// TTL is the time to live.
func (ip IPv4) TTL() uint8 { return ip[8] }

// Protocol is the payload's IP protocol number.
func (ip IPv4) Protocol() uint8 { return ip[9] }

// Checksum is the header checksum field.
func (ip IPv4) Checksum() uint16 { return binary.BigEndian.Uint16(ip[10:12]) }

// Src is the source address as a big-endian number (10.0.0.1 = 0x0a000001).
func (ip IPv4) Src() uint32 { return binary.BigEndian.Uint32(ip[12:16]) }

// Dst is the destination address as a big-endian number.
func (ip IPv4) Dst() uint32 { return binary.BigEndian.Uint32(ip[16:20]) }

// SrcAddr is the source address.
func (ip IPv4) SrcAddr() netip.Addr { return netip.AddrFrom4([4]byte(ip[12:16])) }

// DstAddr is the destination address.
func (ip IPv4) DstAddr() netip.Addr { return netip.AddrFrom4([4]byte(ip[16:20])) }

// Payload is what follows the header, up to the total length.
func (ip IPv4) Payload() []byte { return ip[ip.HeaderLen():] }

// ChecksumOK verifies the header checksum. The common header (20 bytes, no options) is checked
// without a further call; headers with options take one.
func (ip IPv4) ChecksumOK() bool {
	if len(ip) < IPv4MinLen || ip[0] != 0x45 {
		return ip.checksumOKSlow()
	}
	// The header read as little-endian words: the ones'-complement sum commutes with byte swapping
	// (RFC 1071), and a correct header sums to 0xffff either way. Two 64-bit adds with carry, the
	// end-around carry, then the fold to 16 bits by rotation (Linux's csum_fold): x + rot(x) holds
	// the end-around-carry sum of x's two halves in its high half.
	h := (*[IPv4MinLen]byte)(ip[:IPv4MinLen])
	s, c := bits.Add64(binary.LittleEndian.Uint64(h[0:8]), binary.LittleEndian.Uint64(h[8:16]), 0)
	s, c = bits.Add64(s, uint64(binary.LittleEndian.Uint32(h[16:20])), c)
	s += c // no carry out: a carry above means s < 2^32 here
	x := uint32((s + bits.RotateLeft64(s, 32)) >> 32)
	return (x+bits.RotateLeft32(x, 16))>>16 == 0xffff
}

//go:noinline
func (ip IPv4) checksumOKSlow() bool {
	if len(ip) < IPv4MinLen || ip.HeaderLen() < IPv4MinLen || ip.HeaderLen() > len(ip) {
		return false
	}
	return Checksum(ip[:ip.HeaderLen()]) == 0
}

// SetChecksum computes and writes the header checksum.
func (ip IPv4) SetChecksum() {
	ip[10], ip[11] = 0, 0
	binary.BigEndian.PutUint16(ip[10:12], Checksum(ip[:ip.HeaderLen()]))
}

// DecTTL decrements the TTL and updates the checksum incrementally (RFC 1624). It reports false,
// changing nothing, when the TTL is already 0 or 1: the packet must not be forwarded.
func (ip IPv4) DecTTL() bool {
	h := (*[12]byte)(ip[:12])
	ttl := h[8]
	if ttl <= 1 {
		return false
	}
	h[8] = ttl - 1
	// The TTL is the high byte of a 16-bit word: it falls by 0x100, so the checksum (the complement
	// of the sum) rises by 0x100, with the end-around carry; 0xffff (the other zero) becomes 0x0000,
	// what a full recomputation gives (as Linux's ip_decrease_ttl does).
	c := uint32(h[10])<<8 | uint32(h[11]) + 0x100
	if c >= 0xffff {
		c++
	}
	h[10], h[11] = byte(c>>8), byte(c)
	return true
}

// SetSrc rewrites the source address and updates the header checksum incrementally. The caller
// updates any L4 checksum that covers the pseudo-header.
func (ip IPv4) SetSrc(a uint32) {
	binary.BigEndian.PutUint16(ip[10:12], Update32(ip.Checksum(), ip.Src(), a))
	binary.BigEndian.PutUint32(ip[12:16], a)
}

// SetDst rewrites the destination address and updates the header checksum incrementally.
func (ip IPv4) SetDst(a uint32) {
	binary.BigEndian.PutUint16(ip[10:12], Update32(ip.Checksum(), ip.Dst(), a))
	binary.BigEndian.PutUint32(ip[16:20], a)
}

// Ports returns the L4 source and destination ports of TCP, UDP, SCTP and UDP-Lite packets. ok is
// false for other protocols, for fragments (only the first carries ports, and hashing a first
// fragment with ports and later ones without would split a flow) and when the payload is too short.
func (ip IPv4) Ports() (src, dst uint16, ok bool) {
	switch ip[9] {
	case ProtoTCP, ProtoUDP, ProtoSCTP, ProtoUDPLite:
	default:
		return 0, 0, false
	}
	if ip.IsFragment() {
		return 0, 0, false
	}
	p := ip[ip.HeaderLen():]
	if len(p) < 4 {
		return 0, 0, false
	}
	return binary.BigEndian.Uint16(p[0:2]), binary.BigEndian.Uint16(p[2:4]), true
}

// CompleteL4Checksum fills in the TCP or UDP checksum of an Ethernet frame (untagged, or with
// 802.1Q/802.1ad tags in its bytes) carrying IPv4 or IPv6 without extension headers, whose checksum
// field holds only the pseudo-header's sum (FlagCsumPartial): it sums the segment from its L4
// header to the end of the packet, as a NIC's transmit checksum offload does, and stores the
// result. It reports false, changing nothing, for any other frame.
func CompleteL4Checksum(d []byte) bool {
	l3 := EtherLen
	for l3+4 <= len(d) {
		t := binary.BigEndian.Uint16(d[l3-2:])
		if t != TypeVLAN && t != 0x88a8 {
			break
		}
		l3 += 4
	}
	if l3 > len(d) {
		return false
	}
	var l4, end int
	var proto uint8
	switch binary.BigEndian.Uint16(d[l3-2:]) {
	case TypeIPv4:
		ip, err := ParseIPv4(d[l3:])
		if err != nil || ip.IsFragment() {
			return false
		}
		l4, end, proto = l3+ip.HeaderLen(), l3+len(ip), ip.Protocol()
	case 0x86dd:
		if len(d) < l3+40 {
			return false
		}
		l4, end, proto = l3+40, l3+40+int(binary.BigEndian.Uint16(d[l3+4:])), d[l3+6]
		if end > len(d) {
			return false
		}
	default:
		return false
	}
	off := 0
	switch proto {
	case ProtoUDP:
		off = 6
	case ProtoTCP:
		off = 16
	default:
		return false
	}
	if l4+off+2 > end {
		return false
	}
	c := Checksum(d[l4:end])
	if c == 0 && proto == ProtoUDP {
		c = 0xffff // 0 means "no checksum" in UDP
	}
	binary.BigEndian.PutUint16(d[l4+off:], c)
	return true
}
