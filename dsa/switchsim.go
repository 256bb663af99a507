package dsa

import (
	"fmt"

	"github.com/wirespeed/wirespeed/frame"
)

// SwitchSide is the other end of a conduit: the switch chip's view of a tag format. Its Encode
// writes the tag a switch puts on a frame it hands to the CPU (the RX format, which
// Tagger.Decode reads) and its Decode reads and strips the tag the CPU puts on a frame for the
// switch (the TX format, which Tagger.Encode writes). It exists for simulations and tests: a
// generator that plays the switch and the hosts behind it, and an independent check that what a
// forwarder tags is what the switch would act on.
//
// The layouts are the mirror images of the Tagger's (see doc.go): wherever Linux's tag driver
// reads a field on receive, Encode writes it; wherever it writes a field on transmit, Decode
// reads it and rejects what the driver would never send (wrong opcode, command or reserved bits).
// Encode and Decode work in place, allocate nothing and never panic on any bytes.
//
// Concurrency: set TxTimestamp before use; a SwitchSide is then read-only and safe for concurrent
// use by any number of goroutines (each working on its own batches).
type SwitchSide struct {
	c *codec
	t Tagger
	// TxTimestamp: the switch expects the 4-byte PTP timestamp field in front of the tail tag
	// of every frame from the CPU (Microchip ksz9477 and lan937x with hardware timestamping
	// on, i.e. the conduit sends with DestTimestamp). Ignored by other formats.
	TxTimestamp bool
}

// NewSwitchSide returns the switch side of t, which must be one of the built-in taggers (ByName).
func NewSwitchSide(t Tagger) (*SwitchSide, error) {
	bt, ok := t.(builtin)
	if !ok {
		return nil, fmt.Errorf("dsa: no switch side for tagger %T: %w", t, ErrUnknown)
	}
	return &SwitchSide{c: bt.base(), t: t}, nil
}

// Tagger is the format this is the switch side of.
func (s *SwitchSide) Tagger() Tagger { return s.t }

// Encode tags frame i as the switch sends it to the CPU, so that the tagger's Decode reports in:
// in.Port and in.Switch are the source; InfoTrapped and in.Code select a trap or reason code
// where the format has one (Marvell TO_CPU, Broadcom RC, Qualcomm type, Realtek REASON,
// LAN9303 STP bit); InfoTrunk (Marvell) marks a trunk ID; InfoBridge with in.Code = VBID (tag_8021q)
// a bridge domain; InfoTimestamp with in.Timestamp adds the KSZ timestamp; the PCP of in.TCI is
// the tag_8021q priority. A Marvell switch folds an 802.1Q tag at the front of the frame into
// its own tag, as the real chip does. Tail formats pad a runt to 60 bytes first. in.TagLen and
// InfoVLAN are ignored (they follow from the format and the frame).
//
// It returns ErrPort when the source does not fit the format's fields, ErrTruncated for a
// frame shorter than an Ethernet header, ErrNoHeadroom or ErrNoTailroom; on error the frame is
// unchanged.
func (s *SwitchSide) Encode(b *frame.Batch, i int, in Info) error {
	return s.encodeRX(b.Mem, &b.Frames[i], in).Err()
}

// EncodeMalformed tags frame i from port with a tag the tagger must reject, as a corrupted or
// misconfigured switch would send it, and returns the Reason the conduit will count. Formats in
// which every tag is valid (mtk, the ksz family, gswip, hellcreek, none: Linux checks nothing)
// return ReasonNone and leave the frame unchanged.
func (s *SwitchSide) EncodeMalformed(b *frame.Batch, i int, port int) Reason {
	f := &b.Frames[i]
	mem := b.Mem
	var want Reason
	switch s.c.kind {
	case kDSA, kEDSA, kBrcm, kBrcmPrepend, kQCA, kRTL4A, kRTL84, kRTL84T, kAR9331, kLAN9303, kTrailer:
		want = ReasonBadTag
	case k8021Q:
		want = ReasonNotTagged
	default:
		return ReasonNone
	}
	if port < 0 || s.encodeRX(mem, f, Info{Port: uint16(port)}) != ReasonNone {
		if s.encodeRX(mem, f, Info{}) != ReasonNone { // port 0 exists in every format
			return ReasonNone
		}
	}
	p := f.Data(mem)
	n := len(p)
	switch s.c.kind {
	case kDSA:
		p[12] = mvCmdFromCPU << 6 // FROM_CPU never comes from the switch
	case kEDSA:
		p[16] = mvCmdFromCPU << 6
	case kBrcm:
		p[12] = 1 << 5 // opcode 1 is the ingress (CPU to switch) format
	case kBrcmPrepend:
		p[0] = 1 << 5
	case kQCA:
		p[12] = p[12]&0x3f | 1<<6 // version 1
	case kRTL4A:
		p[14] = p[14]&0x0f | 0x90 // protocol 9 (RTL8306)
	case kRTL84:
		p[14] = 0x05 // protocol 5
	case kRTL84T:
		p[n-6] = 0x05
	case k8021Q:
		p[14], p[15] = 0, 100 // VID 100: RSV bits not 0b11, an ordinary VLAN
	case kAR9331:
		p[0] |= 1 << 6 // FROM_CPU on receive
	case kLAN9303:
		p[12], p[13] = 0x88, 0xa8 // TPID must be 0x8100
	case kTrailer:
		p[n-3] = 0x08 // reserved bit 3 of the port byte
	}
	return want
}

// encodeRX writes the RX-format tag. On failure f and its bytes are unchanged.
func (s *SwitchSide) encodeRX(mem []byte, f *frame.Frame, in Info) Reason {
	if f.Len < minFrame {
		return ReasonTruncated
	}
	port := int(in.Port)
	trapped := in.Flags&InfoTrapped != 0
	switch s.c.kind {
	case kNone:
		return ReasonNone
	case kDSA:
		return rxMarvell(mem, f, in, 0)
	case kEDSA:
		return rxMarvell(mem, f, in, 4)
	case kBrcm, kBrcmPrepend:
		if port > 0x1f {
			return ReasonPort
		}
		if r := room(f, 4, 0, 0); r != ReasonNone {
			return r
		}
		var t []byte
		if s.c.kind == kBrcmPrepend {
			t = pushPrefix(mem, f, 4)[:4]
		} else {
			t = pushSA(mem, f, 4)[12:16]
		}
		t[0], t[1], t[2], t[3] = 0, 0, in.Code&0x3f, byte(port)
	case kQCA:
		if port > 7 {
			return ReasonPort
		}
		if r := room(f, 2, 0, 0); r != ReasonNone {
			return r
		}
		p := pushSA(mem, f, 2)
		h := uint16(2)<<14 | uint16(in.Code&0x1f)<<6 | uint16(port)
		p[12], p[13] = byte(h>>8), byte(h)
	case kMTK:
		if port > 7 {
			return ReasonPort
		}
		if r := room(f, 4, 0, 0); r != ReasonNone {
			return r
		}
		p := pushSA(mem, f, 4)
		p[12], p[13], p[14], p[15] = 0, byte(port), 0, 0
	case kKSZ8795, kHellcreek:
		if port > 3 {
			return ReasonPort
		}
		if r := room(f, 0, 60, 1); r != ReasonNone {
			return r
		}
		appendTail(mem, f, 60, 1)[0] = byte(port)
	case kKSZ9477, kKSZ9893, kLAN937x:
		if port > 7 {
			return ReasonPort
		}
		n := 1
		if in.Flags&InfoTimestamp != 0 {
			n = 5
		}
		if r := room(f, 0, 60, n); r != ReasonNone {
			return r
		}
		t := appendTail(mem, f, 60, n)
		if n == 5 {
			ts := in.Timestamp
			t[0], t[1], t[2], t[3] = byte(ts>>24), byte(ts>>16), byte(ts>>8), byte(ts)
			t[4] = 0x80 | byte(port)
		} else {
			t[0] = byte(port)
		}
	case kRTL4A:
		if port > 0xff {
			return ReasonPort
		}
		if r := room(f, 4, 0, 0); r != ReasonNone {
			return r
		}
		p := pushSA(mem, f, 4)
		p[12], p[13], p[14], p[15] = ethPRealtek>>8, ethPRealtek&0xff, 0xa0, byte(port)
	case kRTL84, kRTL84T:
		if port > 0xf {
			return ReasonPort
		}
		reason := in.Code
		if trapped && reason == 0 {
			reason = 80 // RTL8_4_REASON_TRAP
		}
		var t []byte
		if s.c.kind == kRTL84T {
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
		t[0], t[1], t[2], t[3] = ethPRealtek>>8, ethPRealtek&0xff, 0x04, reason
		t[4], t[5], t[6], t[7] = 0, 0, 0, byte(port)
	case k8021Q:
		var vid uint16
		if in.Flags&InfoBridge != 0 {
			if in.Code < 1 || in.Code > 7 {
				return ReasonPort
			}
			vid = Tag8021QBridgeVID(int(in.Code))
		} else {
			if port > 0xf || in.Switch > 7 {
				return ReasonPort
			}
			vid = Tag8021QVID(int(in.Switch), port)
		}
		if r := room(f, 4, 0, 0); r != ReasonNone {
			return r
		}
		p := pushSA(mem, f, 4)
		tci := in.TCI&0xe000 | vid
		p[12], p[13], p[14], p[15] = byte(s.c.tpid>>8), byte(s.c.tpid), byte(tci>>8), byte(tci)
	case kAR9331:
		if port > 0xf {
			return ReasonPort
		}
		if r := room(f, 2, 0, 0); r != ReasonNone {
			return r
		}
		p := pushPrefix(mem, f, 2)
		h := uint16(1)<<14 | 3<<4 | uint16(port)
		p[0], p[1] = byte(h), byte(h>>8)
	case kGSWIP:
		if port > 7 {
			return ReasonPort
		}
		if r := room(f, 8, 0, 0); r != ReasonNone {
			return r
		}
		p := pushPrefix(mem, f, 8)
		clear(p[:7])
		p[7] = byte(port) << 4
	case kLAN9303:
		if port > 3 {
			return ReasonPort
		}
		if r := room(f, 4, 0, 0); r != ReasonNone {
			return r
		}
		p := pushSA(mem, f, 4)
		v := byte(port)
		if trapped {
			v |= 0x10 // RX_STP
		}
		p[12], p[13], p[14], p[15] = 0x81, 0x00, 0, v
	case kTrailer:
		if port > 7 {
			return ReasonPort
		}
		if r := room(f, 0, 60, 4); r != ReasonNone {
			return r
		}
		t := appendTail(mem, f, 60, 4)
		t[0], t[1], t[2], t[3] = 0x80, byte(port), 0, 0
	default:
		return ReasonBadTag
	}
	return ReasonNone
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

// Decode reads and strips the tag the CPU put on frame i (Tagger.Encode's format) and returns
// where it asked the switch to send the frame. It restores an 802.1Q or 802.1ad tag that the
// format merged into its own (Marvell tagged bit, MediaTek TPID), leaves the zero padding of
// formats that pad before tagging, and reports only what the format carries: Dest.Prio where
// there is a priority field, Dest.Switch for Marvell and tag_8021q, DestForward and DestBridged
// for Marvell, DestBridged for LAN9303's address lookup
// (no port then), DestTimestamp when TxTimestamp is set.
//
// It returns ErrTruncated, ErrNotTagged (tag_8021q: not a tag_8021q VID; edsa, rtl4a: wrong
// EtherType) or ErrBadTag (a field the driver never writes so) and leaves the frame unchanged
// on error.
func (s *SwitchSide) Decode(b *frame.Batch, i int) (Dest, error) {
	var d Dest
	r := s.decodeTX(b.Mem, &b.Frames[i], &d)
	return d, r.Err()
}

func (s *SwitchSide) decodeTX(mem []byte, f *frame.Frame, d *Dest) Reason {
	p := f.Data(mem)
	n := len(p)
	*d = Dest{}
	need := minFrame + s.c.spec.TxLen
	switch s.c.kind {
	case kKSZ9477, kLAN937x:
		need = minFrame + 2
		if s.TxTimestamp {
			need += 4
		}
	case kGSWIP:
		need = minFrame + 4
	}
	if n < need {
		return ReasonTruncated
	}
	switch s.c.kind {
	case kNone:
		return ReasonNone
	case kDSA:
		return txMarvell(mem, f, p, d, 0)
	case kEDSA:
		if be16(p[12:14]) != ethPEDSA {
			return ReasonNotTagged
		}
		if p[14] != 0 || p[15] != 0 {
			return ReasonBadTag
		}
		return txMarvell(mem, f, p, d, 4)
	case kBrcm, kBrcmPrepend:
		off := 12
		if s.c.kind == kBrcmPrepend {
			off = 0
		}
		t := p[off : off+4]
		if t[0]>>5 != 1 || t[0]&3 != 0 || t[1] != 0 || t[2]&0xfe != 0 {
			return ReasonBadTag
		}
		d.Prio = t[0] >> 2 & 7
		d.Ports = PortMask(t[2]&1)<<8 | PortMask(t[3])
		if off == 0 {
			f.PullHead(4)
		} else {
			swStripSA(mem, f, 4)
		}
	case kQCA:
		h := be16(p[12:14])
		if h>>14 != 2 || h&(1<<7) == 0 || h&0x0700 != 0 {
			return ReasonBadTag
		}
		d.Prio = uint8(h>>11) & 7
		d.Ports = PortMask(h & 0x7f)
		swStripSA(mem, f, 2)
	case kMTK:
		b1 := p[13]
		if b1&0xc0 != 0 { // mtk_tag_xmit writes the port mask alone
			return ReasonBadTag
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
			return ReasonBadTag
		}
	case kKSZ8795:
		t := p[n-1]
		if t&0xa0 != 0 {
			return ReasonBadTag
		}
		d.Ports = PortMask(t & 0x1f)
		f.Resize(n - 1)
	case kKSZ9893:
		t := p[n-1]
		if t&0xc0 != 0 {
			return ReasonBadTag
		}
		d.Ports = PortMask(t & 7)
		d.Prio = t >> 3 & 3
		f.Resize(n - 1)
	case kKSZ9477, kLAN937x:
		v := be16(p[n-2:])
		if s.c.kind == kKSZ9477 {
			if v&0xfc00 != 0 {
				return ReasonBadTag
			}
			d.Ports, d.Prio = PortMask(v&0x7f), uint8(v>>7)&3
		} else {
			if v&(1<<13) == 0 || v&0xd000 != 0 {
				return ReasonBadTag
			}
			d.Ports, d.Prio = PortMask(v&0xff), uint8(v>>8)&7
		}
		cut := 2
		if s.TxTimestamp {
			d.Flags |= DestTimestamp
			cut = 6
		}
		f.Resize(n - cut)
	case kRTL4A:
		if be16(p[12:14]) != ethPRealtek {
			return ReasonNotTagged
		}
		w := be16(p[14:16])
		if w>>12 != 0xa || w&0x0f00 != 0 {
			return ReasonBadTag
		}
		d.Ports = PortMask(w & 0xff)
		swStripSA(mem, f, 4)
	case kRTL84, kRTL84T:
		off := 12
		if s.c.kind == kRTL84T {
			off = n - 8
		}
		t := p[off : off+8]
		if be16(t[0:2]) != ethPRealtek || t[2] != 0x04 || t[6]&0xf8 != 0 {
			return ReasonBadTag
		}
		d.Ports = PortMask(be16(t[6:8]) & 0x7ff)
		if off == 12 {
			swStripSA(mem, f, 8)
		} else {
			f.Resize(n - 8)
		}
	case k8021Q:
		if be16(p[12:14]) != s.c.tpid {
			return ReasonNotTagged
		}
		tci := be16(p[14:16])
		sw, port, vbid, ok := ParseTag8021QVID(tci)
		if !ok {
			return ReasonNotTagged
		}
		d.Prio = uint8(tci >> 13)
		if vbid != 0 {
			d.Bridge = uint8(vbid)
		} else {
			d.Ports, d.Switch = Port(port), uint8(sw)
		}
		swStripSA(mem, f, 4)
	case kAR9331:
		h := uint16(p[0]) | uint16(p[1])<<8
		if h>>14 != 1 || h&(1<<6) == 0 {
			return ReasonBadTag
		}
		d.Ports = Port(int(h & 0xf))
		f.PullHead(2)
	case kGSWIP:
		if p[0] != 2 || p[1] != 0 || p[2] != 0xc0 || p[3]&0x81 != 1 {
			return ReasonBadTag
		}
		d.Ports = PortMask(p[3]&0x7e) >> 1
		f.PullHead(4)
	case kHellcreek:
		t := p[n-1]
		if t&0xf0 != 0 || t&(t-1) != 0 {
			return ReasonBadTag
		}
		d.Ports = PortMask(t)
		f.Resize(n - 1)
	case kLAN9303:
		if be16(p[12:14]) != frame.TypeVLAN {
			return ReasonBadTag
		}
		v := be16(p[14:16])
		switch {
		case v == 1<<3:
			d.Flags |= DestBridged
		case v&^0x13 == 0 && v&0x10 != 0:
			d.Ports = Port(int(v & 3))
		default:
			return ReasonBadTag
		}
		swStripSA(mem, f, 4)
	case kTrailer:
		t := p[n-4:]
		if t[0] != 0x80 || t[2] != 0x10 || t[3] != 0 || t[1] == 0 || t[1]&(t[1]-1) != 0 {
			return ReasonBadTag
		}
		d.Ports = PortMask(t[1])
		f.Resize(n - 4)
	default:
		return ReasonBadTag
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

// swStripSA removes n bytes between the source MAC and what follows (the caller checked the length).
func swStripSA(mem []byte, f *frame.Frame, n int) {
	p := f.Data(mem)
	copy(p[n:n+12], p[:12])
	f.PullHead(n)
}
