package vlan

import (
	"bytes"
	"errors"
	"testing"

	"github.com/wirespeed/wirespeed/frame"
)

// TestApplyHeadroom: with every headroom from 1 to 40 bytes and every egress interface (0, 1 and 2
// tags), Apply agrees with Encap (same error, same bytes, same descriptor), and writes no byte outside
// the frame's own buffer: the bytes of the neighbouring buffers are left as they were.
func TestApplyHeadroom(t *testing.T) {
	d := testDemux(t)
	dst, src := frame.MAC{2, 0xd, 0xd, 0xd, 0xd, 0xd}, frame.MAC{2, 5, 5, 5, 5, 5}
	for head := 1; head <= 40; head++ { // (0 asks the pool for its default)
		for _, tags := range [][]Tag{nil, {C(10)}, {S(100), C(200)}} {
			for _, out := range d.Interfaces() {
				p, err := frame.NewPool(&frame.PoolConfig{Buffers: 3, BufSize: 256, Headroom: head})
				if err != nil {
					t.Fatal(err)
				}
				pkt := gpFrame(t, tags, 30)
				mk := func() *frame.Batch {
					b := frame.NewBatch(3)
					p.Alloc(b, 1)
					b.Frames[0].Resize(len(pkt))
					copy(b.Bytes(0), pkt)
					if int(b.Frames[0].Head) != head {
						t.Fatalf("pool gave headroom %d, want %d", b.Frames[0].Head, head)
					}
					return b
				}
				arena := p.Mem()
				for i := range arena {
					arena[i] = 0xee // every byte, the frames' headroom too
				}
				w := d.NewWorker()
				c, r := mk(), mk()
				if w.ClassifyInPlace(0, c) == 0 || w.ClassifyInPlace(0, r) == 0 {
					c.Free()
					r.Free()
					continue
				}
				c.Frames[0].Out = out
				rw, err := d.Rewrite(out, dst, src, frame.TypeIPv4)
				if err != nil {
					t.Fatal(err)
				}
				_, errc := w.Encap(c, 0, dst, src)
				before := append([]byte(nil), r.Mem...) // c and r share the pool's arena
				errr := w.Apply(r, 0, &rw)
				if !errors.Is(errr, errc) {
					t.Fatalf("head %d tags %d out %d: Apply %v, Encap %v", head, len(tags), out, errr, errc)
				}
				f := &r.Frames[0]
				lo, hi := int(f.Off)-int(f.Head), int(f.Off)+int(f.Len)+int(f.Tail)
				if !bytes.Equal(before[:lo], r.Mem[:lo]) || !bytes.Equal(before[hi:], r.Mem[hi:]) {
					t.Fatalf("head %d tags %d out %d: Apply wrote outside the frame's buffer", head, len(tags), out)
				}
				if errr == nil {
					fr, fc := *f, c.Frames[0]
					fr.Off, fr.Buf, fc.Off, fc.Buf = 0, 0, 0, 0
					if fr != fc || !bytes.Equal(r.Bytes(0), c.Bytes(0)) {
						t.Fatalf("head %d tags %d out %d:\nencap: %+v % x\napply: %+v % x", head, len(tags), out, fc, c.Bytes(0), fr, r.Bytes(0))
					}
				} else if !bytes.Equal(before, r.Mem) {
					t.Fatalf("head %d: Apply failed (%v) but changed bytes", head, errr)
				}
				c.Free()
				r.Free()
				if p.InUse() != 0 {
					t.Fatal("leak")
				}
			}
		}
	}
}

func TestRewriteErrors(t *testing.T) {
	d := testDemux(t)
	if _, err := d.Rewrite(99, frame.MAC{}, frame.MAC{}, frame.TypeIPv4); !errors.Is(err, ErrRange) {
		t.Fatalf("unknown interface: %v", err)
	}
	w := d.NewWorker()
	b := load(t, newPool(t), gpFrame(t, nil, 30))
	defer b.Free()
	var zero Rewrite
	if err := w.Apply(b, 0, &zero); !errors.Is(err, ErrRange) {
		t.Fatalf("zero Rewrite: %v", err)
	}
	rw, _ := d.Rewrite(3, frame.MAC{1}, frame.MAC{2}, frame.TypeIPv4)
	if rw.Len() != 22 || rw.Port() != 0 || rw.Interface() != 3 {
		t.Fatalf("QinQ rewrite: len %d port %d iface %d", rw.Len(), rw.Port(), rw.Interface())
	}
	want := []byte{1, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0x88, 0xa8, 0, 100, 0x81, 0, 0, 200, 8, 0}
	if !bytes.Equal(rw.Header(), want) {
		t.Fatalf("header % x, want % x", rw.Header(), want)
	}
	b.Frames[0].L3 = uint16(b.Frames[0].Len) + 1
	if err := w.Apply(b, 0, &rw); !errors.Is(err, ErrTruncated) {
		t.Fatalf("L3 beyond the frame: %v", err)
	}
}

func TestApplyZeroAllocs(t *testing.T) {
	d := testDemux(t)
	w := d.NewWorker()
	b := load(t, newPool(t), gpFrame(t, []Tag{C(10)}, 30), gpFrame(t, []Tag{S(100), C(200)}, 30))
	defer b.Free()
	rws := make([]Rewrite, 0, 6)
	for _, id := range d.Interfaces() {
		rw, _ := d.Rewrite(id, frame.MAC{2}, frame.MAC{4}, frame.TypeIPv4)
		rws = append(rws, rw)
	}
	k := 0
	a := testing.AllocsPerRun(200, func() {
		for i := range b.Frames {
			if err := w.Apply(b, i, &rws[k%len(rws)]); err != nil {
				t.Fatal(err)
			}
			k++
		}
	})
	if a != 0 {
		t.Fatalf("%v allocs", a)
	}
}

// TestHeadroomRange: a QinQ frame whose headroom is near 65535 bytes, given an untagged header (8
// bytes shorter), would need a headroom the descriptor cannot hold: Apply and Encap refuse it with
// ErrHeadroomRange and leave the frame as it was (neither writes the header at the old offset nor
// wraps the headroom).
func TestHeadroomRange(t *testing.T) {
	d := NewDemux(2, Parser{})
	d.Add(Interface{ID: 0, Port: 1})
	d.Add(Interface{ID: 1, Port: 0, Outer: S(100), Inner: C(10)})
	rw, err := d.Rewrite(0, frame.MAC{2, 0, 0, 0, 0, 9}, frame.MAC{2, 0, 0, 0, 0, 1}, frame.TypeIPv4)
	if err != nil {
		t.Fatal(err)
	}
	w := d.NewWorker()
	for _, api := range []string{"Apply", "Encap"} {
		const head = 0xfffa
		mem := make([]byte, head+200)
		b := &frame.Batch{Mem: mem, Frames: []frame.Frame{{Off: head, Len: 110, Head: head, Tail: 90, L3: 22}}}
		hdr := mem[head:]
		copy(hdr[12:], []byte{0x88, 0xa8, 0x00, 0x64, 0x81, 0x00, 0x00, 0x0a, 0x08, 0x00, 0x45})
		before, orig := b.Frames[0], append([]byte(nil), mem...)
		switch api {
		case "Apply":
			err = w.Apply(b, 0, &rw)
		case "Encap":
			_, err = w.Encap(b, 0, frame.MAC{2, 0, 0, 0, 0, 9}, frame.MAC{2, 0, 0, 0, 0, 1})
		}
		if !errors.Is(err, ErrHeadroomRange) {
			t.Errorf("%s: %v, want ErrHeadroomRange", api, err)
		}
		if b.Frames[0] != before || !bytes.Equal(mem, orig) {
			t.Errorf("%s changed the frame: %+v", api, b.Frames[0])
		}
	}
}
