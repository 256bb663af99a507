package frame

import (
	"bytes"
	"errors"
	"net"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// TestReinsertVLAN: a frame whose outer tag is out of band gets back exactly the bytes gopacket
// serialises for the tagged frame (802.1Q and 802.1ad outer tags, the TPID of 0 meaning 802.1Q,
// over an untagged and an already tagged inner frame), with the flag and fields cleared and the
// payload unmoved; frames without the flag, without the headroom or too short are left unchanged.
func TestReinsertVLAN(t *testing.T) {
	ser := func(ls ...gopacket.SerializableLayer) []byte {
		buf := gopacket.NewSerializeBuffer()
		if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{}, ls...); err != nil {
			t.Fatal(err)
		}
		return append([]byte(nil), buf.Bytes()...)
	}
	src, dst := net.HardwareAddr{2, 0, 0, 0, 0, 1}, net.HardwareAddr{2, 0, 0, 0, 0, 2}
	payload := gopacket.Payload(bytes.Repeat([]byte{0xa5}, 46))
	for _, c := range []struct {
		name      string
		tpid      uint16 // Frame.TPID (0: unreported)
		outer     layers.EthernetType
		innerVID  uint16 // 0: untagged inner frame
		tci, prio uint16
	}{
		{"8021q", 0x8100, layers.EthernetTypeDot1Q, 0, 100, 0},
		{"tpid0", 0, layers.EthernetTypeDot1Q, 0, 4094, 5},
		{"8021ad-over-q", 0x88a8, layers.EthernetTypeQinQ, 200, 10, 7},
	} {
		var inner []byte
		var want []byte
		tci := c.prio<<13 | c.tci
		if c.innerVID == 0 {
			inner = ser(&layers.Ethernet{SrcMAC: src, DstMAC: dst, EthernetType: layers.EthernetTypeIPv4}, payload)
			want = ser(&layers.Ethernet{SrcMAC: src, DstMAC: dst, EthernetType: c.outer},
				&layers.Dot1Q{Priority: uint8(c.prio), VLANIdentifier: c.tci, Type: layers.EthernetTypeIPv4}, payload)
		} else {
			inner = ser(&layers.Ethernet{SrcMAC: src, DstMAC: dst, EthernetType: layers.EthernetTypeDot1Q},
				&layers.Dot1Q{VLANIdentifier: c.innerVID, Type: layers.EthernetTypeIPv4}, payload)
			want = ser(&layers.Ethernet{SrcMAC: src, DstMAC: dst, EthernetType: c.outer},
				&layers.Dot1Q{Priority: uint8(c.prio), VLANIdentifier: c.tci, Type: layers.EthernetTypeDot1Q},
				&layers.Dot1Q{VLANIdentifier: c.innerVID, Type: layers.EthernetTypeIPv4}, payload)
		}
		const head = 16
		mem := make([]byte, head+len(inner)+8)
		copy(mem[head:], inner)
		b := &Batch{Mem: mem, Frames: []Frame{{Off: head, Len: uint16(len(inner)), Head: head, Tail: 8,
			Flags: FlagVLAN | FlagRxCsumOK, TPID: c.tpid, TCI: tci, Port: 3}}}
		if err := b.ReinsertVLAN(0); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		f := b.Frames[0]
		if got := f.Data(mem); !bytes.Equal(got, want) {
			t.Errorf("%s: got\n% x\nwant\n% x", c.name, got, want)
		}
		if f.Flags != FlagRxCsumOK || f.TPID != 0 || f.TCI != 0 || f.Port != 3 || f.Head != head-VLANLen || f.Tail != 8 {
			t.Errorf("%s: descriptor after: %+v", c.name, f)
		}
		if !bytes.Equal(mem[head+12:head+len(inner)], inner[12:]) {
			t.Errorf("%s: the bytes after the addresses moved", c.name)
		}
	}

	// Left unchanged: no flag, no headroom, shorter than the addresses.
	for _, c := range []struct {
		name string
		f    Frame
		err  error
	}{
		{"no flag", Frame{Off: 8, Len: 60, Head: 8}, nil},
		{"no headroom", Frame{Off: 3, Len: 60, Head: 3, Flags: FlagVLAN, TCI: 5}, ErrNoHeadroom},
		{"truncated", Frame{Off: 8, Len: 11, Head: 8, Flags: FlagVLAN, TCI: 5}, ErrTruncated},
	} {
		mem := bytes.Repeat([]byte{0x5a}, 80)
		b := &Batch{Mem: mem, Frames: []Frame{c.f}}
		if err := b.ReinsertVLAN(0); !errors.Is(err, c.err) {
			t.Errorf("%s: err %v, want %v", c.name, err, c.err)
		}
		if b.Frames[0] != c.f || !bytes.Equal(mem, bytes.Repeat([]byte{0x5a}, 80)) {
			t.Errorf("%s: changed: %+v", c.name, b.Frames[0])
		}
	}

	// No allocation, and the work is done each time.
	mem := make([]byte, 128)
	b := &Batch{Mem: mem, Frames: make([]Frame, 1)}
	n := 0
	if a := testing.AllocsPerRun(100, func() {
		b.Frames[0] = Frame{Off: 64, Len: 60, Head: 64, Flags: FlagVLAN, TCI: 7}
		if b.ReinsertVLAN(0) == nil && b.Frames[0].Len == 64 {
			n++
		}
	}); a != 0 || n == 0 {
		t.Errorf("ReinsertVLAN: %v allocs, %d reinserted", a, n)
	}
}
