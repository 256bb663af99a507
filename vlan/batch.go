package vlan

import (
	"math/bits"
	"unsafe"

	"github.com/wirespeed/wirespeed/frame"
)

// The batch forms below do what the per-frame functions do, for every frame of a batch, with the
// loop inside: no call per frame, one pass over the descriptors. Each has a tight loop for the
// common case (standard TPIDs, no out-of-band tag, a frame long enough and inside the arena), with
// no call in it so that nothing is spilled per frame; the loop stops at the first frame that needs
// the general path, the driver runs the per-frame function on that frame and resumes the loop on
// the next one. Results therefore equal the per-frame functions' frame by frame (the tests check
// this on random and adversarial batches).
//
// A descriptor must lie inside the batch's arena (frame.Frame). For one that does not (a bug in
// whoever made it), the per-frame functions and the batch forms may panic or may work on the header
// bytes that do lie inside; neither ever touches memory outside the arena.
//
// Every fast loop does one bounds check per frame: it compares the start of the bytes it touches
// with lim = len(mem) - (bytes touched) and then slices mem with a constant length, so the
// compiler drops its own checks (on 64-bit targets; 32-bit ones keep theirs). The loops walk the
// descriptors by byte offset p < len(fr)*frameSize and take &fr[p/frameSize] with unsafe.Add: the
// same element the index would give, always inside fr, in fewer loop instructions than an index
// (which needs an increment, a compare, a copy and a shift by 5 for the 32-byte stride).
const (
	frameSize  = unsafe.Sizeof(frame.Frame{})
	headerSize = unsafe.Sizeof(Header{})
)

// ParseBatch parses every frame of b into hs[i] (hs must hold b.Len() headers). A frame that ends
// inside its header gets a zero Header (Len 0). It returns how many frames parsed. Out-of-band tags
// are not part of the bytes and not reported here (see Outer).
func (p *Parser) ParseBatch(b *frame.Batch, hs []Header) int {
	fr := b.Frames
	hs = hs[:len(fr)]
	mem := b.Mem
	if p.n != 0 {
		ok := 0
		for i := range fr {
			if p.parseFrame(mem, &fr[i], &hs[i]) {
				ok++
			}
		}
		return ok
	}
	i := 0
	if parse4 {
		i = parseLead4(mem, fr, hs)
	}
	if i == len(fr) {
		return len(fr)
	}
	return len(fr) - parseRest(mem, fr, hs, i)
}

// parseRest is ParseBatch (standard TPIDs) from frame i on, where the lead loop (parseLead4) stopped: at a frame
// that needs the general path, or at the last len(fr) % 4 frames (parseRun takes those, and
// stops at once on a frame that needs the general path). After a frame on the general path the
// four-frame loop resumes. It returns how many frames did not parse. Out of line, so that
// ParseBatch's common case (a batch of a multiple of four frames, none of them rare) keeps
// everything in registers and makes one call.
//
//go:noinline
func parseRest(mem []byte, fr []frame.Frame, hs []Header, i int) (bad int) {
	hs = hs[:len(fr)]
	for {
		if !parse4 || len(fr)-i < 4 { // the remainder (or no four-frame loop)
			for {
				if i += parseRun(mem, fr[i:], hs[i:]); i >= len(fr) {
					return bad
				}
				if !std.parseFrame(mem, &fr[i], &hs[i]) {
					bad++
				}
				i++
			}
		}
		if !std.parseFrame(mem, &fr[i], &hs[i]) {
			bad++
		}
		i++
		if parse4 {
			i += parseRun4(mem, fr[i:], hs[i:])
		}
	}
}

// parseRun parses fr with the standard TPIDs into hs until a frame is shorter than a QinQ header
// or lies outside mem; it returns that frame's index (len(fr) when none).
//
//go:noinline
func parseRun(mem []byte, fr []frame.Frame, hs []Header) int {
	hs = hs[:len(fr)]
	if len(mem) < EthLen+HeaderLen {
		return 0
	}
	lim := int64(len(mem)) - (EthLen + HeaderLen) // a frame's header is inside mem iff Off <= lim
	fb, hb, end := unsafe.Pointer(unsafe.SliceData(fr)), unsafe.Pointer(unsafe.SliceData(hs)), uintptr(len(fr))*frameSize
	for p, q := uintptr(0), uintptr(0); p < end; p, q = p+frameSize, q+headerSize {
		f := (*frame.Frame)(unsafe.Add(fb, p)) // &fr[p/frameSize]
		h := (*Header)(unsafe.Add(hb, q))      // &hs[p/frameSize]
		o := int64(f.Off)
		if f.Len < EthLen+HeaderLen || o > lim {
			return int(p / frameSize)
		}
		d := mem[o : o+EthLen+HeaderLen : o+EthLen+HeaderLen]
		// The 4 bytes after the MACs (TPID and TCI, or EtherType and payload) as one load; a
		// TPID is recognised in wire order, and wireTag turns the word into a Tag.
		x := le32(d[12], d[13], d[14], d[15])
		if t := uint16(x); t != wireQ && t != wireAD {
			h.Outer, h.Inner = Tag{}, Tag{}
			h.EtherType, h.N, h.Len = bits.ReverseBytes16(t), 0, frame.EtherLen
			continue
		}
		// Each tag is stored with one 4-byte store: the compiler merges the stores of a Tag's two
		// halves unless it first sees a sequence of 8 bytes of stores it cannot merge, so the stores
		// are ordered to avoid one (zero Inner, EtherType, Outer; or Outer, a load, Inner).
		x2 := le32(d[16], d[17], d[18], d[19])
		if t := uint16(x2); t != wireQ && t != wireAD {
			h.Inner = Tag{}
			h.EtherType = bits.ReverseBytes16(t)
			h.Outer = wireTag(x)
			h.N, h.Len = 1, EthLen
			continue
		}
		h.Outer = wireTag(x)
		et := uint16(d[20])<<8 | uint16(d[21])
		h.Inner = wireTag(x2)
		h.EtherType, h.N, h.Len = et, 2, EthLen+HeaderLen
	}
	return len(fr)
}

// The standard TPIDs as a little-endian load of their wire bytes sees them.
const (
	wireQ  = TPID8021Q>>8 | TPID8021Q&0xff<<8
	wireAD = TPID8021AD>>8 | TPID8021AD&0xff<<8
)

// le32 assembles four bytes little-endian. It is written out (rather than encoding/binary, which
// does the same) so that the loops below read as what they compile to; an inlined call also
// leaves a NOP per call in the loop. The compiler merges a run of adjacent byte loads into one
// 4-byte load.
func le32(b0, b1, b2, b3 byte) uint32 {
	return uint32(b0) | uint32(b1)<<8 | uint32(b2)<<16 | uint32(b3)<<24
}

// wireTag turns a tag's four wire bytes, loaded little-endian, into a Tag: a byte swap, then the
// halves swapped back (BSWAP, ROL; the Tag is then stored with one 4-byte store).
func wireTag(x uint32) Tag {
	y := bits.RotateLeft32(bits.ReverseBytes32(x), 16)
	return Tag{uint16(y), TCI(y >> 16)}
}

// parseFrame parses one frame's bytes into h (ParseBatch's general path).
//
//go:noinline
func (p *Parser) parseFrame(mem []byte, f *frame.Frame, h *Header) bool {
	return p.Parse(f.Data(mem), h) == nil
}

// tagWord is t as the 4 bytes of a tag on the wire, read as a little-endian uint32.
func tagWord(t Tag) uint32 {
	return uint32(t.TPID>>8|t.TPID<<8) | uint32(uint16(t.TCI)>>8|uint16(t.TCI)<<8)<<16
}

// PushBatch pushes t onto every frame of b (as Push does, out-of-band tags put back first). Frames
// it cannot tag (no headroom, shorter than the MAC addresses) are released and removed from b, the
// others keep their order. It returns how many frames were dropped.
func PushBatch(b *frame.Batch, t Tag) (dropped int) {
	fr := b.Frames
	w := tagWord(t)
	if i := pushRun4(b.Mem, fr, w); i != len(fr) {
		return pushRest(b, i, t, w)
	}
	return 0
}

// pushRest is PushBatch from frame i on, where pushRun4 or pushRun stopped.
//
//go:noinline
func pushRest(b *frame.Batch, i int, t Tag, w uint32) int {
	fr := b.Frames
	// pushRun4 stops only at a frame Push fails on (it does out-of-band groups itself), so there
	// is no four-frame loop to resume: the single-frame loop takes the rest (the frames after a
	// failed Push are pushCompact's).
	for {
		if i += pushRun(b.Mem, fr[i:], w); i >= len(fr) {
			return 0
		}
		if Push(b, i, t) != nil {
			return pushCompact(b, i, t)
		}
		i++
	}
}

// pushRun pushes the tag whose wire bytes are w onto fr until a frame needs Push (an out-of-band
// tag, too short, too little headroom, outside mem); it returns that frame's index (len(fr) when
// none).
//
//go:noinline
func pushRun(mem []byte, fr []frame.Frame, w uint32) int {
	if len(mem) < macLen+HeaderLen || uint64(len(mem)) > 1<<32 {
		return 0 // the check on s below relies on frames living in the first 4 GiB
	}
	lim := int64(len(mem)) - (macLen + HeaderLen)
	base, end := unsafe.Pointer(unsafe.SliceData(fr)), uintptr(len(fr))*frameSize
	for p := uintptr(0); p < end; p += frameSize {
		f := (*frame.Frame)(unsafe.Add(base, p)) // &fr[p/frameSize]
		s := int64(f.Off - HeaderLen)            // wraps past lim when Off < 4
		// Len and Head are adjacent uint16s: the compiler loads (and below stores) them as one
		// 4-byte word.
		lh := uint32(f.Len) | uint32(f.Head)<<16
		// uint16(lh)-12 wraps for Len < 12, and Len+4 must fit a uint16; Head >= 4.
		if f.Flags&frame.FlagVLAN != 0 || uint16(lh)-macLen > 0xffff-HeaderLen-macLen || lh < HeaderLen<<16 ||
			s > lim {
			return int(p / frameSize)
		}
		d := mem[s : s+macLen+HeaderLen : s+macLen+HeaderLen]
		// Move the 12 MAC bytes 4 to the front, then write the tag. A constant-size copy of 12
		// bytes compiles to one 8-byte and one 4-byte load, then the two stores (both loads come
		// first, so the overlap is safe); the tag's four byte stores merge into one 4-byte store.
		copy(d[0:macLen], d[HeaderLen:macLen+HeaderLen])
		d[12] = byte(w)
		d[13] = byte(w >> 8)
		d[14] = byte(w >> 16)
		d[15] = byte(w >> 24)
		f.Off = uint32(s)
		lh = lh + HeaderLen - HeaderLen<<16 // Len += 4, Head -= 4: no carry or borrow, checked above
		f.Len, f.Head = uint16(lh), uint16(lh>>16)
	}
	return len(fr)
}

// pushCompact is PushBatch from frame i on, once frame i failed to take the tag: failed frames are
// released and removed, the others keep their order.
func pushCompact(b *frame.Batch, i int, t Tag) int {
	fr := b.Frames
	k := i
	for i++; i < len(fr); i++ {
		if Push(b, i, t) != nil {
			continue
		}
		fr[k], fr[i] = fr[i], fr[k]
		k++
	}
	if b.Owner != nil {
		b.Owner.Release(fr[k:])
	}
	b.Frames = fr[:k]
	return len(fr) - k
}

// PopBatch removes the outermost tag of every tagged frame of b (as Pop does: an out-of-band tag
// costs no byte move; runts are padded to 60 bytes when they have the tailroom). Untagged frames,
// frames that end inside their tag and frames whose headroom would pass 65535 bytes (Pop's
// ErrHeadroomRange) are left as they are. It returns how many tags it removed.
func (p *Parser) PopBatch(b *frame.Batch) (popped int) {
	fr := b.Frames
	if p.n != 0 {
		for i := range fr {
			if _, err := p.Pop(b, i); err == nil {
				popped++
			}
		}
		return popped
	}
	i := popTagRun4(b.Mem, fr) // every frame it passes is popped
	if i != len(fr) {
		return i + popMixed(b, i)
	}
	return i
}

// popMixed is PopBatch (standard TPIDs) from frame i on, where popTagRun4 stopped: at a frame
// without the first frame's TPID, in a group with an out-of-band tag, or at a frame that needs
// the general path. popRun takes the next (len(fr)-i) % 4 frames and popRun4 the rest (so that it
// ends at the batch's end), and popRest takes over where either stops early: a mixed batch pays
// no general-path call for its first untagged frame. It returns how many tags it popped.
//
//go:noinline
func popMixed(b *frame.Batch, i int) (popped int) {
	fr := b.Frames
	if j := i + (len(fr)-i)&3; j != i {
		k, u := popRun(b.Mem, fr[i:j])
		if i, popped = i+k, k-u; i != j {
			return popped + popRest(b, i)
		}
	}
	k, u := popRun4(b.Mem, fr[i:])
	if i, popped = i+k, popped+k-u; i != len(fr) {
		popped += popRest(b, i)
	}
	return popped
}

// popRest is PopBatch (standard TPIDs) from frame i on, where popMixed's popRun or popRun4
// stopped; it returns how many tags it popped (see parseRest).
//
//go:noinline
func popRest(b *frame.Batch, i int) (popped int) {
	fr := b.Frames
	for {
		if len(fr)-i < 4 {
			for {
				k, u := popRun(b.Mem, fr[i:])
				if i, popped = i+k, popped+k-u; i >= len(fr) {
					return popped
				}
				if _, err := std.Pop(b, i); err == nil {
					popped++
				}
				i++
			}
		}
		if _, err := std.Pop(b, i); err == nil {
			popped++
		}
		i++
		k, u := popRun4(b.Mem, fr[i:])
		i, popped = i+k, popped+k-u
	}
}

// popRun pops the outer tag (standard TPIDs) of fr until a frame needs Pop (an out-of-band
// tag, shorter than 64 bytes so that it may need padding, headroom that would pass 65535, outside
// mem); it returns that frame's index (len(fr) when none) and how many untagged frames it passed.
//
//go:noinline
func popRun(mem []byte, fr []frame.Frame) (int, int) {
	if len(mem) < EthLen {
		return 0, 0
	}
	lim := int64(len(mem)) - EthLen
	untagged := 0
	base, end := unsafe.Pointer(unsafe.SliceData(fr)), uintptr(len(fr))*frameSize
	for p := uintptr(0); p < end; p += frameSize {
		f := (*frame.Frame)(unsafe.Add(base, p)) // &fr[p/frameSize]
		o := int64(f.Off)
		lh := uint32(f.Len) | uint32(f.Head)<<16 // one 4-byte load, as in pushRun
		if f.Flags&frame.FlagVLAN != 0 || uint16(lh) < frame.MinEthernetLen+HeaderLen || lh > (0xffff-HeaderLen)<<16|0xffff ||
			o > lim {
			return int(p / frameSize), untagged
		}
		d := mem[o : o+EthLen : o+EthLen]
		if t := uint16(d[12]) | uint16(d[13])<<8; t == wireQ || t == wireAD {
			copy(d[HeaderLen:EthLen-2], d[0:macLen]) // one 8-byte and one 4-byte load, then the stores
			f.Off = uint32(o + HeaderLen)
			lh = lh - HeaderLen + HeaderLen<<16 // Len -= 4, Head += 4: no borrow or carry, checked above
			f.Len, f.Head = uint16(lh), uint16(lh>>16)
		} else {
			untagged++
		}
	}
	return len(fr), untagged
}

// PopBatch is Parser.PopBatch with the standard TPIDs.
func PopBatch(b *frame.Batch) int { return std.PopBatch(b) }

// SetTCIBatch rewrites the outermost tag's TCI of every tagged frame of b (out of band or in the
// bytes) and returns how many it rewrote; untagged frames are left alone.
func (p *Parser) SetTCIBatch(b *frame.Batch, tci TCI) (n int) {
	fr := b.Frames
	if p.n != 0 {
		for i := range fr {
			if p.SetTCI(b, i, tci) == nil {
				n++
			}
		}
		return n
	}
	w := bits.ReverseBytes16(uint16(tci))
	i, u := setTCIRun4(b.Mem, fr, w)
	if i != len(fr) {
		return i - u + setTCIRest(b, i, tci)
	}
	return i - u
}

// setTCIRest is SetTCIBatch (standard TPIDs) from frame i on, where setTCIRun4 stopped; it
// returns how many TCIs it rewrote (see parseRest).
//
//go:noinline
func setTCIRest(b *frame.Batch, i int, tci TCI) (n int) {
	fr := b.Frames
	w := bits.ReverseBytes16(uint16(tci))
	for {
		if len(fr)-i < 4 {
			for {
				k, u := setTCIRun(b.Mem, fr[i:], w)
				if i, n = i+k, n+k-u; i >= len(fr) {
					return n
				}
				if std.SetTCI(b, i, tci) == nil {
					n++
				}
				i++
			}
		}
		if std.SetTCI(b, i, tci) == nil {
			n++
		}
		i++
		k, u := setTCIRun4(b.Mem, fr[i:], w)
		i, n = i+k, n+k-u
	}
}

// setTCIRun writes w (a TCI byte-swapped, so that a little-endian store puts it in wire order)
// into the outer tag (standard TPIDs) of fr until a frame needs SetTCI (an
// out-of-band tag, shorter than a tagged header, outside mem); it returns that frame's index
// (len(fr) when none) and how many untagged frames it passed.
//
//go:noinline
func setTCIRun(mem []byte, fr []frame.Frame, w uint16) (int, int) {
	if len(mem) < EthLen {
		return 0, 0
	}
	lim := int64(len(mem)) - EthLen
	untagged := 0
	base, end := unsafe.Pointer(unsafe.SliceData(fr)), uintptr(len(fr))*frameSize
	for p := uintptr(0); p < end; p += frameSize {
		f := (*frame.Frame)(unsafe.Add(base, p)) // &fr[p/frameSize]
		o := int64(f.Off)
		if f.Flags&frame.FlagVLAN != 0 || f.Len < EthLen || o > lim {
			return int(p / frameSize), untagged
		}
		d := mem[o : o+EthLen : o+EthLen]
		if t := uint16(d[12]) | uint16(d[13])<<8; t == wireQ || t == wireAD {
			d[14] = byte(w)
			d[15] = byte(w >> 8)
		} else {
			untagged++
		}
	}
	return len(fr), untagged
}

// SetTCIBatch is Parser.SetTCIBatch with the standard TPIDs.
func SetTCIBatch(b *frame.Batch, tci TCI) int { return std.SetTCIBatch(b, tci) }

// ParseBatch is Parser.ParseBatch with the standard TPIDs.
func ParseBatch(b *frame.Batch, hs []Header) int { return std.ParseBatch(b, hs) }
