package vlan

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/wirespeed/wirespeed/frame"
)

// TPIDs.
const (
	TPID8021Q  uint16 = 0x8100 // C-tag
	TPID8021AD uint16 = 0x88a8 // S-tag (QinQ outer)
	TPID9100   uint16 = 0x9100 // legacy QinQ, only with a Parser that lists it
	TPID9200   uint16 = 0x9200
	TPID9300   uint16 = 0x9300
)

// Sizes (include/linux/if_vlan.h).
const (
	HeaderLen = 4           // VLAN_HLEN
	EthLen    = 18          // VLAN_ETH_HLEN: Ethernet header with one tag
	MaxTags   = 2           // tags Parse reports (QinQ); deeper stacks stop there
	VIDMask   = 0x0fff      // VLAN_VID_MASK
	VIDNone   = 0           // priority-tagged frame: no VLAN membership
	VIDMax    = VIDMask - 1 // 4094: the highest VID a Linux VLAN device may have
	VIDRsvd   = VIDMask     // 4095: reserved, rejected for interfaces as Linux does (-ERANGE)
	macLen    = 2 * 6       // destination + source
)

// Sentinel errors.
var (
	ErrTruncated  = errors.New("vlan: truncated frame")
	ErrNotTagged  = errors.New("vlan: frame not tagged")
	ErrNoHeadroom = errors.New("vlan: not enough headroom to push a tag")
	// ErrHeadroomRange: removing header bytes would leave more than 65535 bytes of headroom, more
	// than a frame descriptor holds (frame.Frame.Head); the frame is left unchanged.
	ErrHeadroomRange = errors.New("vlan: headroom would exceed 65535 bytes")
	ErrReservedVID   = errors.New("vlan: VID out of range (1-4094)")
	ErrExists        = errors.New("vlan: interface key already mapped")
	ErrRange         = errors.New("vlan: port or interface out of range")
)

// TCI is a tag control information field: PCP[15:13] DEI[12] VID[11:0].
type TCI uint16

// NewTCI packs a TCI; out-of-range inputs are masked.
func NewTCI(pcp uint8, dei bool, vid uint16) TCI {
	t := TCI(pcp&7)<<13 | TCI(vid&VIDMask)
	if dei {
		t |= 1 << 12
	}
	return t
}

// PCP is the priority code point (0-7).
func (t TCI) PCP() uint8 { return uint8(t >> 13) }

// DEI is the drop-eligible indicator (formerly CFI).
func (t TCI) DEI() bool { return t&(1<<12) != 0 }

// VID is the VLAN identifier (0-4095).
func (t TCI) VID() uint16 { return uint16(t) & VIDMask }

// WithVID returns t with the VID replaced.
func (t TCI) WithVID(vid uint16) TCI { return t&^VIDMask | TCI(vid&VIDMask) }

// WithPCP returns t with the PCP replaced.
func (t TCI) WithPCP(pcp uint8) TCI { return t&0x1fff | TCI(pcp&7)<<13 }

func (t TCI) String() string {
	dei := 0
	if t.DEI() {
		dei = 1
	}
	return fmt.Sprintf("vid=%d pcp=%d dei=%d", t.VID(), t.PCP(), dei)
}

// Tag is one VLAN tag: its TPID and TCI.
type Tag struct {
	TPID uint16
	TCI  TCI
}

// C returns an 802.1Q tag with the given VID (PCP 0).
func C(vid uint16) Tag { return Tag{TPID8021Q, TCI(vid & VIDMask)} }

// S returns an 802.1ad tag with the given VID (PCP 0).
func S(vid uint16) Tag { return Tag{TPID8021AD, TCI(vid & VIDMask)} }

// Header is what Parse found: up to MaxTags tags, outermost first, and the EtherType behind them.
//
// Layout: 12 bytes, 4-byte aligned: Outer (bytes 0-3), Inner (4-7), EtherType (8-9), N (10),
// Len (11). Parse's fast path stores each tag as one 4-byte word. Use int(h.Len) where an int is
// needed; slicing with h.Len works as is.
type Header struct {
	_         [0]uint32
	Outer     Tag    // valid when N >= 1
	Inner     Tag    // valid when N == 2
	EtherType uint16 // the type after the tags; a TPID again if more than MaxTags tags were stacked
	N         uint8  // tags found (0, 1 or 2)
	Len       uint8  // bytes of the Ethernet header including the tags: 14 + 4*N
}

// Parser recognises 0x8100 and 0x88a8 and up to four extra TPIDs (such as 0x9100). The zero Parser
// is ready to use; Parser values are immutable and safe for concurrent use.
type Parser struct {
	extra [4]uint16
	n     int
}

// NewParser returns a Parser that also accepts the given TPIDs (at most 4; 0, 0x8100 and 0x88a8 are
// ignored).
func NewParser(extra ...uint16) (Parser, error) {
	var p Parser
	for _, t := range extra {
		if t == 0 || t == TPID8021Q || t == TPID8021AD {
			continue
		}
		if p.n == len(p.extra) {
			return p, fmt.Errorf("vlan: at most %d extra TPIDs", len(p.extra))
		}
		p.extra[p.n] = t
		p.n++
	}
	return p, nil
}

// IsTPID reports whether t starts a tag for this parser.
func (p *Parser) IsTPID(t uint16) bool {
	if t == TPID8021Q || t == TPID8021AD {
		return true
	}
	return p.n > 0 && p.isExtra(t)
}

func (p *Parser) isExtra(t uint16) bool {
	for i := 0; i < p.n && i < len(p.extra); i++ {
		if p.extra[i] == t {
			return true
		}
	}
	return false
}

// Parse reads the Ethernet header at the start of b, with up to MaxTags stacked tags, into h (which
// it overwrites). Only b's header bytes are read. It returns ErrTruncated when b ends inside the
// header, leaving h zero.
//
// Parse fills a caller-owned Header rather than returning one because Go copies a returned struct
// through the stack with wide loads after narrow stores, a store-forwarding stall that costs more
// than the parse itself.
//
// Parse is inlined into its caller, and so is its common case (standard TPIDs, a frame of at least
// 22 bytes: parseStd); every other frame takes a call to the general path (see inline.go).
func (p *Parser) Parse(b []byte, h *Header) error {
	return parseVia(p.n, p, b, h, parseStd, (*Parser).parse)
}

// Parse is Parser.Parse with the standard TPIDs (0x8100, 0x88a8).
func Parse(b []byte, h *Header) error { return parseVia(0, &std, b, h, parseStd, (*Parser).parse) }

// parse is Parse's general path: any parser, any frame. It is a leaf function (no stack frame).
// Fields are stored one by one: a composite literal would be built on the stack and copied.
func (p *Parser) parse(b []byte, h *Header) error {
	h.Outer, h.Inner = Tag{}, Tag{}
	h.N, h.Len = 0, 0
	if len(b) < frame.EtherLen {
		h.EtherType = 0
		return ErrTruncated
	}
	t := binary.BigEndian.Uint16(b[12:14])
	if !p.IsTPID(t) {
		h.EtherType, h.Len = t, frame.EtherLen
		return nil
	}
	if len(b) < EthLen {
		h.EtherType = 0
		return ErrTruncated
	}
	o := Tag{t, TCI(binary.BigEndian.Uint16(b[14:16]))}
	t = binary.BigEndian.Uint16(b[16:18])
	if !p.IsTPID(t) {
		h.Outer = o
		h.EtherType, h.N, h.Len = t, 1, EthLen
		return nil
	}
	if len(b) < EthLen+HeaderLen {
		h.EtherType = 0
		return ErrTruncated
	}
	_ = b[21]
	h.Outer = o
	h.Inner = Tag{t, TCI(binary.BigEndian.Uint16(b[18:20]))}
	h.EtherType, h.N, h.Len = binary.BigEndian.Uint16(b[20:22]), 2, EthLen+HeaderLen
	return nil
}

// std is the Parser of the package-level functions (standard TPIDs only); it is never changed.
var std Parser

// Outer returns the outermost tag of frame i of b: the out-of-band one if the I/O layer stripped it
// (frame.FlagVLAN), else the one in the bytes. ok is false for an untagged frame.
func (p *Parser) Outer(b *frame.Batch, i int) (t Tag, ok bool) {
	f := &b.Frames[i]
	if f.Flags&frame.FlagVLAN != 0 {
		tp := f.TPID
		if tp == 0 {
			tp = TPID8021Q
		}
		return Tag{tp, TCI(f.TCI)}, true
	}
	d := f.Data(b.Mem)
	if len(d) < EthLen {
		return Tag{}, false
	}
	tp := binary.BigEndian.Uint16(d[macLen:])
	if !p.IsTPID(tp) {
		return Tag{}, false
	}
	return Tag{tp, TCI(binary.BigEndian.Uint16(d[macLen+2:]))}, true
}

// Push inserts t as the outermost tag of frame i, using 4 bytes of headroom: the 12 MAC bytes move
// to the front and the payload stays where it is. A frame whose outer tag is out of band
// (frame.FlagVLAN) has that tag put back first, so the order of tags is kept.
func Push(b *frame.Batch, i int, t Tag) error {
	return pushVia(b, i, t, pushStd, pushGeneral)
}

// pushGeneral is Push's general path.
func pushGeneral(b *frame.Batch, i int, t Tag) error {
	f := &b.Frames[i]
	if f.Flags&frame.FlagVLAN != 0 {
		if err := Reinsert(b, i); err != nil {
			return err
		}
	}
	return push(b.Mem, f, t)
}

func push(mem []byte, f *frame.Frame, t Tag) error {
	if f.Len < macLen {
		return ErrTruncated
	}
	if !f.PushHead(HeaderLen) {
		return ErrNoHeadroom
	}
	d := mem[f.Off : f.Off+macLen+HeaderLen]
	// Move 12 MAC bytes 4 to the front: one 8-byte and one 4-byte load, then the stores.
	lo := binary.LittleEndian.Uint64(d[4:12])
	hi := binary.LittleEndian.Uint32(d[12:16])
	binary.LittleEndian.PutUint64(d[0:8], lo)
	binary.LittleEndian.PutUint32(d[8:12], hi)
	binary.BigEndian.PutUint16(d[12:14], t.TPID)
	binary.BigEndian.PutUint16(d[14:16], uint16(t.TCI))
	return nil
}

// Reinsert puts an out-of-band tag (frame.FlagVLAN, as AF_PACKET reports it) back into frame i's
// bytes as the outermost tag and clears the flag. A TPID of 0 means 0x8100 (older kernels do not
// report it). It does nothing for a frame without the flag. It is frame.Batch.ReinsertVLAN with
// this package's errors.
func Reinsert(b *frame.Batch, i int) error {
	switch err := b.ReinsertVLAN(i); err {
	case frame.ErrTruncated:
		return ErrTruncated
	case frame.ErrNoHeadroom:
		return ErrNoHeadroom
	default:
		return err
	}
}

// Pop removes the outermost tag of frame i and returns it: the out-of-band one if present (which
// costs no byte move), else the one in the bytes, whose 12 MAC bytes move 4 toward the payload. A
// frame left shorter than 60 bytes is zero-padded to 60 when it has the tailroom (Linux pads on
// transmit; doing it here keeps the frame valid on the wire). It returns ErrNotTagged for an
// untagged frame, ErrTruncated for one that ends inside the tag and ErrHeadroomRange, changing
// nothing, for a descriptor whose headroom would pass 65535 bytes.
func (p *Parser) Pop(b *frame.Batch, i int) (Tag, error) {
	return popVia(p.n, p, b, i, popStd, (*Parser).popPad)
}

func (p *Parser) pop(b *frame.Batch, i int, pad bool) (Tag, error) {
	f := &b.Frames[i]
	if f.Flags&frame.FlagVLAN != 0 {
		t, _ := p.Outer(b, i)
		f.Flags &^= frame.FlagVLAN
		f.TPID, f.TCI = 0, 0
		return t, nil
	}
	if f.Len < frame.EtherLen {
		return Tag{}, ErrTruncated
	}
	d := b.Mem[f.Off : f.Off+uint32(f.Len)]
	_ = d[13]
	tp := binary.BigEndian.Uint16(d[12:14])
	if !p.IsTPID(tp) {
		return Tag{}, ErrNotTagged
	}
	if len(d) < EthLen {
		return Tag{}, ErrTruncated
	}
	if int(f.Head)+HeaderLen > 0xffff { // the headroom would not fit the descriptor: change nothing
		return Tag{}, ErrHeadroomRange
	}
	t := Tag{tp, TCI(binary.BigEndian.Uint16(d[14:16]))}
	lo := binary.LittleEndian.Uint64(d[0:8])
	hi := binary.LittleEndian.Uint32(d[8:12])
	binary.LittleEndian.PutUint64(d[4:12], lo)
	binary.LittleEndian.PutUint32(d[12:16], hi)
	f.PullHead(HeaderLen)
	if pad && f.Len < frame.MinEthernetLen {
		_ = f.Pad(b.Mem, frame.MinEthernetLen) // without tailroom the frame stays short; ports pad
	}
	return t, nil
}

// Pop is Parser.Pop with the standard TPIDs.
func Pop(b *frame.Batch, i int) (Tag, error) { return popVia(0, &std, b, i, popStd, (*Parser).popPad) }

// popPad is Pop's general path: pop with padding.
func (p *Parser) popPad(b *frame.Batch, i int) (Tag, error) { return p.pop(b, i, true) }

// SetTCI rewrites the outermost tag's TCI in place (PCP, DEI and VID), out of band or in the bytes.
func (p *Parser) SetTCI(b *frame.Batch, i int, tci TCI) error {
	return setTCIVia(p.n, p, b, i, tci, setTCIStd, (*Parser).setTCI)
}

// setTCI is SetTCI's general path.
func (p *Parser) setTCI(b *frame.Batch, i int, tci TCI) error {
	f := &b.Frames[i]
	if f.Flags&frame.FlagVLAN != 0 {
		f.TCI = uint16(tci)
		return nil
	}
	if f.Len < EthLen {
		return ErrNotTagged
	}
	d := b.Mem[f.Off : f.Off+EthLen]
	if !p.IsTPID(binary.BigEndian.Uint16(d[12:14])) {
		return ErrNotTagged
	}
	binary.BigEndian.PutUint16(d[14:16], uint16(tci))
	return nil
}

// SetTCI is Parser.SetTCI with the standard TPIDs.
func SetTCI(b *frame.Batch, i int, tci TCI) error {
	return setTCIVia(0, &std, b, i, tci, setTCIStd, (*Parser).setTCI)
}
