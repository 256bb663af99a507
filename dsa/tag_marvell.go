package dsa

import (
	"encoding/binary"
	"math/bits"

	"github.com/wirespeed/wirespeed/frame"
)

// ---- Marvell: net/dsa/tag_dsa.c (dsa_rcv_ll, dsa_xmit_ll, edsa_xmit) ----

var fmtDSA = format{
	spec:        spec("dsa", PosSA, 4, 4, 0, 32, false),
	parse:       func(_ *codec, p []byte, in *Info) Reason { return parseMarvell(p, 0, in) },
	decode:      decDSA,
	decodeBatch: decDSABatchx4,
	encode: func(_ *codec, mem []byte, f *frame.Frame, d Dest) Reason {
		if r := encDSA(mem, f, d); r != reasonSlow {
			return r
		}
		return encMarvell(mem, f, d, 0)
	},
	encodeBatch: encodeDSA,
	swEncode:    func(_ *codec, mem []byte, f *frame.Frame, in Info) Reason { return rxMarvell(mem, f, in, 0) },
	swDecode: func(_ *SwitchSide, mem []byte, f *frame.Frame, p []byte) (d Dest, _ Reason) {
		r := txMarvell(mem, f, p, &d, 0)
		return d, r
	},
	malformed: func(p []byte) Reason {
		p[12] = mvCmdFromCPU << 6 // FROM_CPU never comes from the switch
		return ReasonBadTag
	},
	tagger: func(c codec) Tagger { return &tDSA{c} },
}

var fmtEDSA = format{
	spec:        spec("edsa", PosSA, 8, 8, 0, 32, false),
	parse:       func(_ *codec, p []byte, in *Info) Reason { return parseMarvell(p, 4, in) },
	decode:      decEDSA,
	decodeBatch: decEDSABatchx4,
	encode: func(_ *codec, mem []byte, f *frame.Frame, d Dest) Reason {
		if r := encEDSA(mem, f, d); r != reasonSlow {
			return r
		}
		return encMarvell(mem, f, d, 4)
	},
	encodeBatch: encodeEDSA,
	swEncode:    func(_ *codec, mem []byte, f *frame.Frame, in Info) Reason { return rxMarvell(mem, f, in, 4) },
	swDecode: func(_ *SwitchSide, mem []byte, f *frame.Frame, p []byte) (d Dest, _ Reason) {
		if be16(p[12:14]) != ethPEDSA {
			return d, ReasonNotTagged
		}
		if p[14] != 0 || p[15] != 0 {
			return d, ReasonBadTag
		}
		r := txMarvell(mem, f, p, &d, 4)
		return d, r
	},
	malformed: func(p []byte) Reason {
		p[16] = mvCmdFromCPU << 6
		return ReasonBadTag
	},
	tagger: func(c codec) Tagger { return &tEDSA{c} },
}

const (
	mvCmdToCPU   = 0
	mvCmdFromCPU = 1
	mvCmdSniffer = 2
	mvCmdForward = 3

	mvVIDStandalone = 0     // MV88E6XXX_VID_STANDALONE
	mvVIDBridged    = 0xfff // MV88E6XXX_VID_BRIDGED (VLAN_N_VID - 1)
	ethPEDSA        = 0xdada
)

// parseMarvell: the 4-byte DSA tag sits at p[12+extra:]; edsa (extra 4) puts 0xDADA 0x0000 first.
func parseMarvell(p []byte, extra int, in *Info) Reason {
	if len(p) < minFrame+4+extra {
		return ReasonTruncated
	}
	if extra != 0 && be16(p[12:14]) != ethPEDSA {
		// Linux does not look at the EtherType (the switch is set to 0xDADA); we do, so that an
		// untagged frame is not misread as a tag.
		return ReasonNotTagged
	}
	return mvInfo(be32(p[12+extra:16+extra]), uint8(4+extra), in)
}

// mvInfo reads the DSA tag w (big-endian, b0 in bits 31-24):
//
//	b0: cmd[7:6] tagged[5] dev[4:0]   b1: port[7:3] trunk/code[2:1] CFI[0]   b2-b3: VID, CFI slot b2.4
func mvInfo(w uint32, tagLen uint8, in *Info) Reason {
	var fl InfoFlags
	var code uint8
	switch w >> 30 {
	case mvCmdForward:
		if w&(4<<16) != 0 {
			fl = InfoTrunk
		}
	case mvCmdToCPU:
		code = uint8(w>>16)&6 | uint8(w>>12)&1
		switch code {
		case 0, 2, 3: // MGMT_TRAP, IGMP_MLD_TRAP, POLICY_TRAP: not forwarded by hardware
			fl = InfoTrapped
		case 4, 5: // ARP_MIRROR, POLICY_MIRROR: hardware forwarded it too
		default: // FRAME2REG (remote management), reserved 6 and 7: Linux drops these
			return ReasonUnsupported
		}
	case mvCmdSniffer:
		return ReasonUnsupported
	default: // FROM_CPU never comes from the switch
		return ReasonBadTag
	}
	var tpid, tci uint16
	if w&(0x20<<24) != 0 {
		// Tagged: b2-b3 are the frame's TCI with the CFI bit moved to b1.0.
		tci = uint16(w)&^0x1000 | uint16(w>>4)&0x1000
		fl |= InfoVLAN
		tpid = frame.TypeVLAN
	}
	*in = Info{Port: uint16(w>>19) & 0x1f, Switch: uint8(w>>24) & 0x1f, TagLen: tagLen, Flags: fl, Code: code, TPID: tpid, TCI: tci}
	return ReasonNone
}

// encMarvell builds a FROM_CPU (or FORWARD) tag. A frame that already carries an 802.1Q tag,
// in the bytes or out of band (frame.FlagVLAN with TPID 0x8100), has it folded into the DSA tag
// ("tagged" bit set, CFI moved from b2.4 to b1.0) instead of getting a second tag.
func encMarvell(mem []byte, f *frame.Frame, d Dest, extra int) Reason {
	if d.Switch > 0x1f {
		return ReasonPort
	}
	cmd := byte(mvCmdFromCPU)
	if d.Flags&DestForward != 0 {
		cmd = mvCmdForward
	}
	p := f.Data(mem)
	inband := len(p) >= 18 && p[12] == 0x81 && p[13] == 0x00
	oob := !inband && f.Flags&frame.FlagVLAN != 0 && f.TPID == frame.TypeVLAN
	push := 4 + extra
	if inband {
		push = extra
	}
	if r := room(f, push, 0, 0); r != ReasonNone {
		return r
	}
	if push > 0 {
		p = pushSA(mem, f, push)
	}
	h := p[12+extra : 16+extra]
	tagged := inband || oob
	var b2, b3 byte
	switch {
	case inband:
		b2, b3 = h[2], h[3]
	case oob:
		b2, b3 = byte(f.TCI>>8), byte(f.TCI)
		f.Flags &^= frame.FlagVLAN
	default:
		vid := uint16(mvVIDStandalone)
		if d.Flags&DestBridged != 0 {
			vid = mvVIDBridged
		}
		b2, b3 = byte(vid>>8), byte(vid)
	}
	h[0] = cmd<<6 | d.Switch&0x1f
	h[1] = byte(d.Ports.First()) << 3
	if tagged {
		h[0] |= 0x20
		if b2&0x10 != 0 {
			h[1] |= 1
			b2 &^= 0x10
		}
	}
	h[2], h[3] = b2, b3
	if extra != 0 {
		p[12], p[13], p[14], p[15] = ethPEDSA>>8, ethPEDSA&0xff, 0, 0
	}
	return ReasonNone
}

// decMarvell strips a dsa (extra 0) or edsa (extra 4) tag; a tag with the "tagged" bit leaves a
// regular 802.1Q tag in its last four bytes (tag_dsa.c dsa_rcv_ll).
func decMarvell(p []byte, f *frame.Frame, in *Info, extra int) Reason {
	n := 4 + extra
	if r := mvInfo(be32(p[12+extra:16+extra]), uint8(n), in); r != ReasonNone {
		return r
	}
	if headFull(f, n) {
		return ReasonTruncated
	}
	fl := in.Flags
	if fl&InfoVLAN != 0 {
		binary.BigEndian.PutUint32(p[n+8:n+12], uint32(frame.TypeVLAN)<<16|uint32(in.TCI))
		n -= 4
	}
	if n > 0 {
		_ = stripSA(p, f, n) // cannot fail: headFull was checked for the whole tag above
	}
	if fl&InfoTrapped != 0 {
		f.Flags |= frame.FlagTrapped
	}
	return ReasonNone
}

// decDSA and decEDSA check the length (and EDSA's EtherType) and hand the tag to decMarvell. The
// common tag (FORWARD, not "tagged", not from a trunk) never reaches them from the Taggers: the
// per-frame Decode (tDSA, tEDSA) and the batch loops decode it themselves.
func decDSA(_ *codec, mem []byte, f *frame.Frame, in *Info) Reason {
	p := f.Data(mem)
	if len(p) < minFrame+4 {
		return ReasonTruncated
	}
	return decMarvell(p[:16], f, in, 0)
}

func decEDSA(_ *codec, mem []byte, f *frame.Frame, in *Info) Reason {
	p := f.Data(mem)
	if len(p) < minFrame+8 {
		return ReasonTruncated
	}
	if be16(p[12:14]) != ethPEDSA {
		return ReasonNotTagged
	}
	return decMarvell(p[:20], f, in, 4)
}

// mvTxWord is the FROM_CPU (or FORWARD) tag for an untagged frame toward d, which passed checkDest.
func mvTxWord(d Dest) uint32 {
	cmd := uint32(mvCmdFromCPU)
	if d.Flags&DestForward != 0 {
		cmd = mvCmdForward
	}
	vid := uint32(mvVIDStandalone)
	if d.Flags&DestBridged != 0 {
		vid = mvVIDBridged
	}
	return (cmd<<6|uint32(d.Switch))<<24 | uint32(d.Ports.First())<<19 | vid
}

// encDSA and encEDSA are the common Marvell encode as leaf functions: an untagged frame (no
// 802.1Q tag in its bytes or out of band) with room for the tag. Anything else returns reasonSlow
// for encMarvell, which also reports the exact error. The frame's bytes and the headroom in front
// are one array q: the tag goes at q[12:], the MAC bytes move from q[n:n+12] to q[0:12].
func encDSA(mem []byte, f *frame.Frame, d Dest) Reason {
	if d.Switch > 0x1f || f.Flags&frame.FlagVLAN != 0 || f.Head < 4 || f.Len > 0xffff-4 || f.Len < minFrame {
		return reasonSlow
	}
	off := f.Off - 4
	q := (*[18]byte)(mem[off : off+18])
	if be16(q[16:18]) == frame.TypeVLAN {
		return reasonSlow
	}
	lo := binary.LittleEndian.Uint64(q[4:12])
	hi := binary.LittleEndian.Uint32(q[12:16])
	binary.LittleEndian.PutUint64(q[0:8], lo)
	binary.LittleEndian.PutUint32(q[8:12], hi)
	binary.BigEndian.PutUint32(q[12:16], mvTxWord(d))
	f.Off = off
	f.Head -= 4
	f.Len += 4
	return ReasonNone
}

func encEDSA(mem []byte, f *frame.Frame, d Dest) Reason {
	if d.Switch > 0x1f || f.Flags&frame.FlagVLAN != 0 || f.Head < 8 || f.Len > 0xffff-8 || f.Len < minFrame {
		return reasonSlow
	}
	off := f.Off - 8
	q := (*[22]byte)(mem[off : off+22])
	if be16(q[20:22]) == frame.TypeVLAN {
		return reasonSlow
	}
	lo := binary.LittleEndian.Uint64(q[8:16])
	hi := binary.LittleEndian.Uint32(q[16:20])
	binary.LittleEndian.PutUint64(q[0:8], lo)
	binary.LittleEndian.PutUint32(q[8:12], hi)
	binary.BigEndian.PutUint32(q[12:16], ethPEDSA<<16)
	binary.BigEndian.PutUint32(q[16:20], mvTxWord(d))
	f.Off = off
	f.Head -= 8
	f.Len += 8
	return ReasonNone
}

// decDSABatch: FORWARD (cmd 3), not tagged, not from a trunk: b12 & 0xe0 == 0xc0, b13 & 0x04 ==
// 0; switch b12[4:0], port b13[7:3].
//
//go:noinline
func decDSABatch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason, _ *codec) {
	lim := int64(len(mem)) - 16
	for i := range fr {
		f, in := &fr[i], &ins[i]
		o, lh := int64(f.Off), lenHead(f)
		if uint16(lh) >= minFrame+4 && lh < (0x10000-4)<<16 && o <= lim {
			h := mem[o : o+16 : o+16]
			if t := le.Uint16(h[12:14]); t&0x04e0 == 0x00c0 {
				*in = Info{Port: t >> 11, Switch: uint8(t) & 0x1f, TagLen: 4}
				*(*[12]byte)(h[4:16]) = *(*[12]byte)(h[0:12]) // MACs
				f.Off += 4
				setLenHead(f, lh+4<<16-4)
				continue
			}
		}
		slow(&rs[i])
	}
}

// decEDSABatch: 0xDADA at b12-13, then the dsa fast tag at b16-19.
//
//go:noinline
func decEDSABatch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason, _ *codec) {
	lim := int64(len(mem)) - 20
	for i := range fr {
		f, in := &fr[i], &ins[i]
		o, lh := int64(f.Off), lenHead(f)
		if uint16(lh) >= minFrame+8 && lh < (0x10000-8)<<16 && o <= lim {
			h := mem[o : o+20 : o+20]
			if w := le.Uint64(h[12:20]); w&0x04e0_0000_ffff == 0x00c0_0000_dada { // 0xDADA, the tag's b0-b1
				t := uint16(w >> 32)
				*in = Info{Port: t >> 11, Switch: uint8(t) & 0x1f, TagLen: 8}
				*(*[12]byte)(h[8:20]) = *(*[12]byte)(h[0:12]) // MACs
				f.Off += 8
				setLenHead(f, lh+8<<16-8)
				continue
			}
		}
		slow(&rs[i])
	}
}

// encodeDSA and encodeEDSA build the tag once and tag the batch; a switch index out of range
// takes every frame to the general code, which reports it.
func encodeDSA(mem []byte, fr []frame.Frame, rs []Reason, d Dest, _ *codec) {
	if d.Switch > 0x1f {
		markSlow(rs)
		return
	}
	encDSABatchx4(mem, fr, rs, bswap32(mvTxWord(d)))
}

func encodeEDSA(mem []byte, fr []frame.Frame, rs []Reason, d Dest, _ *codec) {
	if d.Switch > 0x1f {
		markSlow(rs)
		return
	}
	encEDSABatchx4(mem, fr, rs, uint64(bswap32(mvTxWord(d)))<<32|0xdada)
}

// encDSABatch: an untagged frame (no 802.1Q tag in its bytes or out of band): the MAC addresses
// move 4 bytes toward the head and the tag takes their place.
//
//go:noinline
func encDSABatch(mem []byte, fr []frame.Frame, rs []Reason, tw uint32) {
	lim := int64(len(mem)) - 14
	for i := range fr {
		f := &fr[i]
		o, lh := int64(f.Off), lenHead(f)
		if f.Flags&frame.FlagVLAN == 0 && lh >= 4<<16 && uint16(lh) >= minFrame && uint16(lh) <= 0xffff-4 && o >= 4 && o <= lim {
			q := mem[o-4 : o+14 : o+14]
			if le.Uint16(q[16:18]) != 0x0081 {
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

// encEDSABatch is encDSABatch with 8 bytes: 0xDADA 0x0000 and the DSA tag.
//
//go:noinline
func encEDSABatch(mem []byte, fr []frame.Frame, rs []Reason, tw uint64) {
	lim := int64(len(mem)) - 14
	for i := range fr {
		f := &fr[i]
		o, lh := int64(f.Off), lenHead(f)
		if f.Flags&frame.FlagVLAN == 0 && lh >= 8<<16 && uint16(lh) >= minFrame && uint16(lh) <= 0xffff-8 && o >= 8 && o <= lim {
			q := mem[o-8 : o+14 : o+14]
			if le.Uint16(q[20:22]) != 0x0081 {
				*(*[12]byte)(q[0:12]) = *(*[12]byte)(q[8:20]) // MACs
				le.PutUint64(q[12:20], tw)
				f.Off -= 8
				setLenHead(f, lh-8<<16+8)
				continue
			}
		}
		slow(&rs[i])
	}
}

type (
	tDSA  struct{ codec }
	tEDSA struct{ codec }
)

// Decode: FORWARD (cmd 3), not tagged, not from a trunk: b12 & 0xe0 == 0xc0, b13 & 0x04 == 0;
// switch b12[4:0], port b13[7:3].
func (t *tDSA) Decode(b *frame.Batch, i int, in *Info) error {
	f := &b.Frames[i]
	if o, lh := int64(f.Off), lenHead(f); headOK(lh, 4) && o <= int64(len(b.Mem))-16 {
		h := b.Mem[o : o+16 : o+16]
		if t := le.Uint16(h[12:14]); t&0x04e0 == 0x00c0 {
			*in = Info{Port: t >> 11, Switch: uint8(t) & 0x1f, TagLen: 4}
			*(*[12]byte)(h[4:16]) = *(*[12]byte)(h[0:12]) // MACs
			pull(f, lh, 4)
			return nil
		}
	}
	return t.decodeSlow(b, i, in)
}

// Decode: 0xDADA at b12-13, then the dsa fast tag at b16-19.
func (t *tEDSA) Decode(b *frame.Batch, i int, in *Info) error {
	f := &b.Frames[i]
	if o, lh := int64(f.Off), lenHead(f); headOK(lh, 8) && o <= int64(len(b.Mem))-20 {
		h := b.Mem[o : o+20 : o+20]
		if t := le.Uint16(h[16:18]); le.Uint16(h[12:14]) == 0xdada && t&0x04e0 == 0x00c0 {
			*in = Info{Port: t >> 11, Switch: uint8(t) & 0x1f, TagLen: 8}
			*(*[12]byte)(h[8:20]) = *(*[12]byte)(h[0:12]) // MACs
			pull(f, lh, 8)
			return nil
		}
	}
	return t.decodeSlow(b, i, in)
}

// mvTag is mvTxWord for a single port (ports != 0), from the fields (a Dest handed to an inlined
// function is copied through memory), without branches: cmd FROM_CPU (1) or FORWARD (3) in bits
// 31-30, the switch in 28-24, the port in 23-19, VID 0 or 4095 (bridged).
func mvTag(ports PortMask, sw uint8, fl DestFlags) uint32 {
	return 1<<30 | uint32(fl&DestForward)<<31 | uint32(sw)<<24 | uint32(bits.TrailingZeros32(uint32(ports)))<<19 |
		-uint32(fl>>1&1)&mvVIDBridged
}

// Encode: an untagged frame (no 802.1Q tag in its bytes or out of band): the MAC addresses move 4
// bytes toward the head and the FROM_CPU (FORWARD) tag takes their place.
func (t *tDSA) Encode(b *frame.Batch, i int, d Dest) error {
	f := &b.Frames[i]
	if o, lh := int64(f.Off), lenHead(f); one(d.Ports, ^PortMask(0)) && d.Switch <= 0x1f && f.Flags&frame.FlagVLAN == 0 &&
		pushOK(lh, 4, minFrame) && o >= 4 && o <= int64(len(b.Mem))-14 {
		q := b.Mem[o-4 : o+14 : o+14]
		if le.Uint16(q[16:18]) != 0x0081 {
			*(*[12]byte)(q[0:12]) = *(*[12]byte)(q[4:16]) // MACs
			be.PutUint32(q[12:16], mvTag(d.Ports, d.Switch, d.Flags))
			push(f, lh, 4)
			return nil
		}
	}
	return t.encodeSlow(b, i, d)
}

// Encode: as dsa, with 0xDADA 0x0000 in front of the tag.
func (t *tEDSA) Encode(b *frame.Batch, i int, d Dest) error {
	f := &b.Frames[i]
	if o, lh := int64(f.Off), lenHead(f); one(d.Ports, ^PortMask(0)) && d.Switch <= 0x1f && f.Flags&frame.FlagVLAN == 0 &&
		pushOK(lh, 8, minFrame) && o >= 8 && o <= int64(len(b.Mem))-14 {
		q := b.Mem[o-8 : o+14 : o+14]
		if le.Uint16(q[20:22]) != 0x0081 {
			*(*[12]byte)(q[0:12]) = *(*[12]byte)(q[8:20]) // MACs
			le.PutUint32(q[12:16], 0xdada)
			be.PutUint32(q[16:20], mvTag(d.Ports, d.Switch, d.Flags))
			push(f, lh, 8)
			return nil
		}
	}
	return t.encodeSlow(b, i, d)
}

// rxMarvell writes TO_CPU (trapped, or with a non-zero code) or FORWARD (trunk bit with
// InfoTrunk) and folds an in-band 802.1Q tag into the DSA tag.
func rxMarvell(mem []byte, f *frame.Frame, in Info, extra int) Reason {
	if in.Port > 0x1f || in.Switch > 0x1f || in.Code > 7 {
		return ReasonPort
	}
	p := f.Data(mem)
	tagged := len(p) >= 18 && p[12] == 0x81 && p[13] == 0x00
	push := 4 + extra
	if tagged {
		push = extra
	}
	if r := room(f, push, 0, 0); r != ReasonNone {
		return r
	}
	var tci uint16
	if tagged {
		tci = be16(p[14:16])
	}
	if push > 0 {
		p = pushSA(mem, f, push)
	}
	h := p[12+extra : 16+extra]
	cmd := byte(mvCmdForward)
	var b1 byte
	switch {
	case in.Flags&InfoTrunk != 0:
		b1 = 4
	case in.Flags&InfoTrapped != 0 || in.Code != 0:
		cmd = mvCmdToCPU
		b1 = in.Code & 6
	}
	h[0] = cmd<<6 | in.Switch
	h[1] = byte(in.Port)<<3 | b1 | 0
	h[2], h[3] = 0, 0
	if tagged {
		h[0] |= 0x20
		if tci&0x1000 != 0 {
			h[1] |= 1
		}
		h[2], h[3] = byte(tci>>8)&^0x10, byte(tci)
	}
	if cmd == mvCmdToCPU && in.Code&1 != 0 {
		h[2] |= 0x10
	}
	if extra != 0 {
		p[12], p[13], p[14], p[15] = ethPEDSA>>8, ethPEDSA&0xff, 0, 0
	}
	return ReasonNone
}

// txMarvell reads a FROM_CPU or FORWARD tag at p[12+extra:] and strips it, putting a folded
// 802.1Q tag back in place.
func txMarvell(mem []byte, f *frame.Frame, p []byte, d *Dest, extra int) Reason {
	h := p[12+extra : 16+extra]
	switch h[0] >> 6 {
	case mvCmdFromCPU:
	case mvCmdForward:
		d.Flags |= DestForward
	default:
		return ReasonBadTag
	}
	if h[1]&6 != 0 {
		return ReasonBadTag
	}
	d.Switch = h[0] & 0x1f
	d.Ports = Port(int(h[1] >> 3))
	if h[0]&0x20 != 0 {
		tci := uint16(h[2])<<8 | uint16(h[3])
		if h[1]&1 != 0 {
			tci |= 0x1000
		}
		h[0], h[1], h[2], h[3] = 0x81, 0x00, byte(tci>>8), byte(tci)
		if extra > 0 {
			swStripSA(mem, f, extra)
		}
		return ReasonNone
	}
	if h[1]&1 != 0 {
		return ReasonBadTag
	}
	if be16(h[2:4])&0xfff == mvVIDBridged {
		d.Flags |= DestBridged
	}
	swStripSA(mem, f, 4+extra)
	return ReasonNone
}
