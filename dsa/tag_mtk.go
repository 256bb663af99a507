package dsa

import (
	"github.com/wirespeed/wirespeed/frame"
)

// ---- MediaTek: net/dsa/tag_mtk.c ----

var fmtMTK = format{
	spec:        spec("mtk", PosSA, 4, 4, 0, 6, true),
	parse:       func(_ *codec, p []byte, in *Info) Reason { return parseMTK(p, in) },
	decode:      decMTK,
	decodeBatch: decMTKBatchx4,
	encode:      func(_ *codec, mem []byte, f *frame.Frame, d Dest) Reason { return encMTK(mem, f, d) },
	encodeBatch: func(mem []byte, fr []frame.Frame, rs []Reason, d Dest, _ *codec) {
		// b0 = 0 (untagged), b1 = port mask, b2-b3 = 0; with DestPad, frames under 60 bytes
		// (padding) take the slow path.
		encMTKBatchx4(mem, fr, rs, uint32(d.Ports&0x3f)<<8, uint16(max(minFrame, mtkPadTo(d))))
	},
	swEncode: rxMTK,
	swDecode: txMTK,
	tagger:   func(c codec) Tagger { return &tMTK{c} },
}

const (
	mtkUntagged = 0
	mtkTag8100  = 1
	mtkTag88A8  = 2
)

// parseMTK: 4 bytes at p[12:16]; the source port is BE16(b0,b1)[2:0]. Linux checks nothing else.
func parseMTK(p []byte, in *Info) Reason {
	if len(p) < minFrame+4 {
		return ReasonTruncated
	}
	*in = Info{TagLen: 4, Port: uint16(p[13] & 7)}
	return ReasonNone
}

// encMTK is mtk_tag_xmit: a frame with an 802.1Q or 802.1ad tag in its bytes has the TPID
// replaced by the special tag (b0 = 1 or 2, b1 = mask; the TCI stays in b2-b3), so nothing moves;
// an out-of-band tag (frame.FlagVLAN) goes into the new 4 bytes the same way; otherwise b0 = 0
// and b2-b3 = 0. b1 = port mask[5:0]; bits 6 (SA_DIS) and 7 stay clear, and Dest.Switch is not
// carried (mainline has no switch field). No padding, unless d has DestPad: then the frame is
// padded to 60 first (eth_skb_pad, as OpenWrt's patched driver does).
func encMTK(mem []byte, f *frame.Frame, d Dest) Reason {
	p := f.Data(mem)
	var kind byte = mtkUntagged
	if len(p) >= 18 {
		switch be16(p[12:14]) {
		case frame.TypeVLAN:
			kind = mtkTag8100
		case frame.TypeQinQ:
			kind = mtkTag88A8
		}
	}
	push := 4
	if kind != mtkUntagged {
		push = 0
	}
	pad := mtkPadTo(d)
	if r := room(f, push, pad, 0); r != ReasonNone {
		return r
	}
	if int(f.Len) < pad {
		_ = f.Pad(mem, pad)
	}
	var b2, b3 byte
	if push > 0 {
		if f.Flags&frame.FlagVLAN != 0 && (f.TPID == frame.TypeVLAN || f.TPID == frame.TypeQinQ) {
			kind = mtkTag8100
			if f.TPID == frame.TypeQinQ {
				kind = mtkTag88A8
			}
			b2, b3 = byte(f.TCI>>8), byte(f.TCI)
			f.Flags &^= frame.FlagVLAN
		}
		p = pushSA(mem, f, 4)
		p[14], p[15] = b2, b3
	} else {
		p = f.Data(mem)
	}
	p[12] = kind
	p[13] = byte(d.Ports) & 0x3f
	return ReasonNone
}

// mtkPadTo is the length encMTK pads to: 60 (ETH_ZLEN) with DestPad, else 0.
func mtkPadTo(d Dest) int {
	if d.Flags&DestPad != 0 {
		return frame.MinEthernetLen
	}
	return 0
}

func decMTK(_ *codec, mem []byte, f *frame.Frame, in *Info) Reason {
	p := f.Data(mem)
	if len(p) < minFrame+4 {
		return ReasonTruncated
	}
	*in = Info{TagLen: 4, Port: uint16(p[13] & 7)}
	return stripSA(p, f, 4)
}

// decMTKBatch: port b13[2:0]; Linux checks nothing else.
//
//go:noinline
func decMTKBatch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason, _ *codec) {
	lim := int64(len(mem)) - 16
	for i := range fr {
		f, in := &fr[i], &ins[i]
		o, lh := int64(f.Off), lenHead(f)
		if uint16(lh) >= minFrame+4 && lh < (0x10000-4)<<16 && o <= lim {
			h := mem[o : o+16 : o+16]
			*in = Info{Port: uint16(h[13] & 7), TagLen: 4}
			*(*[12]byte)(h[4:16]) = *(*[12]byte)(h[0:12]) // MACs
			f.Off += 4
			setLenHead(f, lh+4<<16-4)
			continue
		}
		slow(&rs[i])
	}
}

// encMTKBatch: a frame of at least short bytes (minFrame, or 60 with DestPad) with no VLAN tag
// (in its bytes or out of band) gets the 4-byte tag after the source MAC; a VLAN-tagged one (the
// special tag replaces the TPID) and a shorter one take the slow path.
//
//go:noinline
func encMTKBatch(mem []byte, fr []frame.Frame, rs []Reason, tw uint32, short uint16) {
	lim := int64(len(mem)) - 14
	for i := range fr {
		f := &fr[i]
		o, lh := int64(f.Off), lenHead(f)
		if f.Flags&frame.FlagVLAN == 0 && lh >= 4<<16 && uint16(lh) >= short && uint16(lh) <= 0xffff-4 && o >= 4 && o <= lim {
			q := mem[o-4 : o+14 : o+14]
			if et := le.Uint16(q[16:18]); et != 0x0081 && et != 0xa888 {
				*(*[12]byte)(q[0:12]) = *(*[12]byte)(q[4:16]) // MACs
				le.PutUint32(q[12:16], tw)
				f.Off -= 4
				setLenHead(f, lh-4<<16+4)
				continue
			}
		}
		slow(&rs[i])
	}
}

type tMTK struct{ codec }

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

// rxMTK writes b0 = 0, b1 = the source port, b2-b3 = 0.
func rxMTK(_ *codec, mem []byte, f *frame.Frame, in Info) Reason {
	port := int(in.Port)
	if port > 7 {
		return ReasonPort
	}
	if r := room(f, 4, 0, 0); r != ReasonNone {
		return r
	}
	p := pushSA(mem, f, 4)
	p[12], p[13], p[14], p[15] = 0, byte(port), 0, 0
	return ReasonNone
}

// txMTK reads the port mask and restores an 802.1Q or 802.1ad TPID the tag replaced.
func txMTK(_ *SwitchSide, mem []byte, f *frame.Frame, p []byte) (d Dest, _ Reason) {
	b1 := p[13]
	if b1&0xc0 != 0 { // mtk_tag_xmit writes the port mask alone
		return d, ReasonBadTag
	}
	d.Ports = PortMask(b1 & 0x3f)
	switch p[12] {
	case mtkUntagged:
		swStripSA(mem, f, 4)
	case mtkTag8100:
		p[12], p[13] = 0x81, 0x00
	case mtkTag88A8:
		p[12], p[13] = 0x88, 0xa8
	default:
		return d, ReasonBadTag
	}
	return d, ReasonNone
}
