//go:build !(386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm) || fwd_portable

package fwd

import (
	"encoding/binary"
	"unsafe"
)

// The words rxRun and txRun read in the machine's byte order, and what they make of them, in forms
// right on any machine (big-endian ones, and any machine with -tags fwd_portable, which tests them).

// etVerMask and etVerIPv4: the EtherType IPv4 and the first header byte of IPv4 without options
// (0x45) as the 32-bit word at the EtherType, read in the machine's order, gives them.
var etVerMask, etVerIPv4 = binary.NativeEndian.Uint32([]byte{0xff, 0xff, 0xff, 0}), binary.NativeEndian.Uint32([]byte{0x08, 0x00, 0x45, 0})

// macKey is a MAC address (the first 6 bytes of x, a 64-bit word read in the machine's order) as
// rxRun compares it: the low 16 bits are zero.
func macKey(x uint64) uint64 {
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], x)
	return binary.LittleEndian.Uint64(b[:]) << 16
}

// ttlOK takes x, the header's word at byte 8 (TTL, protocol, checksum) read in the machine's order,
// and reports whether ttlWord updates its checksum: all but 0xfeff and 0xffff, as in endian_le.go.
func ttlOK(x uint32) bool {
	var b [4]byte
	binary.NativeEndian.PutUint32(b[:], x)
	return binary.BigEndian.Uint16(b[2:]) < 0xfeff
}

// word8 is the header's word at byte 8 (TTL, protocol, checksum) in x, the 64-bit word there, both
// read in the machine's order.
func word8(x uint64) uint32 {
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], x)
	return binary.NativeEndian.Uint32(b[:])
}

// ttlBad is non-zero for x, the header's word at byte 8 read in the machine's order, where ttlWord
// does not update the checksum: 0xfeff and above, as in endian_le.go (which takes 0xfeff and
// 0xffff only).
func ttlBad(x uint32) uint32 {
	if ttlOK(x) {
		return 0
	}
	return 1
}

// ttlWord takes x, the header's word at byte 8 (TTL, protocol, checksum) read in the machine's
// order, with a TTL above 1 and ttlOK, and returns it with the TTL decremented and the checksum
// updated (RFC 1624, as frame.IPv4.DecTTL does).
func ttlWord(x uint32) uint32 {
	var b [4]byte
	binary.NativeEndian.PutUint32(b[:], x)
	b[0]--
	binary.BigEndian.PutUint16(b[2:], binary.BigEndian.Uint16(b[2:])+0x100)
	return binary.NativeEndian.Uint32(b[:])
}

// ttlOf is the TTL in x, the header's 64-bit word at byte 8 read in the machine's order.
func ttlOf(x uint64) uint8 {
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], x)
	return b[0]
}

// be32at reads the big-endian word at p.
func be32at(p unsafe.Pointer) uint32 { return binary.BigEndian.Uint32((*[4]byte)(p)[:]) }

// beWord32 is the value of the big-endian word that reads as x in the machine's order.
func beWord32(x uint32) uint32 {
	var b [4]byte
	binary.NativeEndian.PutUint32(b[:], x)
	return binary.BigEndian.Uint32(b[:])
}
