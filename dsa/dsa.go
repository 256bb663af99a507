package dsa

import (
	"errors"
	"fmt"
	"math/bits"
	"sort"

	"github.com/wirespeed/wirespeed/frame"
)

// Position says where a tag sits in the frame.
type Position uint8

const (
	// PosNone: the format adds no bytes ("none").
	PosNone Position = iota
	// PosSA: between the source MAC address and the EtherType (Marvell, Broadcom, Qualcomm,
	// MediaTek, Realtek, tag_8021q, LAN9303).
	PosSA
	// PosPrefix: in front of the destination MAC address (brcm-prepend, ar9331, gswip).
	PosPrefix
	// PosTail: after the payload, just before the FCS (Microchip KSZ, rtl8_4t, hellcreek, trailer).
	PosTail
)

func (p Position) String() string {
	switch p {
	case PosNone:
		return "none"
	case PosSA:
		return "after SA"
	case PosPrefix:
		return "before DA"
	case PosTail:
		return "tail"
	}
	return fmt.Sprintf("Position(%d)", uint8(p))
}

// PortMask is a set of switch ports: bit n is port n (0-based, as the switch numbers them).
type PortMask uint32

// Port returns the mask holding port p alone (0 if p is outside 0-31).
func Port(p int) PortMask {
	if p < 0 || p > 31 {
		return 0
	}
	return 1 << uint(p)
}

// Has reports whether port p is in m.
func (m PortMask) Has(p int) bool { return p >= 0 && p < 32 && m&(1<<uint(p)) != 0 }

// Count is the number of ports in m.
func (m PortMask) Count() int { return bits.OnesCount32(uint32(m)) }

// First is the lowest port in m, or -1 if m is empty.
func (m PortMask) First() int {
	if m == 0 {
		return -1
	}
	return bits.TrailingZeros32(uint32(m))
}

// DestFlags modify how Encode builds a tag. Formats ignore the flags that mean nothing to them.
type DestFlags uint8

const (
	// DestForward asks the switch to forward by its own tables instead of forcing the frame out of
	// the given port: Marvell cmd FORWARD (3) instead of FROM_CPU (1), with Dest.Switch as the
	// device field (Linux uses a virtual device past the last switch for bridge TX).
	DestForward DestFlags = 1 << iota
	// DestBridged: the sending port is a bridge member. Marvell: an untagged frame gets VID 4095
	// (MV88E6XXX_VID_BRIDGED) instead of 0 (MV88E6XXX_VID_STANDALONE). LAN9303: unicast frames
	// use the address lookup (USE_ALR) instead of the port.
	DestBridged
	// DestTimestamp appends the 4-byte PTP timestamp field that Microchip KSZ switches
	// (ksz9477, ksz9893, lan937x) require on every frame while hardware timestamping is
	// enabled (tag_ksz.c ksz_xmit_timestamp); it is written as zero.
	DestTimestamp
	// DestPad pads the untagged frame with zeros to 60 bytes (ETH_ZLEN) before an mtk tag, so
	// that a short frame leaves the CPU as at least 64 bytes. Mainline tag_mtk.c does not pad
	// (a 42-byte ARP request becomes 46 bytes); OpenWrt's kernels carry a patch that does
	// (eth_skb_pad in mtk_tag_xmit) for MediaTek switches that corrupt the padding of short
	// tagged frames. Set it in Config.TxFlags for such a switch. Formats other than mtk ignore
	// it: they pad as their Linux driver does (Spec.PadTo) or not at all.
	DestPad
)

// Dest says where Encode sends a frame.
type Dest struct {
	Ports  PortMask  // destination port(s); formats with a single-port field take exactly one
	Switch uint8     // switch/device index for formats that have one (Marvell, tag_8021q); the others ignore it
	Prio   uint8     // traffic class / PCP 0-7 where the format carries one (brcm, qca, ksz, tag_8021q)
	Bridge uint8     // tag_8021q: virtual bridge ID 1-7 (VBID) to send into a bridge domain instead of a port
	Flags  DestFlags // see DestFlags
}

// To is the Dest for one port of switch 0.
func To(port int) Dest { return Dest{Ports: Port(port)} }

// InfoFlags describe a decoded tag.
type InfoFlags uint8

const (
	// InfoTrapped: the switch trapped the frame to the CPU and did not forward it itself (Linux
	// leaves skb->offload_fwd_mark clear). Decode also sets frame.FlagTrapped.
	InfoTrapped InfoFlags = 1 << iota
	// InfoTrunk: Marvell FORWARD from a trunk (LAG): Port holds the trunk ID, not a port. A
	// Conduit delivers such frames to its trunk ports (Config.Trunks) or drops them (ErrTrunk).
	InfoTrunk
	// InfoBridge: tag_8021q VID with a non-zero VBID: the frame came from a VLAN-unaware bridge
	// domain (Code holds the VBID) and the precise source port is unknown.
	InfoBridge
	// InfoVLAN: the switch folded the frame's 802.1Q tag into its own tag (Marvell "tagged" bit).
	// Decode puts a regular 802.1Q tag (TPID, TCI) back in the frame, as Linux does; TPID and TCI
	// repeat its values.
	InfoVLAN
	// InfoTimestamp: the tag carried a hardware timestamp (KSZ bit 7): Timestamp is valid.
	InfoTimestamp
)

// Info is what Decode learnt from a tag. It is a small value; nothing in it points into the frame.
type Info struct {
	Port      uint16    // source port on the switch (trunk ID with InfoTrunk)
	Switch    uint8     // source switch/device index (0 where the format has none)
	TagLen    uint8     // bytes the tag occupied on the wire, timestamp included
	Flags     InfoFlags // see InfoFlags
	Code      uint8     // format-specific reason: Marvell TO_CPU code, brcm RC byte, rtl8_4 REASON, qca type, tag_8021q VBID
	TPID      uint16    // with InfoVLAN: the TPID of the tag restored in the frame (0x8100)
	TCI       uint16    // with InfoVLAN: its TCI; tag_8021q: the switch tag's TCI (PCP = priority)
	Timestamp uint32    // with InfoTimestamp: raw timestamp (KSZ: bits 31-30 seconds mod 4, 29-0 ns)
}

// Trapped reports InfoTrapped.
func (in Info) Trapped() bool { return in.Flags&InfoTrapped != 0 }

// Removed is how many bytes Decode took out of the frame: TagLen, less the 4 bytes of an 802.1Q
// tag put back in place of the switch tag (InfoVLAN).
func (in Info) Removed() int {
	n := int(in.TagLen)
	if in.Flags&InfoVLAN != 0 {
		n -= 4
	}
	return n
}

// Sentinel errors. Compare with == or errors.Is.
var (
	ErrTruncated   = frame.ErrTruncated  // frame too short for the tag (or too short to be Ethernet)
	ErrNoHeadroom  = frame.ErrNoHeadroom // Encode: not enough headroom for a head tag
	ErrNoTailroom  = frame.ErrNoTailroom // Encode: not enough tailroom for padding and a tail tag
	ErrBadTag      = errors.New("dsa: malformed tag (wrong EtherType, version, opcode or reserved bits)")
	ErrNotTagged   = errors.New("dsa: frame carries no tag of this format")
	ErrUnsupported = errors.New("dsa: tag valid but not a data frame (management, register access, reserved code)")
	ErrPort        = errors.New("dsa: port out of range")
	ErrNoPort      = errors.New("dsa: no destination port")
	ErrMultiPort   = errors.New("dsa: format addresses one port per frame")
	ErrTrunk       = errors.New("dsa: frame from a trunk with no trunk port (Config.Trunks)")
	ErrBridge      = errors.New("dsa: frame from a bridge domain, source port unknown")
	ErrUnknown     = errors.New("dsa: unknown tag protocol")
)

// Reason is why a frame was dropped; the conduit counts drops per reason.
type Reason uint8

// Drop reasons, one per sentinel error.
const (
	ReasonNone Reason = iota
	ReasonTruncated
	ReasonBadTag
	ReasonNotTagged
	ReasonUnsupported
	ReasonPort
	ReasonNoPort
	ReasonMultiPort
	ReasonTrunk
	ReasonBridge
	ReasonNoHeadroom
	ReasonNoTailroom
	NumReasons // number of reasons, for arrays indexed by Reason
)

var reasonErr = [NumReasons]error{
	nil, ErrTruncated, ErrBadTag, ErrNotTagged, ErrUnsupported, ErrPort, ErrNoPort, ErrMultiPort,
	ErrTrunk, ErrBridge, ErrNoHeadroom, ErrNoTailroom,
}

var reasonName = [NumReasons]string{
	"none", "truncated", "bad-tag", "not-tagged", "unsupported", "port", "no-port", "multi-port",
	"trunk", "bridge", "no-headroom", "no-tailroom",
}

// Err is the sentinel error for r (nil for ReasonNone).
func (r Reason) Err() error {
	if r < NumReasons {
		return reasonErr[r]
	}
	return ErrBadTag
}

func (r Reason) String() string {
	if r < NumReasons {
		return reasonName[r]
	}
	return fmt.Sprintf("Reason(%d)", uint8(r))
}

// Spec describes a tag format.
type Spec struct {
	Name     string   // Linux tag protocol name (/sys/class/net/<conduit>/dsa/tagging)
	Position Position // where the tag sits
	RxLen    int      // tag bytes on received frames (the largest, e.g. ksz9477 with timestamp: 5)
	TxLen    int      // tag bytes Encode adds (the largest, e.g. ksz9477 with DestTimestamp: 6)
	Headroom int      // headroom Encode needs in front of the frame
	Tailroom int      // tailroom Encode needs behind the frame, besides padding a runt
	PadTo    int      // Encode pads the untagged frame to this length first (0: no padding)
	Ports    int      // ports the TX encoding can address (0 to Ports-1)
	Multi    bool     // TX field is a port mask: Encode accepts several ports at once
}

// Tagger is one switch tag format. Implementations are immutable values, safe for concurrent use.
//
// Decode and Encode work in place on frame i of a batch: Decode strips the tag (moving the 12 MAC
// bytes when the tag sits after the source address, pulling the head or trimming the tail
// otherwise) and fills in *in; Encode pads if the format needs it and writes the tag into the
// headroom or tailroom. Both allocate nothing, never panic on any bytes, and leave the frame
// untouched when they fail (*in is then unspecified). Parse is the read-only form of Decode over
// plain bytes.
//
// Decode fills the caller's Info rather than returning one: a returned struct is copied right
// after it is written, which costs more than the decode.
//
// DecodeBatch and EncodeBatch are the batch forms: the format is chosen once per batch, not per frame.
// DecodeBatch decodes every frame of b in place as Decode does, storing frame i's Info in ins[i] and
// its outcome in rs[i] (ReasonNone: decoded; otherwise the frame is unchanged); EncodeBatch tags every
// frame toward d (validated once), storing each outcome in rs[i]. ins and rs must hold at least
// b.Len() entries (they panic otherwise). Both return the number of frames that succeeded; frames stay
// where they are (filtering the failures out is the caller's choice, as Conduit.Recv does).
type Tagger interface {
	Name() string
	Spec() Spec
	Parse(frame []byte, in *Info) error
	Decode(b *frame.Batch, i int, in *Info) error
	Encode(b *frame.Batch, i int, d Dest) error
	DecodeBatch(b *frame.Batch, ins []Info, rs []Reason) int
	EncodeBatch(b *frame.Batch, d Dest, rs []Reason) int
}

// ByName returns the tagger with the given Linux tag protocol name, e.g. "edsa", "brcm-prepend",
// "ksz9477", "rtl8_4t", "ocelot-8021q".
func ByName(name string) (Tagger, error) {
	for i := range codecs {
		if codecs[i].spec.Name == name {
			return taggers[i], nil
		}
	}
	return nil, fmt.Errorf("%w %q", ErrUnknown, name)
}

// Names lists the supported tag protocol names, sorted.
func Names() []string {
	out := make([]string, len(codecs))
	for i := range codecs {
		out[i] = codecs[i].spec.Name
	}
	sort.Strings(out)
	return out
}
