package dsa

import (
	"math/bits"

	"github.com/wirespeed/wirespeed/frame"
)

// ---- Microchip LAN9303: net/dsa/tag_lan9303.c ----

var fmtLAN9303 = format{
	spec:        spec("lan9303", PosSA, 4, 4, 0, 3, false),
	parse:       func(_ *codec, p []byte, in *Info) Reason { return parseLAN9303(p, in) },
	decode:      decLAN9303,
	decodeBatch: decLAN9303Batchx4,
	encode:      func(_ *codec, mem []byte, f *frame.Frame, d Dest) Reason { return encLAN9303(mem, f, d) },
	encodeBatch: func(mem []byte, fr []frame.Frame, rs []Reason, d Dest, _ *codec) {
		// Not bridged: 0x8100, port | STP_OVERRIDE (bit 4). Bridged unicast depends on the DA:
		// the slow path.
		if d.Flags&DestBridged != 0 {
			markSlow(rs)
			return
		}
		encSA4Batchx4(mem, fr, rs, 0x0081|uint32(bswap16(uint16(d.Ports.First())|1<<4))<<16, minFrame)
	},
	swEncode: func(_ *codec, mem []byte, f *frame.Frame, in Info) Reason {
		port := int(in.Port)
		if port > 3 {
			return ReasonPort
		}
		if r := room(f, 4, 0, 0); r != ReasonNone {
			return r
		}
		p := pushSA(mem, f, 4)
		v := byte(port)
		if in.Flags&InfoTrapped != 0 {
			v |= 0x10 // RX_STP
		}
		p[12], p[13], p[14], p[15] = 0x81, 0x00, 0, v
		return ReasonNone
	},
	swDecode: func(_ *SwitchSide, mem []byte, f *frame.Frame, p []byte) (d Dest, _ Reason) {
		if be16(p[12:14]) != frame.TypeVLAN {
			return d, ReasonBadTag
		}
		v := be16(p[14:16])
		switch {
		case v == 1<<3:
			d.Flags |= DestBridged
		case v&^0x13 == 0 && v&0x10 != 0:
			d.Ports = Port(int(v & 3))
		default:
			return d, ReasonBadTag
		}
		swStripSA(mem, f, 4)
		return d, ReasonNone
	},
	malformed: func(p []byte) Reason {
		p[12], p[13] = 0x88, 0xa8 // TPID must be 0x8100
		return ReasonBadTag
	},
	tagger: func(c codec) Tagger { return &tLAN9303{c} },
}

// parseLAN9303: an 802.1Q tag whose VID[1:0] is the source port; VID bits 3 (IGMP) and 4 (STP)
// mean the frame was trapped to the CPU.
func parseLAN9303(p []byte, in *Info) Reason {
	if len(p) < minFrame+4 {
		return ReasonTruncated
	}
	return lan9303Info(be32(p[12:16]), in)
}

func lan9303Info(w uint32, in *Info) Reason {
	if w>>16 != uint32(frame.TypeVLAN) {
		return ReasonBadTag
	}
	v := uint16(w)
	var fl InfoFlags
	if v&0x18 != 0 {
		fl = InfoTrapped
	}
	*in = Info{TagLen: 4, Port: v & 3, Code: uint8(v), Flags: fl}
	return ReasonNone
}

// encLAN9303: 0x8100, then USE_ALR (bit 3) for bridged unicast, else port | STP_OVERRIDE (bit 4).
func encLAN9303(mem []byte, f *frame.Frame, d Dest) Reason {
	if r := room(f, 4, 0, 0); r != ReasonNone {
		return r
	}
	p := pushSA(mem, f, 4)
	v := uint16(d.Ports.First()) | 1<<4
	if d.Flags&DestBridged != 0 && p[0]&1 == 0 {
		v = 1 << 3
	}
	p[12], p[13], p[14], p[15] = 0x81, 0x00, byte(v>>8), byte(v)
	return ReasonNone
}

func decLAN9303(_ *codec, mem []byte, f *frame.Frame, in *Info) Reason {
	p := f.Data(mem)
	if len(p) < minFrame+4 {
		return ReasonTruncated
	}
	if r := lan9303Info(be32(p[12:16]), in); r != ReasonNone {
		return r
	}
	if r := stripSA(p, f, 4); r != ReasonNone {
		return r
	}
	if in.Flags&InfoTrapped != 0 {
		f.Flags |= frame.FlagTrapped
	}
	return ReasonNone
}

// decLAN9303Batch: 0x8100 at b12-13; VID bits 3 and 4 (trapped) take the slow path; port VID[1:0].
//
//go:noinline
func decLAN9303Batch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason, _ *codec) {
	lim := int64(len(mem)) - 16
	for i := range fr {
		f, in := &fr[i], &ins[i]
		o, lh := int64(f.Off), lenHead(f)
		if uint16(lh) >= minFrame+4 && lh < (0x10000-4)<<16 && o <= lim {
			h := mem[o : o+16 : o+16]
			if le.Uint32(h[12:16])&(0x18<<24|0xffff) == 0x0081 {
				*in = Info{Port: uint16(h[15] & 3), TagLen: 4, Code: h[15]}
				*(*[12]byte)(h[4:16]) = *(*[12]byte)(h[0:12]) // MACs
				f.Off += 4
				setLenHead(f, lh+4<<16-4)
				continue
			}
		}
		slow(&rs[i])
	}
}

type tLAN9303 struct{ codec }

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
