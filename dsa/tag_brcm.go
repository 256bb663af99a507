package dsa

import (
	"github.com/wirespeed/wirespeed/frame"
)

// ---- Broadcom: net/dsa/tag_brcm.c (brcm_tag_rcv_ll, brcm_tag_xmit_ll) ----
//
// brcm puts the tag after the source MAC, brcm-prepend in front of the frame; the tag is the same.

var fmtBrcm = format{
	spec:        spec("brcm", PosSA, 4, 4, 64, 9, true),
	parse:       func(_ *codec, p []byte, in *Info) Reason { return parseBrcm(p, 12, in) },
	decode:      decBrcm,
	decodeBatch: decBrcmBatchx4,
	encode:      func(_ *codec, mem []byte, f *frame.Frame, d Dest) Reason { return encBrcm(mem, f, d, false) },
	encodeBatch: func(mem []byte, fr []frame.Frame, rs []Reason, d Dest, _ *codec) {
		encBrcmBatchx4(mem, fr, rs, brcmTag(d.Ports, d.Prio))
	},
	swEncode: func(_ *codec, mem []byte, f *frame.Frame, in Info) Reason { return rxBrcm(mem, f, in, false) },
	swDecode: func(_ *SwitchSide, mem []byte, f *frame.Frame, p []byte) (d Dest, _ Reason) {
		r := txBrcm(mem, f, p, &d, 12)
		return d, r
	},
	malformed: func(p []byte) Reason {
		p[12] = 1 << 5 // opcode 1 is the ingress (CPU to switch) format
		return ReasonBadTag
	},
	tagger: func(c codec) Tagger { return &tBrcm{c} },
}

var fmtBrcmPrepend = format{
	spec:        spec("brcm-prepend", PosPrefix, 4, 4, 64, 9, true),
	parse:       func(_ *codec, p []byte, in *Info) Reason { return parseBrcm(p, 0, in) },
	decode:      decBrcmPrepend,
	decodeBatch: decBrcmPrependBatchx4,
	encode:      func(_ *codec, mem []byte, f *frame.Frame, d Dest) Reason { return encBrcm(mem, f, d, true) },
	encodeBatch: func(mem []byte, fr []frame.Frame, rs []Reason, d Dest, _ *codec) {
		encBrcmPrependBatchx4(mem, fr, rs, brcmTag(d.Ports, d.Prio))
	},
	swEncode: func(_ *codec, mem []byte, f *frame.Frame, in Info) Reason { return rxBrcm(mem, f, in, true) },
	swDecode: func(_ *SwitchSide, mem []byte, f *frame.Frame, p []byte) (d Dest, _ Reason) {
		r := txBrcm(mem, f, p, &d, 0)
		return d, r
	},
	malformed: func(p []byte) Reason {
		p[0] = 1 << 5
		return ReasonBadTag
	},
	tagger: func(c codec) Tagger { return &tBrcmPrepend{c} },
}

// brcmRxOK is the receive check of the egress (switch to CPU) tag, given as its 4 bytes read
// little-endian: opcode b0[7:5] must be 0 and the reason code b2 must not have the reserved bits
// 7:6. Every decoder of both formats tests it; the source port is b3[4:0], the reason code b2.
func brcmRxOK(w uint32) bool { return w&0xc000e0 == 0 }

// parseBrcm reads the tag at p[off:off+4].
func parseBrcm(p []byte, off int, in *Info) Reason {
	if len(p) < minFrame+4 {
		return ReasonTruncated
	}
	return brcmInfo(le.Uint32(p[off:off+4]), in)
}

// brcmInfo reads the tag w (little-endian, b0 in bits 7-0).
func brcmInfo(w uint32, in *Info) Reason {
	if !brcmRxOK(w) {
		return ReasonBadTag
	}
	*in = Info{TagLen: 4, Port: uint16(w>>24) & 0x1f, Code: uint8(w >> 16)}
	return ReasonNone
}

// encBrcm pads to 64 bytes (ETH_ZLEN + BRCM_TAG_LEN) first, then writes the ingress tag:
// b0 = opcode 1 <<5 | TC<<2, b1 = 0, b2.0 = port 8, b3 = ports 7-0.
func encBrcm(mem []byte, f *frame.Frame, d Dest, prepend bool) Reason {
	if r := room(f, 4, 64, 0); r != ReasonNone {
		return r
	}
	if f.Len < 64 {
		_ = f.Pad(mem, 64)
	}
	var t []byte
	if prepend {
		t = pushPrefix(mem, f, 4)[:4]
	} else {
		t = pushSA(mem, f, 4)[12:16]
	}
	t[0] = 1<<5 | (d.Prio&7)<<2
	t[1] = 0
	t[2] = byte(d.Ports>>8) & 1
	t[3] = byte(d.Ports)
	return ReasonNone
}

func decBrcm(_ *codec, mem []byte, f *frame.Frame, in *Info) Reason {
	p := f.Data(mem)
	if len(p) < minFrame+4 {
		return ReasonTruncated
	}
	if r := brcmInfo(le.Uint32(p[12:16]), in); r != ReasonNone {
		return r
	}
	return stripSA(p, f, 4)
}

func decBrcmPrepend(_ *codec, mem []byte, f *frame.Frame, in *Info) Reason {
	p := f.Data(mem)
	if len(p) < minFrame+4 {
		return ReasonTruncated
	}
	if r := brcmInfo(le.Uint32(p[0:4]), in); r != ReasonNone {
		return r
	}
	return pullFront(f, 4)
}

// decBrcmBatch: opcode b12[7:5] == 0, reason code b14[7:6] == 0; port b15[4:0], code b14.
//
//go:noinline
func decBrcmBatch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason, _ *codec) {
	lim := int64(len(mem)) - 16
	for i := range fr {
		f, in := &fr[i], &ins[i]
		o, lh := int64(f.Off), lenHead(f)
		if uint16(lh) >= minFrame+4 && lh < (0x10000-4)<<16 && o <= lim {
			h := mem[o : o+16 : o+16]
			if brcmRxOK(le.Uint32(h[12:16])) {
				*in = Info{Port: uint16(h[15] & 0x1f), TagLen: 4, Code: h[14]}
				*(*[12]byte)(h[4:16]) = *(*[12]byte)(h[0:12]) // MACs
				f.Off += 4
				setLenHead(f, lh+4<<16-4)
				continue
			}
		}
		slow(&rs[i])
	}
}

// decBrcmPrependBatch: the brcm tag in front of the DA.
//
//go:noinline
func decBrcmPrependBatch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason, _ *codec) {
	lim := int64(len(mem)) - 4
	for i := range fr {
		f, in := &fr[i], &ins[i]
		o, lh := int64(f.Off), lenHead(f)
		if uint16(lh) >= minFrame+4 && lh < (0x10000-4)<<16 && o <= lim {
			h := mem[o : o+4 : o+4]
			if brcmRxOK(le.Uint32(h)) {
				*in = Info{Port: uint16(h[3] & 0x1f), TagLen: 4, Code: h[2]}
				f.Off += 4
				setLenHead(f, lh+4<<16-4)
				continue
			}
		}
		slow(&rs[i])
	}
}

// encBrcmBatch pads to 64 bytes (a frame of 60-63 bytes takes one 4-byte zero store into its
// tailroom, a shorter one the slow path), then inserts the tag after the source MAC. One bounds
// check covers the 4 bytes before the frame and its first 68 (a frame whose 68th byte is past
// the arena takes the slow path). The padded case, the minimum-size frame where the per-frame
// cost matters most, is tested first; each case is written out in full.
//
//go:noinline
func encBrcmBatch(mem []byte, fr []frame.Frame, rs []Reason, tw uint32) {
	lim := int64(len(mem)) - 68
	for i := range fr {
		f := &fr[i]
		if o, lh := int64(f.Off), lenHead(f); lh >= 4<<16 && o >= 4 && o <= lim {
			h := mem[o-4 : o+68 : o+68]
			if l, tl := uint16(lh), f.Tail; l-60 < 4 && tl >= 4 {
				le.PutUint32(h[4+int(l&63):], 0) // pad to 64
				f.Tail = tl + l - 64
				*(*[12]byte)(h[0:12]) = *(*[12]byte)(h[4:16]) // MACs
				le.PutUint32(h[12:16], tw)
				f.Off -= 4
				setLenHead(f, lh&^0xffff-4<<16+68)
				continue
			} else if l-64 <= 0xffff-4-64 {
				*(*[12]byte)(h[0:12]) = *(*[12]byte)(h[4:16]) // MACs
				le.PutUint32(h[12:16], tw)
				f.Off -= 4
				setLenHead(f, lh-4<<16+4)
				continue
			}
		}
		slow(&rs[i])
	}
}

// encBrcmPrependBatch pads as encBrcmBatch, then puts the tag in front of the frame.
//
//go:noinline
func encBrcmPrependBatch(mem []byte, fr []frame.Frame, rs []Reason, tw uint32) {
	lim := int64(len(mem)) - 68
	for i := range fr {
		f := &fr[i]
		if o, lh := int64(f.Off), lenHead(f); lh >= 4<<16 && o >= 4 && o <= lim {
			h := mem[o-4 : o+68 : o+68]
			if l, tl := uint16(lh), f.Tail; l-60 < 4 && tl >= 4 {
				le.PutUint32(h[4+int(l&63):], 0) // pad to 64
				f.Tail = tl + l - 64
				le.PutUint32(h[0:4], tw)
				f.Off -= 4
				setLenHead(f, lh&^0xffff-4<<16+68)
				continue
			} else if l-64 <= 0xffff-4-64 {
				le.PutUint32(h[0:4], tw)
				f.Off -= 4
				setLenHead(f, lh-4<<16+4)
				continue
			}
		}
		slow(&rs[i])
	}
}

type (
	tBrcm        struct{ codec }
	tBrcmPrepend struct{ codec }
)

// Decode: opcode b12[7:5] == 0, reason code b14[7:6] == 0; port b15[4:0], code b14.
func (t *tBrcm) Decode(b *frame.Batch, i int, in *Info) error {
	f := &b.Frames[i]
	if o, lh := int64(f.Off), lenHead(f); headOK(lh, 4) && o <= int64(len(b.Mem))-16 {
		h := b.Mem[o : o+16 : o+16]
		if brcmRxOK(le.Uint32(h[12:16])) {
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
		if brcmRxOK(le.Uint32(h[0:4])) {
			*in = Info{Port: uint16(h[3] & 0x1f), TagLen: 4, Code: h[2]}
			pull(f, lh, 4)
			return nil
		}
	}
	return t.decodeSlow(b, i, in)
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

// rxBrcm writes the egress tag: opcode 0, the reason code, the source port.
func rxBrcm(mem []byte, f *frame.Frame, in Info, prepend bool) Reason {
	port := int(in.Port)
	if port > 0x1f {
		return ReasonPort
	}
	if r := room(f, 4, 0, 0); r != ReasonNone {
		return r
	}
	var t []byte
	if prepend {
		t = pushPrefix(mem, f, 4)[:4]
	} else {
		t = pushSA(mem, f, 4)[12:16]
	}
	t[0], t[1], t[2], t[3] = 0, 0, in.Code&0x3f, byte(port)
	return ReasonNone
}

// txBrcm reads the ingress tag at p[off:] (opcode 1, no reserved bits) and strips it.
func txBrcm(mem []byte, f *frame.Frame, p []byte, d *Dest, off int) Reason {
	t := p[off : off+4]
	if t[0]>>5 != 1 || t[0]&3 != 0 || t[1] != 0 || t[2]&0xfe != 0 {
		return ReasonBadTag
	}
	d.Prio = t[0] >> 2 & 7
	d.Ports = PortMask(t[2]&1)<<8 | PortMask(t[3])
	if off == 0 {
		f.PullHead(4)
	} else {
		swStripSA(mem, f, 4)
	}
	return ReasonNone
}
