package vlan

import (
	"unsafe"

	"github.com/wirespeed/wirespeed/frame"
)

// The package's unsafe memory accesses are the helpers in this file, each small enough to inline:
// word32 (two adjacent uint16 fields as one 4-byte word), putOuter and putInner (a Header's tag as
// one 4-byte store), frameAt and counterAt (a descriptor or a counter block by offset, without a
// bounds check). The constant fastMem (endian_le.go, endian_be.go) chooses: callers use word32,
// putOuter and putInner only where it holds and have a field-by-field path for the other machines;
// frameAt and counterAt index their slice there. So a build with -tags vlan_portable runs no unsafe
// access at all; TestPortable runs the package's tests built that way and compares a digest of
// what both builds compute (TestDigest).
//
// Every call shares its line with an instruction of the caller: a load or store through the
// pointer returned, or the computation of an argument. The compiler marks each inlined call with
// an instruction of the call's line and emits a NOP for the mark where the line has none.

// The strides of the descriptors and the counters.
const (
	frameSize    = unsafe.Sizeof(frame.Frame{})
	countersSize = unsafe.Sizeof(Counters{})
)

// The layouts the word accesses rely on. A Tag is TPID then TCI, so a little-endian word at a Tag
// holds the TPID in its low half; a Header's tags are 4-byte aligned (strict-alignment machines).
// Frame.Len is right before Frame.Head, Frame.Out right before Frame.L3 and Rewrite.iface right
// before Rewrite.l3, each pair 4-byte aligned.
var (
	_ [4]struct{}                                      = [unsafe.Sizeof(Tag{})]struct{}{}
	_ [2]struct{}                                      = [unsafe.Offsetof(Tag{}.TCI)]struct{}{}
	_ [4]struct{}                                      = [unsafe.Alignof(Header{})]struct{}{}
	_ [0<<4 | 4]struct{}                               = [unsafe.Offsetof(Header{}.Outer)<<4 | unsafe.Offsetof(Header{}.Inner)]struct{}{}
	_ [unsafe.Offsetof(frame.Frame{}.Len) + 2]struct{} = [unsafe.Offsetof(frame.Frame{}.Head)]struct{}{}
	_ [0]struct{}                                      = [unsafe.Offsetof(frame.Frame{}.Len) % 4]struct{}{}
	_ [unsafe.Offsetof(frame.Frame{}.Out) + 2]struct{} = [unsafe.Offsetof(frame.Frame{}.L3)]struct{}{}
	_ [0]struct{}                                      = [unsafe.Offsetof(frame.Frame{}.Out) % 4]struct{}{}
	_ [unsafe.Offsetof(Rewrite{}.iface) + 2]struct{}   = [unsafe.Offsetof(Rewrite{}.l3)]struct{}{}
	_ [0]struct{}                                      = [unsafe.Offsetof(Rewrite{}.iface) % 4]struct{}{}
	_ [4]struct{}                                      = [unsafe.Alignof(Rewrite{})]struct{}{}
)

// word32 returns the 4-byte word made of the uint16 at p and the uint16 after it (one of the pairs
// above, 4-byte aligned), *p its low half on a little-endian machine. Only where fastMem.
func word32(p *uint16) *uint32 { return (*uint32)(unsafe.Pointer(p)) }

// putOuter sets h.Outer to w, the tag as a word with the TPID in its low half and the TCI in its
// high half, with one 4-byte store. Only where fastMem.
func putOuter(h *Header, w uint32) { *(*uint32)(unsafe.Pointer(&h.Outer)) = w }

// putInner is putOuter for h.Inner.
func putInner(h *Header, w uint32) { *(*uint32)(unsafe.Pointer(&h.Inner)) = w }

// frameAt returns &fr[p/frameSize] for a byte offset p, a multiple of frameSize below
// len(fr)*frameSize, which the caller's loop guarantees: one add, where the index would cost a shift
// and a bounds check.
func frameAt(fr []frame.Frame, p uintptr) *frame.Frame {
	if fastMem {
		return (*frame.Frame)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(fr)), p))
	}
	return &fr[p/frameSize]
}

// counterAt returns &cs[i] for i < len(cs), which the caller guarantees, without a bounds check.
func counterAt(cs []Counters, i uint16) *Counters {
	if fastMem {
		return (*Counters)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(cs)), uintptr(i)*countersSize))
	}
	return &cs[i]
}
