package dsa

import (
	"github.com/wirespeed/wirespeed/frame"
)

// ---- Hirschmann Hellcreek: net/dsa/tag_hellcreek.c ----
//
// One tail byte: the source port[1:0] on receive, as ksz8795's (decKSZ8795, decTail1Batch,
// rxTail1), BIT(port) on transmit.

var fmtHellcreek = format{
	spec:        spec("hellcreek", PosTail, 1, 1, 60, 4, false),
	parse:       func(_ *codec, p []byte, in *Info) Reason { return parseHellcreek(p, in) },
	decode:      decKSZ8795,
	decodeBatch: decTail1Batchx4,
	encode:      func(_ *codec, mem []byte, f *frame.Frame, d Dest) Reason { return encHellcreek(mem, f, d) },
	encodeBatch: func(mem []byte, fr []frame.Frame, rs []Reason, d Dest, _ *codec) {
		encTail1Batchx4(mem, fr, rs, uint32(byte(d.Ports)), uint32(byte(d.Ports)))
	},
	swEncode: rxTail1,
	swDecode: func(_ *SwitchSide, mem []byte, f *frame.Frame, p []byte) (d Dest, _ Reason) {
		n := len(p)
		t := p[n-1]
		if t&0xf0 != 0 || t&(t-1) != 0 {
			return d, ReasonBadTag
		}
		d.Ports = PortMask(t)
		f.Resize(n - 1)
		return d, ReasonNone
	},
	tagger: func(c codec) Tagger { return &tHellcreek{c} },
}

// parseHellcreek: one tail byte, source port[1:0].
func parseHellcreek(p []byte, in *Info) Reason {
	if len(p) < minFrame+1 {
		return ReasonTruncated
	}
	*in = Info{TagLen: 1, Port: uint16(p[len(p)-1] & 3)}
	return ReasonNone
}

// encHellcreek pads to 60 and appends BIT(port).
func encHellcreek(mem []byte, f *frame.Frame, d Dest) Reason {
	if r := room(f, 0, 60, 1); r != ReasonNone {
		return r
	}
	appendTail(mem, f, 60, 1)[0] = byte(d.Ports)
	return ReasonNone
}

type tHellcreek struct{ codec }

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
