package dsa

import (
	"github.com/wirespeed/wirespeed/frame"
)

// ---- Marvell / Micrel trailer: net/dsa/tag_trailer.c ----

var fmtTrailer = format{
	spec:        spec("trailer", PosTail, 4, 4, 60, 8, false),
	parse:       func(_ *codec, p []byte, in *Info) Reason { return parseTrailer(p, in) },
	decode:      decTrailer,
	decodeBatch: decTrailerBatchx4,
	encode:      func(_ *codec, mem []byte, f *frame.Frame, d Dest) Reason { return encTrailer(mem, f, d) },
	encodeBatch: func(mem []byte, fr []frame.Frame, rs []Reason, d Dest, _ *codec) {
		// 0x80, BIT(port), 0x10, 0x00.
		encTail4Batchx4(mem, fr, rs, 0x80|uint32(byte(d.Ports))<<8|0x10<<16)
	},
	swEncode: func(_ *codec, mem []byte, f *frame.Frame, in Info) Reason {
		port := int(in.Port)
		if port > 7 {
			return ReasonPort
		}
		if r := room(f, 0, 60, 4); r != ReasonNone {
			return r
		}
		t := appendTail(mem, f, 60, 4)
		t[0], t[1], t[2], t[3] = 0x80, byte(port), 0, 0
		return ReasonNone
	},
	swDecode: func(_ *SwitchSide, mem []byte, f *frame.Frame, p []byte) (d Dest, _ Reason) {
		n := len(p)
		t := p[n-4:]
		if t[0] != 0x80 || t[2] != 0x10 || t[3] != 0 || t[1] == 0 || t[1]&(t[1]-1) != 0 {
			return d, ReasonBadTag
		}
		d.Ports = PortMask(t[1])
		f.Resize(n - 4)
		return d, ReasonNone
	},
	malformed: func(p []byte) Reason {
		p[len(p)-3] = 0x08 // reserved bit 3 of the port byte
		return ReasonBadTag
	},
	tagger: func(c codec) Tagger { return &tTrailer{c} },
}

// parseTrailer: 4 tail bytes 0x80, port[2:0] (other bits 0), 0x00 or 0x10, 0x00.
func parseTrailer(p []byte, in *Info) Reason {
	n := len(p)
	if n < minFrame+4 {
		return ReasonTruncated
	}
	return trailerInfo(be32(p[n-4:n]), in)
}

func trailerInfo(w uint32, in *Info) Reason {
	if w&0xfff8efff != 0x80000000 {
		return ReasonBadTag
	}
	*in = Info{TagLen: 4, Port: uint16(w>>16) & 7}
	return ReasonNone
}

// encTrailer pads to 60 and appends 0x80, BIT(port), 0x10, 0x00.
func encTrailer(mem []byte, f *frame.Frame, d Dest) Reason {
	if r := room(f, 0, 60, 4); r != ReasonNone {
		return r
	}
	t := appendTail(mem, f, 60, 4)
	t[0], t[1], t[2], t[3] = 0x80, byte(d.Ports), 0x10, 0
	return ReasonNone
}

func decTrailer(_ *codec, mem []byte, f *frame.Frame, in *Info) Reason {
	p := f.Data(mem)
	n := len(p)
	if n < minFrame+4 {
		return ReasonTruncated
	}
	if r := trailerInfo(be32(p[n-4:n]), in); r != ReasonNone {
		return r
	}
	return trimTail(f, 4)
}

// decTrailerBatch: 0x80, port[2:0] (other bits 0), 0x00 or 0x10, 0x00 as the last 4 bytes.
//
//go:noinline
func decTrailerBatch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason, _ *codec) {
	lim := int64(len(mem))
	for i := range fr {
		f, in := &fr[i], &ins[i]
		o, l, tl := int64(f.Off), f.Len, f.Tail
		if e := o + int64(l); l >= minFrame+4 && tl <= 0xffff-4 && e <= lim {
			if w := le.Uint32(mem[e-4 : e : e]); w&0xffeff8ff == 0x80 {
				*in = Info{Port: uint16(w>>8) & 7, TagLen: 4}
				f.Len, f.Tail = l-4, tl+4
				continue
			}
		}
		slow(&rs[i])
	}
}

// encTail4Batch appends the 4-byte tag to every frame of 60 bytes or more.
//
//go:noinline
func encTail4Batch(mem []byte, fr []frame.Frame, rs []Reason, tw uint32) {
	lim := int64(len(mem)) - 4
	for i := range fr {
		f := &fr[i]
		o, l, tl := int64(f.Off), f.Len, f.Tail
		if e := o + int64(l); l >= 60 && tl >= 4 && l <= 0xffff-4 && e <= lim {
			le.PutUint32(mem[e:e+4:e+4], tw)
			f.Len, f.Tail = l+4, tl-4
			continue
		}
		slow(&rs[i])
	}
}

type tTrailer struct{ codec }

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
