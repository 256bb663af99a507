package vlan

import (
	"encoding/binary"
	"math/bits"

	"github.com/wirespeed/wirespeed/frame"
)

// The per-frame functions (Parse, Push, Pop, SetTCI and the Parser methods) inline into their
// caller with their common case, and call a general function for everything else.
//
// Go inlines a function whose body costs at most 80 IR nodes, and charges 57 for a call to a
// function it does not inline: a fast path plus a call to the general path does not fit. It charges
// only 17 for a call through a function-typed parameter, since inlining may reveal a constant there;
// once the caller passes a constant function, that call is inlined in turn if the function's own
// body fits 80. So each per-frame function is written as three pieces:
//
//   - the exported function (cost ~60): passes its arguments, the fast function and the general
//     function to a small dispatcher;
//   - the dispatcher (xxxVia): calls fast, and the general function when fast reports false, both
//     through parameters;
//   - the fast function (xxxStd, no call, at most 80): the common case; it reports false, having
//     changed nothing, for any frame it does not handle.
//
// At the call site the three collapse into the fast path inline and one (indirect) call to the
// general function on the rare path. The general function is the complete implementation: fast
// functions only ever shortcut it (the tests compare both on random and adversarial frames, and
// check that a fast function that declines changes nothing). A caller so big that Go restricts
// inlining into it (5000 nodes) gets an ordinary call to the exported function, which still has the
// fast path inlined inside.
//
// Where the compiler does not merge byte loads (32-bit ARM, MIPS, riscv64, wasm), encoding/binary's
// calls cost more and some leaf pieces exceed the budget: they stay calls, through the function
// parameters, so indirect. Correct and allocation-free there too (TestZeroAllocs; GOARCH=386 runs
// the tests on this machine), but not measured: on those targets a per-frame call may cost more
// than the plain call to the general path it replaced. Under -gcflags=-l (debug builds) the
// dispatchers are not inlined either, and Parse's *Header escapes: one allocation per call.
//
// With extra TPIDs (Parser.n != 0) the dispatchers skip the fast function: the fast functions know
// only 0x8100 and 0x88a8. The package-level functions pass n as the constant 0, so no check remains.
//
// A fast function slices the arena at the frame's offset with a constant length and relies on the
// slice's own bounds check: for a valid descriptor (frame.Frame: headroom,
// bytes and tailroom inside the arena) it never fails; for an invalid one it panics where the
// general path would too, or works on the header bytes that lie inside the arena.

// parseVia is Parse's dispatcher.
func parseVia(n int, p *Parser, b []byte, h *Header, fast func([]byte, *Header) bool, slow func(*Parser, []byte, *Header) error) error {
	if n == 0 && fast(b, h) {
		return nil
	}
	return slow(p, b, h)
}

// parseStd parses a frame of at least 22 bytes with the standard TPIDs: untagged, one tag or QinQ
// (shorter frames take the general path). It is three pieces for the inlining budget, each handing
// on to the next through a parameter (parseUntagged, parseDot1Q, parseQinQ). The words at bytes 12
// and 16 are each loaded once (binary.BigEndian.Uint32) and handed on: a second, narrower read of
// the same bytes would share byte loads with the first and keep the compiler from merging either
// into one load. The pieces that take a function parameter do no load of their own, so that their
// inlining cost is the same on every target: were one not inlined, its parameter would be an
// unknown function and its pointer arguments would escape (TestZeroAllocs).
func parseStd(b []byte, h *Header) bool {
	return len(b) >= EthLen+HeaderLen && parseUntagged(binary.BigEndian.Uint32(b[macLen:]), b, h, parseTagged)
}

// parseUntagged is parseStd's untagged case; x is the word at byte 12.
func parseUntagged(x uint32, b []byte, h *Header, tagged func([]byte, *Header, uint32) bool) bool {
	if t := uint16(x >> 16); t != TPID8021Q && t != TPID8021AD {
		*h = Header{EtherType: t, Len: frame.EtherLen}
		return true
	}
	return tagged(b, h, x)
}

// parseTagged is parseStd for a frame whose first type (in x, the word at byte 12) is a standard
// TPID.
func parseTagged(b []byte, h *Header, x uint32) bool {
	return parseDot1Q(x, binary.BigEndian.Uint32(b[EthLen-2:]), b, h, parseQinQ)
}

// The header is stored field by field: a literal holding a load from b would be built on the stack
// and copied (the compiler cannot tell whether h overlaps b), which stalls the loads that read h
// next. A tag's word (TPID<<16 | TCI) is stored with one rotate and one 4-byte store on a
// little-endian machine.

// parseDot1Q is parseStd's one-tag case; x and y are the words at bytes 12 and 16.
func parseDot1Q(x, y uint32, b []byte, h *Header, qinq func([]byte, *Header, uint32, uint32) bool) bool {
	if t := uint16(y >> 16); t != TPID8021Q && t != TPID8021AD {
		h.Inner = Tag{}
		h.EtherType = t
		if fastMem {
			putOuter(h, bits.RotateLeft32(x, 16))
		} else {
			h.Outer = Tag{uint16(x >> 16), TCI(x)}
		}
		h.N, h.Len = 1, EthLen
		return true
	}
	return qinq(b, h, x, y)
}

// parseQinQ is parseStd's two-tag case; x and y are the words at bytes 12 and 16.
func parseQinQ(b []byte, h *Header, x, y uint32) bool {
	if fastMem {
		putOuter(h, bits.RotateLeft32(x, 16))
		putInner(h, bits.RotateLeft32(y, 16))
	} else {
		h.Outer, h.Inner = Tag{uint16(x >> 16), TCI(x)}, Tag{uint16(y >> 16), TCI(y)}
	}
	h.EtherType = binary.BigEndian.Uint16(b[EthLen+2:])
	h.N, h.Len = 2, EthLen+HeaderLen
	return true
}

// pushVia is Push's dispatcher.
func pushVia(b *frame.Batch, i int, t Tag, fast func(*frame.Batch, int, Tag) bool, slow func(*frame.Batch, int, Tag) error) error {
	if fast(b, i, t) {
		return nil
	}
	return slow(b, i, t)
}

// pushStd pushes t onto frame i when it has no out-of-band tag, 12 to 65531 bytes and at least 4
// bytes of headroom. It is two pieces (pushCheck, pushMove) for the inlining budget.
func pushStd(b *frame.Batch, i int, t Tag) bool { return pushCheck(b.Mem, &b.Frames[i], t, pushMove) }

// pushCheck is pushStd's descriptor check.
func pushCheck(mem []byte, f *frame.Frame, t Tag, move func([]byte, *frame.Frame, Tag) bool) bool {
	// f.Len-12 wraps for Len < 12, and Len+4 must fit a uint16.
	if f.Flags&frame.FlagVLAN != 0 || f.Len-macLen > 0xffff-HeaderLen-macLen || f.Head < HeaderLen {
		return false
	}
	return move(mem, f, t)
}

// pushMove is pushStd's byte move, for a frame pushCheck accepted.
func pushMove(mem []byte, f *frame.Frame, t Tag) bool {
	s := int(f.Off) - HeaderLen // >= 0 since Off >= Head >= 4 (else the slice expression panics)
	d := mem[s : s+macLen+HeaderLen : s+macLen+HeaderLen]
	copy(d[:macLen], d[HeaderLen:]) // one 8-byte and one 4-byte load, then the stores
	binary.BigEndian.PutUint32(d[macLen:], uint32(t.TPID)<<16|uint32(t.TCI))
	f.Off -= HeaderLen
	if fastMem { // Len += 4, Head -= 4 as one add: no carry or borrow (checked by pushCheck)
		*word32(&f.Len) -= HeaderLen<<16 - HeaderLen
	} else {
		f.Len += HeaderLen
		f.Head -= HeaderLen
	}
	return true
}

// popVia is Pop's dispatcher.
func popVia(n int, p *Parser, b *frame.Batch, i int, fast func(int, *frame.Batch, int) (Tag, bool), slow func(*Parser, *frame.Batch, int) (Tag, error)) (t Tag, err error) {
	t, ok := fast(n, b, i)
	if !ok {
		t, err = slow(p, b, i)
	}
	return t, err
}

// popStd pops the outer tag of frame i when n is 0 (the standard TPIDs) and the frame has no
// out-of-band tag, at least 64 bytes (so no padding) and headroom that stays below 65536, and its
// outer tag a standard TPID. It is two pieces (popCheck, popMove) for the inlining budget.
func popStd(n int, b *frame.Batch, i int) (Tag, bool) {
	return popCheck(n, b.Mem, &b.Frames[i], popMove)
}

// popCheck is popStd's descriptor check.
func popCheck(n int, mem []byte, f *frame.Frame, move func([]byte, *frame.Frame) (Tag, bool)) (Tag, bool) {
	if n == 0 && f.Flags&frame.FlagVLAN == 0 && f.Len >= frame.MinEthernetLen+HeaderLen && f.Head <= 0xffff-HeaderLen {
		return move(mem, f)
	}
	return Tag{}, false
}

// popMove is popStd's tag check and byte move, for a frame popCheck accepted.
func popMove(mem []byte, f *frame.Frame) (Tag, bool) {
	o := int(f.Off)
	d := mem[o : o+EthLen : o+EthLen]
	if x := binary.BigEndian.Uint32(d[macLen:]); x>>16 == uint32(TPID8021Q) || x>>16 == uint32(TPID8021AD) {
		copy(d[HeaderLen:EthLen-2], d[:macLen]) // one 8-byte and one 4-byte load, then the stores
		f.Off += HeaderLen
		if fastMem { // Len -= 4, Head += 4 as one add: no borrow or carry (checked by popCheck)
			*word32(&f.Len) += HeaderLen<<16 - HeaderLen
		} else {
			f.Len -= HeaderLen
			f.Head += HeaderLen
		}
		return Tag{uint16(x >> 16), TCI(x)}, true
	}
	return Tag{}, false
}

// setTCIVia is SetTCI's dispatcher.
func setTCIVia(n int, p *Parser, b *frame.Batch, i int, tci TCI, fast func(*frame.Batch, int, TCI) bool, slow func(*Parser, *frame.Batch, int, TCI) error) error {
	if n == 0 && fast(b, i, tci) {
		return nil
	}
	return slow(p, b, i, tci)
}

// The standard TPIDs as a little-endian load of their wire bytes sees them.
const (
	wireQ  = TPID8021Q>>8 | TPID8021Q&0xff<<8
	wireAD = TPID8021AD>>8 | TPID8021AD&0xff<<8
)

// setTCIStd rewrites the TCI of frame i when its outer tag has a standard TPID and is in the bytes.
func setTCIStd(b *frame.Batch, i int, tci TCI) bool {
	f := &b.Frames[i]
	if f.Flags&frame.FlagVLAN != 0 || f.Len < EthLen {
		return false
	}
	o := int(f.Off)
	d := b.Mem[o : o+EthLen : o+EthLen]
	if t := binary.LittleEndian.Uint16(d[macLen:]); t != wireQ && t != wireAD { // TPIDs in wire order: no swap
		return false
	}
	binary.BigEndian.PutUint16(d[macLen+2:], uint16(tci))
	return true
}
