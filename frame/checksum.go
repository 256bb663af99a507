package frame

import "encoding/binary"

// sum adds b to the 32-bit ones'-complement accumulator s (RFC 1071), 8 bytes at a time.
func sum(s uint64, b []byte) uint64 {
	for len(b) >= 8 {
		v := binary.BigEndian.Uint64(b)
		s += v >> 32
		s += v & 0xffffffff
		b = b[8:]
	}
	if len(b) >= 4 {
		s += uint64(binary.BigEndian.Uint32(b))
		b = b[4:]
	}
	if len(b) >= 2 {
		s += uint64(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		s += uint64(b[0]) << 8
	}
	return s
}

func fold(s uint64) uint16 {
	s = (s >> 32) + (s & 0xffffffff)
	s = (s >> 32) + (s & 0xffffffff)
	s = (s >> 16) + (s & 0xffff)
	s = (s >> 16) + (s & 0xffff)
	return uint16(s)
}

// Checksum is the Internet checksum of b (RFC 1071): the ones' complement of the ones'-complement
// sum of b's 16-bit big-endian words. Computed over a header whose checksum field holds the right
// value, it returns 0.
func Checksum(b []byte) uint16 { return ^fold(sum(0, b)) }

// Update16 returns checksum hc after one 16-bit word of the covered data changes from old to new,
// by RFC 1624 equation 3: HC' = ~(~HC + ~m + m'). It never produces 0xffff for a non-zero sum's
// complement, the corner case RFC 1624 corrects in RFC 1141's formula.
func Update16(hc, old, new uint16) uint16 {
	s := uint32(^hc) + uint32(^old) + uint32(new)
	s = (s >> 16) + (s & 0xffff)
	s = (s >> 16) + (s & 0xffff)
	return ^uint16(s)
}

// Update32 is Update16 for a 32-bit field (an IPv4 address) changing from old to new.
func Update32(hc uint16, old, new uint32) uint16 {
	s := uint32(^hc) + uint32(^uint16(old>>16)) + uint32(^uint16(old)) + new>>16 + new&0xffff
	s = (s >> 16) + (s & 0xffff)
	s = (s >> 16) + (s & 0xffff)
	return ^uint16(s)
}
