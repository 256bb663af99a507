package frame

import (
	"errors"
	"unsafe"
)

// Sentinel errors. Compare with == or errors.Is.
var (
	ErrTruncated  = errors.New("frame: truncated")
	ErrNoHeadroom = errors.New("frame: not enough headroom")
	ErrNoTailroom = errors.New("frame: not enough tailroom")
	ErrBadHeader  = errors.New("frame: malformed header")
	ErrChecksum   = errors.New("frame: bad checksum")
	ErrForeign    = errors.New("frame: batch holds frames of another arena")
)

// Flags carry per-frame facts between stages.
type Flags uint16

const (
	// FlagVLAN: the outermost VLAN tag was taken out of the frame by the I/O layer (as the kernel
	// does for AF_PACKET) and lives in Frame.TPID and Frame.TCI instead of the bytes. Package vlan
	// consumes it or puts it back.
	FlagVLAN Flags = 1 << iota
	// FlagRxCsumOK: the I/O layer (or a stage) verified the L3 checksum.
	FlagRxCsumOK
	// FlagTimestamp: a stage extracted a timestamp for this frame (e.g. a switch tag carried one).
	FlagTimestamp
	// FlagTrapped: a switch trapped the frame to the CPU rather than forwarding it (see package dsa).
	FlagTrapped
	// FlagCsumPartial: the TCP or UDP checksum holds only the pseudo-header's sum, as a sender that
	// left it to the hardware wrote it (Linux's CHECKSUM_PARTIAL, seen on veth); CompleteL4Checksum
	// fills it in.
	FlagCsumPartial
)

// MinEthernetLen is the minimum Ethernet frame length without FCS (ETH_ZLEN).
const MinEthernetLen = 60

// Frame describes one frame inside an arena. It holds no pointer: the bytes are
// arena[Off : Off+Len], the headroom is arena[Off-Head : Off] and the tailroom
// arena[Off+Len : Off+Len+Tail]. The zero Frame is an empty frame with no room.
//
// Fields other than Off/Len/Head/Tail/Buf are metadata that stages set and read; the I/O layer
// clears them when it hands a frame out.
type Frame struct {
	Off  uint32 // first byte of the frame in the arena
	Buf  uint32 // the owner's handle for the memory (buffer index, UMEM chunk, ring block); opaque to stages
	Len  uint16 // frame length in bytes, without FCS
	Head uint16 // headroom: bytes in front of Off that belong to this frame
	Tail uint16 // tailroom: bytes after Off+Len that belong to this frame
	_    uint16

	// Metadata: the second 16 bytes, so that an I/O layer clears it with one store (ClearMeta).
	Flags Flags
	TPID  uint16 // out-of-band VLAN TPID (valid with FlagVLAN)
	TCI   uint16 // out-of-band VLAN TCI (valid with FlagVLAN)
	Port  uint16 // ingress: the port (or, after demux, the logical interface) the frame came from
	Out   uint16 // egress: the interface a stage chose
	L3    uint16 // offset of the network header from Off, set by the stage that parsed L2 (0: not parsed)
	Meta  uint32 // stage scratch: next-hop index, flow hash, timestamp low bits
}

// ClearMeta zeroes the metadata (Flags through Meta), leaving where the bytes are.
func (f *Frame) ClearMeta() {
	*(*[2]uint64)(unsafe.Pointer(&f.Flags)) = [2]uint64{}
}

// The metadata block must be exactly the second half of the 32-byte descriptor for ClearMeta.
var _ [16]struct{} = [unsafe.Offsetof(Frame{}.Flags)]struct{}{}

// vlan's and dsa's fast paths move a frame's start (Len and Head at once) with one 32-bit add on
// little-endian machines: Len must be right before Head, at a 4-byte aligned offset.
var (
	_ [unsafe.Offsetof(Frame{}.Len) + 2]struct{} = [unsafe.Offsetof(Frame{}.Head)]struct{}{}
	_ [0]struct{}                                = [unsafe.Offsetof(Frame{}.Len) % 4]struct{}{}
)
var _ [32]struct{} = [unsafe.Sizeof(Frame{})]struct{}{}

// Data returns the frame's bytes within arena. The slice's capacity ends at the frame's end.
func (f *Frame) Data(arena []byte) []byte {
	end := f.Off + uint32(f.Len)
	return arena[f.Off:end:end]
}

// Room returns the frame's bytes with capacity extending over its tailroom.
func (f *Frame) Room(arena []byte) []byte {
	end := f.Off + uint32(f.Len)
	return arena[f.Off : end : end+uint32(f.Tail)]
}

// PushHead grows the frame by n bytes at the front, taking them from the headroom. The new
// bytes are not initialised. It reports false, changing nothing, if the headroom is too small.
func (f *Frame) PushHead(n int) bool {
	if n < 0 || n > int(f.Head) || int(f.Len)+n > 0xffff {
		return false
	}
	f.Off -= uint32(n)
	f.Head -= uint16(n)
	f.Len += uint16(n)
	return true
}

// PullHead removes n bytes from the front of the frame, returning them to the headroom. It
// reports false, changing nothing, if the frame is shorter than n.
func (f *Frame) PullHead(n int) bool {
	if n < 0 || n > int(f.Len) || int(f.Head)+n > 0xffff {
		return false
	}
	f.Off += uint32(n)
	f.Head += uint16(n)
	f.Len -= uint16(n)
	return true
}

// Resize sets the frame's length to n, moving the boundary with the tailroom. Bytes gained are
// not initialised. It reports false, changing nothing, if n does not fit.
func (f *Frame) Resize(n int) bool {
	total := int(f.Len) + int(f.Tail)
	if n < 0 || n > total || n > 0xffff {
		return false
	}
	f.Len = uint16(n)
	f.Tail = uint16(total - n)
	return true
}

// Pad grows the frame to at least n bytes, zeroing the bytes it adds (the Ethernet minimum is
// MinEthernetLen). It returns ErrNoTailroom if the tailroom is too small.
func (f *Frame) Pad(arena []byte, n int) error {
	if int(f.Len) >= n {
		return nil
	}
	old := int(f.Len)
	if !f.Resize(n) {
		return ErrNoTailroom
	}
	clear(arena[f.Off+uint32(old) : f.Off+uint32(n)])
	return nil
}

// Owner takes frames back. Release is called with frames the caller owns and will not touch again;
// it is called once per batch, never per frame. Implementations document their concurrency.
type Owner interface {
	Release(frames []Frame)
}
