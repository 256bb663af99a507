package vlan

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/wirespeed/wirespeed/frame"
)

// FuzzParse: never panics; what it reports agrees with gopacket's Ethernet and Dot1Q decoders.
func FuzzParse(f *testing.F) {
	f.Add(gpFrame(f, nil, 0))
	f.Add(gpFrame(f, []Tag{C(10)}, 0))
	f.Add(gpFrame(f, []Tag{S(1), C(2)}, 0))
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0x81, 0, 0xff, 0xff, 0x88})
	f.Fuzz(func(t *testing.T, b []byte) {
		var h Header
		err := Parse(b, &h)
		if err != nil {
			return
		}
		if int(h.Len) != frame.EtherLen+HeaderLen*int(h.N) || int(h.Len) > len(b) {
			t.Fatalf("Len %d with %d tags in %d bytes", h.Len, h.N, len(b))
		}
		var eth layers.Ethernet
		if eth.DecodeFromBytes(b, gopacket.NilDecodeFeedback) != nil {
			t.Fatal("gopacket rejects an Ethernet header we accept")
		}
		rest := eth.Payload
		typ := uint16(eth.EthernetType)
		if eth.Length != 0 { // 802.3 length field: gopacket treats the type as a length; nothing to compare
			return
		}
		tags := [2]Tag{h.Outer, h.Inner}
		for i := 0; i < int(h.N); i++ {
			if typ != tags[i].TPID {
				t.Fatalf("tag %d TPID %#x, gopacket %#x", i, tags[i].TPID, typ)
			}
			var q layers.Dot1Q
			if err := q.DecodeFromBytes(rest, gopacket.NilDecodeFeedback); err != nil {
				t.Fatalf("gopacket Dot1Q: %v", err)
			}
			if q.VLANIdentifier != tags[i].TCI.VID() || q.Priority != tags[i].TCI.PCP() || q.DropEligible != tags[i].TCI.DEI() {
				t.Fatalf("tag %d: %v vs gopacket %+v", i, tags[i], q)
			}
			typ, rest = uint16(q.Type), q.Payload
		}
		if typ != h.EtherType {
			t.Fatalf("EtherType %#x, gopacket %#x", h.EtherType, typ)
		}
	})
}

// FuzzPushPop: pushing a tag then popping it gives back the frame byte for byte (when the frame
// needs no padding) and the tag; nothing panics on any input.
func FuzzPushPop(f *testing.F) {
	f.Add(gpFrame(f, nil, 30), uint16(0x8100), uint16(10))
	f.Add(gpFrame(f, []Tag{C(5)}, 30), uint16(0x88a8), uint16(0xffff))
	f.Add([]byte{1, 2, 3}, uint16(0x8100), uint16(1))
	f.Fuzz(func(t *testing.T, pkt []byte, tpid, tci uint16) {
		if len(pkt) > 1500 {
			return
		}
		mem := make([]byte, 2048)
		copy(mem[64:], pkt)
		b := &frame.Batch{Frames: []frame.Frame{{Off: 64, Len: uint16(len(pkt)), Head: 64, Tail: uint16(2048 - 64 - len(pkt))}}, Mem: mem}
		var h Header
		Parse(pkt, &h)
		std.Outer(b, 0)
		SetTCI(b, 0, TCI(tci))
		copy(mem[64:], pkt)
		err := Push(b, 0, Tag{TPID8021AD, TCI(tci)})
		if len(pkt) < 12 {
			if err != ErrTruncated {
				t.Fatalf("Push on %d bytes: %v", len(pkt), err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		got, err := Pop(b, 0)
		if len(pkt) < frame.EtherLen {
			if err != ErrTruncated {
				t.Fatalf("Pop of a %d-byte frame after push: %v", len(pkt), err)
			}
			return
		}
		if err != nil || got != (Tag{TPID8021AD, TCI(tci)}) {
			t.Fatalf("Pop = %v %v", got, err)
		}
		out := b.Bytes(0)
		if !bytes.Equal(out[:len(pkt)], pkt) {
			t.Fatal("round trip changed the frame")
		}
		if len(out) != max(len(pkt), frame.MinEthernetLen) {
			t.Fatalf("length %d after round trip of %d", len(out), len(pkt))
		}
		_ = tpid
	})
}

// FuzzClassify: any bytes, any OOB tag: no panic, and every frame is kept or counted as dropped.
func FuzzClassify(f *testing.F) {
	f.Add(gpFrame(f, []Tag{S(100), C(200)}, 0), false, uint16(0), uint16(0))
	f.Add(gpFrame(f, []Tag{C(0), C(0)}, 0), true, uint16(0x88a8), uint16(100))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x88, 0xa8, 0, 100, 0x81, 0}, false, uint16(0), uint16(0))
	d := testDemux(f)
	w := d.NewWorker()
	f.Fuzz(func(t *testing.T, pkt []byte, oob bool, tpid, tci uint16) {
		if len(pkt) > 1500 {
			return
		}
		before := w.Drops()
		p, _ := frame.NewPool(&frame.PoolConfig{Buffers: 2})
		b := frame.NewBatch(2)
		p.Alloc(b, 2)
		for i := range b.Frames {
			b.Frames[i].Resize(len(pkt))
			copy(b.Bytes(i), pkt)
			if oob {
				b.Frames[i].Flags |= frame.FlagVLAN
				b.Frames[i].TPID, b.Frames[i].TCI = tpid, tci
			}
		}
		k := w.Classify(0, b)
		dr := w.Drops()
		if uint64(k)+dr.UnknownVLAN+dr.Malformed-before.UnknownVLAN-before.Malformed != 2 {
			t.Fatalf("kept %d, drops %+v", k, dr)
		}
		for i := range b.Frames {
			b.Frames[i].Out = uint16(binary.BigEndian.Uint16(append(pkt, 0, 0)[:2]) % 8)
			w.Egress(b, i)
		}
		b.Free()
		if p.InUse() != 0 {
			t.Fatal("frames lost")
		}
	})
}
