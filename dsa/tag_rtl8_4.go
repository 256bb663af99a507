package dsa

import (
	"github.com/wirespeed/wirespeed/frame"
)

// ---- Realtek RTL8365MB: net/dsa/tag_rtl8_4.c ----
//
// rtl8_4 puts the 8-byte tag after the source MAC, rtl8_4t at the end of the frame.

var fmtRTL84 = format{
	spec:        spec("rtl8_4", PosSA, 8, 8, 0, 11, true),
	parse:       func(_ *codec, p []byte, in *Info) Reason { return parseRTL84(p, 12, in) },
	decode:      decRTL84,
	decodeBatch: decRTL84Batchx4,
	encode:      func(_ *codec, mem []byte, f *frame.Frame, d Dest) Reason { return encRTL84(mem, f, d, false) },
	encodeBatch: func(mem []byte, fr []frame.Frame, rs []Reason, d Dest, _ *codec) {
		encRTL84Batchx4(mem, fr, rs, rtl84Tag(d.Ports))
	},
	swEncode: func(_ *codec, mem []byte, f *frame.Frame, in Info) Reason { return rxRTL84(mem, f, in, false) },
	swDecode: func(_ *SwitchSide, mem []byte, f *frame.Frame, p []byte) (d Dest, _ Reason) {
		r := txRTL84(mem, f, p, &d, 12)
		return d, r
	},
	malformed: func(p []byte) Reason {
		p[14] = 0x05 // protocol 5
		return ReasonBadTag
	},
	tagger: func(c codec) Tagger { return &tRTL84{c} },
}

var fmtRTL84T = format{
	spec:        spec("rtl8_4t", PosTail, 8, 8, 60, 11, true),
	parse:       func(_ *codec, p []byte, in *Info) Reason { return parseRTL84(p, len(p)-8, in) },
	decode:      decRTL84T,
	decodeBatch: decRTL84TBatchx4,
	encode:      func(_ *codec, mem []byte, f *frame.Frame, d Dest) Reason { return encRTL84(mem, f, d, true) },
	encodeBatch: func(mem []byte, fr []frame.Frame, rs []Reason, d Dest, _ *codec) {
		encTail8Batchx4(mem, fr, rs, rtl84Tag(d.Ports))
	},
	swEncode: func(_ *codec, mem []byte, f *frame.Frame, in Info) Reason { return rxRTL84(mem, f, in, true) },
	swDecode: func(_ *SwitchSide, mem []byte, f *frame.Frame, p []byte) (d Dest, _ Reason) {
		r := txRTL84(mem, f, p, &d, len(p)-8)
		return d, r
	},
	malformed: func(p []byte) Reason {
		p[len(p)-6] = 0x05
		return ReasonBadTag
	},
	tagger: func(c codec) Tagger { return &tRTL84T{c} },
}

// parseRTL84: 8 bytes at p[off:]: 0x8899; protocol 0x04 in w1[15:8], REASON w1[7:0] (80 = trapped);
// source port w3[3:0].
func parseRTL84(p []byte, off int, in *Info) Reason {
	if len(p) < minFrame+8 {
		return ReasonTruncated
	}
	t := p[off : off+8]
	return rtl84Info(be32(t[0:4]), t[7], in)
}

// rtl84Info reads the first word of the tag and its last byte.
func rtl84Info(w uint32, last byte, in *Info) Reason {
	if w>>8 != ethPRealtek<<8|0x04 {
		return ReasonBadTag
	}
	var fl InfoFlags
	if uint8(w) == 80 { // RTL8_4_REASON_TRAP is decimal 80
		fl = InfoTrapped
	}
	*in = Info{TagLen: 8, Code: uint8(w), Port: uint16(last & 0xf), Flags: fl}
	return ReasonNone
}

// encRTL84 writes 0x8899, 0x0400 (protocol 4, reason 0), 0x0020 (LEARN_DIS), ALLOW 0 | mask[10:0];
// the tail form (rtl8_4t) pads to 60 first.
func encRTL84(mem []byte, f *frame.Frame, d Dest, tail bool) Reason {
	var t []byte
	if tail {
		if r := room(f, 0, 60, 8); r != ReasonNone {
			return r
		}
		t = appendTail(mem, f, 60, 8)
	} else {
		if r := room(f, 8, 0, 0); r != ReasonNone {
			return r
		}
		t = pushSA(mem, f, 8)[12:20]
	}
	m := uint16(d.Ports) & 0x7ff
	t[0], t[1], t[2], t[3] = ethPRealtek>>8, ethPRealtek&0xff, 0x04, 0
	t[4], t[5], t[6], t[7] = 0, 0x20, byte(m>>8), byte(m)
	return ReasonNone
}

func decRTL84(_ *codec, mem []byte, f *frame.Frame, in *Info) Reason {
	p := f.Data(mem)
	if len(p) < minFrame+8 {
		return ReasonTruncated
	}
	if r := rtl84Info(be32(p[12:16]), p[19], in); r != ReasonNone {
		return r
	}
	if r := stripSA(p, f, 8); r != ReasonNone {
		return r
	}
	if in.Flags&InfoTrapped != 0 {
		f.Flags |= frame.FlagTrapped
	}
	return ReasonNone
}

func decRTL84T(_ *codec, mem []byte, f *frame.Frame, in *Info) Reason {
	p := f.Data(mem)
	n := len(p)
	if n < minFrame+8 {
		return ReasonTruncated
	}
	if r := rtl84Info(be32(p[n-8:n-4]), p[n-1], in); r != ReasonNone {
		return r
	}
	if r := trimTail(f, 8); r != ReasonNone {
		return r
	}
	if in.Flags&InfoTrapped != 0 {
		f.Flags |= frame.FlagTrapped
	}
	return ReasonNone
}

// decRTL84Batch: 0x8899 0x04 at b12-14, REASON b15 (80, trapped, takes the slow path), port
// b19[3:0].
//
//go:noinline
func decRTL84Batch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason, _ *codec) {
	lim := int64(len(mem)) - 20
	for i := range fr {
		f, in := &fr[i], &ins[i]
		o, lh := int64(f.Off), lenHead(f)
		if uint16(lh) >= minFrame+8 && lh < (0x10000-8)<<16 && o <= lim {
			h := mem[o : o+20 : o+20]
			if w := le.Uint32(h[12:16]); w&0xffffff == 0x049988 && w>>24 != 80 {
				*in = Info{Port: uint16(h[19] & 0xf), TagLen: 8, Code: uint8(w >> 24)}
				*(*[12]byte)(h[8:20]) = *(*[12]byte)(h[0:12]) // MACs
				f.Off += 8
				setLenHead(f, lh+8<<16-8)
				continue
			}
		}
		slow(&rs[i])
	}
}

// decRTL84TBatch: the rtl8_4 tag as the last 8 bytes.
//
//go:noinline
func decRTL84TBatch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason, _ *codec) {
	lim := int64(len(mem))
	for i := range fr {
		f, in := &fr[i], &ins[i]
		o, l, tl := int64(f.Off), f.Len, f.Tail
		if e := o + int64(l); l >= minFrame+8 && tl <= 0xffff-8 && e <= lim {
			w := le.Uint64(mem[e-8 : e : e])
			if code := uint8(w >> 24); w&0xffffff == 0x049988 && code != 80 {
				*in = Info{Port: uint16(w>>56) & 0xf, TagLen: 8, Code: code}
				f.Len, f.Tail = l-8, tl+8
				continue
			}
		}
		slow(&rs[i])
	}
}

// encRTL84Batch inserts the 8-byte tag after the source MAC.
//
//go:noinline
func encRTL84Batch(mem []byte, fr []frame.Frame, rs []Reason, tw uint64) {
	lim := int64(len(mem)) - 12
	for i := range fr {
		f := &fr[i]
		o, lh := int64(f.Off), lenHead(f)
		if lh >= 8<<16 && uint16(lh) >= minFrame && uint16(lh) <= 0xffff-8 && o >= 8 && o <= lim {
			q := mem[o-8 : o+12 : o+12]
			*(*[12]byte)(q[0:12]) = *(*[12]byte)(q[8:20]) // MACs
			le.PutUint64(q[12:20], tw)
			f.Off -= 8
			setLenHead(f, lh-8<<16+8)
			continue
		}
		slow(&rs[i])
	}
}

// encTail8Batch appends the 8-byte tag to every frame of 60 bytes or more.
//
//go:noinline
func encTail8Batch(mem []byte, fr []frame.Frame, rs []Reason, tw uint64) {
	lim := int64(len(mem)) - 8
	for i := range fr {
		f := &fr[i]
		o, l, tl := int64(f.Off), f.Len, f.Tail
		if e := o + int64(l); l >= 60 && tl >= 8 && l <= 0xffff-8 && e <= lim {
			le.PutUint64(mem[e:e+8:e+8], tw)
			f.Len, f.Tail = l+8, tl-8
			continue
		}
		slow(&rs[i])
	}
}

type (
	tRTL84  struct{ codec }
	tRTL84T struct{ codec }
)

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

// rxRTL84 writes 0x8899, protocol 4, the reason (80, RTL8_4_REASON_TRAP, for a trapped frame
// without a code), the source port.
func rxRTL84(mem []byte, f *frame.Frame, in Info, tail bool) Reason {
	port := int(in.Port)
	if port > 0xf {
		return ReasonPort
	}
	reason := in.Code
	if in.Flags&InfoTrapped != 0 && reason == 0 {
		reason = 80 // RTL8_4_REASON_TRAP
	}
	var t []byte
	if tail {
		if r := room(f, 0, 60, 8); r != ReasonNone {
			return r
		}
		t = appendTail(mem, f, 60, 8)
	} else {
		if r := room(f, 8, 0, 0); r != ReasonNone {
			return r
		}
		t = pushSA(mem, f, 8)[12:20]
	}
	t[0], t[1], t[2], t[3] = ethPRealtek>>8, ethPRealtek&0xff, 0x04, reason
	t[4], t[5], t[6], t[7] = 0, 0, 0, byte(port)
	return ReasonNone
}

// txRTL84 reads the tag at p[off:] (0x8899, protocol 4, the port mask) and strips it.
func txRTL84(mem []byte, f *frame.Frame, p []byte, d *Dest, off int) Reason {
	t := p[off : off+8]
	if be16(t[0:2]) != ethPRealtek || t[2] != 0x04 || t[6]&0xf8 != 0 {
		return ReasonBadTag
	}
	d.Ports = PortMask(be16(t[6:8]) & 0x7ff)
	if off == 12 {
		swStripSA(mem, f, 8)
	} else {
		f.Resize(len(p) - 8)
	}
	return ReasonNone
}
