package dsa

import (
	"github.com/wirespeed/wirespeed/frame"
)

// ---- Realtek RTL8366RB: net/dsa/tag_rtl4_a.c ----

var fmtRTL4A = format{
	spec:        spec("rtl4a", PosSA, 4, 4, 60, 8, false),
	parse:       func(_ *codec, p []byte, in *Info) Reason { return parseRTL4A(p, in) },
	decode:      decRTL4A,
	decodeBatch: decRTL4ABatchx4,
	encode:      func(_ *codec, mem []byte, f *frame.Frame, d Dest) Reason { return encRTL4A(mem, f, d) },
	encodeBatch: func(mem []byte, fr []frame.Frame, rs []Reason, d Dest, _ *codec) {
		// 0x8899, 0xA<<12 | BIT(port); frames under 60 bytes (padding) take the slow path.
		encSA4Batchx4(mem, fr, rs, 0x9988|uint32(bswap16(0xa<<12|uint16(d.Ports)&0xff))<<16, 60)
	},
	local:    true,
	swEncode: rxRTL4A,
	swDecode: txRTL4A,
	malformed: func(p []byte) Reason {
		p[14] = p[14]&0x0f | 0x90 // protocol 9 (RTL8306)
		return ReasonBadTag
	},
	tagger: func(c codec) Tagger { return &tRTL4A{c} },
}

const ethPRealtek = 0x8899

// parseRTL4A: 0x8899 then BE16 protocol[15:12] = 0xA, source port in the low byte. A frame with
// another EtherType carries no tag: ReasonNotTagged (Linux passes it through untouched to the
// conduit interface; a Conduit with Config.Local does the same).
func parseRTL4A(p []byte, in *Info) Reason {
	if len(p) < minFrame+4 {
		return ReasonTruncated
	}
	return rtl4aInfo(be32(p[12:16]), in)
}

func rtl4aInfo(w uint32, in *Info) Reason {
	if w>>16 != ethPRealtek {
		return ReasonNotTagged
	}
	if w>>12&0xf != 0xa {
		return ReasonBadTag
	}
	*in = Info{TagLen: 4, Port: uint16(w) & 0xff}
	return ReasonNone
}

// encRTL4A pads to 60, then writes 0x8899, 0xA<<12 | BIT(port).
func encRTL4A(mem []byte, f *frame.Frame, d Dest) Reason {
	if r := room(f, 4, 60, 0); r != ReasonNone {
		return r
	}
	if f.Len < 60 {
		_ = f.Pad(mem, 60)
	}
	p := pushSA(mem, f, 4)
	w := 0xa<<12 | uint16(d.Ports)&0xff
	p[12], p[13], p[14], p[15] = ethPRealtek>>8, ethPRealtek&0xff, byte(w>>8), byte(w)
	return ReasonNone
}

func decRTL4A(_ *codec, mem []byte, f *frame.Frame, in *Info) Reason {
	p := f.Data(mem)
	if len(p) < minFrame+4 {
		return ReasonTruncated
	}
	if r := rtl4aInfo(be32(p[12:16]), in); r != ReasonNone {
		return r
	}
	return stripSA(p, f, 4)
}

// decRTL4ABatch: 0x8899 at b12-13, protocol b14[7:4] == 0xA; port b15.
//
//go:noinline
func decRTL4ABatch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason, _ *codec) {
	lim := int64(len(mem)) - 16
	for i := range fr {
		f, in := &fr[i], &ins[i]
		o, lh := int64(f.Off), lenHead(f)
		if uint16(lh) >= minFrame+4 && lh < (0x10000-4)<<16 && o <= lim {
			h := mem[o : o+16 : o+16]
			if le.Uint32(h[12:16])&0xf0ffff == 0xa09988 {
				*in = Info{Port: uint16(h[15]), TagLen: 4}
				*(*[12]byte)(h[4:16]) = *(*[12]byte)(h[0:12]) // MACs
				f.Off += 4
				setLenHead(f, lh+4<<16-4)
				continue
			}
		}
		slow(&rs[i])
	}
}

type tRTL4A struct{ codec }

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

// Encode: 0x8899, 0xA<<12 | BIT(port); a frame under 60 bytes (padding) takes the slow path.
func (t *tRTL4A) Encode(b *frame.Batch, i int, d Dest) error {
	f := &b.Frames[i]
	if o, lh := int64(f.Off), lenHead(f); one(d.Ports, 0xff) && pushOK(lh, 4, 60) && o >= 4 && o <= int64(len(b.Mem))-12 {
		sa4(b.Mem, f, o, lh, ethPRealtek<<16|0xa<<12|uint32(d.Ports))
		return nil
	}
	return t.encodeSlow(b, i, d)
}

// rxRTL4A writes 0x8899, protocol 0xA, the source port.
func rxRTL4A(_ *codec, mem []byte, f *frame.Frame, in Info) Reason {
	port := int(in.Port)
	if port > 0xff {
		return ReasonPort
	}
	if r := room(f, 4, 0, 0); r != ReasonNone {
		return r
	}
	p := pushSA(mem, f, 4)
	p[12], p[13], p[14], p[15] = ethPRealtek>>8, ethPRealtek&0xff, 0xa0, byte(port)
	return ReasonNone
}

// txRTL4A reads 0x8899, protocol 0xA and the port mask.
func txRTL4A(_ *SwitchSide, mem []byte, f *frame.Frame, p []byte) (d Dest, _ Reason) {
	if be16(p[12:14]) != ethPRealtek {
		return d, ReasonNotTagged
	}
	w := be16(p[14:16])
	if w>>12 != 0xa || w&0x0f00 != 0 {
		return d, ReasonBadTag
	}
	d.Ports = PortMask(w & 0xff)
	swStripSA(mem, f, 4)
	return d, ReasonNone
}
