package vlan

import (
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/wirespeed/wirespeed/frame"
)

// gpView is gopacket's reading of the start of a frame: its Ethernet decoder, then, when the
// EtherType is 802.1Q or 802.1ad and 4 bytes follow, its Dot1Q decoder (gopacket decodes 0x88a8
// with the same layer). It is the independent oracle the fuzz targets hold Pop, Push and SetTCI to.
type gpView struct {
	eth    bool   // an Ethernet header (14 bytes)
	typ    uint16 // its EtherType
	tagged bool   // a whole 802.1Q/802.1ad tag follows the MAC addresses
	tci    TCI    // that tag's PCP, DEI and VID
	next   uint16 // the EtherType behind it
}

// gpRead decodes the first 64 bytes of b (the rest plays no part).
func gpRead(b []byte) gpView {
	var v gpView
	var eth layers.Ethernet
	if eth.DecodeFromBytes(b[:min(len(b), 64)], gopacket.NilDecodeFeedback) != nil {
		return v
	}
	v.eth, v.typ = true, uint16(eth.EthernetType)
	if eth.EthernetType != layers.EthernetTypeDot1Q && eth.EthernetType != layers.EthernetTypeQinQ {
		return v
	}
	var q layers.Dot1Q
	if len(b) < 18 || q.DecodeFromBytes(b[14:min(len(b), 64)], gopacket.NilDecodeFeedback) != nil {
		return v
	}
	v.tagged, v.next = true, uint16(q.Type)
	v.tci = NewTCI(q.Priority, q.DropEligible, q.VLANIdentifier)
	return v
}

// gpPopWant is what Pop (standard TPIDs, with padding) must do to frame f, whose bytes are d,
// according to gopacket: the tag it returns and the error; the frame's bytes afterwards are
// checked by gpPopCheck.
func gpPopWant(f frame.Frame, d []byte) (Tag, error) {
	if f.Flags&frame.FlagVLAN != 0 {
		tp := f.TPID
		if tp == 0 {
			tp = TPID8021Q
		}
		return Tag{tp, TCI(f.TCI)}, nil
	}
	v := gpRead(d)
	switch {
	case !v.eth:
		return Tag{}, ErrTruncated
	case v.typ != TPID8021Q && v.typ != TPID8021AD:
		return Tag{}, ErrNotTagged
	case !v.tagged:
		return Tag{}, ErrTruncated
	case int(f.Head)+HeaderLen > 0xffff:
		return Tag{}, ErrHeadroomRange
	}
	return Tag{v.typ, v.tci}, nil
}

// gpPopCheck reports whether frame after (got: the start of its bytes) is frame before (d: the
// start of its bytes, with an in-band tag gopacket read) with that tag removed: the same MAC
// addresses, gopacket's inner EtherType next, and zero padding to 60 bytes where the tailroom
// allows.
func gpPopCheck(before, after frame.Frame, d, got []byte) bool {
	if before.Flags&frame.FlagVLAN != 0 {
		return after.Flags&frame.FlagVLAN == 0 && after.Len == before.Len && after.Off == before.Off
	}
	v := gpRead(d)
	n := int(before.Len) - HeaderLen
	want := n
	if n < frame.MinEthernetLen && int(before.Tail) >= frame.MinEthernetLen-n {
		want = frame.MinEthernetLen
	}
	if int(after.Len) != want || after.Off != before.Off+HeaderLen || string(got[:12]) != string(d[:12]) ||
		uint16(got[12])<<8|uint16(got[13]) != v.next {
		return false
	}
	for _, c := range got[min(n, len(got)):] {
		if c != 0 {
			return false
		}
	}
	return true
}

// cat joins byte slices into a new one.
func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}
