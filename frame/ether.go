package frame

import "encoding/binary"

// EtherTypes wirespeed handles.
const (
	TypeIPv4 uint16 = 0x0800
	TypeARP  uint16 = 0x0806
	TypeVLAN uint16 = 0x8100 // IEEE 802.1Q C-tag
	TypeQinQ uint16 = 0x88a8 // IEEE 802.1ad S-tag
	TypeIPv6 uint16 = 0x86dd
	TypeLACP uint16 = 0x8809 // slow protocols
)

// EtherLen is the length of an untagged Ethernet header.
const EtherLen = 14

// MAC is an Ethernet address, a comparable value.
type MAC [6]byte

// Ether is a view of an Ethernet header at the start of a frame. Accessors assume len >= EtherLen;
// check with ParseEther (or len) before using a view of bytes from the wire.
type Ether []byte

// ParseEther returns the view of b's Ethernet header, or ErrTruncated.
func ParseEther(b []byte) (Ether, error) {
	if len(b) < EtherLen {
		return nil, ErrTruncated
	}
	return Ether(b), nil
}

// Dst is the destination address.
func (e Ether) Dst() MAC { return MAC(e[0:6]) }

// Src is the source address.
func (e Ether) Src() MAC { return MAC(e[6:12]) }

// Type is the EtherType (or TPID, if the frame is tagged) at offset 12.
func (e Ether) Type() uint16 { return binary.BigEndian.Uint16(e[12:14]) }

// SetDst writes the destination address.
func (e Ether) SetDst(m MAC) { copy(e[0:6], m[:]) }

// SetSrc writes the source address.
func (e Ether) SetSrc(m MAC) { copy(e[6:12], m[:]) }

// SetType writes the EtherType at offset 12.
func (e Ether) SetType(t uint16) { binary.BigEndian.PutUint16(e[12:14], t) }

// IsMulticast reports whether the destination has the group bit set (broadcast included).
func (e Ether) IsMulticast() bool { return e[0]&1 != 0 }

// String formats m as aa:bb:cc:dd:ee:ff.
func (m MAC) String() string {
	const hex = "0123456789abcdef"
	var s [17]byte
	for i, b := range m {
		if i > 0 {
			s[i*3-1] = ':'
		}
		s[i*3] = hex[b>>4]
		s[i*3+1] = hex[b&15]
	}
	return string(s[:])
}
