package dsa

import (
	"github.com/wirespeed/wirespeed/frame"
)

// ---- Lantiq / Intel GSWIP: net/dsa/tag_gswip.c ----

var fmtGSWIP = format{
	spec:        spec("gswip", PosPrefix, 8, 4, 0, 6, true),
	parse:       func(_ *codec, p []byte, in *Info) Reason { return parseGSWIP(p, in) },
	decode:      decGSWIP,
	decodeBatch: decGSWIPBatchx4,
	encode:      func(_ *codec, mem []byte, f *frame.Frame, d Dest) Reason { return encGSWIP(mem, f, d) },
	encodeBatch: func(mem []byte, fr []frame.Frame, rs []Reason, d Dest, _ *codec) {
		// SLPID CPU (2), DPID ELAN (0), PORT_MAP_EN|PORT_MAP_SEL (0xC0), port map[6:1] | DPID_EN.
		encPrefixBatchx4(mem, fr, rs, 2|0xc0<<16|uint32(byte(d.Ports<<1)&0x7e|1)<<24, 4)
	},
	swEncode: func(_ *codec, mem []byte, f *frame.Frame, in Info) Reason {
		port := int(in.Port)
		if port > 7 {
			return ReasonPort
		}
		if r := room(f, 8, 0, 0); r != ReasonNone {
			return r
		}
		p := pushPrefix(mem, f, 8)
		clear(p[:7])
		p[7] = byte(port) << 4
		return ReasonNone
	},
	swDecode: func(_ *SwitchSide, mem []byte, f *frame.Frame, p []byte) (d Dest, _ Reason) {
		if p[0] != 2 || p[1] != 0 || p[2] != 0xc0 || p[3]&0x81 != 1 {
			return d, ReasonBadTag
		}
		d.Ports = PortMask(p[3]&0x7e) >> 1
		f.PullHead(4)
		return d, ReasonNone
	},
	tagger: func(c codec) Tagger { return &tGSWIP{c} },
}

// parseGSWIP: an 8-byte header before the DA; source port = b7[6:4]. Linux checks nothing else.
func parseGSWIP(p []byte, in *Info) Reason {
	if len(p) < minFrame+8 {
		return ReasonTruncated
	}
	*in = Info{TagLen: 8, Port: uint16(p[7]>>4) & 7}
	return ReasonNone
}

// encGSWIP: 4 bytes before the DA: SLPID CPU (2), DPID ELAN (0), PORT_MAP_EN|PORT_MAP_SEL (0xC0),
// port map[6:1] | DPID_EN.
func encGSWIP(mem []byte, f *frame.Frame, d Dest) Reason {
	if r := room(f, 4, 0, 0); r != ReasonNone {
		return r
	}
	p := pushPrefix(mem, f, 4)
	p[0], p[1], p[2], p[3] = 2, 0, 0xc0, byte(d.Ports<<1)&0x7e|1
	return ReasonNone
}

func decGSWIP(_ *codec, mem []byte, f *frame.Frame, in *Info) Reason {
	p := f.Data(mem)
	if len(p) < minFrame+8 {
		return ReasonTruncated
	}
	*in = Info{TagLen: 8, Port: uint16(p[7]>>4) & 7}
	return pullFront(f, 8)
}

// decGSWIPBatch: 8 bytes before the DA, port b7[6:4]; Linux checks nothing else.
//
//go:noinline
func decGSWIPBatch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason, _ *codec) {
	lim := int64(len(mem)) - 8
	for i := range fr {
		f, in := &fr[i], &ins[i]
		o, lh := int64(f.Off), lenHead(f)
		if uint16(lh) >= minFrame+8 && lh < (0x10000-8)<<16 && o <= lim {
			h := mem[o : o+8 : o+8]
			*in = Info{Port: uint16(h[7]>>4) & 7, TagLen: 8}
			f.Off += 8
			setLenHead(f, lh+8<<16-8)
			continue
		}
		slow(&rs[i])
	}
}

type tGSWIP struct{ codec }

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
