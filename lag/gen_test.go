package lag

import (
	"encoding/binary"
	"math/rand/v2"
)

// synthFrame is one synthetic flow's frame.
type synthFrame struct {
	b   []byte
	oob bool
	tci uint16
}

// genFrame builds a random frame of one of many shapes: plain, tagged (in band, out of band,
// QinQ), IPv4 (TCP, UDP, SCTP, DCCP, ESP, AH, ICMP echo and errors, options, fragments, bad IHL),
// IPv6 (with extension headers, fragments, ICMPv6), tunnels (IP-in-IP, 6in4, GRE v0/v1 with
// options and TEB), ARP, MPLS, FCoE, unknown EtherTypes, and sometimes cut short.
func genFrame(r *rand.Rand) synthFrame {
	var f synthFrame
	b := make([]byte, 0, 256)
	mac := func() []byte {
		m := make([]byte, 6)
		for i := range m {
			m[i] = byte(r.IntN(256))
		}
		return m
	}
	b = append(b, mac()...)
	b = append(b, mac()...)
	// Tags.
	switch r.IntN(8) {
	case 0:
		f.oob, f.tci = true, uint16(r.IntN(65536))
	case 1:
		b = binary.BigEndian.AppendUint16(b, 0x8100)
		b = binary.BigEndian.AppendUint16(b, uint16(r.IntN(65536)))
	case 2: // QinQ, both in band
		b = binary.BigEndian.AppendUint16(b, 0x88a8)
		b = binary.BigEndian.AppendUint16(b, uint16(r.IntN(65536)))
		b = binary.BigEndian.AppendUint16(b, 0x8100)
		b = binary.BigEndian.AppendUint16(b, uint16(r.IntN(65536)))
	case 3: // outer out of band, inner in band
		f.oob, f.tci = true, uint16(r.IntN(65536))
		b = binary.BigEndian.AppendUint16(b, 0x8100)
		b = binary.BigEndian.AppendUint16(b, uint16(r.IntN(65536)))
	}
	b = appendL3(r, b, 0)
	// Pad like Ethernet sometimes, cut short sometimes.
	if r.IntN(4) == 0 {
		for len(b) < 60 {
			b = append(b, byte(r.IntN(256)))
		}
	}
	if r.IntN(10) == 0 && len(b) > 0 {
		b = b[:r.IntN(len(b))]
	}
	f.b = b
	return f
}

func appendL3(r *rand.Rand, b []byte, depth int) []byte {
	k := r.IntN(14)
	if depth > 0 && k >= 10 {
		k = r.IntN(4)
	}
	switch k {
	case 0, 1, 2, 3:
		b = binary.BigEndian.AppendUint16(b, 0x0800)
		return appendIPv4(r, b, depth)
	case 4, 5:
		b = binary.BigEndian.AppendUint16(b, 0x86dd)
		return appendIPv6(r, b, depth)
	case 6:
		b = binary.BigEndian.AppendUint16(b, 0x0806)
		return appendRand(r, b, 28)
	case 7:
		b = binary.BigEndian.AppendUint16(b, []uint16{0x8847, 0x8848, 0x8035, 0x8906}[r.IntN(4)])
		return appendRand(r, b, r.IntN(60))
	case 8:
		b = binary.BigEndian.AppendUint16(b, uint16(r.IntN(65536)))
		return appendRand(r, b, r.IntN(60))
	default:
		b = binary.BigEndian.AppendUint16(b, 0x0800)
		return appendIPv4(r, b, depth)
	}
}

func appendRand(r *rand.Rand, b []byte, n int) []byte {
	for i := 0; i < n; i++ {
		b = append(b, byte(r.IntN(256)))
	}
	return b
}

func randProto(r *rand.Rand) uint8 {
	return []uint8{6, 6, 6, 17, 17, 17, 132, 33, 50, 51, 1, 1, 58, 2, 47, 4, 41, 137, 136, 0, 43, 44, 60, uint8(r.IntN(256))}[r.IntN(24)]
}

func appendIPv4(r *rand.Rand, b []byte, depth int) []byte {
	ihl := 5
	switch r.IntN(10) {
	case 0:
		ihl = 5 + r.IntN(11)
	case 1:
		ihl = r.IntN(5)
	}
	proto := randProto(r)
	if r.IntN(2) == 0 {
		proto = []uint8{6, 17}[r.IntN(2)]
	}
	h := make([]byte, 20)
	h[0] = byte(0x40 | ihl)
	if r.IntN(20) == 0 {
		h[0] = byte(r.IntN(256))
	}
	binary.BigEndian.PutUint16(h[2:], uint16(20+r.IntN(100)))
	switch r.IntN(8) {
	case 0:
		binary.BigEndian.PutUint16(h[6:], 0x2000) // first fragment
	case 1:
		binary.BigEndian.PutUint16(h[6:], uint16(r.IntN(0x2000))) // later fragment
	case 2:
		h[6] = 0x40 // DF
	}
	h[8] = 64
	h[9] = proto
	for i := 12; i < 20; i++ {
		h[i] = byte(r.IntN(256))
	}
	b = append(b, h...)
	if ihl > 5 {
		b = appendRand(r, b, (ihl-5)*4)
	}
	return appendL4(r, b, proto, depth)
}

func appendIPv6(r *rand.Rand, b []byte, depth int) []byte {
	proto := randProto(r)
	h := make([]byte, 40)
	h[0] = 0x60
	h[1] = byte(r.IntN(256))
	h[2] = byte(r.IntN(256))
	h[6] = proto
	h[7] = 64
	for i := 8; i < 40; i++ {
		h[i] = byte(r.IntN(256))
	}
	b = append(b, h...)
	return appendL4(r, b, proto, depth)
}

func appendL4(r *rand.Rand, b []byte, proto uint8, depth int) []byte {
	switch proto {
	case 0, 43, 60: // extension header, then a transport
		next := []uint8{6, 17, 58, 44, 0}[r.IntN(5)]
		n := r.IntN(3)
		b = append(b, next, byte(n))
		b = appendRand(r, b, 6+8*n)
		return appendL4(r, b, next, depth)
	case 44: // fragment header
		next := []uint8{6, 17, 58}[r.IntN(3)]
		fo := uint16(0)
		if r.IntN(2) == 0 {
			fo = uint16(r.IntN(0x2000)) << 3
		}
		b = append(b, next, 0)
		b = binary.BigEndian.AppendUint16(b, fo|uint16(r.IntN(2)))
		b = appendRand(r, b, 4)
		return appendL4(r, b, next, depth)
	case 1, 58:
		t := []uint8{0, 8, 3, 11, 5, 12, 13, 14, 128, 129, 1, 2, 4, 127, 135, uint8(r.IntN(256))}[r.IntN(16)]
		b = append(b, t, byte(r.IntN(256)), 0, 0)
		id := uint16(r.IntN(65536))
		if r.IntN(8) == 0 {
			id = 0
		}
		b = binary.BigEndian.AppendUint16(b, id)
		b = appendRand(r, b, 2)
		if depth < 2 && r.IntN(2) == 0 { // an embedded header, as in an error
			if r.IntN(2) == 0 {
				return appendIPv4(r, b, depth+1)
			}
			return appendIPv6(r, b, depth+1)
		}
		return appendRand(r, b, r.IntN(16))
	case 4:
		if depth < 2 {
			return appendIPv4(r, b, depth+1)
		}
	case 41:
		if depth < 2 {
			return appendIPv6(r, b, depth+1)
		}
	case 47:
		if depth < 2 {
			return appendGRE(r, b, depth+1)
		}
	}
	return appendRand(r, b, r.IntN(24))
}

func appendGRE(r *rand.Rand, b []byte, depth int) []byte {
	flags := uint16(0)
	for _, bit := range []uint16{0x8000, 0x2000, 0x1000, 0x0080, 0x4000} {
		if r.IntN(3) == 0 {
			flags |= bit
		}
	}
	ver := uint16(0)
	if r.IntN(4) == 0 {
		ver = uint16(r.IntN(3))
	}
	proto := []uint16{0x0800, 0x86dd, 0x6558, 0x880b, 0x8100}[r.IntN(5)]
	b = binary.BigEndian.AppendUint16(b, flags|ver)
	b = binary.BigEndian.AppendUint16(b, proto)
	for _, bit := range []uint16{0x8000, 0x2000, 0x1000} {
		if flags&bit != 0 {
			b = appendRand(r, b, 4)
		}
	}
	if ver == 1 {
		if flags&0x0080 != 0 {
			b = appendRand(r, b, 4)
		}
		b = append(b, 0xff, 0x03, 0x00, []byte{0x21, 0x57, 0x99}[r.IntN(3)])
		if b[len(b)-1] == 0x57 {
			return appendIPv6(r, b, depth)
		}
		return appendIPv4(r, b, depth)
	}
	switch proto {
	case 0x0800:
		return appendIPv4(r, b, depth)
	case 0x86dd:
		return appendIPv6(r, b, depth)
	case 0x6558:
		b = appendRand(r, b, 12)
		return appendL3(r, b, depth)
	case 0x8100:
		b = binary.BigEndian.AppendUint16(b, uint16(r.IntN(65536)))
		return appendL3(r, b, depth)
	}
	return b
}
