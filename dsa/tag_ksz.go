package dsa

import (
	"github.com/wirespeed/wirespeed/frame"
)

// ---- Microchip KSZ: net/dsa/tag_ksz.c ----
//
// A tail tag: one byte on receive (five with a timestamp, not ksz8795), one or two on transmit
// (and the 4-byte PTP timestamp field in front with DestTimestamp, not ksz8795):
//
//	ksz8795: mask | override bit 6
//	ksz9477: BE16 mask[6:0] | prio[8:7] | override bit 9
//	ksz9893: mask[2:0] | prio[4:3] | override bit 5
//	lan937x: BE16 mask[7:0] | prio[10:8] | override bit 11 | valid bit 13
//
// override ("send even if the port is blocked") is set for link-local destinations as Linux does.

var fmtKSZ8795 = format{
	spec:        spec("ksz8795", PosTail, 1, 1, 60, 5, true),
	parse:       func(_ *codec, p []byte, in *Info) Reason { return parseKSZ8795(p, in) },
	decode:      decKSZ8795,
	decodeBatch: decTail1Batchx4,
	encode: func(_ *codec, mem []byte, f *frame.Frame, d Dest) Reason {
		return encKSZ(mem, f, d, 1, false, uint16(d.Ports), 1<<6)
	},
	encodeBatch: func(mem []byte, fr []frame.Frame, rs []Reason, d Dest, _ *codec) {
		t := byte(d.Ports)
		encTail1Batchx4(mem, fr, rs, uint32(t), uint32(t|1<<6))
	},
	swEncode: rxTail1,
	swDecode: func(_ *SwitchSide, mem []byte, f *frame.Frame, p []byte) (d Dest, _ Reason) {
		n := len(p)
		t := p[n-1]
		if t&0xa0 != 0 {
			return d, ReasonBadTag
		}
		d.Ports = PortMask(t & 0x1f)
		f.Resize(n - 1)
		return d, ReasonNone
	},
	tagger: func(c codec) Tagger { return &tKSZ8795{c} },
}

var fmtKSZ9477 = format{
	spec:        spec("ksz9477", PosTail, 5, 6, 60, 7, true),
	parse:       func(_ *codec, p []byte, in *Info) Reason { return parseKSZ9477(p, in) },
	decode:      decKSZ9477,
	decodeBatch: decKSZBatchx4,
	encode: func(_ *codec, mem []byte, f *frame.Frame, d Dest) Reason {
		return encKSZ(mem, f, d, 2, true, uint16(d.Ports)|uint16(d.Prio&3)<<7, 1<<9)
	},
	encodeBatch: func(mem []byte, fr []frame.Frame, rs []Reason, d Dest, _ *codec) {
		if d.Flags&DestTimestamp != 0 {
			markSlow(rs)
			return
		}
		v := uint16(d.Ports) | uint16(d.Prio&3)<<7
		encTail2Batchx4(mem, fr, rs, bswap16(v), bswap16(v|1<<9))
	},
	swEncode: rxKSZ,
	swDecode: func(s *SwitchSide, mem []byte, f *frame.Frame, p []byte) (d Dest, _ Reason) {
		v := be16(p[len(p)-2:])
		if v&0xfc00 != 0 {
			return d, ReasonBadTag
		}
		d.Ports, d.Prio = PortMask(v&0x7f), uint8(v>>7)&3
		r := txKSZ2(s, f, len(p), &d)
		return d, r
	},
	swTxLen: swKSZ2Len,
	tagger:  func(c codec) Tagger { return &tKSZ9477{c} },
}

var fmtKSZ9893 = format{
	spec:        spec("ksz9893", PosTail, 5, 5, 60, 3, true),
	parse:       func(_ *codec, p []byte, in *Info) Reason { return parseKSZ9477(p, in) },
	decode:      decKSZ9477,
	decodeBatch: decKSZBatchx4,
	encode: func(_ *codec, mem []byte, f *frame.Frame, d Dest) Reason {
		return encKSZ(mem, f, d, 1, true, uint16(d.Ports)|uint16(d.Prio&3)<<3, 1<<5)
	},
	encodeBatch: func(mem []byte, fr []frame.Frame, rs []Reason, d Dest, _ *codec) {
		if d.Flags&DestTimestamp != 0 {
			markSlow(rs)
			return
		}
		t := byte(d.Ports) | (d.Prio&3)<<3
		encTail1Batchx4(mem, fr, rs, uint32(t), uint32(t|1<<5))
	},
	swEncode: rxKSZ,
	swDecode: func(_ *SwitchSide, mem []byte, f *frame.Frame, p []byte) (d Dest, _ Reason) {
		n := len(p)
		t := p[n-1]
		if t&0xc0 != 0 {
			return d, ReasonBadTag
		}
		d.Ports = PortMask(t & 7)
		d.Prio = t >> 3 & 3
		f.Resize(n - 1)
		return d, ReasonNone
	},
	tagger: func(c codec) Tagger { return &tKSZ9893{c} },
}

var fmtLAN937x = format{
	spec:        spec("lan937x", PosTail, 5, 6, 60, 8, true),
	parse:       func(_ *codec, p []byte, in *Info) Reason { return parseKSZ9477(p, in) },
	decode:      decKSZ9477,
	decodeBatch: decKSZBatchx4,
	encode: func(_ *codec, mem []byte, f *frame.Frame, d Dest) Reason {
		return encKSZ(mem, f, d, 2, true, uint16(d.Ports)|uint16(d.Prio&7)<<8|1<<13, 1<<11)
	},
	encodeBatch: func(mem []byte, fr []frame.Frame, rs []Reason, d Dest, _ *codec) {
		if d.Flags&DestTimestamp != 0 {
			markSlow(rs)
			return
		}
		v := uint16(d.Ports) | uint16(d.Prio&7)<<8 | 1<<13
		encTail2Batchx4(mem, fr, rs, bswap16(v), bswap16(v|1<<11))
	},
	swEncode: rxKSZ,
	swDecode: func(s *SwitchSide, mem []byte, f *frame.Frame, p []byte) (d Dest, _ Reason) {
		v := be16(p[len(p)-2:])
		if v&(1<<13) == 0 || v&0xd000 != 0 {
			return d, ReasonBadTag
		}
		d.Ports, d.Prio = PortMask(v&0xff), uint8(v>>8)&7
		r := txKSZ2(s, f, len(p), &d)
		return d, r
	},
	swTxLen: swKSZ2Len,
	tagger:  func(c codec) Tagger { return &tLAN937x{c} },
}

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

// encKSZ pads to 60 (the DSA core does it for every tail tagger), then appends the n-byte tag v
// (v|ll for a link-local destination), after the 4 zero bytes of the PTP timestamp field when the
// format has one (ts) and d asks for it (DestTimestamp).
func encKSZ(mem []byte, f *frame.Frame, d Dest, n int, ts bool, v, ll uint16) Reason {
	t := 0
	if ts && d.Flags&DestTimestamp != 0 {
		t = 4
	}
	if r := room(f, 0, 60, n+t); r != ReasonNone {
		return r
	}
	if linkLocal(f.Data(mem)) {
		v |= ll
	}
	tag := appendTail(mem, f, 60, n+t)
	if t != 0 {
		tag[0], tag[1], tag[2], tag[3] = 0, 0, 0, 0
		tag = tag[4:]
	}
	if n == 1 {
		tag[0] = byte(v)
	} else {
		tag[0], tag[1] = byte(v>>8), byte(v)
	}
	return ReasonNone
}

// decKSZ8795 is ksz8795 and hellcreek: one tail byte, port[1:0].
func decKSZ8795(_ *codec, mem []byte, f *frame.Frame, in *Info) Reason {
	p := f.Data(mem)
	n := len(p)
	if n < minFrame+1 {
		return ReasonTruncated
	}
	*in = Info{TagLen: 1, Port: uint16(p[n-1] & 3)}
	return trimTail(f, 1)
}

// decKSZ9477 is ksz9477, ksz9893 and lan937x: one tail byte, or five with a timestamp.
func decKSZ9477(_ *codec, mem []byte, f *frame.Frame, in *Info) Reason {
	p := f.Data(mem)
	if r := parseKSZ9477(p, in); r != ReasonNone {
		return r
	}
	n := int(in.TagLen)
	return trimTail(f, n)
}

// decKSZBatch: one tail byte, port[2:0] (ksz9477, ksz9893, lan937x); bit 7, a timestamp before
// it, takes the slow path.
//
//go:noinline
func decKSZBatch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason, _ *codec) {
	lim := int64(len(mem))
	for i := range fr {
		f, in := &fr[i], &ins[i]
		o, l, tl := int64(f.Off), f.Len, f.Tail
		if e := o + int64(l); l >= minFrame+1 && tl < 0xffff && e <= lim {
			if t := mem[e-1]; t&0x80 == 0 {
				*in = Info{TagLen: 1, Port: uint16(t & 7)}
				f.Len, f.Tail = l-1, tl+1
				continue
			}
		}
		slow(&rs[i])
	}
}

// encTail2Batch is encTail1Batch with a two-byte tag.
//
//go:noinline
func encTail2Batch(mem []byte, fr []frame.Frame, rs []Reason, t, tll uint16) {
	lim, limDA := int64(len(mem))-2, int64(len(mem))-8 // o <= limDA follows from e <= lim, for the prover
	for i := range fr {
		f := &fr[i]
		o, l, tl := int64(f.Off), f.Len, f.Tail
		if e := o + int64(l); l >= 60 && tl >= 2 && l <= 0xffff-2 && e <= lim && o <= limDA {
			v := t
			if linkLocalLE(le.Uint64(mem[o : o+8 : o+8])) {
				v = tll
			}
			le.PutUint16(mem[e:e+2:e+2], v)
			f.Len, f.Tail = l+2, tl-2
			continue
		}
		slow(&rs[i])
	}
}

type (
	tKSZ8795 struct{ codec }
	tKSZ9477 struct{ codec }
	tKSZ9893 struct{ codec }
	tLAN937x struct{ codec }
)

// Decode: one tail byte, port[1:0].
func (t *tKSZ8795) Decode(b *frame.Batch, i int, in *Info) error {
	f := &b.Frames[i]
	if e := int64(f.Off) + int64(f.Len); tailOK(f, 1) && e <= int64(len(b.Mem)) {
		w := le.Uint64(b.Mem[e-8 : e : e])
		*in = Info{TagLen: 1, Port: uint16(w>>56) & 3}
		trim(f, 1)
		return nil
	}
	return t.decodeSlow(b, i, in)
}

// Decode: one tail byte, port[2:0]; bit 7 (a timestamp before it) takes the slow path.
func (t *tKSZ9477) Decode(b *frame.Batch, i int, in *Info) error {
	f := &b.Frames[i]
	if e := int64(f.Off) + int64(f.Len); tailOK(f, 1) && e <= int64(len(b.Mem)) {
		w := le.Uint64(b.Mem[e-8 : e : e])
		if t := byte(w >> 56); t&0x80 == 0 {
			*in = Info{TagLen: 1, Port: uint16(t & 7)}
			trim(f, 1)
			return nil
		}
	}
	return t.decodeSlow(b, i, in)
}

// Decode: as ksz9477 (ksz9477_rcv).
func (t *tKSZ9893) Decode(b *frame.Batch, i int, in *Info) error {
	f := &b.Frames[i]
	if e := int64(f.Off) + int64(f.Len); tailOK(f, 1) && e <= int64(len(b.Mem)) {
		w := le.Uint64(b.Mem[e-8 : e : e])
		if t := byte(w >> 56); t&0x80 == 0 {
			*in = Info{TagLen: 1, Port: uint16(t & 7)}
			trim(f, 1)
			return nil
		}
	}
	return t.decodeSlow(b, i, in)
}

// Decode: as ksz9477 (ksz9477_rcv).
func (t *tLAN937x) Decode(b *frame.Batch, i int, in *Info) error {
	f := &b.Frames[i]
	if e := int64(f.Off) + int64(f.Len); tailOK(f, 1) && e <= int64(len(b.Mem)) {
		w := le.Uint64(b.Mem[e-8 : e : e])
		if t := byte(w >> 56); t&0x80 == 0 {
			*in = Info{TagLen: 1, Port: uint16(t & 7)}
			trim(f, 1)
			return nil
		}
	}
	return t.decodeSlow(b, i, in)
}

// tail1 appends v, or vll for a link-local destination, to frame f (e = its end in mem).
func tail1(mem []byte, f *frame.Frame, o, e int64, v, vll byte) {
	if linkLocalLE(le.Uint64(mem[o : o+8 : o+8])) {
		v = vll
	}
	mem[e] = v
	f.Len++
	f.Tail--
}

// Encode: mask | override bit 6 for a link-local destination.
func (t *tKSZ8795) Encode(b *frame.Batch, i int, d Dest) error {
	f := &b.Frames[i]
	if o, l := int64(f.Off), f.Len; some(d.Ports, 0x1f) && appendOK(l, f.Tail, 1) && o+int64(l) < int64(len(b.Mem)) {
		tail1(b.Mem, f, o, o+int64(l), byte(d.Ports), byte(d.Ports)|1<<6)
		return nil
	}
	return t.encodeSlow(b, i, d)
}

// Encode: mask[2:0] | prio[4:3] | override bit 5; the timestamp field (DestTimestamp) takes the
// slow path.
func (t *tKSZ9893) Encode(b *frame.Batch, i int, d Dest) error {
	f := &b.Frames[i]
	if o, l := int64(f.Off), f.Len; some(d.Ports, 7) && d.Flags&DestTimestamp == 0 && appendOK(l, f.Tail, 1) && o+int64(l) < int64(len(b.Mem)) {
		v := byte(d.Ports) | (d.Prio&3)<<3
		tail1(b.Mem, f, o, o+int64(l), v, v|1<<5)
		return nil
	}
	return t.encodeSlow(b, i, d)
}

// tail2 appends the big-endian v, or vll for a link-local destination, to frame f.
func tail2(mem []byte, f *frame.Frame, o, e int64, v, vll uint16) {
	if linkLocalLE(le.Uint64(mem[o : o+8 : o+8])) {
		v = vll
	}
	be.PutUint16(mem[e:e+2:e+2], v)
	f.Len += 2
	f.Tail -= 2
}

// Encode: BE16 mask[6:0] | prio[8:7] | override bit 9; DestTimestamp takes the slow path.
func (t *tKSZ9477) Encode(b *frame.Batch, i int, d Dest) error {
	f := &b.Frames[i]
	if o, l := int64(f.Off), f.Len; some(d.Ports, 0x7f) && d.Flags&DestTimestamp == 0 && appendOK(l, f.Tail, 2) && o+int64(l) <= int64(len(b.Mem))-2 {
		v := uint16(d.Ports) | uint16(d.Prio&3)<<7
		tail2(b.Mem, f, o, o+int64(l), v, v|1<<9)
		return nil
	}
	return t.encodeSlow(b, i, d)
}

// Encode: BE16 mask[7:0] | prio[10:8] | override bit 11 | valid bit 13; DestTimestamp takes the
// slow path.
func (t *tLAN937x) Encode(b *frame.Batch, i int, d Dest) error {
	f := &b.Frames[i]
	if o, l := int64(f.Off), f.Len; some(d.Ports, 0xff) && d.Flags&DestTimestamp == 0 && appendOK(l, f.Tail, 2) && o+int64(l) <= int64(len(b.Mem))-2 {
		v := uint16(d.Ports) | uint16(d.Prio&7)<<8 | 1<<13
		tail2(b.Mem, f, o, o+int64(l), v, v|1<<11)
		return nil
	}
	return t.encodeSlow(b, i, d)
}

// rxTail1 pads to 60 and appends the source port (ksz8795, hellcreek: port[1:0]).
func rxTail1(_ *codec, mem []byte, f *frame.Frame, in Info) Reason {
	port := int(in.Port)
	if port > 3 {
		return ReasonPort
	}
	if r := room(f, 0, 60, 1); r != ReasonNone {
		return r
	}
	appendTail(mem, f, 60, 1)[0] = byte(port)
	return ReasonNone
}

// rxKSZ pads to 60 and appends the source port, after the timestamp with InfoTimestamp (bit 7 set).
func rxKSZ(_ *codec, mem []byte, f *frame.Frame, in Info) Reason {
	port := int(in.Port)
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
	return ReasonNone
}

// swKSZ2Len is the TX tag of ksz9477 and lan937x: two bytes, six with the timestamp field.
func swKSZ2Len(s *SwitchSide) int {
	if s.TxTimestamp {
		return 6
	}
	return 2
}

// txKSZ2 strips the two-byte TX tag of a frame of n bytes, and the timestamp field in front of it
// when the switch expects one.
func txKSZ2(s *SwitchSide, f *frame.Frame, n int, d *Dest) Reason {
	cut := 2
	if s.TxTimestamp {
		d.Flags |= DestTimestamp
		cut = 6
	}
	f.Resize(n - cut)
	return ReasonNone
}
