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
		if len(b) > fuzzMaxFrame {
			b = b[:fuzzMaxFrame]
		}
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

// fuzzMaxFrame is the longest frame the per-frame fuzz targets interpret (a longer input is cut,
// not skipped: skipped inputs would still be minimised, at length, for nothing). Tags sit in
// the first 22 bytes and padding ends at 60.
const fuzzMaxFrame = 256

// FuzzPushPop holds the per-frame tag functions to gopacket and to the bytes, on any frame and any
// tag (tpid, tci): Outer and SetTCI find a tag exactly where gopacket decodes a whole 802.1Q or
// 802.1ad tag, and SetTCI writes the TCI gopacket then reads (ErrNotTagged, nothing written,
// elsewhere); Push writes exactly the tag after the MAC addresses, which gopacket reads back for
// the standard TPIDs; Pop returns it, with the TCI SetTCI gave it, and gives back the frame byte
// for byte, zero-padded to 60 bytes (a non-standard TPID: ErrNotTagged; a tag the frame ends
// inside: ErrTruncated). An out-of-band tag is read, rewritten and popped without a byte changing.
func FuzzPushPop(f *testing.F) {
	f.Add(gpFrame(f, nil, 30), uint16(0x8100), uint16(10))
	f.Add(gpFrame(f, []Tag{C(5)}, 30), uint16(0x88a8), uint16(0xffff))
	f.Add(gpFrame(f, []Tag{S(7), C(5)}, 0), uint16(0x9100), uint16(0x2064))
	f.Add([]byte{1, 2, 3}, uint16(0x8100), uint16(1))
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0x81}, uint16(0x88a8), uint16(1))
	mem := make([]byte, 2048)
	f.Fuzz(func(t *testing.T, pkt []byte, tpid, tci uint16) {
		if len(pkt) > fuzzMaxFrame {
			pkt = pkt[:fuzzMaxFrame]
		}
		isStd := func(tp uint16) bool { return tp == TPID8021Q || tp == TPID8021AD }
		tci2 := TCI(tci ^ 0xa5a5) // the TCI SetTCI writes
		reset := func() *frame.Batch {
			clear(mem)
			copy(mem[64:], pkt)
			return &frame.Batch{Frames: []frame.Frame{{Off: 64, Len: uint16(len(pkt)), Head: 64, Tail: uint16(len(mem) - 64 - len(pkt))}}, Mem: mem}
		}
		b := reset()

		// The frame as it comes.
		v := gpRead(pkt)
		if got, ok := std.Outer(b, 0); ok != v.tagged || ok && got != (Tag{v.typ, v.tci}) {
			t.Fatalf("Outer %v %v, gopacket %+v", got, ok, v)
		}
		err := SetTCI(b, 0, tci2)
		want := append([]byte(nil), pkt...)
		if v.tagged {
			want[14], want[15] = byte(tci2>>8), byte(tci2)
		}
		if (err == nil) != v.tagged || err != nil && err != ErrNotTagged || !bytes.Equal(b.Bytes(0), want) {
			t.Fatalf("SetTCI %v on a frame gopacket reads as %+v:\n got % x\nwant % x", err, v, b.Bytes(0), want)
		}
		if v2 := gpRead(b.Bytes(0)); v.tagged && (v2.tci != tci2 || v2.next != v.next) {
			t.Fatalf("after SetTCI gopacket reads %+v", v2)
		}

		// Push, SetTCI and Pop of the tag (tpid, tci).
		b = reset()
		err = Push(b, 0, Tag{tpid, TCI(tci)})
		if len(pkt) < 12 {
			if err != ErrTruncated || !bytes.Equal(b.Bytes(0), pkt) {
				t.Fatalf("Push on %d bytes: %v", len(pkt), err)
			}
			return
		}
		want = cat(pkt[:12], []byte{byte(tpid >> 8), byte(tpid), byte(tci >> 8), byte(tci)}, pkt[12:])
		if err != nil || !bytes.Equal(b.Bytes(0), want) {
			t.Fatalf("Push: %v\n got % x\nwant % x", err, b.Bytes(0), want)
		}
		whole := isStd(tpid) && len(want) >= 18 // a whole tag of a standard TPID
		if v := gpRead(b.Bytes(0)); whole && (!v.tagged || v.typ != tpid || v.tci != TCI(tci) || len(pkt) >= 14 && v.next != uint16(pkt[12])<<8|uint16(pkt[13])) {
			t.Fatalf("after Push gopacket reads %+v", v)
		}
		err = SetTCI(b, 0, tci2)
		if whole {
			want[14], want[15] = byte(tci2>>8), byte(tci2)
		}
		if (err == nil) != whole || err != nil && err != ErrNotTagged || !bytes.Equal(b.Bytes(0), want) {
			t.Fatalf("SetTCI of the pushed tag: %v (whole standard tag: %v)", err, whole)
		}
		if v := gpRead(b.Bytes(0)); whole && v.tci != tci2 {
			t.Fatalf("after SetTCI gopacket reads %+v", v)
		}
		got, err := Pop(b, 0)
		switch {
		case !isStd(tpid):
			if err != ErrNotTagged || !bytes.Equal(b.Bytes(0), want) {
				t.Fatalf("Pop of TPID %#x: %v %v", tpid, got, err)
			}
		case !whole:
			if err != ErrTruncated || !bytes.Equal(b.Bytes(0), want) {
				t.Fatalf("Pop of a %d-byte frame after push: %v %v", len(want), got, err)
			}
		default:
			padded := cat(pkt, make([]byte, max(0, frame.MinEthernetLen-len(pkt))))
			if err != nil || got != (Tag{tpid, tci2}) || !bytes.Equal(b.Bytes(0), padded) {
				t.Fatalf("Pop = %v %v\n got % x\nwant % x", got, err, b.Bytes(0), padded)
			}
		}

		// The same tag out of band.
		b = reset()
		fr := &b.Frames[0]
		fr.Flags |= frame.FlagVLAN
		fr.TPID, fr.TCI = tpid, tci
		oob := Tag{tpid, TCI(tci)}
		if tpid == 0 {
			oob.TPID = TPID8021Q // older kernels report no TPID
		}
		if got, ok := std.Outer(b, 0); !ok || got != oob {
			t.Fatalf("Outer of an out-of-band tag: %v %v", got, ok)
		}
		if err := SetTCI(b, 0, tci2); err != nil || fr.TCI != uint16(tci2) {
			t.Fatalf("SetTCI of an out-of-band tag: %v, TCI %#x", err, fr.TCI)
		}
		oob.TCI = tci2
		if got, err := Pop(b, 0); err != nil || got != oob || fr.Flags&frame.FlagVLAN != 0 || !bytes.Equal(b.Bytes(0), pkt) {
			t.Fatalf("Pop of an out-of-band tag: %v %v, flags %v", got, err, fr.Flags)
		}
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
		if len(pkt) > fuzzMaxFrame {
			pkt = pkt[:fuzzMaxFrame]
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
