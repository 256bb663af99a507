package dsa

import (
	"github.com/wirespeed/wirespeed/frame"
)

// Each parseX reads a tag at its documented place (the kernel file and function are named above
// each one) and never writes. Each encX assumes the frame holds at least an Ethernet header and d
// passed checkDest; it checks room before writing anything.

// ---- Marvell: net/dsa/tag_dsa.c (dsa_rcv_ll, dsa_xmit_ll, edsa_xmit) ----

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

// ---- Broadcom: net/dsa/tag_brcm.c (brcm_tag_rcv_ll, brcm_tag_xmit_ll) ----

// parseBrcm: the egress (switch to CPU) tag at p[off:off+4]: opcode b0[7:5] must be 0, reason
// code b2 must not have the reserved bits 7:6, source port b3[4:0].
func parseBrcm(p []byte, off int, in *Info) Reason {
	if len(p) < minFrame+4 {
		return ReasonTruncated
	}
	return brcmInfo(be32(p[off:off+4]), in)
}

func brcmInfo(w uint32, in *Info) Reason {
	if w>>29 != 0 || w&0xc000 != 0 {
		return ReasonBadTag
	}
	*in = Info{TagLen: 4, Port: uint16(w) & 0x1f, Code: uint8(w >> 8)}
	return ReasonNone
}

// encBrcm pads to 64 bytes (ETH_ZLEN + BRCM_TAG_LEN) first, then writes the ingress tag:
// b0 = opcode 1 <<5 | TC<<2, b1 = 0, b2.0 = port 8, b3 = ports 7-0.
func encBrcm(mem []byte, f *frame.Frame, d Dest, prepend bool) Reason {
	if r := room(f, 4, 64, 0); r != ReasonNone {
		return r
	}
	if f.Len < 64 {
		_ = f.Pad(mem, 64)
	}
	var t []byte
	if prepend {
		t = pushPrefix(mem, f, 4)[:4]
	} else {
		t = pushSA(mem, f, 4)[12:16]
	}
	t[0] = 1<<5 | (d.Prio&7)<<2
	t[1] = 0
	t[2] = byte(d.Ports>>8) & 1
	t[3] = byte(d.Ports)
	return ReasonNone
}

// ---- Qualcomm: net/dsa/tag_qca.c, include/linux/dsa/tag_qca.h ----

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

// ---- MediaTek: net/dsa/tag_mtk.c ----

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

// ---- Microchip KSZ: net/dsa/tag_ksz.c ----

// parseKSZ8795: one tail byte, source port[1:0] (KSZ8795_TAIL_TAG_EG_PORT_M).
func parseKSZ8795(p []byte, in *Info) Reason {
	if len(p) < minFrame+1 {
		return ReasonTruncated
	}
	*in = Info{TagLen: 1, Port: uint16(p[len(p)-1] & 3)}
	return ReasonNone
}

// parseKSZ9477 (also ksz9893 and lan937x, which share ksz9477_rcv): one tail byte, source
// port[2:0]; bit 7 says a 4-byte big-endian timestamp precedes it.
func parseKSZ9477(p []byte, in *Info) Reason {
	n := len(p)
	if n < minFrame+1 {
		return ReasonTruncated
	}
	t := p[n-1]
	if t&0x80 == 0 {
		*in = Info{TagLen: 1, Port: uint16(t & 7)}
		return ReasonNone
	}
	if n < minFrame+5 {
		return ReasonTruncated
	}
	*in = Info{TagLen: 5, Port: uint16(t & 7), Flags: InfoTimestamp, Timestamp: be32(p[n-5 : n-1])}
	return ReasonNone
}

// encKSZ pads to 60 (the DSA core does it for every tail tagger), then appends:
//
//	ksz8795: mask | override bit 6
//	ksz9477: BE16 mask[6:0] | prio[8:7] | override bit 9
//	ksz9893: mask[2:0] | prio[4:3] | override bit 5
//	lan937x: BE16 mask[7:0] | prio[10:8] | override bit 11 | valid bit 13
//
// override ("send even if the port is blocked") is set for link-local destinations as Linux does;
// DestTimestamp puts the 4 zero bytes of the PTP timestamp field in front (not for ksz8795).
func encKSZ(mem []byte, f *frame.Frame, d Dest, k kind) Reason {
	n := 2
	if k == kKSZ8795 || k == kKSZ9893 {
		n = 1
	}
	ts := 0
	if d.Flags&DestTimestamp != 0 && k != kKSZ8795 {
		ts = 4
	}
	if r := room(f, 0, 60, n+ts); r != ReasonNone {
		return r
	}
	ll := linkLocal(f.Data(mem))
	t := appendTail(mem, f, 60, n+ts)
	if ts != 0 {
		t[0], t[1], t[2], t[3] = 0, 0, 0, 0
		t = t[4:]
	}
	m := uint16(d.Ports)
	switch k {
	case kKSZ8795:
		v := byte(m)
		if ll {
			v |= 1 << 6
		}
		t[0] = v
	case kKSZ9893:
		v := byte(m) | (d.Prio&3)<<3
		if ll {
			v |= 1 << 5
		}
		t[0] = v
	case kKSZ9477:
		v := m | uint16(d.Prio&3)<<7
		if ll {
			v |= 1 << 9
		}
		t[0], t[1] = byte(v>>8), byte(v)
	default: // lan937x
		v := m | uint16(d.Prio&7)<<8 | 1<<13
		if ll {
			v |= 1 << 11
		}
		t[0], t[1] = byte(v>>8), byte(v)
	}
	return ReasonNone
}

// ---- Realtek: net/dsa/tag_rtl4_a.c, net/dsa/tag_rtl8_4.c ----

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

// ---- tag_8021q: net/dsa/tag_8021q.c, used by ocelot-8021q, vsc73xx-8021q and sja1105 ----

// VID layout: RSV[11:10] = 0b11, VBID {9, 5:4}, SWITCH_ID[8:6], PORT[3:0].
const (
	q8021RSV = 3 << 10
)

// Tag8021QVID is the standalone VID of (switch, port): what the switch puts on frames from that
// port and what the CPU sends to reach it (dsa_tag_8021q_standalone_vid).
func Tag8021QVID(sw, port int) uint16 {
	return q8021RSV | uint16(sw&7)<<6 | uint16(port&0xf)
}

// Tag8021QBridgeVID is the VID of virtual bridge vbid (1-7) (dsa_tag_8021q_bridge_vid).
func Tag8021QBridgeVID(vbid int) uint16 {
	return q8021RSV | uint16(vbid&4)<<7 | uint16(vbid&3)<<4
}

// ParseTag8021QVID splits a tag_8021q VID; ok is false if the reserved bits are not 0b11
// (vid_is_dsa_8021q).
func ParseTag8021QVID(vid uint16) (sw, port, vbid int, ok bool) {
	vid &= 0xfff
	if vid>>10 != 3 {
		return 0, 0, 0, false
	}
	return int(vid>>6) & 7, int(vid) & 0xf, int(vid>>9&1)<<2 | int(vid>>4)&3, true
}

// parse8021Q: a VLAN tag with the tagger's TPID whose VID has RSV = 0b11. Anything else is an
// ordinary VLAN frame, not a switch tag (Linux then keeps the tag and looks the VID up elsewhere).
func parse8021Q(p []byte, tpid uint16, in *Info) Reason {
	if len(p) < minFrame+4 {
		return ReasonTruncated
	}
	return q8021Info(be32(p[12:16]), tpid, in)
}

func q8021Info(w uint32, tpid uint16, in *Info) Reason {
	tci := uint16(w)
	if w>>16 != uint32(tpid) || tci>>10&3 != 3 { // vid_is_dsa_8021q
		return ReasonNotTagged
	}
	vbid := uint8(tci>>7)&4 | uint8(tci>>4)&3
	if vbid != 0 {
		*in = Info{TagLen: 4, TCI: tci, Flags: InfoBridge, Code: vbid}
		return ReasonNone
	}
	*in = Info{TagLen: 4, TCI: tci, Switch: uint8(tci>>6) & 7, Port: tci & 0xf}
	return ReasonNone
}

// enc8021Q inserts TPID, PCP<<13 | VID (dsa_8021q_xmit): the standalone VID of (Switch, port), or
// the bridge VID when Dest.Bridge is set.
func enc8021Q(mem []byte, f *frame.Frame, d Dest, tpid uint16) Reason {
	if d.Switch > 7 || d.Bridge > 7 {
		return ReasonPort
	}
	var vid uint16
	if d.Bridge != 0 {
		vid = Tag8021QBridgeVID(int(d.Bridge))
	} else {
		vid = Tag8021QVID(int(d.Switch), d.Ports.First())
	}
	if r := room(f, 4, 0, 0); r != ReasonNone {
		return r
	}
	p := pushSA(mem, f, 4)
	tci := uint16(d.Prio&7)<<13 | vid
	p[12], p[13], p[14], p[15] = byte(tpid>>8), byte(tpid), byte(tci>>8), byte(tci)
	return ReasonNone
}

// ---- extras: tag_ar9331.c, tag_gswip.c, tag_hellcreek.c, tag_lan9303.c, tag_trailer.c ----

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
