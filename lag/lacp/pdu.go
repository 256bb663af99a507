package lacp

import (
	"encoding/binary"
	"errors"
	"strings"

	"github.com/wirespeed/wirespeed/frame"
)

// Slow protocols framing (IEEE 802.3 Annex 57A, 802.1AX clause 6.4.2).
const (
	EtherType     = 0x8809 // Slow_Protocols_Type
	SubtypeLACP   = 1      // LACPDU
	SubtypeMarker = 2      // Marker PDU
	Version       = 1      // the LACP and marker version this package writes

	PDULen   = 110                     // a slow-protocol PDU after the Ethernet header
	FrameLen = frame.EtherLen + PDULen // 124 bytes: a whole LACPDU or marker frame without FCS
)

// SlowProtocolsMAC is the destination of every LACPDU and marker PDU (Slow_Protocols_Multicast).
var SlowProtocolsMAC = frame.MAC{0x01, 0x80, 0xc2, 0x00, 0x00, 0x02}

// TLV types and lengths of the LACPDU (bond_3ad.h struct lacpdu) and the marker PDU (struct
// bond_marker).
const (
	tlvActor       = 1
	tlvPartner     = 2
	tlvCollector   = 3
	lenInfo        = 20
	lenCollector   = 16
	tlvMarkerInfo  = 1
	tlvMarkerResp  = 2
	lenMarkerInfo  = 16
	offActor       = 2  // actor TLV: type, length, then Info at 4
	offPartner     = 22 // partner TLV
	offCollector   = 42 // collector TLV: type, length, max delay at 44
	offTerminator  = 58 // terminator TLV (type 0, length 0), then 50 bytes of zeros
	offMarkerTLV   = 2
	offMarkerPort  = 4
	offMarkerSys   = 6
	offMarkerTrans = 12
)

// Sentinel errors of the decoders. Compare with errors.Is.
var (
	ErrTruncated = errors.New("lacp: truncated PDU")
	ErrNotSlow   = errors.New("lacp: not a slow-protocols frame (destination or EtherType)")
	ErrSubtype   = errors.New("lacp: unknown slow-protocols subtype")
	ErrTLV       = errors.New("lacp: malformed TLV")
)

// State is an actor or partner state byte (802.1AX 6.4.2.3, bond_3ad.c AD_STATE_*).
type State uint8

// State bits.
const (
	StateActivity     State = 0x01 // LACP_Activity: active (1) or passive (0)
	StateTimeout      State = 0x02 // LACP_Timeout: short timeout (1, fast rate) or long (0)
	StateAggregation  State = 0x04 // the link may be aggregated (0: individual)
	StateSync         State = 0x08 // Synchronization: attached to the right aggregator
	StateCollecting   State = 0x10
	StateDistributing State = 0x20
	StateDefaulted    State = 0x40 // the partner information is the administrative default
	StateExpired      State = 0x80 // the receive machine is in EXPIRED
)

var stateNames = [8]string{"activity", "timeout", "aggregation", "synchronized", "collecting", "distributing", "defaulted", "expired"}

// String lists the bits set, in bit order, with Open vSwitch's names ("activity timeout
// aggregation"); "none" for 0.
func (s State) String() string {
	if s == 0 {
		return "none"
	}
	var b strings.Builder
	for i, n := range stateNames {
		if s&(1<<i) != 0 {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(n)
		}
	}
	return b.String()
}

// Info is the actor or partner information of an LACPDU (20-byte TLV, 18 bytes of value used).
type Info struct {
	SystemPriority uint16
	System         frame.MAC
	Key            uint16
	PortPriority   uint16
	Port           uint16
	State          State
}

// LACPDU is a decoded LACPDU.
type LACPDU struct {
	Version           uint8 // 0 is written as Version
	Actor, Partner    Info
	CollectorMaxDelay uint16 // tens of microseconds
}

// Marker is a decoded marker PDU: a Marker Information (from a marker generator) or a Marker
// Response (Response set) carrying the requester's fields back.
type Marker struct {
	Version         uint8 // 0 is written as Version
	Response        bool
	RequesterPort   uint16
	RequesterSystem frame.MAC
	TransactionID   uint32
}

// PDU is any decoded slow-protocols PDU this package understands.
type PDU struct {
	Src     frame.MAC // the frame's source address
	Subtype uint8     // SubtypeLACP or SubtypeMarker
	LACP    LACPDU    // valid when Subtype is SubtypeLACP
	Marker  Marker    // valid when Subtype is SubtypeMarker
}

func getInfo(b []byte) Info {
	_ = b[14]
	return Info{
		SystemPriority: binary.BigEndian.Uint16(b[0:]),
		System:         frame.MAC(b[2:8]),
		Key:            binary.BigEndian.Uint16(b[8:]),
		PortPriority:   binary.BigEndian.Uint16(b[10:]),
		Port:           binary.BigEndian.Uint16(b[12:]),
		State:          State(b[14]),
	}
}

func putInfo(b []byte, in *Info) {
	_ = b[17]
	binary.BigEndian.PutUint16(b[0:], in.SystemPriority)
	copy(b[2:8], in.System[:])
	binary.BigEndian.PutUint16(b[8:], in.Key)
	binary.BigEndian.PutUint16(b[10:], in.PortPriority)
	binary.BigEndian.PutUint16(b[12:], in.Port)
	b[14] = byte(in.State)
	b[15], b[16], b[17] = 0, 0, 0 // reserved
}

// ParseLACPDU decodes the PDU bytes of an LACPDU (after the Ethernet header; at least PDULen
// bytes). It checks the subtype and the actor and partner TLVs' types and lengths, as Open
// vSwitch does; the version, the collector and terminator TLVs and the reserved bytes are not
// checked (Linux checks none of them, and 802.1AX-2014's version 2 puts further TLVs there).
func ParseLACPDU(b []byte) (LACPDU, error) {
	if len(b) < PDULen {
		return LACPDU{}, ErrTruncated
	}
	b = b[:PDULen]
	if b[0] != SubtypeLACP {
		return LACPDU{}, ErrSubtype
	}
	if b[offActor] != tlvActor || b[offActor+1] != lenInfo || b[offPartner] != tlvPartner || b[offPartner+1] != lenInfo {
		return LACPDU{}, ErrTLV
	}
	return LACPDU{
		Version:           b[1],
		Actor:             getInfo(b[offActor+2:]),
		Partner:           getInfo(b[offPartner+2:]),
		CollectorMaxDelay: binary.BigEndian.Uint16(b[offCollector+2:]),
	}, nil
}

// PutLACPDU writes p as the 110 PDU bytes of an LACPDU into b (subtype, version, the actor,
// partner and collector TLVs, the terminator and zero padding). It returns ErrTruncated when b
// is shorter than PDULen.
func PutLACPDU(b []byte, p *LACPDU) error {
	if len(b) < PDULen {
		return ErrTruncated
	}
	b = b[:PDULen]
	clear(b)
	b[0] = SubtypeLACP
	b[1] = p.Version
	if b[1] == 0 {
		b[1] = Version
	}
	b[offActor], b[offActor+1] = tlvActor, lenInfo
	putInfo(b[offActor+2:], &p.Actor)
	b[offPartner], b[offPartner+1] = tlvPartner, lenInfo
	putInfo(b[offPartner+2:], &p.Partner)
	b[offCollector], b[offCollector+1] = tlvCollector, lenCollector
	binary.BigEndian.PutUint16(b[offCollector+2:], p.CollectorMaxDelay)
	return nil
}

// ParseMarker decodes the PDU bytes of a marker PDU (at least PDULen bytes): subtype 2, a Marker
// Information or Marker Response TLV of length 16. Like Linux it reads the requester's fields
// without checking the terminator or the padding.
func ParseMarker(b []byte) (Marker, error) {
	if len(b) < PDULen {
		return Marker{}, ErrTruncated
	}
	b = b[:PDULen]
	if b[0] != SubtypeMarker {
		return Marker{}, ErrSubtype
	}
	t := b[offMarkerTLV]
	if (t != tlvMarkerInfo && t != tlvMarkerResp) || b[offMarkerTLV+1] != lenMarkerInfo {
		return Marker{}, ErrTLV
	}
	return Marker{
		Version:         b[1],
		Response:        t == tlvMarkerResp,
		RequesterPort:   binary.BigEndian.Uint16(b[offMarkerPort:]),
		RequesterSystem: frame.MAC(b[offMarkerSys : offMarkerSys+6]),
		TransactionID:   binary.BigEndian.Uint32(b[offMarkerTrans:]),
	}, nil
}

// PutMarker writes m as the 110 PDU bytes of a marker PDU into b. It returns ErrTruncated when b
// is shorter than PDULen.
func PutMarker(b []byte, m *Marker) error {
	if len(b) < PDULen {
		return ErrTruncated
	}
	b = b[:PDULen]
	clear(b)
	b[0] = SubtypeMarker
	b[1] = m.Version
	if b[1] == 0 {
		b[1] = Version
	}
	b[offMarkerTLV], b[offMarkerTLV+1] = tlvMarkerInfo, lenMarkerInfo
	if m.Response {
		b[offMarkerTLV] = tlvMarkerResp
	}
	binary.BigEndian.PutUint16(b[offMarkerPort:], m.RequesterPort)
	copy(b[offMarkerSys:offMarkerSys+6], m.RequesterSystem[:])
	binary.BigEndian.PutUint32(b[offMarkerTrans:], m.TransactionID)
	return nil
}

// DecodeFrame decodes a whole slow-protocols frame: destination SlowProtocolsMAC, EtherType
// 0x8809 right after the addresses (LACPDUs are never tagged), then an LACPDU or a marker PDU.
// Errors: ErrTruncated, ErrNotSlow, ErrSubtype (another slow protocol: OAM, OSSP...), ErrTLV.
func DecodeFrame(f []byte, p *PDU) error {
	if len(f) < frame.EtherLen {
		return ErrTruncated
	}
	if frame.MAC(f[0:6]) != SlowProtocolsMAC || binary.BigEndian.Uint16(f[12:]) != EtherType {
		return ErrNotSlow
	}
	p.Src = frame.MAC(f[6:12])
	b := f[frame.EtherLen:]
	if len(b) < PDULen {
		return ErrTruncated
	}
	var err error
	switch p.Subtype = b[0]; p.Subtype {
	case SubtypeLACP:
		p.LACP, err = ParseLACPDU(b)
	case SubtypeMarker:
		p.Marker, err = ParseMarker(b)
	default:
		err = ErrSubtype
	}
	return err
}

func putHeader(b []byte, src frame.MAC) {
	copy(b[0:6], SlowProtocolsMAC[:])
	copy(b[6:12], src[:])
	binary.BigEndian.PutUint16(b[12:], EtherType)
}

// PutLACPFrame writes a whole LACPDU frame from src into b[:FrameLen].
func PutLACPFrame(b []byte, src frame.MAC, p *LACPDU) error {
	if len(b) < FrameLen {
		return ErrTruncated
	}
	putHeader(b, src)
	return PutLACPDU(b[frame.EtherLen:], p)
}

// PutMarkerFrame writes a whole marker frame from src into b[:FrameLen].
func PutMarkerFrame(b []byte, src frame.MAC, m *Marker) error {
	if len(b) < FrameLen {
		return ErrTruncated
	}
	putHeader(b, src)
	return PutMarker(b[frame.EtherLen:], m)
}
