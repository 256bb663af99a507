package dsa

import (
	"encoding/binary"

	"github.com/wirespeed/wirespeed/frame"
)

var be = binary.BigEndian

// The per-frame Tagger methods. Each built-in format is its own type (a codec embedded at offset
// 0, in its tag_*.go file), so a call of Tagger.Decode or Tagger.Encode lands directly in that
// format's method: one indirect call, no dispatch on the format and no second call. The method body
// is the format's common case written out, with the same checks and stores as the body of its
// batch loop (a shared function would not inline: a fast path costs 130-220 in the inliner's
// budget of 80); every other frame goes to decodeSlow/encodeSlow, i.e. the general per-frame code
// (decodeOne, encode), which also reports the exact error. The fast paths never decide anything
// the general code would decide differently: TestFastMatchesGeneral compares them on random and
// adversarial frames and descriptors, the fuzz targets on theirs.
//
// Concurrency: the tagger values are immutable and safe for concurrent use; each call works on
// the caller's frame only.

// builtin is implemented by the built-in taggers: their codec, for direct calls (Conduit,
// SwitchSide).
type builtin interface{ base() *codec }

func (c *codec) base() *codec { return c }

// decodeSlow is Decode through the general code.
//
//go:noinline
func (c *codec) decodeSlow(b *frame.Batch, i int, in *Info) error {
	return c.decodeOne(b.Mem, &b.Frames[i], in).Err()
}

// encodeSlow is Encode through the general code.
//
//go:noinline
func (c *codec) encodeSlow(b *frame.Batch, i int, d Dest) error {
	return c.encode(b.Mem, &b.Frames[i], d).Err()
}

// taggers holds the Tagger of every codecs entry, in the same order.
var taggers = func() (ts [len(codecs)]Tagger) {
	for i := range codecs {
		if mk := codecs[i].fm.tagger; mk != nil {
			ts[i] = mk(codecs[i])
		} else {
			ts[i] = &tGeneric{codecs[i]}
		}
	}
	return ts
}()

// tGeneric is the Tagger of a format without per-frame fast paths: every call takes the general
// code.
type tGeneric struct{ codec }

func (t *tGeneric) Decode(b *frame.Batch, i int, in *Info) error { return t.decodeSlow(b, i, in) }
func (t *tGeneric) Encode(b *frame.Batch, i int, d Dest) error   { return t.encodeSlow(b, i, d) }

// ---- Decode ----
//
// The helpers below select what the fast paths take: a frame holding minFrame+n bytes whose
// headroom (tailroom) can grow by n, with the bytes read inside the arena. They are small enough
// to inline; the checks are the batch loops' (one compare each, the arena bound against a
// constant length), so the compiler drops its own bounds checks.

// headOK reports that a frame whose Len|Head<<16 word is lh holds at least minFrame+n bytes and
// that its headroom can take n more. The caller also checks that the bytes it reads, b.Mem[o:o+k]
// with k constant, lie in the arena (one compare against len(b.Mem)-k: no bounds check left).
func headOK(lh, n uint32) bool { return uint16(lh) >= minFrame+uint16(n) && lh < (0x10000-n)<<16 }

// tailOK reports that f holds at least minFrame+n bytes and that its tailroom can take n more.
func tailOK(f *frame.Frame, n uint16) bool { return f.Len >= minFrame+n && f.Tail <= 0xffff-n }

// pull takes n bytes off the front of f (lh is its Len|Head<<16 word).
func pull(f *frame.Frame, lh, n uint32) {
	f.Off += n
	setLenHead(f, lh+n<<16-n)
}

// trim takes n bytes off the end of f.
func trim(f *frame.Frame, n uint16) {
	f.Len -= n
	f.Tail += n
}

// ---- Encode ----
//
// The fast paths take a valid Dest of the common shape (one port, or a mask where the format
// carries one, no flag that changes the tag's layout) and a frame with room for the tag that
// needs no padding beyond what the batch loops do; everything else, including every error, goes
// to encodeSlow.

// one reports that p is a single port within mask; some that p is a non-empty subset of mask.
func one(p, mask PortMask) bool  { return p != 0 && p&^mask == 0 && p&(p-1) == 0 }
func some(p, mask PortMask) bool { return p != 0 && p&^mask == 0 }

// pushOK reports that a frame whose Len|Head<<16 word is lh holds at least min bytes, its
// headroom holds n bytes and its length can grow by n. The caller also checks n <= o <= len-k.
func pushOK(lh, n uint32, min uint16) bool {
	return lh >= n<<16 && uint16(lh) >= min && uint16(lh) <= 0xffff-uint16(n)
}

// push moves the start of f n bytes toward the head.
func push(f *frame.Frame, lh, n uint32) {
	f.Off -= n
	setLenHead(f, lh-n<<16+n)
}

// appendOK reports that a frame of l bytes (tailroom tl) needs no padding to 60 bytes and can take
// n more bytes at its end.
func appendOK(l, tl, n uint16) bool { return l >= 60 && tl >= n && l <= 0xffff-n }

// sa4 inserts the big-endian tag w after the source MAC of f (checked: n <= o <= len(mem)-12).
func sa4(mem []byte, f *frame.Frame, o int64, lh, w uint32) {
	q := mem[o-4 : o+12 : o+12]
	*(*[12]byte)(q[0:12]) = *(*[12]byte)(q[4:16]) // MACs
	be.PutUint32(q[12:16], w)
	push(f, lh, 4)
}
