package vlan

import (
	"math/bits"
	"runtime"
	"unsafe"

	"github.com/wirespeed/wirespeed/frame"
)

// The x4 loops below are the fast loops of batch.go (parseRun, pushRun, popRun, setTCIRun) with
// four frames per iteration: the same tests and the same stores, frame by frame in order, so
// that the loop's own increment, compare and jump are paid once per four frames. Each one covers
// the first len(fr) &^ 3 frames and returns the index of the first frame that needs the general
// path, or len(fr) &^ 3 (pop and SetTCI also return how many untagged frames they passed). The drivers in
// batch.go call one of them for the whole batch; only when it stops early does the out-of-line
// rest run (parseRest, pushRest, popMixed and popRest, setTCIRest): the general path for the frame
// it stopped at, then the x4 loop again on the frames after it (push: the single-frame loop), and
// the single-frame loop for the last len(fr) % 4 frames.
//
// Differences from the single-frame loops, none of which changes a result:
//   - the descriptors (and Parse's headers) are walked by a pointer that moves 128 bytes per
//     iteration, so that a field compared with a constant is one instruction (a compare with a
//     memory operand; with base+index addressing the compiler splits it into a load and a
//     compare);
//   - push, pop and SetTCI test the out-of-band flag once for four frames (oobTag4): when any of
//     the four has one, pushRun4, popRun4 and setTCIRun4 run that group one frame at a time in a
//     loop of their own, an out-of-band frame included (done as the per-frame function's general
//     path does it: SetTCI and Pop change only the descriptor; Push puts the tag back into the
//     bytes and pushes, both at once), and go on with the next group; they stop only at a frame
//     that needs the general path for another reason, as the single-frame loops do. popTagRun4
//     (PopBatch's first loop) stops at the first of the four, and popRun4 goes on from there.
//     The group is handled inline: a helper called from the x4 loop makes the loop spill in its
//     prologue.
//   - Parse, pop and SetTCI test the outer TPID that the batch's first frame carries first
//     (tpidOrder): a QinQ batch compares with 0x88a8 once, not twice;
//   - Parse writes a Header with two stores (see Header's layout; three for QinQ) and lays its
//     one-tag case out last; pop and SetTCI count untagged frames in the then-branch and change
//     a tagged frame in the else-branch: the common case of each (a one-tag frame, a tagged
//     frame) falls through to the next frame's block, with no jump and no count;
//   - the loops end on a pointer compare with the last group rather than a group counter.
//
// A taken branch costs about a cycle more than a fall-through, so ParseBatch and PopBatch first run a loop specialised to the shape of the batch's
// first frame (parseNoneRun4, parseOneRun4, parseTwoRun4; popTagRun4), in which a frame of that
// shape runs through its block with no taken branch and any other frame stops the loop; after
// that first stop the batch goes on with the general loops above (parseRun4, popRun4), so a
// mixed batch pays one stop, not one per frame.
//
// The four blocks of an iteration are one text: they differ only in their `const k = N *
// frameSize` line (TestUnrolledBlocksIdentical checks this on the source). Written out by hand
// rather than as an inlined function: an inlined call leaves a NOP at its call site, and the
// per-frame code does not fit Go's inlining budget anyway.
//
// Parse writes a Header as one 8-byte store (Outer and Inner; QinQ: two 4-byte stores) and one
// 4-byte store (EtherType | N<<16 | Len<<24, see Header's layout), which is only right on a
// little-endian machine, and stores 8 bytes at a 4-byte aligned address (a Header is 12 bytes):
// ParseBatch calls parseRun4 only where parse4 holds (little-endian machines that allow unaligned
// stores; -tags vlan_portable and the other machines run the single-frame loop). oobTag4 reads
// the machine's own layout (flagWord) and is right on any machine.

// The Header layout parseRun4's stores rely on (see Header): 12 bytes, EtherType, N, Len at 8, 10, 11,
// and 4-byte alignment (Parse's per-frame fast path stores Outer and Inner as 4-byte words on every
// little-endian machine, strict-alignment ones included).
var (
	_ [12]struct{}                = [headerSize]struct{}{}
	_ [4]struct{}                 = [unsafe.Alignof(Header{})]struct{}{}
	_ [8 + 10<<4 + 11<<8]struct{} = [unsafe.Offsetof(Header{}.EtherType) + unsafe.Offsetof(Header{}.N)<<4 +
		unsafe.Offsetof(Header{}.Len)<<8]struct{}{}
)

// parse4: parseRun4 may run here (see above).
const parse4 = littleEndian && (runtime.GOARCH == "amd64" || runtime.GOARCH == "386" ||
	runtime.GOARCH == "arm64" || runtime.GOARCH == "ppc64le")

// tpidOrder returns the standard TPIDs (as a little-endian load sees them) in the order a frame
// whose tag word is t would match first: 0x88a8 first when t is 0x88a8. A loop tests the TPID
// the batch's first frame carries first; the result of the test is the same either way.
func tpidOrder(t uint16) (uint16, uint16) {
	if t == wireAD {
		return wireAD, wireQ
	}
	return wireQ, wireAD
}

// parseRun4 is parseRun, four frames per iteration; see above.
//
//go:noinline
func parseRun4(mem []byte, fr []frame.Frame, hs []Header) int {
	n := len(fr) &^ 3
	hs = hs[:len(fr)]
	if n == 0 || len(mem) < EthLen+HeaderLen {
		return 0
	}
	lim := int64(len(mem)) - (EthLen + HeaderLen)
	// The outer TPIDs in the order the first frame (when its header is inside mem) matches
	// them: a QinQ batch tests 0x88a8 first. (The inner tag of a QinQ frame is 0x8100 as a rule;
	// one more pair of registers would cost more than it saves.)
	o1, o2 := uint16(wireQ), uint16(wireAD)
	if o := int64(fr[0].Off); o <= lim {
		d := mem[o : o+EthLen+HeaderLen : o+EthLen+HeaderLen]
		o1, o2 = tpidOrder(uint16(d[12]) | uint16(d[13])<<8)
	}
	// fp and hp walk fr and hs four elements at a time (a plain pointer rather than base+index, so
	// that a descriptor field compared with a constant is one instruction, not a load and a
	// compare); they stop at the last group, never past the end.
	fb := unsafe.Pointer(unsafe.SliceData(fr))
	fp, hp := fb, unsafe.Pointer(unsafe.SliceData(hs))
	last := unsafe.Add(fb, uintptr(n-4)*frameSize) // the last group's first descriptor
	for {
		{
			const k = 0 * frameSize
			f := (*frame.Frame)(unsafe.Add(fp, k))
			h := (*Header)(unsafe.Add(hp, k/frameSize*headerSize))
			o := int64(f.Off)
			if f.Len < EthLen+HeaderLen || o > lim {
				return int((uintptr(fp) - uintptr(fb) + k) / frameSize)
			}
			d := mem[o : o+EthLen+HeaderLen : o+EthLen+HeaderLen]
			x := le32(d[12], d[13], d[14], d[15])
			hw := (*[3]uint32)(unsafe.Pointer(h)) // Outer, Inner, EtherType|N<<16|Len<<24
			if t := uint16(x); t != o1 && t != o2 {
				*(*uint64)(unsafe.Pointer(h)) = 0
				hw[2] = bits.ReverseBytes32(x)>>16 | frame.EtherLen<<24
			} else if x2 := le32(d[16], d[17], d[18], d[19]); uint16(x2) == wireQ || uint16(x2) == wireAD {
				hw[0], hw[1] = wireTagWord(x), wireTagWord(x2)
				hw[2] = uint32(d[20])<<8 | uint32(d[21]) | 2<<16 | (EthLen+HeaderLen)<<24
			} else {
				*(*uint64)(unsafe.Pointer(h)) = uint64(wireTagWord(x))
				hw[2] = bits.ReverseBytes32(x2)>>16 | 1<<16 | EthLen<<24
			}
		}
		{
			const k = 1 * frameSize
			f := (*frame.Frame)(unsafe.Add(fp, k))
			h := (*Header)(unsafe.Add(hp, k/frameSize*headerSize))
			o := int64(f.Off)
			if f.Len < EthLen+HeaderLen || o > lim {
				return int((uintptr(fp) - uintptr(fb) + k) / frameSize)
			}
			d := mem[o : o+EthLen+HeaderLen : o+EthLen+HeaderLen]
			x := le32(d[12], d[13], d[14], d[15])
			hw := (*[3]uint32)(unsafe.Pointer(h)) // Outer, Inner, EtherType|N<<16|Len<<24
			if t := uint16(x); t != o1 && t != o2 {
				*(*uint64)(unsafe.Pointer(h)) = 0
				hw[2] = bits.ReverseBytes32(x)>>16 | frame.EtherLen<<24
			} else if x2 := le32(d[16], d[17], d[18], d[19]); uint16(x2) == wireQ || uint16(x2) == wireAD {
				hw[0], hw[1] = wireTagWord(x), wireTagWord(x2)
				hw[2] = uint32(d[20])<<8 | uint32(d[21]) | 2<<16 | (EthLen+HeaderLen)<<24
			} else {
				*(*uint64)(unsafe.Pointer(h)) = uint64(wireTagWord(x))
				hw[2] = bits.ReverseBytes32(x2)>>16 | 1<<16 | EthLen<<24
			}
		}
		{
			const k = 2 * frameSize
			f := (*frame.Frame)(unsafe.Add(fp, k))
			h := (*Header)(unsafe.Add(hp, k/frameSize*headerSize))
			o := int64(f.Off)
			if f.Len < EthLen+HeaderLen || o > lim {
				return int((uintptr(fp) - uintptr(fb) + k) / frameSize)
			}
			d := mem[o : o+EthLen+HeaderLen : o+EthLen+HeaderLen]
			x := le32(d[12], d[13], d[14], d[15])
			hw := (*[3]uint32)(unsafe.Pointer(h)) // Outer, Inner, EtherType|N<<16|Len<<24
			if t := uint16(x); t != o1 && t != o2 {
				*(*uint64)(unsafe.Pointer(h)) = 0
				hw[2] = bits.ReverseBytes32(x)>>16 | frame.EtherLen<<24
			} else if x2 := le32(d[16], d[17], d[18], d[19]); uint16(x2) == wireQ || uint16(x2) == wireAD {
				hw[0], hw[1] = wireTagWord(x), wireTagWord(x2)
				hw[2] = uint32(d[20])<<8 | uint32(d[21]) | 2<<16 | (EthLen+HeaderLen)<<24
			} else {
				*(*uint64)(unsafe.Pointer(h)) = uint64(wireTagWord(x))
				hw[2] = bits.ReverseBytes32(x2)>>16 | 1<<16 | EthLen<<24
			}
		}
		{
			const k = 3 * frameSize
			f := (*frame.Frame)(unsafe.Add(fp, k))
			h := (*Header)(unsafe.Add(hp, k/frameSize*headerSize))
			o := int64(f.Off)
			if f.Len < EthLen+HeaderLen || o > lim {
				return int((uintptr(fp) - uintptr(fb) + k) / frameSize)
			}
			d := mem[o : o+EthLen+HeaderLen : o+EthLen+HeaderLen]
			x := le32(d[12], d[13], d[14], d[15])
			hw := (*[3]uint32)(unsafe.Pointer(h)) // Outer, Inner, EtherType|N<<16|Len<<24
			if t := uint16(x); t != o1 && t != o2 {
				*(*uint64)(unsafe.Pointer(h)) = 0
				hw[2] = bits.ReverseBytes32(x)>>16 | frame.EtherLen<<24
			} else if x2 := le32(d[16], d[17], d[18], d[19]); uint16(x2) == wireQ || uint16(x2) == wireAD {
				hw[0], hw[1] = wireTagWord(x), wireTagWord(x2)
				hw[2] = uint32(d[20])<<8 | uint32(d[21]) | 2<<16 | (EthLen+HeaderLen)<<24
			} else {
				*(*uint64)(unsafe.Pointer(h)) = uint64(wireTagWord(x))
				hw[2] = bits.ReverseBytes32(x2)>>16 | 1<<16 | EthLen<<24
			}
		}
		if fp == last {
			return int((uintptr(fp)-uintptr(fb))/frameSize) + 4 // n, recomputed: one register fewer in the loop
		}
		fp, hp = unsafe.Add(fp, 4*frameSize), unsafe.Add(hp, 4*headerSize)
	}
}

// parseLead4 runs the first four-frame loop of ParseBatch, chosen by the first frame's tags:
// parseNoneRun4 for an untagged frame, parseOneRun4 for an 802.1Q one, parseTwoRun4 for a QinQ
// one (standard TPIDs); parseRun4 when the first frame needs the general path.
// It returns the index where the loop stopped.
func parseLead4(mem []byte, fr []frame.Frame, hs []Header) int {
	if len(fr) >= 4 && len(mem) >= EthLen+HeaderLen {
		if o := int64(fr[0].Off); o <= int64(len(mem))-(EthLen+HeaderLen) {
			d := mem[o : o+EthLen+HeaderLen : o+EthLen+HeaderLen]
			t, ti := uint16(d[12])|uint16(d[13])<<8, uint16(d[16])|uint16(d[17])<<8
			if t != wireQ && t != wireAD {
				return parseNoneRun4(mem, fr, hs, 0, 0)
			}
			if ti != wireQ && ti != wireAD {
				return parseOneRun4(mem, fr, hs, t, 0)
			}
			return parseTwoRun4(mem, fr, hs, t, ti)
		}
	}
	return parseRun4(mem, fr, hs)
}

// parseNoneRun4 is parseOneRun4 for a batch of untagged frames (t and ti unused): it parses
// frames without a standard TPID and stops at a tagged one.
//
//go:noinline
func parseNoneRun4(mem []byte, fr []frame.Frame, hs []Header, t, ti uint16) int {
	n := len(fr) &^ 3
	hs = hs[:len(fr)]
	if n == 0 || len(mem) < EthLen+HeaderLen {
		return 0
	}
	lim := int64(len(mem)) - (EthLen + HeaderLen)
	fb := unsafe.Pointer(unsafe.SliceData(fr))
	fp, hp := fb, unsafe.Pointer(unsafe.SliceData(hs))
	last := unsafe.Add(fb, uintptr(n-4)*frameSize) // the last group's first descriptor
	for {
		{
			const k = 0 * frameSize
			f := (*frame.Frame)(unsafe.Add(fp, k))
			h := (*Header)(unsafe.Add(hp, k/frameSize*headerSize))
			o := int64(f.Off)
			if f.Len < EthLen+HeaderLen || o > lim {
				return int((uintptr(fp) - uintptr(fb) + k) / frameSize)
			}
			d := mem[o : o+EthLen+HeaderLen : o+EthLen+HeaderLen]
			x := le32(d[12], d[13], d[14], d[15])
			if uint16(x) == wireQ || uint16(x) == wireAD {
				return int((uintptr(fp) - uintptr(fb) + k) / frameSize)
			}
			hw := (*[3]uint32)(unsafe.Pointer(h)) // Outer, Inner, EtherType|N<<16|Len<<24
			*(*uint64)(unsafe.Pointer(h)) = 0
			hw[2] = bits.ReverseBytes32(x)>>16 | frame.EtherLen<<24
		}
		{
			const k = 1 * frameSize
			f := (*frame.Frame)(unsafe.Add(fp, k))
			h := (*Header)(unsafe.Add(hp, k/frameSize*headerSize))
			o := int64(f.Off)
			if f.Len < EthLen+HeaderLen || o > lim {
				return int((uintptr(fp) - uintptr(fb) + k) / frameSize)
			}
			d := mem[o : o+EthLen+HeaderLen : o+EthLen+HeaderLen]
			x := le32(d[12], d[13], d[14], d[15])
			if uint16(x) == wireQ || uint16(x) == wireAD {
				return int((uintptr(fp) - uintptr(fb) + k) / frameSize)
			}
			hw := (*[3]uint32)(unsafe.Pointer(h)) // Outer, Inner, EtherType|N<<16|Len<<24
			*(*uint64)(unsafe.Pointer(h)) = 0
			hw[2] = bits.ReverseBytes32(x)>>16 | frame.EtherLen<<24
		}
		{
			const k = 2 * frameSize
			f := (*frame.Frame)(unsafe.Add(fp, k))
			h := (*Header)(unsafe.Add(hp, k/frameSize*headerSize))
			o := int64(f.Off)
			if f.Len < EthLen+HeaderLen || o > lim {
				return int((uintptr(fp) - uintptr(fb) + k) / frameSize)
			}
			d := mem[o : o+EthLen+HeaderLen : o+EthLen+HeaderLen]
			x := le32(d[12], d[13], d[14], d[15])
			if uint16(x) == wireQ || uint16(x) == wireAD {
				return int((uintptr(fp) - uintptr(fb) + k) / frameSize)
			}
			hw := (*[3]uint32)(unsafe.Pointer(h)) // Outer, Inner, EtherType|N<<16|Len<<24
			*(*uint64)(unsafe.Pointer(h)) = 0
			hw[2] = bits.ReverseBytes32(x)>>16 | frame.EtherLen<<24
		}
		{
			const k = 3 * frameSize
			f := (*frame.Frame)(unsafe.Add(fp, k))
			h := (*Header)(unsafe.Add(hp, k/frameSize*headerSize))
			o := int64(f.Off)
			if f.Len < EthLen+HeaderLen || o > lim {
				return int((uintptr(fp) - uintptr(fb) + k) / frameSize)
			}
			d := mem[o : o+EthLen+HeaderLen : o+EthLen+HeaderLen]
			x := le32(d[12], d[13], d[14], d[15])
			if uint16(x) == wireQ || uint16(x) == wireAD {
				return int((uintptr(fp) - uintptr(fb) + k) / frameSize)
			}
			hw := (*[3]uint32)(unsafe.Pointer(h)) // Outer, Inner, EtherType|N<<16|Len<<24
			*(*uint64)(unsafe.Pointer(h)) = 0
			hw[2] = bits.ReverseBytes32(x)>>16 | frame.EtherLen<<24
		}
		if fp == last {
			return int((uintptr(fp)-uintptr(fb))/frameSize) + 4 // n, recomputed: one register fewer in the loop
		}
		fp, hp = unsafe.Add(fp, 4*frameSize), unsafe.Add(hp, 4*headerSize)
	}
}

// parseOneRun4 is parseRun4 for a batch of 802.1Q frames (the first frame has one tag, its TPID
// t; ti is unused): it parses frames with one tag whose TPID is t and stops at the first frame
// that needs the general path or does not have that shape (untagged, two tags, the other TPID),
// returning its index (len(fr) &^ 3 when none). It exists for its layout: such a frame runs
// through its block with no taken branch (parseRun4 takes one or two per frame to reach and leave
// its cases), which costs more time here than instructions do. ParseBatch runs it (or
// parseTwoRun4) first when the first frame is tagged; after the first frame it stops at, the
// batch goes on with parseRun4 (so a mixed batch pays one stop).
//
//go:noinline
func parseOneRun4(mem []byte, fr []frame.Frame, hs []Header, t, ti uint16) int {
	n := len(fr) &^ 3
	hs = hs[:len(fr)]
	if n == 0 || len(mem) < EthLen+HeaderLen {
		return 0
	}
	lim := int64(len(mem)) - (EthLen + HeaderLen)
	fb := unsafe.Pointer(unsafe.SliceData(fr))
	fp, hp := fb, unsafe.Pointer(unsafe.SliceData(hs))
	last := unsafe.Add(fb, uintptr(n-4)*frameSize) // the last group's first descriptor
	for {
		{
			const k = 0 * frameSize
			f := (*frame.Frame)(unsafe.Add(fp, k))
			h := (*Header)(unsafe.Add(hp, k/frameSize*headerSize))
			o := int64(f.Off)
			if f.Len < EthLen+HeaderLen || o > lim {
				return int((uintptr(fp) - uintptr(fb) + k) / frameSize)
			}
			d := mem[o : o+EthLen+HeaderLen : o+EthLen+HeaderLen]
			x, x2 := le32(d[12], d[13], d[14], d[15]), le32(d[16], d[17], d[18], d[19])
			if uint16(x) != t || uint16(x2) == wireQ || uint16(x2) == wireAD {
				return int((uintptr(fp) - uintptr(fb) + k) / frameSize)
			}
			hw := (*[3]uint32)(unsafe.Pointer(h)) // Outer, Inner, EtherType|N<<16|Len<<24
			*(*uint64)(unsafe.Pointer(h)) = uint64(wireTagWord(x))
			hw[2] = bits.ReverseBytes32(x2)>>16 | 1<<16 | EthLen<<24
		}
		{
			const k = 1 * frameSize
			f := (*frame.Frame)(unsafe.Add(fp, k))
			h := (*Header)(unsafe.Add(hp, k/frameSize*headerSize))
			o := int64(f.Off)
			if f.Len < EthLen+HeaderLen || o > lim {
				return int((uintptr(fp) - uintptr(fb) + k) / frameSize)
			}
			d := mem[o : o+EthLen+HeaderLen : o+EthLen+HeaderLen]
			x, x2 := le32(d[12], d[13], d[14], d[15]), le32(d[16], d[17], d[18], d[19])
			if uint16(x) != t || uint16(x2) == wireQ || uint16(x2) == wireAD {
				return int((uintptr(fp) - uintptr(fb) + k) / frameSize)
			}
			hw := (*[3]uint32)(unsafe.Pointer(h)) // Outer, Inner, EtherType|N<<16|Len<<24
			*(*uint64)(unsafe.Pointer(h)) = uint64(wireTagWord(x))
			hw[2] = bits.ReverseBytes32(x2)>>16 | 1<<16 | EthLen<<24
		}
		{
			const k = 2 * frameSize
			f := (*frame.Frame)(unsafe.Add(fp, k))
			h := (*Header)(unsafe.Add(hp, k/frameSize*headerSize))
			o := int64(f.Off)
			if f.Len < EthLen+HeaderLen || o > lim {
				return int((uintptr(fp) - uintptr(fb) + k) / frameSize)
			}
			d := mem[o : o+EthLen+HeaderLen : o+EthLen+HeaderLen]
			x, x2 := le32(d[12], d[13], d[14], d[15]), le32(d[16], d[17], d[18], d[19])
			if uint16(x) != t || uint16(x2) == wireQ || uint16(x2) == wireAD {
				return int((uintptr(fp) - uintptr(fb) + k) / frameSize)
			}
			hw := (*[3]uint32)(unsafe.Pointer(h)) // Outer, Inner, EtherType|N<<16|Len<<24
			*(*uint64)(unsafe.Pointer(h)) = uint64(wireTagWord(x))
			hw[2] = bits.ReverseBytes32(x2)>>16 | 1<<16 | EthLen<<24
		}
		{
			const k = 3 * frameSize
			f := (*frame.Frame)(unsafe.Add(fp, k))
			h := (*Header)(unsafe.Add(hp, k/frameSize*headerSize))
			o := int64(f.Off)
			if f.Len < EthLen+HeaderLen || o > lim {
				return int((uintptr(fp) - uintptr(fb) + k) / frameSize)
			}
			d := mem[o : o+EthLen+HeaderLen : o+EthLen+HeaderLen]
			x, x2 := le32(d[12], d[13], d[14], d[15]), le32(d[16], d[17], d[18], d[19])
			if uint16(x) != t || uint16(x2) == wireQ || uint16(x2) == wireAD {
				return int((uintptr(fp) - uintptr(fb) + k) / frameSize)
			}
			hw := (*[3]uint32)(unsafe.Pointer(h)) // Outer, Inner, EtherType|N<<16|Len<<24
			*(*uint64)(unsafe.Pointer(h)) = uint64(wireTagWord(x))
			hw[2] = bits.ReverseBytes32(x2)>>16 | 1<<16 | EthLen<<24
		}
		if fp == last {
			return int((uintptr(fp)-uintptr(fb))/frameSize) + 4 // n, recomputed: one register fewer in the loop
		}
		fp, hp = unsafe.Add(fp, 4*frameSize), unsafe.Add(hp, 4*headerSize)
	}
}

// parseTwoRun4 is parseOneRun4 for a batch of QinQ frames: it parses frames whose outer TPID is
// t and inner TPID ti (the first frame's) and stops at any other.
//
//go:noinline
func parseTwoRun4(mem []byte, fr []frame.Frame, hs []Header, t, ti uint16) int {
	n := len(fr) &^ 3
	hs = hs[:len(fr)]
	if n == 0 || len(mem) < EthLen+HeaderLen {
		return 0
	}
	lim := int64(len(mem)) - (EthLen + HeaderLen)
	fb := unsafe.Pointer(unsafe.SliceData(fr))
	fp, hp := fb, unsafe.Pointer(unsafe.SliceData(hs))
	last := unsafe.Add(fb, uintptr(n-4)*frameSize) // the last group's first descriptor
	for {
		{
			const k = 0 * frameSize
			f := (*frame.Frame)(unsafe.Add(fp, k))
			h := (*Header)(unsafe.Add(hp, k/frameSize*headerSize))
			o := int64(f.Off)
			if f.Len < EthLen+HeaderLen || o > lim {
				return int((uintptr(fp) - uintptr(fb) + k) / frameSize)
			}
			d := mem[o : o+EthLen+HeaderLen : o+EthLen+HeaderLen]
			x, x2 := le32(d[12], d[13], d[14], d[15]), le32(d[16], d[17], d[18], d[19])
			if uint16(x) != t || uint16(x2) != ti {
				return int((uintptr(fp) - uintptr(fb) + k) / frameSize)
			}
			hw := (*[3]uint32)(unsafe.Pointer(h)) // Outer, Inner, EtherType|N<<16|Len<<24
			hw[0], hw[1] = wireTagWord(x), wireTagWord(x2)
			hw[2] = uint32(d[20])<<8 | uint32(d[21]) | 2<<16 | (EthLen+HeaderLen)<<24
		}
		{
			const k = 1 * frameSize
			f := (*frame.Frame)(unsafe.Add(fp, k))
			h := (*Header)(unsafe.Add(hp, k/frameSize*headerSize))
			o := int64(f.Off)
			if f.Len < EthLen+HeaderLen || o > lim {
				return int((uintptr(fp) - uintptr(fb) + k) / frameSize)
			}
			d := mem[o : o+EthLen+HeaderLen : o+EthLen+HeaderLen]
			x, x2 := le32(d[12], d[13], d[14], d[15]), le32(d[16], d[17], d[18], d[19])
			if uint16(x) != t || uint16(x2) != ti {
				return int((uintptr(fp) - uintptr(fb) + k) / frameSize)
			}
			hw := (*[3]uint32)(unsafe.Pointer(h)) // Outer, Inner, EtherType|N<<16|Len<<24
			hw[0], hw[1] = wireTagWord(x), wireTagWord(x2)
			hw[2] = uint32(d[20])<<8 | uint32(d[21]) | 2<<16 | (EthLen+HeaderLen)<<24
		}
		{
			const k = 2 * frameSize
			f := (*frame.Frame)(unsafe.Add(fp, k))
			h := (*Header)(unsafe.Add(hp, k/frameSize*headerSize))
			o := int64(f.Off)
			if f.Len < EthLen+HeaderLen || o > lim {
				return int((uintptr(fp) - uintptr(fb) + k) / frameSize)
			}
			d := mem[o : o+EthLen+HeaderLen : o+EthLen+HeaderLen]
			x, x2 := le32(d[12], d[13], d[14], d[15]), le32(d[16], d[17], d[18], d[19])
			if uint16(x) != t || uint16(x2) != ti {
				return int((uintptr(fp) - uintptr(fb) + k) / frameSize)
			}
			hw := (*[3]uint32)(unsafe.Pointer(h)) // Outer, Inner, EtherType|N<<16|Len<<24
			hw[0], hw[1] = wireTagWord(x), wireTagWord(x2)
			hw[2] = uint32(d[20])<<8 | uint32(d[21]) | 2<<16 | (EthLen+HeaderLen)<<24
		}
		{
			const k = 3 * frameSize
			f := (*frame.Frame)(unsafe.Add(fp, k))
			h := (*Header)(unsafe.Add(hp, k/frameSize*headerSize))
			o := int64(f.Off)
			if f.Len < EthLen+HeaderLen || o > lim {
				return int((uintptr(fp) - uintptr(fb) + k) / frameSize)
			}
			d := mem[o : o+EthLen+HeaderLen : o+EthLen+HeaderLen]
			x, x2 := le32(d[12], d[13], d[14], d[15]), le32(d[16], d[17], d[18], d[19])
			if uint16(x) != t || uint16(x2) != ti {
				return int((uintptr(fp) - uintptr(fb) + k) / frameSize)
			}
			hw := (*[3]uint32)(unsafe.Pointer(h)) // Outer, Inner, EtherType|N<<16|Len<<24
			hw[0], hw[1] = wireTagWord(x), wireTagWord(x2)
			hw[2] = uint32(d[20])<<8 | uint32(d[21]) | 2<<16 | (EthLen+HeaderLen)<<24
		}
		if fp == last {
			return int((uintptr(fp)-uintptr(fb))/frameSize) + 4 // n, recomputed: one register fewer in the loop
		}
		fp, hp = unsafe.Add(fp, 4*frameSize), unsafe.Add(hp, 4*headerSize)
	}
}

// oobTag4 reports whether any of the four descriptors at fp has an out-of-band tag
// (frame.FlagVLAN): one test per four frames. Each Flags is read as the 4-byte word it starts
// (Flags and TPID), so that the compiler folds three of the loads into the ORs; m is flagWord.
func oobTag4(fp unsafe.Pointer, m uint32) bool {
	const flags = unsafe.Offsetof(frame.Frame{}.Flags)
	return (*(*uint32)(unsafe.Add(fp, flags))|*(*uint32)(unsafe.Add(fp, frameSize+flags))|
		*(*uint32)(unsafe.Add(fp, 2*frameSize+flags))|*(*uint32)(unsafe.Add(fp, 3*frameSize+flags)))&m != 0
}

// flagWord is the 4-byte word at &Frame.Flags with FlagVLAN alone set: FlagVLAN's bit where the
// machine keeps it (low half on a little-endian machine, high half on a big-endian one; this is
// the machine's order, whatever the vlan_portable tag says).
var flagWord = func() uint32 {
	var f frame.Frame
	f.Flags = frame.FlagVLAN
	return *(*uint32)(unsafe.Pointer(&f.Flags))
}()

// wireTagWord is wireTag as the uint32 a Tag holds in memory on a little-endian machine (TPID in
// the low half): a byte swap and a rotate.
func wireTagWord(x uint32) uint32 { return bits.RotateLeft32(bits.ReverseBytes32(x), 16) }

// pushRun4 is pushRun, four frames per iteration; see above.
//
//go:noinline
func pushRun4(mem []byte, fr []frame.Frame, w uint32) int {
	n := len(fr) &^ 3
	if n == 0 || len(mem) < macLen+HeaderLen || uint64(len(mem)) > 1<<32 {
		return 0 // the check on s below relies on frames living in the first 4 GiB
	}
	lim := int64(len(mem)) - (macLen + HeaderLen)
	fb, m := unsafe.Pointer(unsafe.SliceData(fr)), flagWord
	fp := fb
	last := unsafe.Add(fb, uintptr(n-4)*frameSize) // the last group's first descriptor
	for {
		if oobTag4(fp, m) {
			// The four one at a time, an out-of-band tag put back into the bytes under the new one.
			for k := uintptr(0); k < 4*frameSize; k += frameSize {
				f := (*frame.Frame)(unsafe.Add(fp, k))
				lh := uint32(f.Len) | uint32(f.Head)<<16
				if f.Flags&frame.FlagVLAN == 0 {
					s := int64(f.Off - HeaderLen)
					if uint16(lh)-macLen > 0xffff-HeaderLen-macLen || lh < HeaderLen<<16 || s > lim {
						return int((uintptr(fp) - uintptr(fb) + k) / frameSize)
					}
					d := mem[s : s+macLen+HeaderLen : s+macLen+HeaderLen]
					copy(d[0:macLen], d[HeaderLen:macLen+HeaderLen])
					d[12] = byte(w)
					d[13] = byte(w >> 8)
					d[14] = byte(w >> 16)
					d[15] = byte(w >> 24)
					f.Off = uint32(s)
					lh = lh + HeaderLen - HeaderLen<<16
					f.Len, f.Head = uint16(lh), uint16(lh>>16)
					continue
				}
				// Push's general path: Reinsert (the out-of-band tag, TPID 0 meaning 0x8100,
				// pushed into the bytes, the flag cleared), then the push of w on top. Both
				// succeed iff 12 <= Len <= 0xffff-8 and Head >= 8: then the 12 MAC bytes move 8 to
				// the front, w and the out-of-band tag follow. Otherwise the loop stops there and
				// the general path takes the frame (and its error).
				s := int64(f.Off - 2*HeaderLen) // wraps past lim when Off < 8
				if uint16(lh)-macLen > 0xffff-2*HeaderLen-macLen || lh < 2*HeaderLen<<16 || s > lim-HeaderLen {
					return int((uintptr(fp) - uintptr(fb) + k) / frameSize)
				}
				tp := f.TPID
				if tp == 0 {
					tp = TPID8021Q
				}
				x := tagWord(Tag{tp, TCI(f.TCI)})
				d := mem[s : s+macLen+2*HeaderLen : s+macLen+2*HeaderLen]
				copy(d[0:macLen], d[2*HeaderLen:macLen+2*HeaderLen])
				d[12] = byte(w)
				d[13] = byte(w >> 8)
				d[14] = byte(w >> 16)
				d[15] = byte(w >> 24)
				d[16] = byte(x)
				d[17] = byte(x >> 8)
				d[18] = byte(x >> 16)
				d[19] = byte(x >> 24)
				f.Off = uint32(s)
				lh = lh + 2*HeaderLen - 2*HeaderLen<<16
				f.Len, f.Head = uint16(lh), uint16(lh>>16)
				f.Flags &^= frame.FlagVLAN
				f.TPID, f.TCI = 0, 0
			}
			if fp == last {
				return int((uintptr(fp)-uintptr(fb))/frameSize) + 4
			}
			fp = unsafe.Add(fp, 4*frameSize)
			continue
		}
		{
			const k = 0 * frameSize
			f := (*frame.Frame)(unsafe.Add(fp, k))
			s := int64(f.Off - HeaderLen)
			lh := uint32(f.Len) | uint32(f.Head)<<16
			if uint16(lh)-macLen > 0xffff-HeaderLen-macLen || lh < HeaderLen<<16 ||
				s > lim {
				return int((uintptr(fp) - uintptr(fb) + k) / frameSize)
			}
			d := mem[s : s+macLen+HeaderLen : s+macLen+HeaderLen]
			copy(d[0:macLen], d[HeaderLen:macLen+HeaderLen])
			d[12] = byte(w)
			d[13] = byte(w >> 8)
			d[14] = byte(w >> 16)
			d[15] = byte(w >> 24)
			f.Off = uint32(s)
			lh = lh + HeaderLen - HeaderLen<<16
			f.Len, f.Head = uint16(lh), uint16(lh>>16)
		}
		{
			const k = 1 * frameSize
			f := (*frame.Frame)(unsafe.Add(fp, k))
			s := int64(f.Off - HeaderLen)
			lh := uint32(f.Len) | uint32(f.Head)<<16
			if uint16(lh)-macLen > 0xffff-HeaderLen-macLen || lh < HeaderLen<<16 ||
				s > lim {
				return int((uintptr(fp) - uintptr(fb) + k) / frameSize)
			}
			d := mem[s : s+macLen+HeaderLen : s+macLen+HeaderLen]
			copy(d[0:macLen], d[HeaderLen:macLen+HeaderLen])
			d[12] = byte(w)
			d[13] = byte(w >> 8)
			d[14] = byte(w >> 16)
			d[15] = byte(w >> 24)
			f.Off = uint32(s)
			lh = lh + HeaderLen - HeaderLen<<16
			f.Len, f.Head = uint16(lh), uint16(lh>>16)
		}
		{
			const k = 2 * frameSize
			f := (*frame.Frame)(unsafe.Add(fp, k))
			s := int64(f.Off - HeaderLen)
			lh := uint32(f.Len) | uint32(f.Head)<<16
			if uint16(lh)-macLen > 0xffff-HeaderLen-macLen || lh < HeaderLen<<16 ||
				s > lim {
				return int((uintptr(fp) - uintptr(fb) + k) / frameSize)
			}
			d := mem[s : s+macLen+HeaderLen : s+macLen+HeaderLen]
			copy(d[0:macLen], d[HeaderLen:macLen+HeaderLen])
			d[12] = byte(w)
			d[13] = byte(w >> 8)
			d[14] = byte(w >> 16)
			d[15] = byte(w >> 24)
			f.Off = uint32(s)
			lh = lh + HeaderLen - HeaderLen<<16
			f.Len, f.Head = uint16(lh), uint16(lh>>16)
		}
		{
			const k = 3 * frameSize
			f := (*frame.Frame)(unsafe.Add(fp, k))
			s := int64(f.Off - HeaderLen)
			lh := uint32(f.Len) | uint32(f.Head)<<16
			if uint16(lh)-macLen > 0xffff-HeaderLen-macLen || lh < HeaderLen<<16 ||
				s > lim {
				return int((uintptr(fp) - uintptr(fb) + k) / frameSize)
			}
			d := mem[s : s+macLen+HeaderLen : s+macLen+HeaderLen]
			copy(d[0:macLen], d[HeaderLen:macLen+HeaderLen])
			d[12] = byte(w)
			d[13] = byte(w >> 8)
			d[14] = byte(w >> 16)
			d[15] = byte(w >> 24)
			f.Off = uint32(s)
			lh = lh + HeaderLen - HeaderLen<<16
			f.Len, f.Head = uint16(lh), uint16(lh>>16)
		}
		if fp == last {
			return int((uintptr(fp)-uintptr(fb))/frameSize) + 4 // n, recomputed: one register fewer in the loop
		}
		fp = unsafe.Add(fp, 4*frameSize)
	}
}

// popRun4 is popRun, four frames per iteration; see above. It returns the index where it stopped
// and how many untagged frames it passed (as popRun does).
//
//go:noinline
func popRun4(mem []byte, fr []frame.Frame) (int, int) {
	n := len(fr) &^ 3
	if n == 0 || len(mem) < EthLen {
		return 0, 0
	}
	lim := int64(len(mem)) - EthLen
	// The TPIDs in the order the first frame (when its header is inside mem) matches them.
	t1, t2 := uint16(wireQ), uint16(wireAD)
	if o := int64(fr[0].Off); o <= lim {
		d := mem[o : o+EthLen : o+EthLen]
		t1, t2 = tpidOrder(uint16(d[12]) | uint16(d[13])<<8)
	}
	untagged := 0
	fb, m := unsafe.Pointer(unsafe.SliceData(fr)), flagWord
	fp := fb
	last := unsafe.Add(fb, uintptr(n-4)*frameSize) // the last group's first descriptor
	for {
		if oobTag4(fp, m) {
			// The four one at a time, an out-of-band tag popped from its descriptor.
			for k := uintptr(0); k < 4*frameSize; k += frameSize {
				f := (*frame.Frame)(unsafe.Add(fp, k))
				if f.Flags&frame.FlagVLAN != 0 {
					f.Flags &^= frame.FlagVLAN
					f.TPID, f.TCI = 0, 0
					continue
				}
				o := int64(f.Off)
				lh := uint32(f.Len) | uint32(f.Head)<<16
				if uint16(lh) < frame.MinEthernetLen+HeaderLen || lh > (0xffff-HeaderLen)<<16|0xffff ||
					o > lim {
					return int((uintptr(fp) - uintptr(fb) + k) / frameSize), untagged
				}
				d := mem[o : o+EthLen : o+EthLen]
				if t := uint16(d[12]) | uint16(d[13])<<8; t != t1 && t != t2 {
					untagged++
				} else {
					copy(d[HeaderLen:EthLen-2], d[0:macLen])
					f.Off = uint32(o + HeaderLen)
					lh = lh - HeaderLen + HeaderLen<<16
					f.Len, f.Head = uint16(lh), uint16(lh>>16)
				}
			}
			if fp == last {
				return int((uintptr(fp)-uintptr(fb))/frameSize) + 4, untagged
			}
			fp = unsafe.Add(fp, 4*frameSize)
			continue
		}
		{
			const k = 0 * frameSize
			f := (*frame.Frame)(unsafe.Add(fp, k))
			o := int64(f.Off)
			lh := uint32(f.Len) | uint32(f.Head)<<16
			if uint16(lh) < frame.MinEthernetLen+HeaderLen || lh > (0xffff-HeaderLen)<<16|0xffff ||
				o > lim {
				return int((uintptr(fp) - uintptr(fb) + k) / frameSize), untagged
			}
			d := mem[o : o+EthLen : o+EthLen]
			if t := uint16(d[12]) | uint16(d[13])<<8; t != t1 && t != t2 {
				untagged++
			} else {
				copy(d[HeaderLen:EthLen-2], d[0:macLen])
				f.Off = uint32(o + HeaderLen)
				lh = lh - HeaderLen + HeaderLen<<16
				f.Len, f.Head = uint16(lh), uint16(lh>>16)
			}
		}
		{
			const k = 1 * frameSize
			f := (*frame.Frame)(unsafe.Add(fp, k))
			o := int64(f.Off)
			lh := uint32(f.Len) | uint32(f.Head)<<16
			if uint16(lh) < frame.MinEthernetLen+HeaderLen || lh > (0xffff-HeaderLen)<<16|0xffff ||
				o > lim {
				return int((uintptr(fp) - uintptr(fb) + k) / frameSize), untagged
			}
			d := mem[o : o+EthLen : o+EthLen]
			if t := uint16(d[12]) | uint16(d[13])<<8; t != t1 && t != t2 {
				untagged++
			} else {
				copy(d[HeaderLen:EthLen-2], d[0:macLen])
				f.Off = uint32(o + HeaderLen)
				lh = lh - HeaderLen + HeaderLen<<16
				f.Len, f.Head = uint16(lh), uint16(lh>>16)
			}
		}
		{
			const k = 2 * frameSize
			f := (*frame.Frame)(unsafe.Add(fp, k))
			o := int64(f.Off)
			lh := uint32(f.Len) | uint32(f.Head)<<16
			if uint16(lh) < frame.MinEthernetLen+HeaderLen || lh > (0xffff-HeaderLen)<<16|0xffff ||
				o > lim {
				return int((uintptr(fp) - uintptr(fb) + k) / frameSize), untagged
			}
			d := mem[o : o+EthLen : o+EthLen]
			if t := uint16(d[12]) | uint16(d[13])<<8; t != t1 && t != t2 {
				untagged++
			} else {
				copy(d[HeaderLen:EthLen-2], d[0:macLen])
				f.Off = uint32(o + HeaderLen)
				lh = lh - HeaderLen + HeaderLen<<16
				f.Len, f.Head = uint16(lh), uint16(lh>>16)
			}
		}
		{
			const k = 3 * frameSize
			f := (*frame.Frame)(unsafe.Add(fp, k))
			o := int64(f.Off)
			lh := uint32(f.Len) | uint32(f.Head)<<16
			if uint16(lh) < frame.MinEthernetLen+HeaderLen || lh > (0xffff-HeaderLen)<<16|0xffff ||
				o > lim {
				return int((uintptr(fp) - uintptr(fb) + k) / frameSize), untagged
			}
			d := mem[o : o+EthLen : o+EthLen]
			if t := uint16(d[12]) | uint16(d[13])<<8; t != t1 && t != t2 {
				untagged++
			} else {
				copy(d[HeaderLen:EthLen-2], d[0:macLen])
				f.Off = uint32(o + HeaderLen)
				lh = lh - HeaderLen + HeaderLen<<16
				f.Len, f.Head = uint16(lh), uint16(lh>>16)
			}
		}
		if fp == last {
			return int((uintptr(fp)-uintptr(fb))/frameSize) + 4, untagged // n, recomputed: one register fewer in the loop
		}
		fp = unsafe.Add(fp, 4*frameSize)
	}
}

// popTagRun4 is popRun4 for a batch whose frames all carry the same standard TPID (the first
// frame's) in the bytes: it pops them and stops at the first frame that needs the general path or
// that does not carry that TPID (untagged, the other TPID), and returns its index (len(fr) &^ 3
// when none). It exists for its layout: a frame with the TPID runs through its block with no taken
// branch (popRun4 takes one per frame to join its two cases), about 10% of the time of a pop on
// this machine. PopBatch runs it first; from the frame it stops at, popMixed goes on with popRun
// and popRun4 (so a mixed batch pays one stop, not one per untagged frame).
//
//go:noinline
func popTagRun4(mem []byte, fr []frame.Frame) int {
	n := len(fr) &^ 3
	if n == 0 || len(mem) < EthLen {
		return 0
	}
	lim := int64(len(mem)) - EthLen
	// The TPID of the first frame (when its header is inside mem): the loop pops it and stops at a
	// frame without it.
	t := uint16(wireQ)
	if o := int64(fr[0].Off); o <= lim {
		d := mem[o : o+EthLen : o+EthLen]
		t, _ = tpidOrder(uint16(d[12]) | uint16(d[13])<<8)
	}
	fb, m := unsafe.Pointer(unsafe.SliceData(fr)), flagWord
	fp := fb
	last := unsafe.Add(fb, uintptr(n-4)*frameSize) // the last group's first descriptor
	for {
		if oobTag4(fp, m) {
			return int((uintptr(fp) - uintptr(fb)) / frameSize)
		}
		{
			const k = 0 * frameSize
			f := (*frame.Frame)(unsafe.Add(fp, k))
			o := int64(f.Off)
			lh := uint32(f.Len) | uint32(f.Head)<<16
			if uint16(lh) < frame.MinEthernetLen+HeaderLen || lh > (0xffff-HeaderLen)<<16|0xffff ||
				o > lim {
				return int((uintptr(fp) - uintptr(fb) + k) / frameSize)
			}
			d := mem[o : o+EthLen : o+EthLen]
			if uint16(d[12])|uint16(d[13])<<8 != t {
				return int((uintptr(fp) - uintptr(fb) + k) / frameSize)
			}
			copy(d[HeaderLen:EthLen-2], d[0:macLen])
			f.Off = uint32(o + HeaderLen)
			lh = lh - HeaderLen + HeaderLen<<16
			f.Len, f.Head = uint16(lh), uint16(lh>>16)
		}
		{
			const k = 1 * frameSize
			f := (*frame.Frame)(unsafe.Add(fp, k))
			o := int64(f.Off)
			lh := uint32(f.Len) | uint32(f.Head)<<16
			if uint16(lh) < frame.MinEthernetLen+HeaderLen || lh > (0xffff-HeaderLen)<<16|0xffff ||
				o > lim {
				return int((uintptr(fp) - uintptr(fb) + k) / frameSize)
			}
			d := mem[o : o+EthLen : o+EthLen]
			if uint16(d[12])|uint16(d[13])<<8 != t {
				return int((uintptr(fp) - uintptr(fb) + k) / frameSize)
			}
			copy(d[HeaderLen:EthLen-2], d[0:macLen])
			f.Off = uint32(o + HeaderLen)
			lh = lh - HeaderLen + HeaderLen<<16
			f.Len, f.Head = uint16(lh), uint16(lh>>16)
		}
		{
			const k = 2 * frameSize
			f := (*frame.Frame)(unsafe.Add(fp, k))
			o := int64(f.Off)
			lh := uint32(f.Len) | uint32(f.Head)<<16
			if uint16(lh) < frame.MinEthernetLen+HeaderLen || lh > (0xffff-HeaderLen)<<16|0xffff ||
				o > lim {
				return int((uintptr(fp) - uintptr(fb) + k) / frameSize)
			}
			d := mem[o : o+EthLen : o+EthLen]
			if uint16(d[12])|uint16(d[13])<<8 != t {
				return int((uintptr(fp) - uintptr(fb) + k) / frameSize)
			}
			copy(d[HeaderLen:EthLen-2], d[0:macLen])
			f.Off = uint32(o + HeaderLen)
			lh = lh - HeaderLen + HeaderLen<<16
			f.Len, f.Head = uint16(lh), uint16(lh>>16)
		}
		{
			const k = 3 * frameSize
			f := (*frame.Frame)(unsafe.Add(fp, k))
			o := int64(f.Off)
			lh := uint32(f.Len) | uint32(f.Head)<<16
			if uint16(lh) < frame.MinEthernetLen+HeaderLen || lh > (0xffff-HeaderLen)<<16|0xffff ||
				o > lim {
				return int((uintptr(fp) - uintptr(fb) + k) / frameSize)
			}
			d := mem[o : o+EthLen : o+EthLen]
			if uint16(d[12])|uint16(d[13])<<8 != t {
				return int((uintptr(fp) - uintptr(fb) + k) / frameSize)
			}
			copy(d[HeaderLen:EthLen-2], d[0:macLen])
			f.Off = uint32(o + HeaderLen)
			lh = lh - HeaderLen + HeaderLen<<16
			f.Len, f.Head = uint16(lh), uint16(lh>>16)
		}
		if fp == last {
			return int((uintptr(fp)-uintptr(fb))/frameSize) + 4 // n, recomputed: one register fewer in the loop
		}
		fp = unsafe.Add(fp, 4*frameSize)
	}
}

// setTCIRun4 is setTCIRun, four frames per iteration; see above. It returns the index where it
// stopped and how many untagged frames it passed (as setTCIRun does).
//
//go:noinline
func setTCIRun4(mem []byte, fr []frame.Frame, w uint16) (int, int) {
	n := len(fr) &^ 3
	if n == 0 || len(mem) < EthLen {
		return 0, 0
	}
	lim := int64(len(mem)) - EthLen
	// The TPIDs in the order the first frame (when its header is inside mem) matches them.
	t1, t2 := uint16(wireQ), uint16(wireAD)
	if o := int64(fr[0].Off); o <= lim {
		d := mem[o : o+EthLen : o+EthLen]
		t1, t2 = tpidOrder(uint16(d[12]) | uint16(d[13])<<8)
	}
	untagged := 0
	fb, m := unsafe.Pointer(unsafe.SliceData(fr)), flagWord
	fp := fb
	last := unsafe.Add(fb, uintptr(n-4)*frameSize) // the last group's first descriptor
	for {
		if oobTag4(fp, m) {
			// The four one at a time, an out-of-band tag's TCI written in its descriptor.
			for k := uintptr(0); k < 4*frameSize; k += frameSize {
				f := (*frame.Frame)(unsafe.Add(fp, k))
				if f.Flags&frame.FlagVLAN != 0 {
					f.TCI = bits.ReverseBytes16(w)
					continue
				}
				o := int64(f.Off)
				if f.Len < EthLen || o > lim {
					return int((uintptr(fp) - uintptr(fb) + k) / frameSize), untagged
				}
				d := mem[o : o+EthLen : o+EthLen]
				if t := uint16(d[12]) | uint16(d[13])<<8; t != t1 && t != t2 {
					untagged++
				} else {
					d[14] = byte(w)
					d[15] = byte(w >> 8)
				}
			}
			if fp == last {
				return int((uintptr(fp)-uintptr(fb))/frameSize) + 4, untagged
			}
			fp = unsafe.Add(fp, 4*frameSize)
			continue
		}
		{
			const k = 0 * frameSize
			f := (*frame.Frame)(unsafe.Add(fp, k))
			o := int64(f.Off)
			if f.Len < EthLen || o > lim {
				return int((uintptr(fp) - uintptr(fb) + k) / frameSize), untagged
			}
			d := mem[o : o+EthLen : o+EthLen]
			if t := uint16(d[12]) | uint16(d[13])<<8; t != t1 && t != t2 {
				untagged++
			} else {
				d[14] = byte(w)
				d[15] = byte(w >> 8)
			}
		}
		{
			const k = 1 * frameSize
			f := (*frame.Frame)(unsafe.Add(fp, k))
			o := int64(f.Off)
			if f.Len < EthLen || o > lim {
				return int((uintptr(fp) - uintptr(fb) + k) / frameSize), untagged
			}
			d := mem[o : o+EthLen : o+EthLen]
			if t := uint16(d[12]) | uint16(d[13])<<8; t != t1 && t != t2 {
				untagged++
			} else {
				d[14] = byte(w)
				d[15] = byte(w >> 8)
			}
		}
		{
			const k = 2 * frameSize
			f := (*frame.Frame)(unsafe.Add(fp, k))
			o := int64(f.Off)
			if f.Len < EthLen || o > lim {
				return int((uintptr(fp) - uintptr(fb) + k) / frameSize), untagged
			}
			d := mem[o : o+EthLen : o+EthLen]
			if t := uint16(d[12]) | uint16(d[13])<<8; t != t1 && t != t2 {
				untagged++
			} else {
				d[14] = byte(w)
				d[15] = byte(w >> 8)
			}
		}
		{
			const k = 3 * frameSize
			f := (*frame.Frame)(unsafe.Add(fp, k))
			o := int64(f.Off)
			if f.Len < EthLen || o > lim {
				return int((uintptr(fp) - uintptr(fb) + k) / frameSize), untagged
			}
			d := mem[o : o+EthLen : o+EthLen]
			if t := uint16(d[12]) | uint16(d[13])<<8; t != t1 && t != t2 {
				untagged++
			} else {
				d[14] = byte(w)
				d[15] = byte(w >> 8)
			}
		}
		if fp == last {
			return int((uintptr(fp)-uintptr(fb))/frameSize) + 4, untagged // n, recomputed: one register fewer in the loop
		}
		fp = unsafe.Add(fp, 4*frameSize)
	}
}
