package dsa

import (
	"math/bits"
	"unsafe"

	"github.com/wirespeed/wirespeed/frame"
)

// ---- tag_8021q: net/dsa/tag_8021q.c, used by ocelot-8021q, vsc73xx-8021q and sja1105 ----
//
// The tag is a VLAN tag with the tagger's TPID whose VID says the switch and port (or a bridge).

var (
	fmtOcelot8021Q  = fmt8021Q("ocelot-8021q", 0x8100)
	fmtVSC73xx8021Q = fmt8021Q("vsc73xx-8021q", 0x8100)
	fmtSJA1105      = fmt8021Q("sja1105", 0xdadb) // the tag_8021q part of tag_sja1105.c only
)

func fmt8021Q(name string, tpid uint16) format {
	return format{
		spec:        spec(name, PosSA, 4, 4, 0, 16, false),
		tpid:        tpid,
		parse:       parse8021Q,
		decode:      dec8021Q,
		decodeBatch: dec8021QBatchx4,
		encode:      enc8021Q,
		encodeBatch: encode8021Q,
		bridge:      true,
		swEncode:    rx8021Q,
		swDecode:    tx8021Q,
		malformed: func(p []byte) Reason {
			p[14], p[15] = 0, 100 // VID 100: RSV bits not 0b11, an ordinary VLAN
			return ReasonNotTagged
		},
		tagger: func(c codec) Tagger { return &t8021Q{c} },
	}
}

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
func parse8021Q(c *codec, p []byte, in *Info) Reason {
	if len(p) < minFrame+4 {
		return ReasonTruncated
	}
	return q8021Info(be32(p[12:16]), c.tpid, in)
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
func enc8021Q(c *codec, mem []byte, f *frame.Frame, d Dest) Reason {
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
	p[12], p[13], p[14], p[15] = byte(c.tpid>>8), byte(c.tpid), byte(tci>>8), byte(tci)
	return ReasonNone
}

func dec8021Q(c *codec, mem []byte, f *frame.Frame, in *Info) Reason {
	p := f.Data(mem)
	if len(p) < minFrame+4 {
		return ReasonTruncated
	}
	if r := q8021Info(be32(p[12:16]), c.tpid, in); r != ReasonNone {
		return r
	}
	return stripSA(p, f, 4)
}

// dec8021QBatch: TPID at b12-13, TCI at b14-15 with RSV (TCI[11:10]) == 3 and VBID (TCI 9, 5:4)
// == 0; switch TCI[8:6], port TCI[3:0]. On a little-endian machine the Info is three stores: its
// first 8 bytes from q8021Head (indexed by TCI[8:0]), TCI, Timestamp 0 (the 2 bytes of padding
// after TCI are left as they were: no field, never compared).
//
//go:noinline
func dec8021QBatch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason, c *codec) {
	lim := int64(len(mem)) - 16
	want := uint32(bswap16(c.tpid)) | 0x0c<<16
	tab := q8021HeadP
	_ = *tab // one nil check, before the loop
	for i := range fr {
		f, in := &fr[i], &ins[i]
		o, lh := int64(f.Off), lenHead(f)
		if (uint64(lh)+4<<16-(minFrame+4))&^0x7fff7fff == 0 && o <= lim { // see lenHead4
			h := mem[o : o+16 : o+16]
			if le.Uint32(h[12:16])&(0x30<<24|0x0e<<16|0xffff) == want {
				tci := uint16(h[14])<<8 | uint16(h[15])
				if nativeLE { // Port, Switch, TagLen, Flags, Code, TPID as one 8-byte store from a table
					le.PutUint64((*[8]byte)(unsafe.Pointer(in))[:], tab[tci&0x1ff])
					in.TCI, in.Timestamp = tci, 0
				} else {
					*in = Info{Port: tci & 0xf, Switch: uint8(tci>>6) & 7, TagLen: 4, TCI: tci}
				}
				*(*[12]byte)(h[4:16]) = *(*[12]byte)(h[0:12]) // MACs
				f.Off += 4
				addLenHead(f, lh, 4<<16-4)
				continue
			}
		}
		slow(&rs[i])
	}
}

// q8021Head is, for the low 9 bits of a tag_8021q TCI, the first 8 bytes of its Info on a
// little-endian machine: Port (TCI[3:0]), Switch (TCI[8:6]), TagLen 4, Flags, Code and TPID 0.
var q8021Head = func() (t [512]uint64) {
	for i := range t {
		t[i] = uint64(i&0xf) | uint64(i>>6&7)<<16 | 4<<24
	}
	return t
}()

// q8021HeadP is &q8021Head, loaded once before the loop so that the address stays in a register
// (a LEAQ of the symbol would be rematerialised in every frame).
var q8021HeadP = &q8021Head

// encode8021Q tags the batch with the standalone VID of (Switch, port), or the bridge VID; a
// switch or bridge out of range takes every frame to the general code, which reports it.
func encode8021Q(mem []byte, fr []frame.Frame, rs []Reason, d Dest, c *codec) {
	if d.Switch > 7 || d.Bridge > 7 {
		markSlow(rs)
		return
	}
	vid := Tag8021QBridgeVID(int(d.Bridge))
	if d.Bridge == 0 {
		vid = Tag8021QVID(int(d.Switch), d.Ports.First())
	}
	tci := uint16(d.Prio&7)<<13 | vid
	encSA4Batchx4(mem, fr, rs, uint32(bswap16(c.tpid))|uint32(bswap16(tci))<<16, minFrame)
}

type t8021Q struct{ codec }

// Decode: the tagger's TPID at b12-13, TCI at b14-15 with RSV (TCI[11:10]) == 3 and VBID (TCI
// 9, 5:4) == 0; switch TCI[8:6], port TCI[3:0].
func (t *t8021Q) Decode(b *frame.Batch, i int, in *Info) error {
	f := &b.Frames[i]
	if o, lh := int64(f.Off), lenHead(f); headOK(lh, 4) && o <= int64(len(b.Mem))-16 {
		h := b.Mem[o : o+16 : o+16]
		if w := be32(h[12:16]); w&^(0xf000|0x1c0|0xf) == uint32(t.tpid)<<16|0x0c00 {
			tci := uint16(w)
			*in = Info{Port: tci & 0xf, Switch: uint8(tci>>6) & 7, TagLen: 4, TCI: tci}
			*(*[12]byte)(h[4:16]) = *(*[12]byte)(h[0:12]) // MACs
			pull(f, lh, 4)
			return nil
		}
	}
	return t.decodeSlow(b, i, in)
}

// Encode: TPID, PCP<<13 | the standalone VID of (Switch, port); a bridge VID (Dest.Bridge) takes
// the slow path.
func (t *t8021Q) Encode(b *frame.Batch, i int, d Dest) error {
	f := &b.Frames[i]
	if o, lh := int64(f.Off), lenHead(f); one(d.Ports, 0xffff) && d.Switch <= 7 && d.Bridge == 0 && pushOK(lh, 4, minFrame) &&
		o >= 4 && o <= int64(len(b.Mem))-12 {
		tci := uint32(d.Prio&7)<<13 | q8021RSV | uint32(d.Switch)<<6 | uint32(bits.TrailingZeros32(uint32(d.Ports)))
		sa4(b.Mem, f, o, lh, uint32(t.tpid)<<16|tci)
		return nil
	}
	return t.encodeSlow(b, i, d)
}

// rx8021Q writes the TPID and the VID of (Switch, port), or of the bridge in.Code with InfoBridge,
// with the PCP of in.TCI.
func rx8021Q(c *codec, mem []byte, f *frame.Frame, in Info) Reason {
	port := int(in.Port)
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
	p[12], p[13], p[14], p[15] = byte(c.tpid>>8), byte(c.tpid), byte(tci>>8), byte(tci)
	return ReasonNone
}

// tx8021Q reads the TPID and a tag_8021q VID: a port of a switch, or a bridge.
func tx8021Q(s *SwitchSide, mem []byte, f *frame.Frame, p []byte) (d Dest, _ Reason) {
	if be16(p[12:14]) != s.c.tpid {
		return d, ReasonNotTagged
	}
	tci := be16(p[14:16])
	sw, port, vbid, ok := ParseTag8021QVID(tci)
	if !ok {
		return d, ReasonNotTagged
	}
	d.Prio = uint8(tci >> 13)
	if vbid != 0 {
		d.Bridge = uint8(vbid)
	} else {
		d.Ports, d.Switch = Port(port), uint8(sw)
	}
	swStripSA(mem, f, 4)
	return d, ReasonNone
}
