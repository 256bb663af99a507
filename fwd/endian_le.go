//go:build (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm) && !fwd_portable

package fwd

import (
	"math/bits"
	"unsafe"
)

// The words rxRun and txRun read in the machine's byte order, and what they make of them, on
// little-endian machines. (-tags fwd_portable builds endian_be.go instead, whose forms are right on
// any machine, to test them.)

// etVerMask and etVerIPv4: the EtherType IPv4 and the first header byte of IPv4 without options
// (0x45) as the 32-bit word at the EtherType, read in the machine's order, gives them.
const etVerMask, etVerIPv4 = 0x00ffffff, 0x00450008

// macKey is a MAC address (the first 6 bytes of x, a 64-bit word read in the machine's order) as
// rxRun compares it: the low 16 bits are zero.
func macKey(x uint64) uint64 { return x << 16 }

// ttlOK takes x, the header's word at byte 8 (TTL, protocol, checksum) read in the machine's order,
// and reports whether ttlWord updates its checksum: all but 0xfeff and 0xffff (see ttlWord).
func ttlOK(x uint32) bool { return x < 0xfffe0000 }

// word8 is the header's word at byte 8 (TTL, protocol, checksum) in x, the 64-bit word there, both
// read in the machine's order.
func word8(x uint64) uint32 { return uint32(x) }

// ttlBad is non-zero for x, the header's word at byte 8 read in the machine's order, where ttlWord
// does not update the checksum: 0xfeff and 0xffff, where x is 0xfffe0000 or more.
func ttlBad(x uint32) uint32 { return uint32((uint64(x) + 0x20000) >> 32) }

// ttlWord takes x, the header's word at byte 8 (TTL, protocol, checksum) read in the machine's
// order, with a TTL above 1 and ttlOK, and returns it with the TTL decremented and the checksum
// updated (RFC 1624: the TTL is the high byte of a 16-bit word, so the checksum rises by 0x100 with
// the end-around carry, and 0xffff becomes 0x0000, as frame.IPv4.DecTTL does). Read little-endian,
// the checksum is the high half of x, byte-swapped, where the rise is a 1 with the same end-around
// carry: one add, but for checksums 0xfeff and 0xffff, whose end-around carry the add would lose
// (those fail ttlOK, and the general path updates them).
func ttlWord(x uint32) uint32 { return x + 0xffff }

// ttlOf is the TTL in x, the header's 64-bit word at byte 8 read in the machine's order.
func ttlOf(x uint64) uint8 { return uint8(x) }

// be32at reads the big-endian word at p.
func be32at(p unsafe.Pointer) uint32 { return bits.ReverseBytes32(*(*uint32)(p)) }

// beWord32 is the value of the big-endian word that reads as x in the machine's order.
func beWord32(x uint32) uint32 { return bits.ReverseBytes32(x) }
