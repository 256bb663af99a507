package dsa

import (
	"github.com/wirespeed/wirespeed/frame"
)

// ---- Qualcomm: net/dsa/tag_qca.c, include/linux/dsa/tag_qca.h ----

var fmtQCA = format{
	spec:        spec("qca", PosSA, 2, 2, 0, 7, true),
	parse:       func(_ *codec, p []byte, in *Info) Reason { return parseQCA(p, in) },
	decode:      decQCA,
	decodeBatch: decQCABatchx4,
	encode:      func(_ *codec, mem []byte, f *frame.Frame, d Dest) Reason { return encQCA(mem, f, d) },
	encodeBatch: func(mem []byte, fr []frame.Frame, rs []Reason, d Dest, _ *codec) {
		// version 2 <<14 | priority[13:11] | FROM_CPU bit 7 | port mask[6:0].
		encQCABatchx4(mem, fr, rs, bswap16(uint16(2)<<14|uint16(d.Prio&7)<<11|1<<7|uint16(d.Ports)&0x7f))
	},
	swEncode: rxQCA,
	swDecode: txQCA,
	malformed: func(p []byte) Reason {
		p[12] = p[12]&0x3f | 1<<6 // version 1
		return ReasonBadTag
	},
	tagger: func(c codec) Tagger { return &tQCA{c} },
}

// parseQCA: BE16 at p[12:14]: version[15:14] must be 2, type[10:6] (1 MIB, 2 register ack are
// management frames, not data), source port[2:0].
func parseQCA(p []byte, in *Info) Reason {
	if len(p) < minFrame+2 {
		return ReasonTruncated
	}
	return qcaInfo(be16(p[12:14]), in)
}

func qcaInfo(h uint16, in *Info) Reason {
	if h>>14 != 2 {
		return ReasonBadTag
	}
	code := uint8(h>>6) & 0x1f
	*in = Info{TagLen: 2, Code: code, Port: h & 7}
	if code == 1 || code == 2 {
		return ReasonUnsupported
	}
	return ReasonNone
}

// encQCA: version 2 <<14 | priority[13:11] | FROM_CPU bit 7 | port mask[6:0].
func encQCA(mem []byte, f *frame.Frame, d Dest) Reason {
	if r := room(f, 2, 0, 0); r != ReasonNone {
		return r
	}
	p := pushSA(mem, f, 2)
	h := uint16(2)<<14 | uint16(d.Prio&7)<<11 | 1<<7 | uint16(d.Ports)&0x7f
	p[12], p[13] = byte(h>>8), byte(h)
	return ReasonNone
}

func decQCA(_ *codec, mem []byte, f *frame.Frame, in *Info) Reason {
	p := f.Data(mem)
	if len(p) < minFrame+2 {
		return ReasonTruncated
	}
	if r := qcaInfo(be16(p[12:14]), in); r != ReasonNone {
		return r
	}
	return stripSA(p, f, 2)
}

// decQCABatch: BE16 at b12: version[15:14] == 2 (b12[7:6]), type[10:6] (1 and 2 are management
// frames), port[2:0].
//
//go:noinline
func decQCABatch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason, _ *codec) {
	lim := int64(len(mem)) - 14
	for i := range fr {
		f, in := &fr[i], &ins[i]
		o, lh := int64(f.Off), lenHead(f)
		if uint16(lh) >= minFrame+2 && lh < (0x10000-2)<<16 && o <= lim {
			h := mem[o : o+14 : o+14]
			t := uint16(h[12])<<8 | uint16(h[13])
			if e := qcaRx[t>>6]; e != 0 {
				*in = Info{Port: t & 7, TagLen: 2, Code: e - 1}
				*(*[12]byte)(h[2:14]) = *(*[12]byte)(h[0:12]) // MACs
				f.Off += 2
				setLenHead(f, lh+2<<16-2)
				continue
			}
		}
		slow(&rs[i])
	}
}

// qcaRx is, for bits 15-6 of a qca tag (version, priority, type), 1 + the type when the batch loop
// decodes the frame (version 2, not a management frame: type 1 or 2), else 0: one load for the
// three tests.
var qcaRx = func() (t [1024]uint8) {
	for i := range t {
		if code := uint8(i) & 0x1f; i>>8 == 2 && code-1 > 1 {
			t[i] = code + 1
		}
	}
	return t
}()

// encQCABatch inserts the 2-byte tag after the source MAC.
//
//go:noinline
func encQCABatch(mem []byte, fr []frame.Frame, rs []Reason, tw uint16) {
	lim := int64(len(mem)) - 12
	for i := range fr {
		f := &fr[i]
		o, lh := int64(f.Off), lenHead(f)
		if lh >= 2<<16 && uint16(lh) >= minFrame && uint16(lh) <= 0xffff-2 && o >= 2 && o <= lim {
			q := mem[o-2 : o+12 : o+12]
			*(*[12]byte)(q[0:12]) = *(*[12]byte)(q[2:14]) // MACs
			le.PutUint16(q[12:14], tw)
			f.Off -= 2
			setLenHead(f, lh-2<<16+2)
			continue
		}
		slow(&rs[i])
	}
}

type tQCA struct{ codec }

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

// rxQCA writes version 2, the type (in.Code), the source port.
func rxQCA(_ *codec, mem []byte, f *frame.Frame, in Info) Reason {
	port := int(in.Port)
	if port > 7 {
		return ReasonPort
	}
	if r := room(f, 2, 0, 0); r != ReasonNone {
		return r
	}
	p := pushSA(mem, f, 2)
	h := uint16(2)<<14 | uint16(in.Code&0x1f)<<6 | uint16(port)
	p[12], p[13] = byte(h>>8), byte(h)
	return ReasonNone
}

// txQCA reads version 2, FROM_CPU, the priority and the port mask.
func txQCA(_ *SwitchSide, mem []byte, f *frame.Frame, p []byte) (d Dest, _ Reason) {
	h := be16(p[12:14])
	if h>>14 != 2 || h&(1<<7) == 0 || h&0x0700 != 0 {
		return d, ReasonBadTag
	}
	d.Prio = uint8(h>>11) & 7
	d.Ports = PortMask(h & 0x7f)
	swStripSA(mem, f, 2)
	return d, ReasonNone
}
