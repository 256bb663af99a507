package dsa

import (
	"encoding/binary"
	"math/bits"

	"github.com/wirespeed/wirespeed/frame"
)

// ---- Qualcomm Atheros AR9331: net/dsa/tag_ar9331.c ----

var fmtAR9331 = format{
	spec:        spec("ar9331", PosPrefix, 2, 2, 0, 16, false),
	parse:       func(_ *codec, p []byte, in *Info) Reason { return parseAR9331(p, in) },
	decode:      decAR9331,
	decodeBatch: decAR9331Batchx4,
	encode:      func(_ *codec, mem []byte, f *frame.Frame, d Dest) Reason { return encAR9331(mem, f, d) },
	encodeBatch: func(mem []byte, fr []frame.Frame, rs []Reason, d Dest, _ *codec) {
		// LE16 version 1<<14 | FROM_CPU bit 6 | reserved 0b11 <<4 | port.
		encPrefixBatchx4(mem, fr, rs, uint32(1<<14|1<<6|3<<4|d.Ports.First()), 2)
	},
	swEncode: func(_ *codec, mem []byte, f *frame.Frame, in Info) Reason {
		port := int(in.Port)
		if port > 0xf {
			return ReasonPort
		}
		if r := room(f, 2, 0, 0); r != ReasonNone {
			return r
		}
		p := pushPrefix(mem, f, 2)
		h := uint16(1)<<14 | 3<<4 | uint16(port)
		p[0], p[1] = byte(h), byte(h>>8)
		return ReasonNone
	},
	swDecode: func(_ *SwitchSide, mem []byte, f *frame.Frame, p []byte) (d Dest, _ Reason) {
		h := uint16(p[0]) | uint16(p[1])<<8
		if h>>14 != 1 || h&(1<<6) == 0 {
			return d, ReasonBadTag
		}
		d.Ports = Port(int(h & 0xf))
		f.PullHead(2)
		return d, ReasonNone
	},
	malformed: func(p []byte) Reason {
		p[0] |= 1 << 6 // FROM_CPU on receive
		return ReasonBadTag
	},
	tagger: func(c codec) Tagger { return &tAR9331{c} },
}

// parseAR9331: little-endian 16 bits before the DA: version[15:14] = 1, FROM_CPU bit 6 must be
// clear, port[3:0].
func parseAR9331(p []byte, in *Info) Reason {
	if len(p) < minFrame+2 {
		return ReasonTruncated
	}
	return ar9331Info(uint16(p[0])|uint16(p[1])<<8, in)
}

func ar9331Info(h uint16, in *Info) Reason {
	if h>>14 != 1 || h&(1<<6) != 0 {
		return ReasonBadTag
	}
	*in = Info{TagLen: 2, Port: h & 0xf}
	return ReasonNone
}

// encAR9331: LE16 version 1<<14 | FROM_CPU bit 6 | reserved 0b11 <<4 | port.
func encAR9331(mem []byte, f *frame.Frame, d Dest) Reason {
	if r := room(f, 2, 0, 0); r != ReasonNone {
		return r
	}
	p := pushPrefix(mem, f, 2)
	h := uint16(1)<<14 | 1<<6 | 3<<4 | uint16(d.Ports.First())
	p[0], p[1] = byte(h), byte(h>>8)
	return ReasonNone
}

func decAR9331(_ *codec, mem []byte, f *frame.Frame, in *Info) Reason {
	p := f.Data(mem)
	if len(p) < minFrame+2 {
		return ReasonTruncated
	}
	if r := ar9331Info(binary.LittleEndian.Uint16(p[0:2]), in); r != ReasonNone {
		return r
	}
	return pullFront(f, 2)
}

// decAR9331Batch: LE16 before the DA: version[15:14] == 1, FROM_CPU bit 6 clear; port[3:0].
//
//go:noinline
func decAR9331Batch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason, _ *codec) {
	lim := int64(len(mem)) - 2
	for i := range fr {
		f, in := &fr[i], &ins[i]
		o, lh := int64(f.Off), lenHead(f)
		if uint16(lh) >= minFrame+2 && lh < (0x10000-2)<<16 && o <= lim {
			if t := le.Uint16(mem[o : o+2 : o+2]); t&0xc040 == 0x4000 {
				*in = Info{Port: t & 0xf, TagLen: 2}
				f.Off += 2
				setLenHead(f, lh+2<<16-2)
				continue
			}
		}
		slow(&rs[i])
	}
}

type tAR9331 struct{ codec }

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
