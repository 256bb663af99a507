package dsa

import (
	"github.com/wirespeed/wirespeed/frame"
)

// format is one built-in tag protocol: its Spec and the functions of its tag_*.go file. Every
// function works in place, allocates nothing and never panics on any bytes; on failure the frame
// and its bytes are unchanged.
type format struct {
	spec Spec
	tpid uint16 // tag_8021q users: the TPID of the switch's VLAN tag

	// Receive: parse reads the tag at its place in p and never writes; decode is the general
	// per-frame decoder (it strips the tag of f); decodeBatch decodes the common frames of fr in
	// one loop and marks the others reasonSlow, for decode (rs is cleared before; nil: every
	// frame goes to decode).
	parse       func(c *codec, p []byte, in *Info) Reason
	decode      func(c *codec, mem []byte, f *frame.Frame, in *Info) Reason
	decodeBatch func(mem []byte, fr []frame.Frame, ins []Info, rs []Reason, c *codec)

	// Transmit: encode tags f toward d (f holds an Ethernet header, d passed checkDest);
	// encodeBatch tags the common frames of fr and marks the others reasonSlow (nil: every frame
	// goes to encode). bridge: a Dest with Bridge set needs no port (tag_8021q).
	encode      func(c *codec, mem []byte, f *frame.Frame, d Dest) Reason
	encodeBatch func(mem []byte, fr []frame.Frame, rs []Reason, d Dest, c *codec)
	bridge      bool

	// local: a frame without the tag's EtherType belongs to the conduit interface itself
	// (Config.Local; rtl4a).
	local bool

	// The switch side (SwitchSide): swEncode writes the RX tag for in (f holds an Ethernet
	// header); swDecode reads and strips the TX tag of f (bytes p, at least swTxLen bytes beyond
	// an Ethernet header; nil swTxLen: Spec.TxLen); malformed corrupts the RX tag of p so that
	// the tagger rejects it and returns the Reason it will give (nil: every tag is valid).
	swEncode  func(c *codec, mem []byte, f *frame.Frame, in Info) Reason
	swDecode  func(s *SwitchSide, mem []byte, f *frame.Frame, p []byte) (Dest, Reason)
	swTxLen   func(s *SwitchSide) int
	malformed func(p []byte) Reason

	// tagger makes the format's Tagger: a type of its own embedding c, with the per-frame fast
	// paths (nil: a Tagger that calls decode and encode).
	tagger func(c codec) Tagger
}

// registry lists the built-in formats, one per Linux tag protocol name. Each entry is defined in
// its tag_*.go file; adding a format is adding a file and its line here (see doc.go).
var registry = [...]*format{
	&fmtNone,
	&fmtDSA, &fmtEDSA,
	&fmtBrcm, &fmtBrcmPrepend,
	&fmtQCA,
	&fmtMTK,
	&fmtKSZ8795, &fmtKSZ9477, &fmtKSZ9893, &fmtLAN937x,
	&fmtRTL4A,
	&fmtRTL84, &fmtRTL84T,
	&fmtOcelot8021Q, &fmtVSC73xx8021Q, &fmtSJA1105,
	&fmtAR9331,
	&fmtGSWIP,
	&fmtHellcreek,
	&fmtLAN9303,
	&fmtTrailer,
}

// spec is the Spec of a format: its tag sits at pos, takes rx bytes on received frames and tx on
// sent ones, the untagged frame is padded to pad bytes first (0: not padded), and the TX field
// addresses ports ports (a mask if multi).
func spec(name string, pos Position, rx, tx, pad, ports int, multi bool) Spec {
	s := Spec{Name: name, Position: pos, RxLen: rx, TxLen: tx, PadTo: pad, Ports: ports, Multi: multi}
	if pos == PosTail {
		s.Tailroom = tx
	} else {
		s.Headroom = tx
	}
	return s
}

// codec is a built-in tagger: its format and the values that follow from it. Values are
// immutable; the package keeps one per registry entry in codecs. Each format's Tagger embeds its
// codec; the conduit and the switch side call the codec directly.
type codec struct {
	spec Spec
	mask PortMask // ports the TX encoding can address
	tpid uint16   // tag_8021q users: the TPID of the switch's VLAN tag
	fm   *format
}

// codecs holds the codec of every registry entry, in the same order.
var codecs = func() (cs [len(registry)]codec) {
	for i, fm := range registry {
		if fm.decodeBatch == nil {
			fm.decodeBatch = allSlowDecode
		}
		if fm.encodeBatch == nil {
			fm.encodeBatch = allSlowEncode
		}
		cs[i] = codec{spec: fm.spec, mask: PortMask(uint64(1)<<uint(fm.spec.Ports) - 1), tpid: fm.tpid, fm: fm}
	}
	return cs
}()

func (c *codec) Name() string { return c.spec.Name }
func (c *codec) Spec() Spec   { return c.spec }
func (c *codec) String() string {
	return c.spec.Name
}

// Parse decodes the tag of a frame given as plain bytes without changing them.
func (c *codec) Parse(p []byte, in *Info) error {
	return c.parse(p, in).Err()
}

// parse reads the tag at its place in p. It never writes p.
func (c *codec) parse(p []byte, in *Info) Reason { return c.fm.parse(c, p, in) }

// decodeOne is Decode on a frame descriptor: the general per-frame decoder, behind the slow paths
// of Decode (the Taggers' fast paths) and decodeBatch.
func (c *codec) decodeOne(mem []byte, f *frame.Frame, in *Info) Reason {
	return c.fm.decode(c, mem, f, in)
}

// DecodeBatch decodes every frame of b in place.
func (c *codec) DecodeBatch(b *frame.Batch, ins []Info, rs []Reason) int {
	return c.decodeBatch(b.Mem, b.Frames, ins, rs)
}

// checkDest validates d against the format's TX port field.
func (c *codec) checkDest(d Dest) Reason {
	if d.Ports == 0 {
		if c.spec.Position == PosNone || (c.fm.bridge && d.Bridge != 0) {
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

// encode tags f toward d. On failure f and its bytes are unchanged.
func (c *codec) encode(mem []byte, f *frame.Frame, d Dest) Reason {
	if f.Len < minFrame {
		return ReasonTruncated
	}
	if r := c.checkDest(d); r != ReasonNone {
		return r
	}
	return c.fm.encode(c, mem, f, d)
}
