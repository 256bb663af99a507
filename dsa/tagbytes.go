package dsa

import (
	"encoding/binary"

	"github.com/wirespeed/wirespeed/frame"
)

// The byte moves and reads every format uses: the general per-frame code opens room for a tag
// (pushSA, pushPrefix, appendTail, after room checked it) and takes one away (stripSA, pullFront,
// trimTail).

// minFrame is the shortest frame a tagger accepts once its tag is gone: an Ethernet header.
const minFrame = frame.EtherLen

func be16(p []byte) uint16 { return binary.BigEndian.Uint16(p) }
func be32(p []byte) uint32 { return binary.BigEndian.Uint32(p) }

// bswap16 and bswap32 turn a big-endian tag into the value whose little-endian store writes it.
func bswap16(v uint16) uint16 { return v>>8 | v<<8 }
func bswap32(w uint32) uint32 { return w>>24 | w>>8&0xff00 | w<<8&0xff0000 | w<<24 }

// room checks, before anything is written, that f can take head bytes in front and, after padding
// to padTo, tail bytes behind.
func room(f *frame.Frame, head, padTo, tail int) Reason {
	if head > int(f.Head) {
		return ReasonNoHeadroom
	}
	l := max(int(f.Len), padTo)
	if l-int(f.Len)+tail > int(f.Tail) || l+head+tail > 0xffff {
		return ReasonNoTailroom
	}
	return ReasonNone
}

// pushSA opens n bytes between the source MAC and the EtherType; the gap is p[12:12+n].
// The caller checked the headroom and that the frame holds at least the 12 MAC bytes.
// The copy has a constant length (12), so the compiler emits word moves, not a memmove call; in
// this form pushSA stays small enough to inline into each encoder.
func pushSA(mem []byte, f *frame.Frame, n int) []byte {
	f.Off -= uint32(n)
	f.Head -= uint16(n)
	f.Len += uint16(n)
	p := f.Data(mem)
	copy(p[:12], p[n:n+12])
	return p
}

// pushPrefix opens n bytes in front of the frame; the gap is p[:n].
func pushPrefix(mem []byte, f *frame.Frame, n int) []byte {
	f.Off -= uint32(n)
	f.Head -= uint16(n)
	f.Len += uint16(n)
	return f.Data(mem)
}

// appendTail pads f to padTo (zeros) and appends n bytes, returned as the tail slice.
func appendTail(mem []byte, f *frame.Frame, padTo, n int) []byte {
	if int(f.Len) < padTo {
		_ = f.Pad(mem, padTo) // room was checked
	}
	old := int(f.Len)
	f.Len += uint16(n)
	f.Tail -= uint16(n)
	return f.Data(mem)[old:]
}

// linkLocal reports a destination 01:80:c2:00:00:0X (is_link_local_ether_addr).
func linkLocal(p []byte) bool {
	return p[0] == 0x01 && p[1] == 0x80 && p[2] == 0xc2 && p[3] == 0 && p[4] == 0 && p[5]&0xf0 == 0
}

// linkLocalLE reports a destination 01:80:c2:00:00:0X from the frame's first 8 bytes.
func linkLocalLE(w uint64) bool { return w&0xf0ffffffffff == 0xc28001 }

// stripSA removes the n tag bytes that follow the source MAC of f, whose bytes are p: the 12 MAC
// bytes move n bytes toward the end and the frame starts n bytes later. The caller checked that p
// holds 12+n bytes and that the headroom can take n more.
func stripSA(p []byte, f *frame.Frame, n int) Reason {
	if headFull(f, n) {
		return ReasonTruncated
	}
	_ = p[n+11]
	lo := binary.LittleEndian.Uint64(p[0:8])
	hi := binary.LittleEndian.Uint32(p[8:12])
	binary.LittleEndian.PutUint64(p[n:n+8], lo)
	binary.LittleEndian.PutUint32(p[n+8:n+12], hi)
	f.Off += uint32(n)
	f.Head += uint16(n)
	f.Len -= uint16(n)
	return ReasonNone
}

// pullFront removes n bytes (a tag in front of the DA) from the front of f.
func pullFront(f *frame.Frame, n int) Reason {
	if headFull(f, n) {
		return ReasonTruncated
	}
	f.Off += uint32(n)
	f.Head += uint16(n)
	f.Len -= uint16(n)
	return ReasonNone
}

// trimTail removes n bytes (a tail tag) from the end of f.
func trimTail(f *frame.Frame, n int) Reason {
	if tailFull(f, n) {
		return ReasonTruncated
	}
	f.Len -= uint16(n)
	f.Tail += uint16(n)
	return ReasonNone
}

// headFull reports that f's headroom cannot grow by n bytes (a descriptor limit, never reached by
// the pools in this module).
func headFull(f *frame.Frame, n int) bool { return int(f.Head)+n > 0xffff }

// tailFull is headFull for the tailroom.
func tailFull(f *frame.Frame, n int) bool { return int(f.Tail)+n > 0xffff }
