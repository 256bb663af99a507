package dsa

import (
	"encoding/binary"
	"math/bits"

	"github.com/wirespeed/wirespeed/frame"
)

var be = binary.BigEndian

// The per-frame Tagger methods. Each built-in format is its own type (a codec embedded at offset
// 0), so a call of Tagger.Decode or Tagger.Encode lands directly in that format's method: one
// indirect call, no switch on the kind and no second call. The method body is the format's
// common case written out, with the same checks and stores as the body of its batch loop
// (batch.go; a shared function would not inline: a fast path costs 130-220 in the inliner's budget
// of 80); every other frame goes to decodeSlow/encodeSlow, i.e. the general per-frame code
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

type (
	tNone        struct{ codec }
	tDSA         struct{ codec }
	tEDSA        struct{ codec }
	tBrcm        struct{ codec }
	tBrcmPrepend struct{ codec }
	tQCA         struct{ codec }
	tMTK         struct{ codec }
	tKSZ8795     struct{ codec }
	tKSZ9477     struct{ codec }
	tKSZ9893     struct{ codec }
	tLAN937x     struct{ codec }
	tRTL4A       struct{ codec }
	tRTL84       struct{ codec }
	tRTL84T      struct{ codec }
	t8021Q       struct{ codec }
	tAR9331      struct{ codec }
	tGSWIP       struct{ codec }
	tHellcreek   struct{ codec }
	tLAN9303     struct{ codec }
	tTrailer     struct{ codec }
)

// wrap returns the Tagger of c's format.
func wrap(c codec) Tagger {
	switch c.kind {
	case kNone:
		return &tNone{c}
	case kDSA:
		return &tDSA{c}
	case kEDSA:
		return &tEDSA{c}
	case kBrcm:
		return &tBrcm{c}
	case kBrcmPrepend:
		return &tBrcmPrepend{c}
	case kQCA:
		return &tQCA{c}
	case kMTK:
		return &tMTK{c}
	case kKSZ8795:
		return &tKSZ8795{c}
	case kKSZ9477:
		return &tKSZ9477{c}
	case kKSZ9893:
		return &tKSZ9893{c}
	case kLAN937x:
		return &tLAN937x{c}
	case kRTL4A:
		return &tRTL4A{c}
	case kRTL84:
		return &tRTL84{c}
	case kRTL84T:
		return &tRTL84T{c}
	case k8021Q:
		return &t8021Q{c}
	case kAR9331:
		return &tAR9331{c}
	case kGSWIP:
		return &tGSWIP{c}
	case kHellcreek:
		return &tHellcreek{c}
	case kLAN9303:
		return &tLAN9303{c}
	case kTrailer:
		return &tTrailer{c}
	}
	panic("dsa: no Tagger type for format " + c.spec.Name)
}

// taggers holds the Tagger of every codecs entry, in the same order.
var taggers = func() (ts [len(codecs)]Tagger) {
	for i := range codecs {
		ts[i] = wrap(codecs[i])
	}
	return ts
}()

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

func (t *tNone) Decode(b *frame.Batch, i int, in *Info) error {
	if b.Frames[i].Len >= minFrame {
		*in = Info{}
		return nil
	}
	return t.decodeSlow(b, i, in)
}

// Decode: FORWARD (cmd 3), not tagged, not from a trunk: b12 & 0xe0 == 0xc0, b13 & 0x04 == 0;
// switch b12[4:0], port b13[7:3].
func (t *tDSA) Decode(b *frame.Batch, i int, in *Info) error {
	f := &b.Frames[i]
	if o, lh := int64(f.Off), lenHead(f); headOK(lh, 4) && o <= int64(len(b.Mem))-16 {
		h := b.Mem[o : o+16 : o+16]
		if t := le.Uint16(h[12:14]); t&0x04e0 == 0x00c0 {
			*in = Info{Port: t >> 11, Switch: uint8(t) & 0x1f, TagLen: 4}
			*(*[12]byte)(h[4:16]) = *(*[12]byte)(h[0:12]) // MACs
			pull(f, lh, 4)
			return nil
		}
	}
	return t.decodeSlow(b, i, in)
}

// Decode: 0xDADA at b12-13, then the dsa fast tag at b16-19.
func (t *tEDSA) Decode(b *frame.Batch, i int, in *Info) error {
	f := &b.Frames[i]
	if o, lh := int64(f.Off), lenHead(f); headOK(lh, 8) && o <= int64(len(b.Mem))-20 {
		h := b.Mem[o : o+20 : o+20]
		if t := le.Uint16(h[16:18]); le.Uint16(h[12:14]) == 0xdada && t&0x04e0 == 0x00c0 {
			*in = Info{Port: t >> 11, Switch: uint8(t) & 0x1f, TagLen: 8}
			*(*[12]byte)(h[8:20]) = *(*[12]byte)(h[0:12]) // MACs
			pull(f, lh, 8)
			return nil
		}
	}
	return t.decodeSlow(b, i, in)
}

// Decode: opcode b12[7:5] == 0, reason code b14[7:6] == 0; port b15[4:0], code b14.
func (t *tBrcm) Decode(b *frame.Batch, i int, in *Info) error {
	f := &b.Frames[i]
	if o, lh := int64(f.Off), lenHead(f); headOK(lh, 4) && o <= int64(len(b.Mem))-16 {
		h := b.Mem[o : o+16 : o+16]
		if le.Uint32(h[12:16])&0xc000e0 == 0 {
			*in = Info{Port: uint16(h[15] & 0x1f), TagLen: 4, Code: h[14]}
			*(*[12]byte)(h[4:16]) = *(*[12]byte)(h[0:12]) // MACs
			pull(f, lh, 4)
			return nil
		}
	}
	return t.decodeSlow(b, i, in)
}

// Decode: the brcm tag in front of the DA.
func (t *tBrcmPrepend) Decode(b *frame.Batch, i int, in *Info) error {
	f := &b.Frames[i]
	if o, lh := int64(f.Off), lenHead(f); headOK(lh, 4) && o <= int64(len(b.Mem))-4 {
		h := b.Mem[o : o+4 : o+4]
		if le.Uint32(h[0:4])&0xc000e0 == 0 {
			*in = Info{Port: uint16(h[3] & 0x1f), TagLen: 4, Code: h[2]}
			pull(f, lh, 4)
			return nil
		}
	}
	return t.decodeSlow(b, i, in)
}

// Decode: BE16 at b12: version[15:14] == 2, type[10:6] not 1 or 2 (management), port[2:0].
func (t *tQCA) Decode(b *frame.Batch, i int, in *Info) error {
	f := &b.Frames[i]
	if o, lh := int64(f.Off), lenHead(f); headOK(lh, 2) && o <= int64(len(b.Mem))-14 {
		h := b.Mem[o : o+14 : o+14]
		t := uint16(h[12])<<8 | uint16(h[13])
		if code := uint8(t>>6) & 0x1f; t>>14 == 2 && code-1 > 1 {
			*in = Info{Port: t & 7, TagLen: 2, Code: code}
			*(*[12]byte)(h[2:14]) = *(*[12]byte)(h[0:12]) // MACs
			pull(f, lh, 2)
			return nil
		}
	}
	return t.decodeSlow(b, i, in)
}

// Decode: port b13[2:0]; Linux checks nothing else.
func (t *tMTK) Decode(b *frame.Batch, i int, in *Info) error {
	f := &b.Frames[i]
	if o, lh := int64(f.Off), lenHead(f); headOK(lh, 4) && o <= int64(len(b.Mem))-16 {
		h := b.Mem[o : o+16 : o+16]
		*in = Info{Port: uint16(h[13] & 7), TagLen: 4}
		*(*[12]byte)(h[4:16]) = *(*[12]byte)(h[0:12]) // MACs
		pull(f, lh, 4)
		return nil
	}
	return t.decodeSlow(b, i, in)
}

// Decode: one tail byte, port[1:0].
func (t *tKSZ8795) Decode(b *frame.Batch, i int, in *Info) error {
	f := &b.Frames[i]
	if e := int64(f.Off) + int64(f.Len); tailOK(f, 1) && e <= int64(len(b.Mem)) {
		w := le.Uint64(b.Mem[e-8 : e : e])
		*in = Info{TagLen: 1, Port: uint16(w>>56) & 3}
		trim(f, 1)
		return nil
	}
	return t.decodeSlow(b, i, in)
}

// Decode: hellcreek's tail byte is ksz8795's.
func (t *tHellcreek) Decode(b *frame.Batch, i int, in *Info) error {
	f := &b.Frames[i]
	if e := int64(f.Off) + int64(f.Len); tailOK(f, 1) && e <= int64(len(b.Mem)) {
		w := le.Uint64(b.Mem[e-8 : e : e])
		*in = Info{TagLen: 1, Port: uint16(w>>56) & 3}
		trim(f, 1)
		return nil
	}
	return t.decodeSlow(b, i, in)
}

// Decode: one tail byte, port[2:0]; bit 7 (a timestamp before it) takes the slow path.
func (t *tKSZ9477) Decode(b *frame.Batch, i int, in *Info) error {
	f := &b.Frames[i]
	if e := int64(f.Off) + int64(f.Len); tailOK(f, 1) && e <= int64(len(b.Mem)) {
		w := le.Uint64(b.Mem[e-8 : e : e])
		if t := byte(w >> 56); t&0x80 == 0 {
			*in = Info{TagLen: 1, Port: uint16(t & 7)}
			trim(f, 1)
			return nil
		}
	}
	return t.decodeSlow(b, i, in)
}

// Decode: as ksz9477 (ksz9477_rcv).
func (t *tKSZ9893) Decode(b *frame.Batch, i int, in *Info) error {
	f := &b.Frames[i]
	if e := int64(f.Off) + int64(f.Len); tailOK(f, 1) && e <= int64(len(b.Mem)) {
		w := le.Uint64(b.Mem[e-8 : e : e])
		if t := byte(w >> 56); t&0x80 == 0 {
			*in = Info{TagLen: 1, Port: uint16(t & 7)}
			trim(f, 1)
			return nil
		}
	}
	return t.decodeSlow(b, i, in)
}

// Decode: as ksz9477 (ksz9477_rcv).
func (t *tLAN937x) Decode(b *frame.Batch, i int, in *Info) error {
	f := &b.Frames[i]
	if e := int64(f.Off) + int64(f.Len); tailOK(f, 1) && e <= int64(len(b.Mem)) {
		w := le.Uint64(b.Mem[e-8 : e : e])
		if t := byte(w >> 56); t&0x80 == 0 {
			*in = Info{TagLen: 1, Port: uint16(t & 7)}
			trim(f, 1)
			return nil
		}
	}
	return t.decodeSlow(b, i, in)
}

// Decode: 0x8899 at b12-13, protocol b14[7:4] == 0xA; port b15.
func (t *tRTL4A) Decode(b *frame.Batch, i int, in *Info) error {
	f := &b.Frames[i]
	if o, lh := int64(f.Off), lenHead(f); headOK(lh, 4) && o <= int64(len(b.Mem))-16 {
		h := b.Mem[o : o+16 : o+16]
		if le.Uint32(h[12:16])&0xf0ffff == 0xa09988 {
			*in = Info{Port: uint16(h[15]), TagLen: 4}
			*(*[12]byte)(h[4:16]) = *(*[12]byte)(h[0:12]) // MACs
			pull(f, lh, 4)
			return nil
		}
	}
	return t.decodeSlow(b, i, in)
}

// Decode: 0x8899 0x04 at b12-14, REASON b15 (80, trapped, takes the slow path), port b19[3:0].
func (t *tRTL84) Decode(b *frame.Batch, i int, in *Info) error {
	f := &b.Frames[i]
	if o, lh := int64(f.Off), lenHead(f); headOK(lh, 8) && o <= int64(len(b.Mem))-20 {
		h := b.Mem[o : o+20 : o+20]
		if w := le.Uint32(h[12:16]); w&0xffffff == 0x049988 && w>>24 != 80 {
			*in = Info{Port: uint16(h[19] & 0xf), TagLen: 8, Code: uint8(w >> 24)}
			*(*[12]byte)(h[8:20]) = *(*[12]byte)(h[0:12]) // MACs
			pull(f, lh, 8)
			return nil
		}
	}
	return t.decodeSlow(b, i, in)
}

// Decode: the rtl8_4 tag as the last 8 bytes.
func (t *tRTL84T) Decode(b *frame.Batch, i int, in *Info) error {
	f := &b.Frames[i]
	if e := int64(f.Off) + int64(f.Len); tailOK(f, 8) && e <= int64(len(b.Mem)) {
		w := le.Uint64(b.Mem[e-8 : e : e])
		if code := uint8(w >> 24); w&0xffffff == 0x049988 && code != 80 {
			*in = Info{Port: uint16(w>>56) & 0xf, TagLen: 8, Code: code}
			trim(f, 8)
			return nil
		}
	}
	return t.decodeSlow(b, i, in)
}

// Decode: the tagger's TPID at b12-13, TCI at b14-15 with RSV (TCI[11:10]) == 3 and VBID (TCI
// 9, 5:4) == 0; switch TCI[8:6], port TCI[3:0].
func (t *t8021Q) Decode(b *frame.Batch, i int, in *Info) error {
	f := &b.Frames[i]
	if o, lh := int64(f.Off), lenHead(f); headOK(lh, 4) && o <= int64(len(b.Mem))-16 {
		h := b.Mem[o : o+16 : o+16]
		if w := be32(h[12:16]); w&^(0xf000|0x1c0|0xf) == uint32(t.tpid)<<16|0x0c00 {
			tci := uint16(w)
			*in = Info{Port: tci & 0xf, Switch: uint8(tci>>6) & 7, TagLen: 4, TCI: tci}
			*(*[12]byte)(h[4:16]) = *(*[12]byte)(h[0:12]) // MACs
			pull(f, lh, 4)
			return nil
		}
	}
	return t.decodeSlow(b, i, in)
}

// Decode: LE16 before the DA: version[15:14] == 1, FROM_CPU bit 6 clear; port[3:0].
func (t *tAR9331) Decode(b *frame.Batch, i int, in *Info) error {
	f := &b.Frames[i]
	if o, lh := int64(f.Off), lenHead(f); headOK(lh, 2) && o <= int64(len(b.Mem))-2 {
		h := b.Mem[o : o+2 : o+2]
		if t := le.Uint16(h[0:2]); t&0xc040 == 0x4000 {
			*in = Info{Port: t & 0xf, TagLen: 2}
			pull(f, lh, 2)
			return nil
		}
	}
	return t.decodeSlow(b, i, in)
}

// Decode: 8 bytes before the DA, port b7[6:4]; Linux checks nothing else.
func (t *tGSWIP) Decode(b *frame.Batch, i int, in *Info) error {
	f := &b.Frames[i]
	if o, lh := int64(f.Off), lenHead(f); headOK(lh, 8) && o <= int64(len(b.Mem))-8 {
		h := b.Mem[o : o+8 : o+8]
		*in = Info{Port: uint16(h[7]>>4) & 7, TagLen: 8}
		pull(f, lh, 8)
		return nil
	}
	return t.decodeSlow(b, i, in)
}

// Decode: 0x8100 at b12-13; VID bits 3 and 4 (trapped) take the slow path; port VID[1:0].
func (t *tLAN9303) Decode(b *frame.Batch, i int, in *Info) error {
	f := &b.Frames[i]
	if o, lh := int64(f.Off), lenHead(f); headOK(lh, 4) && o <= int64(len(b.Mem))-16 {
		h := b.Mem[o : o+16 : o+16]
		if le.Uint32(h[12:16])&(0x18<<24|0xffff) == 0x0081 {
			*in = Info{Port: uint16(h[15] & 3), TagLen: 4, Code: h[15]}
			*(*[12]byte)(h[4:16]) = *(*[12]byte)(h[0:12]) // MACs
			pull(f, lh, 4)
			return nil
		}
	}
	return t.decodeSlow(b, i, in)
}

// Decode: 0x80, port[2:0] (other bits 0), 0x00 or 0x10, 0x00 as the last 4 bytes.
func (t *tTrailer) Decode(b *frame.Batch, i int, in *Info) error {
	f := &b.Frames[i]
	if e := int64(f.Off) + int64(f.Len); tailOK(f, 4) && e <= int64(len(b.Mem)) {
		w := le.Uint64(b.Mem[e-8 : e : e])
		if w := uint32(w >> 32); w&0xffeff8ff == 0x80 {
			*in = Info{Port: uint16(w>>8) & 7, TagLen: 4}
			trim(f, 4)
			return nil
		}
	}
	return t.decodeSlow(b, i, in)
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

func (t *tNone) Encode(b *frame.Batch, i int, d Dest) error {
	if d.Ports&^1 == 0 && b.Frames[i].Len >= minFrame {
		return nil
	}
	return t.encodeSlow(b, i, d)
}

// mvTag is mvTxWord for a single port (ports != 0), from the fields (a Dest handed to an inlined
// function is copied through memory), without branches: cmd FROM_CPU (1) or FORWARD (3) in bits
// 31-30, the switch in 28-24, the port in 23-19, VID 0 or 4095 (bridged).
func mvTag(ports PortMask, sw uint8, fl DestFlags) uint32 {
	return 1<<30 | uint32(fl&DestForward)<<31 | uint32(sw)<<24 | uint32(bits.TrailingZeros32(uint32(ports)))<<19 |
		-uint32(fl>>1&1)&mvVIDBridged
}

// Encode: an untagged frame (no 802.1Q tag in its bytes or out of band): the MAC addresses move 4
// bytes toward the head and the FROM_CPU (FORWARD) tag takes their place.
func (t *tDSA) Encode(b *frame.Batch, i int, d Dest) error {
	f := &b.Frames[i]
	if o, lh := int64(f.Off), lenHead(f); one(d.Ports, ^PortMask(0)) && d.Switch <= 0x1f && f.Flags&frame.FlagVLAN == 0 &&
		pushOK(lh, 4, minFrame) && o >= 4 && o <= int64(len(b.Mem))-14 {
		q := b.Mem[o-4 : o+14 : o+14]
		if le.Uint16(q[16:18]) != 0x0081 {
			*(*[12]byte)(q[0:12]) = *(*[12]byte)(q[4:16]) // MACs
			be.PutUint32(q[12:16], mvTag(d.Ports, d.Switch, d.Flags))
			push(f, lh, 4)
			return nil
		}
	}
	return t.encodeSlow(b, i, d)
}

// Encode: as dsa, with 0xDADA 0x0000 in front of the tag.
func (t *tEDSA) Encode(b *frame.Batch, i int, d Dest) error {
	f := &b.Frames[i]
	if o, lh := int64(f.Off), lenHead(f); one(d.Ports, ^PortMask(0)) && d.Switch <= 0x1f && f.Flags&frame.FlagVLAN == 0 &&
		pushOK(lh, 8, minFrame) && o >= 8 && o <= int64(len(b.Mem))-14 {
		q := b.Mem[o-8 : o+14 : o+14]
		if le.Uint16(q[20:22]) != 0x0081 {
			*(*[12]byte)(q[0:12]) = *(*[12]byte)(q[8:20]) // MACs
			le.PutUint32(q[12:16], 0xdada)
			be.PutUint32(q[16:20], mvTag(d.Ports, d.Switch, d.Flags))
			push(f, lh, 8)
			return nil
		}
	}
	return t.encodeSlow(b, i, d)
}

// brcmTag is the brcm ingress tag's little-endian image: b0 = opcode 1 <<5 | TC<<2, b1 = 0, b2.0 =
// port 8, b3 = ports 7-0 (ports within 0x1ff: port 8 shifts out of the first term, ports 7-0 out
// of the second).
func brcmTag(ports PortMask, prio uint8) uint32 {
	return uint32(1<<5|(prio&7)<<2) | uint32(ports)<<24 | uint32(ports>>8)<<16
}

// brcmPad pads a frame of 60-63 bytes (l, tailroom tl, bytes at q[4:4+l]) to 64 bytes with one
// 4-byte zero store (the bytes past 64 it writes are tailroom) and returns the Len|Head<<16 word
// lh with the new length; longer frames are left alone.
func brcmPad(q *[72]byte, f *frame.Frame, l, tl uint16, lh uint32) uint32 {
	if l < 64 {
		le.PutUint32(q[4+l&63:], 0)
		f.Tail = tl + l - 64
		lh = lh&^0xffff | 64
	}
	return lh
}

// Encode pads to 64 bytes (a frame of 60-63 bytes takes one 4-byte zero store into its tailroom,
// a shorter one the slow path), then inserts the tag after the source MAC. One bound for the head
// and the pad: the 68 bytes from the frame's start lie in the arena (a frame of 64-67 bytes at the
// very end of the arena takes the slow path).
func (t *tBrcm) Encode(b *frame.Batch, i int, d Dest) error {
	f := &b.Frames[i]
	if o, lh, tl := int64(f.Off), lenHead(f), f.Tail; some(d.Ports, 0x1ff) && pushOK(lh, 4, 60) && o >= 4 &&
		o <= int64(len(b.Mem))-68 && (uint16(lh) >= 64 || tl >= 4) {
		q := (*[72]byte)(b.Mem[o-4 : o+68 : o+68])
		lh = brcmPad(q, f, uint16(lh), tl, lh)
		*(*[12]byte)(q[0:12]) = *(*[12]byte)(q[4:16]) // MACs
		le.PutUint32(q[12:16], brcmTag(d.Ports, d.Prio))
		push(f, lh, 4)
		return nil
	}
	return t.encodeSlow(b, i, d)
}

// Encode pads as brcm, then puts the tag in front of the frame.
func (t *tBrcmPrepend) Encode(b *frame.Batch, i int, d Dest) error {
	f := &b.Frames[i]
	if o, lh, tl := int64(f.Off), lenHead(f), f.Tail; some(d.Ports, 0x1ff) && pushOK(lh, 4, 60) && o >= 4 &&
		o <= int64(len(b.Mem))-68 && (uint16(lh) >= 64 || tl >= 4) {
		q := (*[72]byte)(b.Mem[o-4 : o+68 : o+68])
		lh = brcmPad(q, f, uint16(lh), tl, lh)
		le.PutUint32(q[0:4], brcmTag(d.Ports, d.Prio))
		push(f, lh, 4)
		return nil
	}
	return t.encodeSlow(b, i, d)
}

// Encode: BE16 version 2 <<14 | priority[13:11] | FROM_CPU bit 7 | port mask[6:0] after the
// source MAC.
func (t *tQCA) Encode(b *frame.Batch, i int, d Dest) error {
	f := &b.Frames[i]
	if o, lh := int64(f.Off), lenHead(f); some(d.Ports, 0x7f) && pushOK(lh, 2, minFrame) && o >= 2 && o <= int64(len(b.Mem))-12 {
		q := b.Mem[o-2 : o+12 : o+12]
		*(*[12]byte)(q[0:12]) = *(*[12]byte)(q[2:14]) // MACs
		be.PutUint16(q[12:14], uint16(2)<<14|uint16(d.Prio&7)<<11|1<<7|uint16(d.Ports))
		push(f, lh, 2)
		return nil
	}
	return t.encodeSlow(b, i, d)
}

// Encode: a frame with no VLAN tag (in its bytes or out of band), and without DestPad, gets
// b0 = 0 (untagged), b1 = port mask, b2-b3 = 0 after the source MAC.
func (t *tMTK) Encode(b *frame.Batch, i int, d Dest) error {
	f := &b.Frames[i]
	if o, lh := int64(f.Off), lenHead(f); some(d.Ports, 0x3f) && f.Flags&frame.FlagVLAN == 0 && d.Flags&DestPad == 0 &&
		pushOK(lh, 4, minFrame) && o >= 4 && o <= int64(len(b.Mem))-14 {
		q := b.Mem[o-4 : o+14 : o+14]
		if et := le.Uint16(q[16:18]); et != 0x0081 && et != 0xa888 {
			*(*[12]byte)(q[0:12]) = *(*[12]byte)(q[4:16]) // MACs
			le.PutUint32(q[12:16], uint32(d.Ports)<<8)
			push(f, lh, 4)
			return nil
		}
	}
	return t.encodeSlow(b, i, d)
}

// tail1 appends v, or vll for a link-local destination, to frame f (e = its end in mem).
func tail1(mem []byte, f *frame.Frame, o, e int64, v, vll byte) {
	if linkLocalLE(le.Uint64(mem[o : o+8 : o+8])) {
		v = vll
	}
	mem[e] = v
	f.Len++
	f.Tail--
}

// Encode: mask | override bit 6 for a link-local destination.
func (t *tKSZ8795) Encode(b *frame.Batch, i int, d Dest) error {
	f := &b.Frames[i]
	if o, l := int64(f.Off), f.Len; some(d.Ports, 0x1f) && appendOK(l, f.Tail, 1) && o+int64(l) < int64(len(b.Mem)) {
		tail1(b.Mem, f, o, o+int64(l), byte(d.Ports), byte(d.Ports)|1<<6)
		return nil
	}
	return t.encodeSlow(b, i, d)
}

// Encode: mask[2:0] | prio[4:3] | override bit 5; the timestamp field (DestTimestamp) takes the
// slow path.
func (t *tKSZ9893) Encode(b *frame.Batch, i int, d Dest) error {
	f := &b.Frames[i]
	if o, l := int64(f.Off), f.Len; some(d.Ports, 7) && d.Flags&DestTimestamp == 0 && appendOK(l, f.Tail, 1) && o+int64(l) < int64(len(b.Mem)) {
		v := byte(d.Ports) | (d.Prio&3)<<3
		tail1(b.Mem, f, o, o+int64(l), v, v|1<<5)
		return nil
	}
	return t.encodeSlow(b, i, d)
}

// Encode: one byte, BIT(port).
func (t *tHellcreek) Encode(b *frame.Batch, i int, d Dest) error {
	f := &b.Frames[i]
	if e, l := int64(f.Off)+int64(f.Len), f.Len; one(d.Ports, 0xf) && appendOK(l, f.Tail, 1) && e < int64(len(b.Mem)) {
		b.Mem[e] = byte(d.Ports)
		f.Len++
		f.Tail--
		return nil
	}
	return t.encodeSlow(b, i, d)
}

// tail2 appends the big-endian v, or vll for a link-local destination, to frame f.
func tail2(mem []byte, f *frame.Frame, o, e int64, v, vll uint16) {
	if linkLocalLE(le.Uint64(mem[o : o+8 : o+8])) {
		v = vll
	}
	be.PutUint16(mem[e:e+2:e+2], v)
	f.Len += 2
	f.Tail -= 2
}

// Encode: BE16 mask[6:0] | prio[8:7] | override bit 9; DestTimestamp takes the slow path.
func (t *tKSZ9477) Encode(b *frame.Batch, i int, d Dest) error {
	f := &b.Frames[i]
	if o, l := int64(f.Off), f.Len; some(d.Ports, 0x7f) && d.Flags&DestTimestamp == 0 && appendOK(l, f.Tail, 2) && o+int64(l) <= int64(len(b.Mem))-2 {
		v := uint16(d.Ports) | uint16(d.Prio&3)<<7
		tail2(b.Mem, f, o, o+int64(l), v, v|1<<9)
		return nil
	}
	return t.encodeSlow(b, i, d)
}

// Encode: BE16 mask[7:0] | prio[10:8] | override bit 11 | valid bit 13; DestTimestamp takes the
// slow path.
func (t *tLAN937x) Encode(b *frame.Batch, i int, d Dest) error {
	f := &b.Frames[i]
	if o, l := int64(f.Off), f.Len; some(d.Ports, 0xff) && d.Flags&DestTimestamp == 0 && appendOK(l, f.Tail, 2) && o+int64(l) <= int64(len(b.Mem))-2 {
		v := uint16(d.Ports) | uint16(d.Prio&7)<<8 | 1<<13
		tail2(b.Mem, f, o, o+int64(l), v, v|1<<11)
		return nil
	}
	return t.encodeSlow(b, i, d)
}

// sa4 inserts the big-endian tag w after the source MAC of f (checked: n <= o <= len(mem)-12).
func sa4(mem []byte, f *frame.Frame, o int64, lh, w uint32) {
	q := mem[o-4 : o+12 : o+12]
	*(*[12]byte)(q[0:12]) = *(*[12]byte)(q[4:16]) // MACs
	be.PutUint32(q[12:16], w)
	push(f, lh, 4)
}

// Encode: 0x8899, 0xA<<12 | BIT(port); a frame under 60 bytes (padding) takes the slow path.
func (t *tRTL4A) Encode(b *frame.Batch, i int, d Dest) error {
	f := &b.Frames[i]
	if o, lh := int64(f.Off), lenHead(f); one(d.Ports, 0xff) && pushOK(lh, 4, 60) && o >= 4 && o <= int64(len(b.Mem))-12 {
		sa4(b.Mem, f, o, lh, ethPRealtek<<16|0xa<<12|uint32(d.Ports))
		return nil
	}
	return t.encodeSlow(b, i, d)
}

// rtl84Tag is the rtl8_4 tag's little-endian image: 0x8899, 0x0400 (protocol 4, reason 0), 0x0020
// (LEARN_DIS), ALLOW 0 | mask[10:0].
func rtl84Tag(ports PortMask) uint64 {
	return uint64(0x0004_9988) | uint64(0x2000)<<32 | uint64(bswap16(uint16(ports)))<<48
}

// Encode inserts the 8-byte tag after the source MAC.
func (t *tRTL84) Encode(b *frame.Batch, i int, d Dest) error {
	f := &b.Frames[i]
	if o, lh := int64(f.Off), lenHead(f); some(d.Ports, 0x7ff) && pushOK(lh, 8, minFrame) && o >= 8 && o <= int64(len(b.Mem))-12 {
		q := b.Mem[o-8 : o+12 : o+12]
		*(*[12]byte)(q[0:12]) = *(*[12]byte)(q[8:20]) // MACs
		le.PutUint64(q[12:20], rtl84Tag(d.Ports))
		push(f, lh, 8)
		return nil
	}
	return t.encodeSlow(b, i, d)
}

// Encode appends the 8-byte tag to a frame of 60 bytes or more.
func (t *tRTL84T) Encode(b *frame.Batch, i int, d Dest) error {
	f := &b.Frames[i]
	if e, l := int64(f.Off)+int64(f.Len), f.Len; some(d.Ports, 0x7ff) && appendOK(l, f.Tail, 8) && e <= int64(len(b.Mem))-8 {
		le.PutUint64(b.Mem[e:e+8:e+8], rtl84Tag(d.Ports))
		f.Len += 8
		f.Tail -= 8
		return nil
	}
	return t.encodeSlow(b, i, d)
}

// Encode: TPID, PCP<<13 | the standalone VID of (Switch, port); a bridge VID (Dest.Bridge) takes
// the slow path.
func (t *t8021Q) Encode(b *frame.Batch, i int, d Dest) error {
	f := &b.Frames[i]
	if o, lh := int64(f.Off), lenHead(f); one(d.Ports, 0xffff) && d.Switch <= 7 && d.Bridge == 0 && pushOK(lh, 4, minFrame) &&
		o >= 4 && o <= int64(len(b.Mem))-12 {
		tci := uint32(d.Prio&7)<<13 | q8021RSV | uint32(d.Switch)<<6 | uint32(bits.TrailingZeros32(uint32(d.Ports)))
		sa4(b.Mem, f, o, lh, uint32(t.tpid)<<16|tci)
		return nil
	}
	return t.encodeSlow(b, i, d)
}

// Encode: LE16 version 1<<14 | FROM_CPU bit 6 | reserved 0b11 <<4 | port, in front of the frame.
func (t *tAR9331) Encode(b *frame.Batch, i int, d Dest) error {
	f := &b.Frames[i]
	if o, lh := int64(f.Off), lenHead(f); one(d.Ports, 0xffff) && pushOK(lh, 2, minFrame) && o >= 2 && o <= int64(len(b.Mem)) {
		le.PutUint16(b.Mem[o-2:o:o], uint16(1<<14|1<<6|3<<4|bits.TrailingZeros32(uint32(d.Ports))))
		push(f, lh, 2)
		return nil
	}
	return t.encodeSlow(b, i, d)
}

// Encode: SLPID CPU (2), DPID ELAN (0), PORT_MAP_EN|PORT_MAP_SEL (0xC0), port map[6:1] | DPID_EN,
// in front of the frame.
func (t *tGSWIP) Encode(b *frame.Batch, i int, d Dest) error {
	f := &b.Frames[i]
	if o, lh := int64(f.Off), lenHead(f); some(d.Ports, 0x3f) && pushOK(lh, 4, minFrame) && o >= 4 && o <= int64(len(b.Mem)) {
		le.PutUint32(b.Mem[o-4:o:o], 2|0xc0<<16|uint32(d.Ports<<1|1)<<24)
		push(f, lh, 4)
		return nil
	}
	return t.encodeSlow(b, i, d)
}

// Encode: 0x8100, port | STP_OVERRIDE (bit 4); bridged unicast (DestBridged) takes the slow path.
func (t *tLAN9303) Encode(b *frame.Batch, i int, d Dest) error {
	f := &b.Frames[i]
	if o, lh := int64(f.Off), lenHead(f); one(d.Ports, 7) && d.Flags&DestBridged == 0 && pushOK(lh, 4, minFrame) &&
		o >= 4 && o <= int64(len(b.Mem))-12 {
		sa4(b.Mem, f, o, lh, uint32(frame.TypeVLAN)<<16|1<<4|uint32(bits.TrailingZeros32(uint32(d.Ports))))
		return nil
	}
	return t.encodeSlow(b, i, d)
}

// Encode appends 0x80, BIT(port), 0x10, 0x00 to a frame of 60 bytes or more.
func (t *tTrailer) Encode(b *frame.Batch, i int, d Dest) error {
	f := &b.Frames[i]
	if e, l := int64(f.Off)+int64(f.Len), f.Len; one(d.Ports, 0xff) && appendOK(l, f.Tail, 4) && e <= int64(len(b.Mem))-4 {
		le.PutUint32(b.Mem[e:e+4:e+4], 0x80|uint32(d.Ports)<<8|0x10<<16)
		f.Len += 4
		f.Tail -= 4
		return nil
	}
	return t.encodeSlow(b, i, d)
}
