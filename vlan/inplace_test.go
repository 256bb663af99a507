package vlan

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/wirespeed/wirespeed/frame"
)

// inPlaceAgrees runs the same frame through Classify+Egress (pop and push: byte moves) and through
// ClassifyInPlace+Encap (header replaced), and checks they agree on the interface, on drops, and on
// every output byte, for every egress interface.
func inPlaceAgrees(t *testing.T, d *Demux, port uint16, pkt []byte, oob *Tag) {
	t.Helper()
	p, _ := frame.NewPool(&frame.PoolConfig{Buffers: 4})
	mk := func() *frame.Batch {
		b := frame.NewBatch(1)
		p.Alloc(b, 1)
		b.Frames[0].Resize(len(pkt))
		copy(b.Bytes(0), pkt)
		if oob != nil {
			f := &b.Frames[0]
			f.Flags |= frame.FlagVLAN
			f.TPID, f.TCI = oob.TPID, uint16(oob.TCI)
		}
		return b
	}
	w1, w2 := d.NewWorker(), d.NewWorker()
	dst, src := frame.MAC{2, 0xd, 0xd, 0xd, 0xd, 0xd}, frame.MAC{2, 5, 5, 5, 5, 5}
	for _, out := range d.Interfaces() {
		a, c := mk(), mk()
		ka, kc := w1.Classify(port, a), w2.ClassifyInPlace(port, c)
		if ka != kc {
			t.Fatalf("Classify kept %d, ClassifyInPlace %d (% x)", ka, kc, pkt)
		}
		if ka == 0 {
			if w1.Drops() != w2.Drops() {
				t.Fatalf("drop reasons differ: %+v vs %+v", w1.Drops(), w2.Drops())
			}
			return
		}
		if a.Frames[0].Port != c.Frames[0].Port {
			t.Fatalf("iface %d vs %d", a.Frames[0].Port, c.Frames[0].Port)
		}
		if len(a.Bytes(0)) < frame.EtherLen {
			a.Free()
			c.Free()
			continue
		}
		e := frame.Ether(a.Bytes(0))
		e.SetDst(dst)
		e.SetSrc(src)
		a.Frames[0].Out, c.Frames[0].Out = out, out
		// The third way: the same header as a prebuilt Rewrite (with the EtherType Encap keeps).
		r := mk()
		w2.ClassifyInPlace(port, r)
		l3 := int(r.Frames[0].L3)
		rw, err := d.Rewrite(out, dst, src, binary.BigEndian.Uint16(r.Bytes(0)[l3-2:]))
		if err != nil {
			t.Fatal(err)
		}
		pa, erra := w1.Egress(a, 0)
		pc, errc := w2.Encap(c, 0, dst, src)
		if (erra == nil) != (errc == nil) || pa != pc {
			t.Fatalf("egress %d: port %d/%v vs %d/%v", out, pa, erra, pc, errc)
		}
		if erra == nil && !samePadded(a.Bytes(0), c.Bytes(0)) {
			t.Fatalf("egress %d:\n push: % x\nencap: % x", out, a.Bytes(0), c.Bytes(0))
		}
		errr := w2.Apply(r, 0, &rw)
		if (errr == nil) != (errc == nil) || rw.Port() != pc && errc == nil {
			t.Fatalf("egress %d: Apply port %d/%v, Encap %d/%v", out, rw.Port(), errr, pc, errc)
		}
		fr, fc := r.Frames[0], c.Frames[0]
		fr.Off, fr.Buf, fc.Off, fc.Buf = 0, 0, 0, 0 // other buffers; Head tells where the frame starts in each
		if errr == nil && (fr != fc || !bytes.Equal(r.Bytes(0), c.Bytes(0))) {
			t.Fatalf("egress %d:\nencap: %+v % x\napply: %+v % x", out, c.Frames[0], c.Bytes(0), r.Frames[0], r.Bytes(0))
		}
		a.Free()
		c.Free()
		r.Free()
	}
	if p.InUse() != 0 {
		t.Fatal("leak")
	}
}

func TestClassifyInPlaceAgrees(t *testing.T) {
	d := testDemux(t)
	cases := []struct {
		port uint16
		pkt  []byte
		oob  *Tag
	}{
		{0, gpFrame(t, nil, 30), nil},
		{0, gpFrame(t, []Tag{C(10)}, 30), nil},
		{1, gpFrame(t, []Tag{C(10)}, 30), nil},
		{0, gpFrame(t, nil, 30), &Tag{TPID8021Q, NewTCI(3, false, 10)}},
		{0, gpFrame(t, []Tag{S(100)}, 30), nil},
		{0, gpFrame(t, []Tag{S(100), C(200)}, 30), nil},
		{0, gpFrame(t, []Tag{C(200)}, 30), &Tag{TPID8021AD, 100}},
		{0, gpFrame(t, []Tag{S(100), C(201)}, 30), nil},
		{0, gpFrame(t, []Tag{S(300), C(1)}, 30), nil},
		{0, gpFrame(t, []Tag{S(300), C(2)}, 30), nil},
		{0, gpFrame(t, []Tag{{TPID8021Q, NewTCI(5, false, 0)}}, 30), nil},
		{0, gpFrame(t, []Tag{C(0), C(10)}, 30), nil},
		{0, gpFrame(t, []Tag{C(0), C(0)}, 30), nil},
		{0, gpFrame(t, []Tag{C(4095)}, 30), nil},
		{0, gpFrame(t, []Tag{C(11)}, 30), nil},
		{1, gpFrame(t, nil, 30), nil},
		{0, gpFrame(t, []Tag{C(10)}, 0), nil}, // 64-byte frame: untagged egress pads to 60
		{0, make([]byte, 13), nil},
		{0, gpFrame(t, []Tag{C(10)}, 30)[:17], nil},
	}
	for _, c := range cases {
		inPlaceAgrees(t, d, c.port, c.pkt, c.oob)
	}
}

func FuzzClassifyInPlace(f *testing.F) {
	f.Add(gpFrame(f, []Tag{S(100), C(200)}, 0), false, uint16(0), uint16(0))
	f.Add(gpFrame(f, []Tag{C(0), C(10)}, 0), true, uint16(0x88a8), uint16(100))
	f.Add(gpFrame(f, []Tag{C(0), C(0), C(0)}, 0), true, uint16(0x8100), uint16(0))
	d := testDemux(f)
	f.Fuzz(func(t *testing.T, pkt []byte, oob bool, tpid, tci uint16) {
		if len(pkt) > fuzzMaxFrame {
			pkt = pkt[:fuzzMaxFrame]
		}
		var tag *Tag
		if oob {
			tag = &Tag{tpid, TCI(tci)}
		}
		inPlaceAgrees(t, d, 0, pkt, tag)
	})
}

func TestEncapZeroAllocs(t *testing.T) {
	p := newPool(t)
	d := testDemux(t)
	w := d.NewWorker()
	b := load(t, p, gpFrame(t, []Tag{C(10)}, 30), gpFrame(t, []Tag{S(100), C(200)}, 30))
	outs := []uint16{3, 1}
	a := testing.AllocsPerRun(200, func() {
		w.ClassifyInPlace(0, b)
		for i := range b.Frames {
			b.Frames[i].Out = outs[i]
			w.Encap(b, i, frame.MAC{}, frame.MAC{})
		}
		outs[0], outs[1] = outs[1], outs[0]
	})
	if a != 0 {
		t.Fatalf("%v allocs", a)
	}
}

// samePadded: equal bytes, except that one may carry more zero padding (pop pads to 60 before a push
// adds 4; Encap pads only the final frame, and pads an untagged runt that Egress leaves alone).
func samePadded(x, y []byte) bool {
	if len(x) > len(y) {
		x, y = y, x
	}
	if !bytes.Equal(x, y[:len(x)]) {
		return false
	}
	for _, c := range y[len(x):] {
		if c != 0 {
			return false
		}
	}
	return true
}

func TestClassifyPerFramePort(t *testing.T) {
	p := newPool(t)
	d := testDemux(t)
	w := d.NewWorker()
	b := load(t, p, gpFrame(t, []Tag{C(10)}, 30), gpFrame(t, []Tag{C(10)}, 30), gpFrame(t, nil, 30), gpFrame(t, nil, 30))
	b.Frames[0].Port, b.Frames[1].Port, b.Frames[2].Port, b.Frames[3].Port = 0, 1, 0, 7
	if k := w.ClassifyInPlace(PerFramePort, b); k != 3 {
		t.Fatalf("kept %d", k)
	}
	if b.Frames[0].Port != 1 || b.Frames[1].Port != 4 || b.Frames[2].Port != 0 {
		t.Fatalf("ifaces %d %d %d", b.Frames[0].Port, b.Frames[1].Port, b.Frames[2].Port)
	}
	b.Free()
	if p.InUse() != 0 || w.Drops().UnknownVLAN != 1 {
		t.Fatal("port 7 frame not dropped and counted")
	}
}
