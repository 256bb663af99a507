package dsa

import (
	"encoding/binary"

	"github.com/wirespeed/wirespeed/frame"
)

// kind selects a format inside codec, the general code of every built-in tagger (the conduit and
// the batch forms call it directly). Each format's Tagger is its own type embedding the codec
// (perframe.go), for the per-frame fast paths.
type kind uint8

const (
	kNone kind = iota
	kDSA
	kEDSA
	kBrcm
	kBrcmPrepend
	kQCA
	kMTK
	kKSZ8795
	kKSZ9477
	kKSZ9893
	kLAN937x
	kRTL4A
	kRTL84
	kRTL84T
	k8021Q
	kAR9331
	kGSWIP
	kHellcreek
	kLAN9303
	kTrailer
)

// codec is a built-in tagger. Values are immutable; the package keeps them in the codecs table.
type codec struct {
	kind kind
	spec Spec
	mask PortMask // ports the TX encoding can address
	tpid uint16   // tag_8021q users: the TPID of the switch's VLAN tag
}

func mk(k kind, name string, pos Position, rx, tx, pad, ports int, multi bool) codec {
	c := codec{kind: k, spec: Spec{Name: name, Position: pos, RxLen: rx, TxLen: tx, PadTo: pad, Ports: ports, Multi: multi}}
	if pos == PosTail {
		c.spec.Tailroom = tx
	} else {
		c.spec.Headroom = tx
	}
	c.mask = PortMask(uint64(1)<<uint(ports) - 1)
	return c
}

func mk8021q(name string, tpid uint16) codec {
	c := mk(k8021Q, name, PosSA, 4, 4, 0, 16, false)
	c.tpid = tpid
	return c
}

// codecs is the registry. Lengths, padding and port widths come from the Linux drivers; see doc.go.
var codecs = [...]codec{
	mk(kNone, "none", PosNone, 0, 0, 0, 1, false),
	mk(kDSA, "dsa", PosSA, 4, 4, 0, 32, false),
	mk(kEDSA, "edsa", PosSA, 8, 8, 0, 32, false),
	mk(kBrcm, "brcm", PosSA, 4, 4, 64, 9, true),
	mk(kBrcmPrepend, "brcm-prepend", PosPrefix, 4, 4, 64, 9, true),
	mk(kQCA, "qca", PosSA, 2, 2, 0, 7, true),
	mk(kMTK, "mtk", PosSA, 4, 4, 0, 6, true),
	mk(kKSZ8795, "ksz8795", PosTail, 1, 1, 60, 5, true),
	mk(kKSZ9477, "ksz9477", PosTail, 5, 6, 60, 7, true),
	mk(kKSZ9893, "ksz9893", PosTail, 5, 5, 60, 3, true),
	mk(kLAN937x, "lan937x", PosTail, 5, 6, 60, 8, true),
	mk(kRTL4A, "rtl4a", PosSA, 4, 4, 60, 8, false),
	mk(kRTL84, "rtl8_4", PosSA, 8, 8, 0, 11, true),
	mk(kRTL84T, "rtl8_4t", PosTail, 8, 8, 60, 11, true),
	mk8021q("ocelot-8021q", 0x8100),
	mk8021q("vsc73xx-8021q", 0x8100),
	mk8021q("sja1105", 0xdadb),
	mk(kAR9331, "ar9331", PosPrefix, 2, 2, 0, 16, false),
	mk(kGSWIP, "gswip", PosPrefix, 8, 4, 0, 6, true),
	mk(kHellcreek, "hellcreek", PosTail, 1, 1, 60, 4, false),
	mk(kLAN9303, "lan9303", PosSA, 4, 4, 0, 3, false),
	mk(kTrailer, "trailer", PosTail, 4, 4, 60, 8, false),
}

func (c *codec) Name() string { return c.spec.Name }
func (c *codec) Spec() Spec   { return c.spec }
func (c *codec) String() string {
	return c.spec.Name
}

// Parse decodes the tag of a frame given as plain bytes without changing them.
func (c *codec) Parse(p []byte, in *Info) error {
	return c.parse(p, in).Err()
}

// decodeOne is Decode on a frame descriptor: the general per-frame decoder, behind the slow paths
// of Decode (perframe.go) and decodeBatch.
func (c *codec) decodeOne(mem []byte, f *frame.Frame, in *Info) Reason {
	r := ReasonBadTag
	switch c.kind {
	case kNone:
		r = decNone(mem, f, in)
	case kDSA:
		r = decDSA(mem, f, in)
	case kEDSA:
		r = decEDSA(mem, f, in)
	case kBrcm:
		r = decBrcm(mem, f, in)
	case kBrcmPrepend:
		r = decBrcmPrepend(mem, f, in)
	case kQCA:
		r = decQCA(mem, f, in)
	case kMTK:
		r = decMTK(mem, f, in)
	case kKSZ8795, kHellcreek:
		r = decKSZ8795(mem, f, in)
	case kKSZ9477, kKSZ9893, kLAN937x:
		r = decKSZ9477(mem, f, in)
	case kRTL4A:
		r = decRTL4A(mem, f, in)
	case kRTL84:
		r = decRTL84(mem, f, in)
	case kRTL84T:
		r = decRTL84T(mem, f, in)
	case k8021Q:
		r = dec8021Q(mem, f, in, c.tpid)
	case kAR9331:
		r = decAR9331(mem, f, in)
	case kGSWIP:
		r = decGSWIP(mem, f, in)
	case kLAN9303:
		r = decLAN9303(mem, f, in)
	case kTrailer:
		r = decTrailer(mem, f, in)
	}
	return r
}

// DecodeBatch decodes every frame of b in place.
func (c *codec) DecodeBatch(b *frame.Batch, ins []Info, rs []Reason) int {
	return c.decodeBatch(b.Mem, b.Frames, ins, rs)
}

// EncodeBatch tags every frame of b in place toward d.
func (c *codec) EncodeBatch(b *frame.Batch, d Dest, rs []Reason) int {
	return c.encodeBatch(b.Mem, b.Frames, d, rs)
}

// minFrame is the shortest frame a tagger accepts once its tag is gone: an Ethernet header.
const minFrame = frame.EtherLen

func be16(p []byte) uint16 { return binary.BigEndian.Uint16(p) }
func be32(p []byte) uint32 { return binary.BigEndian.Uint32(p) }

// parse reads the tag at its place in p. It never writes p.
func (c *codec) parse(p []byte, in *Info) Reason {
	switch c.kind {
	case kNone:
		if len(p) < minFrame {
			return ReasonTruncated
		}
		*in = Info{}
		return ReasonNone
	case kDSA:
		return parseMarvell(p, 0, in)
	case kEDSA:
		return parseMarvell(p, 4, in)
	case kBrcm:
		return parseBrcm(p, 12, in)
	case kBrcmPrepend:
		return parseBrcm(p, 0, in)
	case kQCA:
		return parseQCA(p, in)
	case kMTK:
		return parseMTK(p, in)
	case kKSZ8795:
		return parseKSZ8795(p, in)
	case kKSZ9477, kKSZ9893, kLAN937x:
		return parseKSZ9477(p, in)
	case kRTL4A:
		return parseRTL4A(p, in)
	case kRTL84:
		return parseRTL84(p, 12, in)
	case kRTL84T:
		return parseRTL84(p, len(p)-8, in)
	case k8021Q:
		return parse8021Q(p, c.tpid, in)
	case kAR9331:
		return parseAR9331(p, in)
	case kGSWIP:
		return parseGSWIP(p, in)
	case kHellcreek:
		return parseHellcreek(p, in)
	case kLAN9303:
		return parseLAN9303(p, in)
	case kTrailer:
		return parseTrailer(p, in)
	}
	return ReasonBadTag
}

// checkDest validates d against the format's TX port field.
func (c *codec) checkDest(d Dest) Reason {
	if d.Ports == 0 {
		if c.kind == kNone || (c.kind == k8021Q && d.Bridge != 0) {
			return ReasonNone
		}
		return ReasonNoPort
	}
	if d.Ports&^c.mask != 0 {
		return ReasonPort
	}
	if !c.spec.Multi && d.Ports&(d.Ports-1) != 0 {
		return ReasonMultiPort
	}
	return ReasonNone
}

// room checks, before anything is written, that f can take head bytes in front and, after padding
// to padTo, tail bytes behind.
func room(f *frame.Frame, head, padTo, tail int) Reason {
	if head > int(f.Head) {
		return ReasonNoHeadroom
	}
	l := max(int(f.Len), padTo)
	if l-int(f.Len)+tail > int(f.Tail) || l+head+tail > 0xffff {
		return ReasonNoTailroom
	}
	return ReasonNone
}

// pushSA opens n bytes between the source MAC and the EtherType; the gap is p[12:12+n].
// The caller checked the headroom and that the frame holds at least the 12 MAC bytes.
// The copy has a constant length (12), so the compiler emits word moves, not a memmove call; in
// this form pushSA stays small enough to inline into each encoder.
func pushSA(mem []byte, f *frame.Frame, n int) []byte {
	f.Off -= uint32(n)
	f.Head -= uint16(n)
	f.Len += uint16(n)
	p := f.Data(mem)
	copy(p[:12], p[n:n+12])
	return p
}

// pushPrefix opens n bytes in front of the frame; the gap is p[:n].
func pushPrefix(mem []byte, f *frame.Frame, n int) []byte {
	f.Off -= uint32(n)
	f.Head -= uint16(n)
	f.Len += uint16(n)
	return f.Data(mem)
}

// appendTail pads f to padTo (zeros) and appends n bytes, returned as the tail slice.
func appendTail(mem []byte, f *frame.Frame, padTo, n int) []byte {
	if int(f.Len) < padTo {
		_ = f.Pad(mem, padTo) // room was checked
	}
	old := int(f.Len)
	f.Len += uint16(n)
	f.Tail -= uint16(n)
	return f.Data(mem)[old:]
}

// linkLocal reports a destination 01:80:c2:00:00:0X (is_link_local_ether_addr).
func linkLocal(p []byte) bool {
	return p[0] == 0x01 && p[1] == 0x80 && p[2] == 0xc2 && p[3] == 0 && p[4] == 0 && p[5]&0xf0 == 0
}

// encode tags f toward d. On failure f and its bytes are unchanged.
func (c *codec) encode(mem []byte, f *frame.Frame, d Dest) Reason {
	if f.Len < minFrame {
		return ReasonTruncated
	}
	if r := c.checkDest(d); r != ReasonNone {
		return r
	}
	switch c.kind {
	case kNone:
		return ReasonNone
	case kDSA:
		if r := encDSA(mem, f, d); r != reasonSlow {
			return r
		}
		return encMarvell(mem, f, d, 0)
	case kEDSA:
		if r := encEDSA(mem, f, d); r != reasonSlow {
			return r
		}
		return encMarvell(mem, f, d, 4)
	case kBrcm, kBrcmPrepend:
		return encBrcm(mem, f, d, c.kind == kBrcmPrepend)
	case kQCA:
		return encQCA(mem, f, d)
	case kMTK:
		return encMTK(mem, f, d)
	case kKSZ8795, kKSZ9477, kKSZ9893, kLAN937x:
		return encKSZ(mem, f, d, c.kind)
	case kRTL4A:
		return encRTL4A(mem, f, d)
	case kRTL84, kRTL84T:
		return encRTL84(mem, f, d, c.kind == kRTL84T)
	case k8021Q:
		return enc8021Q(mem, f, d, c.tpid)
	case kAR9331:
		return encAR9331(mem, f, d)
	case kGSWIP:
		return encGSWIP(mem, f, d)
	case kHellcreek:
		return encHellcreek(mem, f, d)
	case kLAN9303:
		return encLAN9303(mem, f, d)
	case kTrailer:
		return encTrailer(mem, f, d)
	}
	return ReasonBadTag
}
