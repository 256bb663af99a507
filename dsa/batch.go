package dsa

import (
	"encoding/binary"
	"errors"
	"runtime"
	"unsafe"

	"github.com/wirespeed/wirespeed/frame"
)

// The batch codecs. Each format has its own loop over the batch (in its tag_*.go file; the loops
// several formats share are below), in its own function, called once per batch, whose body is the
// format's common case written out in full: one bounds check for the bytes the tag touches, the tag
// read with one wide load and tested against a pre-swapped mask, the Info built from shifts and
// masks, the MAC addresses moved with one 8-byte and one 4-byte load and store, and the descriptor
// fields that change written back (Len and Head as one word). Per-batch constants (the tag an
// encode writes) are computed before the loop. rs is cleared first; every frame off the common
// case (an error, a trapped or VLAN-folded Marvell tag, a runt to pad, a timestamp, ...) is marked
// reasonSlow and handed afterwards to the general per-frame code (decodeOne, encode), which is
// also the slow path of the Taggers' Decode and Encode: the fast loops hold no call, so nothing is
// spilled around one, and the general code stays the single reference the differential tests
// (batch_test.go, perframe_test.go) compare them with.
//
// The wide loads are little-endian: the masks and constants are the big-endian layouts of the
// tags with their bytes swapped (byte k of a loaded word is bits 8k..8k+7).
//
// The loops run four frames per iteration through their unrolled copies in batch_x4.go, generated
// from the loops of this file and the tag_*.go files by the module's internal/unroll (go generate
// ./dsa), whose package doc gives the loops' form (for i := range fr, the frame reached as &fr[i],
// its Info as &ins[i], a frame left to the per-frame code marked by slow(&rs[i])): each copy runs
// the first len % 4 frames through the same body itself, so the one-frame loops are the source of the generated code, not called by the
// dispatch (TestLoopsEqualUnrolled compares the two). A decode loop has the signature of
// format.decodeBatch, so that the registry holds its unrolled copy.
//
//go:generate go run ../internal/unroll/gen dsa
//
// Each loop function is go:noinline: inlined into its caller, a loop shares the register
// allocation of a larger function and spills.

var le = binary.LittleEndian

// nativeLE: the machine stores a multi-byte field least significant byte first, so a loop may
// write several fields of an Info as one little-endian word (TestNativeLE checks it against
// binary.NativeEndian). Elsewhere the loops write the Info field by field.
const nativeLE = runtime.GOARCH == "amd64" || runtime.GOARCH == "386" || runtime.GOARCH == "arm64" ||
	runtime.GOARCH == "arm" || runtime.GOARCH == "riscv64" || runtime.GOARCH == "loong64" ||
	runtime.GOARCH == "ppc64le" || runtime.GOARCH == "mipsle" || runtime.GOARCH == "mips64le" ||
	runtime.GOARCH == "wasm"

// errShortResults is the panic of a batch codec given fewer Infos or Reasons than frames: a
// programming error, not a property of the bytes.
var errShortResults = errors.New("dsa: DecodeBatch/EncodeBatch: ins and rs must hold one entry per frame")

// reasonSlow marks a frame off a fast path (the batch loops' and encDSA/encEDSA's answer); it never
// leaves the package.
const reasonSlow Reason = 0xff

// slowDecode runs the per-frame decoder on the frames the fast loop left (rs[i] == reasonSlow)
// and returns the total number decoded; ok is the number the fast loop decoded.
//
//go:noinline
func (c *codec) slowDecode(mem []byte, fr []frame.Frame, ins []Info, rs []Reason, ok int) int {
	ins, rs = ins[:len(fr)], rs[:len(fr)]
	for i := range fr {
		if rs[i] != reasonSlow {
			continue
		}
		r := c.decodeOne(mem, &fr[i], &ins[i])
		rs[i] = r
		if r == ReasonNone {
			ok++
		}
	}
	return ok
}

// decodeBatch is decode over every frame of fr, with the format chosen once per batch.
func (c *codec) decodeBatch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason) int {
	if len(ins) < len(fr) || len(rs) < len(fr) {
		panic(errShortResults)
	}
	clear(rs[:len(fr)]) // the loops mark only the frames they leave
	c.fm.decodeBatch(mem, fr, ins, rs, c)
	ok := countNone(rs[:len(fr)])
	if ok == len(fr) {
		return ok
	}
	return c.slowDecode(mem, fr, ins, rs, ok)
}

// The decode loops. Each decodes the frames it can as the per-frame decoder would and marks the
// others reasonSlow (rs is cleared before). Their unrolled copies walk the descriptors, the Infos
// and the Reasons by pointer (internal/unroll), frame k of an iteration at a constant offset. One
// bounds check per frame: the start of the bytes read is compared with lim = len(mem) - (bytes
// read), then mem is sliced with a constant length, so the compiler drops its own checks.

const (
	frameSize = unsafe.Sizeof(frame.Frame{})
	infoSize  = unsafe.Sizeof(Info{})
)

// walk returns the base pointers of fr, ins and rs: the cursors of a decode loop's unrolled copy
// (internal/unroll's DSA.Setup).
// ins and rs must hold len(fr) entries: it panics otherwise (a short slice with room in its
// capacity would otherwise have results written past its length, unseen by the caller).
func walk(fr []frame.Frame, ins []Info, rs []Reason) (fb, ib, rb unsafe.Pointer) {
	if len(ins) < len(fr) || len(rs) < len(fr) {
		panic(errShortResults)
	}
	return unsafe.Pointer(unsafe.SliceData(fr)), unsafe.Pointer(unsafe.SliceData(ins)), unsafe.Pointer(unsafe.SliceData(rs))
}

// slow marks the frame of r for the per-frame code (slow(&rs[i]) in a loop).
func slow(r *Reason) { *r = reasonSlow }

// decTail1Batch: one tail byte, port[1:0] (ksz8795, hellcreek).
//
//go:noinline
func decTail1Batch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason, _ *codec) {
	lim := int64(len(mem))
	for i := range fr {
		f, in := &fr[i], &ins[i]
		o, l, tl := int64(f.Off), f.Len, f.Tail
		if e := o + int64(l); l >= minFrame+1 && tl < 0xffff && e <= lim {
			*in = Info{TagLen: 1, Port: uint16(mem[e-1] & 3)}
			f.Len, f.Tail = l-1, tl+1
			continue
		}
		slow(&rs[i])
	}
}

// lenHead is f.Len | f.Head<<16, which the compiler loads with one 4-byte load; setLenHead
// stores it back with one store.
func lenHead(f *frame.Frame) uint32 { return uint32(f.Len) | uint32(f.Head)<<16 }

func setLenHead(f *frame.Frame, x uint32) {
	f.Len = uint16(x)
	f.Head = uint16(x >> 16)
}

// lenHead4: for lh = lenHead(f), x = uint64(lh) + 4<<16 - (minFrame+4) has bits 15 and 31-63
// clear exactly when Len is in [minFrame+4, minFrame+4+0x7fff] and Head <= 0x7fff-4: Len - 18 is
// Len's half of x (no borrow from Head's; a shorter Len borrows and leaves 0xffee-0xffff there,
// bit 15 set), Head + 4 is the upper half. So one test (x&^0x7fff7fff == 0: TESTQ with a 32-bit
// immediate) stands for "Len >= minFrame+4 and Head+4 fits in 16 bits", less the frames of 32 KiB
// or more or with 32 KiB of headroom or more, which take the slow path (decoded the same way, only
// slower). Len - 4 and Head + 4 then neither borrow nor carry (addLenHead).

// addLenHead is setLenHead(f, lh+d) for lh = lenHead(f), where the caller has checked that the
// sum neither carries nor borrows between the halves. On a little-endian machine it is one add to
// memory: Len and Head are adjacent 16-bit fields, Len first, at a 4-byte aligned offset.
func addLenHead(f *frame.Frame, lh, d uint32) {
	if nativeLE {
		*(*uint32)(unsafe.Pointer(&f.Len)) += d
	} else {
		setLenHead(f, lh+d)
	}
}

// allSlowDecode and allSlowEncode stand for the batch loops of a format without its own: every frame goes
// to the per-frame code.
func allSlowDecode(_ []byte, fr []frame.Frame, _ []Info, rs []Reason, _ *codec) {
	markSlow(rs[:len(fr)])
}
func allSlowEncode(_ []byte, _ []frame.Frame, rs []Reason, _ Dest, _ *codec) { markSlow(rs) }

// markSlow hands every frame to the per-frame code (a Dest the fast loops do not cover).
func markSlow(rs []Reason) {
	for i := range rs {
		slow(&rs[i])
	}
}

// countNone returns how many of rs are ReasonNone, given that each is ReasonNone or reasonSlow
// (0xff). The common case, none slow, is an OR of the words, 64 bytes per iteration; otherwise
// the slow ones are counted eight at a time, by summing the low bits of the bytes of a word.
func countNone(rs []Reason) int {
	b := unsafe.Slice((*byte)(unsafe.SliceData(rs)), len(rs))
	var or uint64 // the OR of every Reason
	w := b
	for ; len(w) >= 64; w = w[64:] {
		a := (*[64]byte)(w)
		or |= le.Uint64(a[0:8]) | le.Uint64(a[8:16]) | le.Uint64(a[16:24]) | le.Uint64(a[24:32]) |
			le.Uint64(a[32:40]) | le.Uint64(a[40:48]) | le.Uint64(a[48:56]) | le.Uint64(a[56:64])
	}
	for _, x := range w {
		or |= uint64(x)
	}
	if or == 0 {
		return len(rs)
	}
	slow, i := 0, 0
	for ; i+8 <= len(b); i += 8 {
		slow += int((le.Uint64(b[i:i+8]) & 0x0101010101010101 * 0x0101010101010101) >> 56)
	}
	for ; i < len(b); i++ {
		slow += int(b[i] & 1)
	}
	return len(rs) - slow
}

// slowEncode runs the per-frame encoder on the frames the fast loop left and returns the total
// number encoded; ok is the number the fast loop encoded.
//
//go:noinline
func (c *codec) slowEncode(mem []byte, fr []frame.Frame, d Dest, rs []Reason, ok int) int {
	rs = rs[:len(fr)]
	for i := range fr {
		if rs[i] != reasonSlow {
			continue
		}
		r := c.encode(mem, &fr[i], d)
		rs[i] = r
		if r == ReasonNone {
			ok++
		}
	}
	return ok
}

// EncodeBatch is encode over every frame of b toward d, with d validated and the format chosen
// once per batch; the format's encodeBatch builds the tag it writes once.
func (c *codec) EncodeBatch(b *frame.Batch, d Dest, rs []Reason) int {
	mem, fr := b.Mem, b.Frames
	if len(rs) < len(fr) {
		panic(errShortResults)
	}
	rs = rs[:len(fr)]
	bad := c.checkDest(d)
	if bad != ReasonNone || c.spec.Position == PosNone {
		return encNoneAll(fr, rs, bad)
	}
	clear(rs) // the loops mark only the frames they leave
	c.fm.encodeBatch(mem, fr, rs, d, c)
	ok := countNone(rs)
	if ok == len(fr) {
		return ok
	}
	return c.slowEncode(mem, fr, d, rs, ok)
}

// The encode loops. Each tags the frames it can as the per-frame encoder would and marks the others
// reasonSlow (rs is cleared before); tw is the tag's little-endian image. They walk the
// descriptors and bounds-check once per frame as the decode loops do.

// frames is walk without Infos.
func frames(fr []frame.Frame, rs []Reason) (fb, rb unsafe.Pointer) {
	if len(rs) < len(fr) {
		panic(errShortResults)
	}
	return unsafe.Pointer(unsafe.SliceData(fr)), unsafe.Pointer(unsafe.SliceData(rs))
}

// encNoneAll is encode for "none" (nothing to write) and for a Dest that failed checkDest
// (bad): every frame gets bad, or ReasonTruncated if it is shorter than an Ethernet header.
//
//go:noinline
func encNoneAll(fr []frame.Frame, rs []Reason, bad Reason) int {
	rs = rs[:len(fr)]
	ok := len(fr)
	if bad != ReasonNone {
		ok = 0
	}
	for i := range fr {
		r := bad
		if fr[i].Len < minFrame {
			r = ReasonTruncated
			if bad == ReasonNone {
				ok--
			}
		}
		rs[i] = r
	}
	return ok
}

// encSA4Batch inserts the 4-byte tag after the source MAC of every frame of at least short bytes
// (minFrame, or 60 for a format that pads: shorter frames take the slow path).
//
//go:noinline
func encSA4Batch(mem []byte, fr []frame.Frame, rs []Reason, tw uint32, short uint16) {
	lim := int64(len(mem)) - 12
	for i := range fr {
		f := &fr[i]
		o, lh := int64(f.Off), lenHead(f)
		if lh >= 4<<16 && uint16(lh) >= short && uint16(lh) <= 0xffff-4 && o >= 4 && o <= lim {
			q := mem[o-4 : o+12 : o+12]
			*(*[12]byte)(q[0:12]) = *(*[12]byte)(q[4:16]) // MACs
			le.PutUint32(q[12:16], tw)
			f.Off -= 4
			setLenHead(f, lh-4<<16+4)
			continue
		}
		slow(&rs[i])
	}
}

// encPrefixBatch puts the 2-byte (ar9331) or 4-byte (gswip) tag in front of every frame.
//
//go:noinline
func encPrefixBatch(mem []byte, fr []frame.Frame, rs []Reason, tw uint32, n int) {
	lim := int64(len(mem))
	for i := range fr {
		f := &fr[i]
		o, lh := int64(f.Off), lenHead(f)
		if int(lh>>16) >= n && uint16(lh) >= minFrame && int(uint16(lh)) <= 0xffff-n && o >= 4 && o <= lim {
			if n == 2 {
				le.PutUint16(mem[o-2:o:o], uint16(tw))
			} else {
				le.PutUint32(mem[o-4:o:o], tw)
			}
			f.Off -= uint32(n)
			setLenHead(f, lh-uint32(n)<<16+uint32(n))
			continue
		}
		slow(&rs[i])
	}
}

// encTail1Batch appends one byte to every frame of 60 bytes or more: t, or tll for a link-local
// destination (KSZ's override bit); uint32 rather than byte, so that the choice is a CMOV.
//
//go:noinline
func encTail1Batch(mem []byte, fr []frame.Frame, rs []Reason, t, tll uint32) {
	lim, limDA := int64(len(mem))-1, int64(len(mem))-8 // o <= limDA follows from e <= lim, for the prover
	for i := range fr {
		f := &fr[i]
		o, l, tl := int64(f.Off), f.Len, f.Tail
		if e := o + int64(l); l >= 60 && tl >= 1 && l <= 0xffff-1 && e <= lim && o <= limDA {
			v := t
			if linkLocalLE(le.Uint64(mem[o : o+8 : o+8])) {
				v = tll
			}
			mem[e] = byte(v)
			f.Len, f.Tail = l+1, tl-1
			continue
		}
		slow(&rs[i])
	}
}
