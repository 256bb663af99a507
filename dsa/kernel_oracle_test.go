package dsa

// Byte-level expectations for any input, written from the receive and transmit functions of the
// kernel's tag drivers (net/dsa/tag_*.c) and the choices doc.go states where the package differs
// (edsa checks its EtherType, reserved Marvell codes and management frames are ErrUnsupported,
// an rtl4a or tag_8021q frame without the tag is ErrNotTagged, mtk pads only with DestPad). Slices
// and appends, one switch per format, nothing shared with the package: the fuzz targets hold the
// codec to these.

// kernelRx is what the driver's rcv makes of frame p: the frame after the tag is gone, the Info,
// and whether the frame is marked trapped; or the error.
type kernelRx struct {
	out     []byte
	in      Info
	trapped bool
	err     error
}

func rxErr(err error) kernelRx { return kernelRx{err: err} }

// stripAt removes n bytes at offset at.
func stripAt(p []byte, at, n int) []byte { return cat(p[:at], p[at+n:]) }

func kernelDecode(name string, p []byte) kernelRx {
	n := len(p)
	// Every driver pulls its tag, and the frame must keep an Ethernet header after it.
	need := map[string]int{
		"none": 0, "dsa": 4, "edsa": 8, "brcm": 4, "brcm-prepend": 4, "qca": 2, "mtk": 4,
		"ksz8795": 1, "hellcreek": 1, "ksz9477": 1, "ksz9893": 1, "lan937x": 1, "rtl4a": 4,
		"rtl8_4": 8, "rtl8_4t": 8, "ocelot-8021q": 4, "vsc73xx-8021q": 4, "sja1105": 4,
		"ar9331": 2, "gswip": 8, "lan9303": 4, "trailer": 4,
	}[name]
	if n < 14+need {
		return rxErr(ErrTruncated)
	}
	switch name {
	case "none":
		return kernelRx{out: cat(p)}
	case "dsa", "edsa":
		extra := 0
		if name == "edsa" {
			extra = 4
			if p[12] != 0xda || p[13] != 0xda {
				return rxErr(ErrNotTagged)
			}
		}
		h := p[12+extra : 16+extra]
		var in Info
		trap := false
		switch h[0] >> 6 {
		case 3: // DSA_CMD_FORWARD
			if h[1]&4 != 0 {
				in.Flags |= InfoTrunk
			}
		case 0: // DSA_CMD_TO_CPU
			code := h[1]&6 | h[2]>>4&1
			switch code {
			case 0, 2, 3: // MGMT_TRAP, IGMP_MLD_TRAP, POLICY_TRAP
				trap = true
			case 4, 5: // ARP_MIRROR, POLICY_MIRROR
			default: // FRAME2REG, reserved
				return rxErr(ErrUnsupported)
			}
			in.Code = code
		case 2: // TO_SNIFFER
			return rxErr(ErrUnsupported)
		default: // FROM_CPU
			return rxErr(ErrBadTag)
		}
		if trap {
			in.Flags |= InfoTrapped
		}
		in.Switch = h[0] & 0x1f
		in.Port = uint16(h[1] >> 3)
		in.TagLen = uint8(4 + extra)
		var out []byte
		if h[0]&0x20 != 0 {
			// Tagged: an 802.1Q tag takes the DSA tag's place, CFI back from b1.0 to b2.4.
			b2 := h[2] &^ 0x10
			if h[1]&1 != 0 {
				b2 |= 0x10
			}
			in.Flags |= InfoVLAN
			in.TPID, in.TCI = 0x8100, uint16(b2)<<8|uint16(h[3])
			out = cat(p[:12], []byte{0x81, 0x00, b2, h[3]}, p[16+extra:])
		} else {
			out = stripAt(p, 12, 4+extra)
		}
		return kernelRx{out: out, in: in, trapped: trap}
	case "brcm", "brcm-prepend":
		at := 12
		if name == "brcm-prepend" {
			at = 0
		}
		t := p[at : at+4]
		if t[0]>>5 != 0 || t[2]&0xc0 != 0 { // opcode, BRCM_EG_RC_RSVD
			return rxErr(ErrBadTag)
		}
		return kernelRx{out: stripAt(p, at, 4), in: Info{TagLen: 4, Port: uint16(t[3] & 0x1f), Code: t[2]}}
	case "qca":
		hdr := uint16(p[12])<<8 | uint16(p[13])
		if hdr>>14 != 2 {
			return rxErr(ErrBadTag)
		}
		typ := uint8(hdr>>6) & 0x1f
		if typ == 1 || typ == 2 { // MIB, RW_REG_ACK: management, not data
			return rxErr(ErrUnsupported)
		}
		return kernelRx{out: stripAt(p, 12, 2), in: Info{TagLen: 2, Port: hdr & 7, Code: typ}}
	case "mtk":
		return kernelRx{out: stripAt(p, 12, 4), in: Info{TagLen: 4, Port: uint16(p[13] & 7)}}
	case "ksz8795", "hellcreek":
		return kernelRx{out: cat(p[:n-1]), in: Info{TagLen: 1, Port: uint16(p[n-1] & 3)}}
	case "ksz9477", "ksz9893", "lan937x":
		t := p[n-1]
		if t&0x80 == 0 {
			return kernelRx{out: cat(p[:n-1]), in: Info{TagLen: 1, Port: uint16(t & 7)}}
		}
		if n < 14+5 {
			return rxErr(ErrTruncated)
		}
		ts := uint32(p[n-5])<<24 | uint32(p[n-4])<<16 | uint32(p[n-3])<<8 | uint32(p[n-2])
		return kernelRx{out: cat(p[:n-5]), in: Info{TagLen: 5, Port: uint16(t & 7), Flags: InfoTimestamp, Timestamp: ts}}
	case "rtl4a":
		if p[12] != 0x88 || p[13] != 0x99 {
			return rxErr(ErrNotTagged) // "Not custom, just pass through"
		}
		if p[14]>>4 != 0xa {
			return rxErr(ErrBadTag)
		}
		return kernelRx{out: stripAt(p, 12, 4), in: Info{TagLen: 4, Port: uint16(p[15])}}
	case "rtl8_4", "rtl8_4t":
		at := 12
		if name == "rtl8_4t" {
			at = n - 8
		}
		t := p[at : at+8]
		if t[0] != 0x88 || t[1] != 0x99 || t[2] != 0x04 {
			return rxErr(ErrBadTag)
		}
		trap := t[3] == 80 // RTL8_4_REASON_TRAP
		in := Info{TagLen: 8, Port: uint16(t[7] & 0xf), Code: t[3]}
		if trap {
			in.Flags = InfoTrapped
		}
		return kernelRx{out: stripAt(p, at, 8), in: in, trapped: trap}
	case "ocelot-8021q", "vsc73xx-8021q", "sja1105":
		tp0, tp1 := byte(0x81), byte(0x00)
		if name == "sja1105" {
			tp0, tp1 = 0xda, 0xdb
		}
		tci := uint16(p[14])<<8 | uint16(p[15])
		vid := tci & 0xfff
		if p[12] != tp0 || p[13] != tp1 || vid>>10 != 3 { // vid_is_dsa_8021q
			return rxErr(ErrNotTagged)
		}
		vbid := uint8(vid>>9&1)<<2 | uint8(vid>>4&3)
		in := Info{TagLen: 4, TCI: tci}
		if vbid != 0 {
			in.Flags, in.Code = InfoBridge, vbid
		} else {
			in.Switch, in.Port = uint8(vid>>6&7), vid&0xf
		}
		return kernelRx{out: stripAt(p, 12, 4), in: in}
	case "ar9331":
		hdr := uint16(p[0]) | uint16(p[1])<<8
		if hdr>>14 != 1 || hdr&(1<<6) != 0 { // version, AR9331_HDR_FROM_CPU
			return rxErr(ErrBadTag)
		}
		return kernelRx{out: cat(p[2:]), in: Info{TagLen: 2, Port: hdr & 0xf}}
	case "gswip":
		return kernelRx{out: cat(p[8:]), in: Info{TagLen: 8, Port: uint16(p[7]>>4) & 7}}
	case "lan9303":
		if p[12] != 0x81 || p[13] != 0x00 {
			return rxErr(ErrBadTag)
		}
		v := uint16(p[14])<<8 | uint16(p[15])
		trap := v&(1<<3|1<<4) != 0 // LAN9303_TAG_RX_IGMP | LAN9303_TAG_RX_STP
		in := Info{TagLen: 4, Port: v & 3, Code: uint8(v)}
		if trap {
			in.Flags = InfoTrapped
		}
		return kernelRx{out: stripAt(p, 12, 4), in: in, trapped: trap}
	case "trailer":
		t := p[n-4:]
		if t[0] != 0x80 || t[1]&0xf8 != 0 || t[2]&0xef != 0 || t[3] != 0 {
			return rxErr(ErrBadTag)
		}
		return kernelRx{out: cat(p[:n-4]), in: Info{TagLen: 4, Port: uint16(t[1] & 7)}}
	}
	panic(name)
}

// txField is how many ports a format's TX field can address and whether it takes a mask (the
// table in doc.go).
var txField = map[string]struct {
	ports int
	mask  bool
}{
	"none": {1, false}, "dsa": {32, false}, "edsa": {32, false}, "brcm": {9, true}, "brcm-prepend": {9, true},
	"qca": {7, true}, "mtk": {6, true}, "ksz8795": {5, true}, "ksz9477": {7, true}, "ksz9893": {3, true},
	"lan937x": {8, true}, "rtl4a": {8, false}, "rtl8_4": {11, true}, "rtl8_4t": {11, true},
	"ocelot-8021q": {16, false}, "vsc73xx-8021q": {16, false}, "sja1105": {16, false}, "ar9331": {16, false},
	"gswip": {6, true}, "hellcreek": {4, false}, "lan9303": {3, false}, "trailer": {8, false},
}

// kernelTx is what the driver's xmit makes of frame p toward d: the tagged bytes and whether the
// out-of-band tag is still out of band; or the error.
type kernelTx struct {
	out     []byte
	oobLeft bool
	err     error
}

// padTo appends zeros up to n bytes.
func padTo(p []byte, n int) []byte {
	out := cat(p)
	for len(out) < n {
		out = append(out, 0)
	}
	return out
}

// kernelEncode: p is the frame, oob whether it has an out-of-band tag (tpid, tci).
func kernelEncode(name string, p []byte, oob bool, tpid, tci uint16, d Dest) kernelTx {
	if len(p) < 14 {
		return kernelTx{err: ErrTruncated}
	}
	fld := txField[name]
	switch {
	case d.Ports == 0:
		if name != "none" && !(d.Bridge != 0 && (name == "ocelot-8021q" || name == "vsc73xx-8021q" || name == "sja1105")) {
			return kernelTx{err: ErrNoPort}
		}
	case uint64(d.Ports) >= 1<<fld.ports:
		return kernelTx{err: ErrPort}
	case !fld.mask && d.Ports&(d.Ports-1) != 0:
		return kernelTx{err: ErrMultiPort}
	}
	port := 0 // the single port of a one-port field
	for d.Ports != 0 && d.Ports&(1<<port) == 0 {
		port++
	}
	mask := uint32(d.Ports)
	mac, rest := p[:12], p[12:]
	sa := func(tag ...byte) []byte { return cat(mac, tag, rest) }
	ll := p[0] == 0x01 && p[1] == 0x80 && p[2] == 0xc2 && p[3] == 0 && p[4] == 0 && p[5]&0xf0 == 0
	inband := len(p) >= 18 && p[12] == 0x81 && p[13] == 0x00
	switch name {
	case "none":
		return kernelTx{out: cat(p), oobLeft: oob}
	case "dsa", "edsa":
		if d.Switch > 0x1f {
			return kernelTx{err: ErrPort}
		}
		cmd := byte(1) // FROM_CPU
		if d.Flags&DestForward != 0 {
			cmd = 3 // FORWARD
		}
		var hdr []byte
		if name == "edsa" {
			hdr = []byte{0xda, 0xda, 0, 0}
		}
		switch {
		case inband || oob && tpid == 0x8100:
			t := tci
			if inband {
				t, rest = uint16(p[14])<<8|uint16(p[15]), p[16:]
			}
			b1 := byte(port) << 3
			if t&0x1000 != 0 {
				b1 |= 1
			}
			out := cat(mac, hdr, []byte{cmd<<6 | 0x20 | d.Switch, b1, byte(t>>8) &^ 0x10, byte(t)}, rest)
			return kernelTx{out: out, oobLeft: oob && inband}
		default:
			vid := 0
			if d.Flags&DestBridged != 0 {
				vid = 0xfff
			}
			return kernelTx{out: cat(mac, hdr, []byte{cmd<<6 | d.Switch, byte(port) << 3, byte(vid >> 8), byte(vid)}, rest), oobLeft: oob}
		}
	case "brcm", "brcm-prepend":
		q := padTo(p, 64) // ETH_ZLEN + BRCM_TAG_LEN
		t := []byte{1<<5 | (d.Prio&7)<<2, 0, byte(mask >> 8 & 1), byte(mask)}
		if name == "brcm-prepend" {
			return kernelTx{out: cat(t, q), oobLeft: oob}
		}
		return kernelTx{out: cat(q[:12], t, q[12:]), oobLeft: oob}
	case "qca":
		h := uint16(2)<<14 | uint16(d.Prio&7)<<11 | 1<<7 | uint16(mask)
		return kernelTx{out: sa(byte(h>>8), byte(h)), oobLeft: oob}
	case "mtk":
		// skb->protocol: a VLAN tag in the frame as it comes, before any padding.
		inband8100, inband88a8 := inband, len(p) >= 18 && p[12] == 0x88 && p[13] == 0xa8
		q := p
		if d.Flags&DestPad != 0 {
			q = padTo(p, 60)
		}
		if inband8100 {
			return kernelTx{out: cat(q[:12], []byte{1, byte(mask)}, q[14:]), oobLeft: oob}
		}
		if inband88a8 {
			return kernelTx{out: cat(q[:12], []byte{2, byte(mask)}, q[14:]), oobLeft: oob}
		}
		switch {
		case oob && tpid == 0x8100:
			return kernelTx{out: cat(q[:12], []byte{1, byte(mask), byte(tci >> 8), byte(tci)}, q[12:])}
		case oob && tpid == 0x88a8:
			return kernelTx{out: cat(q[:12], []byte{2, byte(mask), byte(tci >> 8), byte(tci)}, q[12:])}
		}
		return kernelTx{out: cat(q[:12], []byte{0, byte(mask), 0, 0}, q[12:]), oobLeft: oob}
	case "ksz8795", "ksz9477", "ksz9893", "lan937x":
		q := padTo(p, 60)
		if d.Flags&DestTimestamp != 0 && name != "ksz8795" {
			q = append(q, 0, 0, 0, 0)
		}
		switch name {
		case "ksz8795":
			v := byte(mask)
			if ll {
				v |= 1 << 6
			}
			q = append(q, v)
		case "ksz9893":
			v := byte(mask) | (d.Prio&3)<<3
			if ll {
				v |= 1 << 5
			}
			q = append(q, v)
		case "ksz9477":
			v := uint16(mask) | uint16(d.Prio&3)<<7
			if ll {
				v |= 1 << 9
			}
			q = append(q, byte(v>>8), byte(v))
		case "lan937x":
			v := uint16(mask) | uint16(d.Prio&7)<<8 | 1<<13
			if ll {
				v |= 1 << 11
			}
			q = append(q, byte(v>>8), byte(v))
		}
		return kernelTx{out: q, oobLeft: oob}
	case "rtl4a":
		q := padTo(p, 60)
		return kernelTx{out: cat(q[:12], []byte{0x88, 0x99, 0xa0, byte(mask)}, q[12:]), oobLeft: oob}
	case "rtl8_4", "rtl8_4t":
		t := []byte{0x88, 0x99, 0x04, 0, 0, 0x20, byte(mask >> 8 & 7), byte(mask)}
		if name == "rtl8_4t" {
			return kernelTx{out: cat(padTo(p, 60), t), oobLeft: oob}
		}
		return kernelTx{out: sa(t...), oobLeft: oob}
	case "ocelot-8021q", "vsc73xx-8021q", "sja1105":
		if d.Switch > 7 || d.Bridge > 7 {
			return kernelTx{err: ErrPort}
		}
		vid := uint16(0xc00) | uint16(d.Switch)<<6 | uint16(port)
		if d.Bridge != 0 {
			vid = 0xc00 | uint16(d.Bridge&4)<<7 | uint16(d.Bridge&3)<<4
		}
		t := uint16(d.Prio&7)<<13 | vid
		tp := []byte{0x81, 0x00}
		if name == "sja1105" {
			tp = []byte{0xda, 0xdb}
		}
		return kernelTx{out: sa(tp[0], tp[1], byte(t>>8), byte(t)), oobLeft: oob}
	case "ar9331":
		h := uint16(1)<<14 | 1<<6 | 3<<4 | uint16(port)
		return kernelTx{out: cat([]byte{byte(h), byte(h >> 8)}, p), oobLeft: oob}
	case "gswip":
		return kernelTx{out: cat([]byte{2, 0, 0xc0, byte(mask<<1)&0x7e | 1}, p), oobLeft: oob}
	case "hellcreek":
		return kernelTx{out: append(padTo(p, 60), byte(mask)), oobLeft: oob}
	case "lan9303":
		v := uint16(port) | 1<<4 // STP_OVERRIDE
		if d.Flags&DestBridged != 0 && p[0]&1 == 0 {
			v = 1 << 3 // USE_ALR
		}
		return kernelTx{out: sa(0x81, 0x00, byte(v>>8), byte(v)), oobLeft: oob}
	case "trailer":
		return kernelTx{out: append(padTo(p, 60), 0x80, byte(mask), 0x10, 0), oobLeft: oob}
	}
	panic(name)
}
