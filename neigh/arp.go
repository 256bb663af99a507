package neigh

import (
	"encoding/binary"

	"github.com/wirespeed/wirespeed/frame"
)

// ARP (RFC 826) for Ethernet and IPv4: the only combination this package speaks.
const (
	arpLen       = 28 // hardware type, protocol type, lengths, operation, two MAC/IPv4 pairs
	arpHWEther   = 1
	arpOpRequest = 1
	arpOpReply   = 2

	// frameLen is the length of every generated frame: an Ethernet header, the ARP packet and the
	// zero padding to the Ethernet minimum (60 bytes without FCS).
	frameLen = frame.MinEthernetLen
)

var broadcast = frame.MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// arpPacket is a parsed ARP packet, its addresses as integers.
type arpPacket struct {
	op       uint16
	sha, tha frame.MAC
	spa, tpa uint32
}

// Why parseARP rejects a packet.
const (
	arpOK = iota
	arpTruncated
	arpBadFormat // hardware or protocol type or length
	arpBadOp
)

// parseARP reads the ARP packet at the start of b (the bytes after the L2 header). Anything after
// the 28 bytes (Ethernet padding) is ignored.
func parseARP(b []byte) (arpPacket, int) {
	var p arpPacket
	if len(b) < arpLen {
		return p, arpTruncated
	}
	b = b[:arpLen]
	if binary.BigEndian.Uint16(b[0:]) != arpHWEther || binary.BigEndian.Uint16(b[2:]) != frame.TypeIPv4 || b[4] != 6 || b[5] != 4 {
		return p, arpBadFormat
	}
	p.op = binary.BigEndian.Uint16(b[6:])
	if p.op != arpOpRequest && p.op != arpOpReply {
		return p, arpBadOp
	}
	p.sha = frame.MAC(b[8:14])
	p.spa = binary.BigEndian.Uint32(b[14:])
	p.tha = frame.MAC(b[18:24])
	p.tpa = binary.BigEndian.Uint32(b[24:])
	return p, arpOK
}

// job is a frame to generate: an ARP packet from interface iface's MAC, in an Ethernet frame to dst.
type job struct {
	dst   frame.MAC
	iface uint16
	kind  uint8
	p     arpPacket // sha is the interface's MAC
}

// buildFrame writes j as a plain Ethernet frame into the empty pool frame f of arena mem (whose
// buffers New checked have room for it): 14 bytes of Ethernet header, 28 of ARP, zero padding to 60.
// Frame.Out is the interface to send it on, Frame.L3 the header's length.
func buildFrame(mem []byte, f *frame.Frame, j *job, src frame.MAC) {
	f.Resize(frameLen)
	d := f.Data(mem)
	_ = d[frameLen-1]
	copy(d[0:6], j.dst[:])
	copy(d[6:12], src[:])
	binary.BigEndian.PutUint16(d[12:], frame.TypeARP)
	a := d[frame.EtherLen:]
	binary.BigEndian.PutUint16(a[0:], arpHWEther)
	binary.BigEndian.PutUint16(a[2:], frame.TypeIPv4)
	a[4], a[5] = 6, 4
	binary.BigEndian.PutUint16(a[6:], j.p.op)
	copy(a[8:14], src[:])
	binary.BigEndian.PutUint32(a[14:], j.p.spa)
	copy(a[18:24], j.p.tha[:])
	binary.BigEndian.PutUint32(a[24:], j.p.tpa)
	clear(d[frame.EtherLen+arpLen:])
	f.Out, f.L3 = j.iface, frame.EtherLen
}

// isBadMAC reports a sender hardware address no host has: broadcast, multicast or all zeros.
func isBadMAC(m frame.MAC) bool {
	return m[0]&1 != 0 || m == frame.MAC{}
}

// isBadSender reports a sender protocol address no neighbour has: 0/8 (0.0.0.0 itself is a probe,
// handled before), 127/8, multicast, 240/4 and the limited broadcast.
func isBadSender(a uint32) bool {
	switch a >> 24 {
	case 0, 127:
		return true
	}
	return a >= 0xe0000000
}
