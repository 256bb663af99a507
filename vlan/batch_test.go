package vlan

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/wirespeed/wirespeed/frame"
)

// randomBatch builds n frames from seed: untagged, one or two tags (standard or 0x9100), out-of-band
// tags, runts, frames ending inside a tag, frames without headroom. Two identical copies are
// returned (two pools), so per-frame and batch functions can run side by side.
func randomBatches(t testing.TB, seed uint64, n int) (*frame.Batch, *frame.Batch, *frame.Pool, *frame.Pool) {
	r := rand.New(rand.NewPCG(seed, seed^0x9e37))
	p1, _ := frame.NewPool(&frame.PoolConfig{Buffers: n})
	p2, _ := frame.NewPool(&frame.PoolConfig{Buffers: n})
	a, b := frame.NewBatch(n), frame.NewBatch(n)
	p1.Alloc(a, n)
	p2.Alloc(b, n)
	tpids := []uint16{TPID8021Q, TPID8021AD, TPID9100, frame.TypeIPv4}
	for i := 0; i < n; i++ {
		var tags []Tag
		for j := r.IntN(3); j > 0; j-- {
			tags = append(tags, Tag{tpids[r.IntN(3)], TCI(r.Uint32())})
		}
		pkt := gpFrame(t, nil, r.IntN(60))
		if len(tags) > 0 {
			hdr := append([]byte(nil), pkt[:12]...)
			for _, tg := range tags {
				hdr = append(hdr, byte(tg.TPID>>8), byte(tg.TPID), byte(tg.TCI>>8), byte(tg.TCI))
			}
			pkt = append(hdr, pkt[12:]...)
		}
		if r.IntN(8) == 0 {
			pkt = pkt[:r.IntN(len(pkt)+1)]
		}
		noRoom := r.IntN(16) == 0
		for _, x := range []*frame.Batch{a, b} {
			f := &x.Frames[i]
			f.Resize(len(pkt))
			copy(x.Bytes(i), pkt)
			if noRoom { // no headroom left
				f.Head = 2
			}
		}
		if r.IntN(6) == 0 {
			tp, tci := tpids[r.IntN(2)], uint16(r.Uint32())
			for _, x := range []*frame.Batch{a, b} {
				x.Frames[i].Flags |= frame.FlagVLAN
				x.Frames[i].TPID, x.Frames[i].TCI = tp, tci
			}
		}
		_ = tags
		r.Uint32()
	}
	return a, b, p1, p2
}

func sameFrames(t *testing.T, what string, a, b *frame.Batch) {
	t.Helper()
	if a.Len() != b.Len() {
		t.Fatalf("%s: %d frames vs %d", what, a.Len(), b.Len())
	}
	for i := range a.Frames {
		fa, fb := a.Frames[i], b.Frames[i]
		fa.Off, fa.Buf, fb.Off, fb.Buf = 0, 0, 0, 0 // different pools
		if fa != fb || !bytes.Equal(a.Bytes(i), b.Bytes(i)) {
			t.Fatalf("%s: frame %d differs:\n %+v % x\n %+v % x", what, i, a.Frames[i], a.Bytes(i), b.Frames[i], b.Bytes(i))
		}
	}
}

func TestBatchEqualsPerFrame(t *testing.T) {
	p9100, _ := NewParser(TPID9100)
	for seed := uint64(0); seed < 200; seed++ {
		for _, p := range []*Parser{&std, &p9100} {
			// Parse
			a, b, _, _ := randomBatches(t, seed, 48)
			hs := make([]Header, a.Len())
			okb := p.ParseBatch(b, hs)
			oka := 0
			for i := range a.Frames {
				var h Header
				if p.Parse(a.Bytes(i), &h) == nil {
					oka++
				}
				if h != hs[i] {
					t.Fatalf("seed %d frame %d: Parse %+v, ParseBatch %+v", seed, i, h, hs[i])
				}
			}
			if oka != okb {
				t.Fatalf("parsed %d vs %d", oka, okb)
			}
			// Pop
			popa := 0
			for i := range a.Frames {
				if _, err := p.Pop(a, i); err == nil {
					popa++
				}
			}
			if popb := p.PopBatch(b); popa != popb {
				t.Fatalf("seed %d: popped %d vs %d", seed, popa, popb)
			}
			sameFrames(t, "pop", a, b)
			// SetTCI
			na := 0
			for i := range a.Frames {
				if p.SetTCI(a, i, 0x1234) == nil {
					na++
				}
			}
			if nb := p.SetTCIBatch(b, 0x1234); na != nb {
				t.Fatalf("seed %d: SetTCI %d vs %d", seed, na, nb)
			}
			sameFrames(t, "settci", a, b)
		}
		// Push (standard parser only: Push has no parser)
		a, b, p1, p2 := randomBatches(t, seed, 48)
		keep := a.Frames[:0]
		var drop []frame.Frame
		for i := range a.Frames {
			if Push(a, i, S(7)) == nil {
				keep = append(keep, a.Frames[i])
			} else {
				drop = append(drop, a.Frames[i])
			}
		}
		p1.Release(drop)
		a.Frames = keep
		if d := PushBatch(b, S(7)); d != len(drop) {
			t.Fatalf("seed %d: PushBatch dropped %d, per-frame %d", seed, d, len(drop))
		}
		sameFrames(t, "push", a, b)
		a.Free()
		b.Free()
		if p1.InUse() != 0 || p2.InUse() != 0 {
			t.Fatal("leak")
		}
	}
}

func TestBatchZeroAllocs(t *testing.T) {
	a, _, _, _ := randomBatches(t, 1, 64)
	hs := make([]Header, 64)
	n := testing.AllocsPerRun(100, func() {
		ParseBatch(a, hs)
		SetTCIBatch(a, 5)
		PushBatch(a, C(5))
		PopBatch(a)
	})
	if n != 0 {
		t.Fatalf("%v allocs", n)
	}
}
