package afpacket

import (
	"errors"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/frame"
)

// TestFrameRingConfig checks FrameRing's validation, defaults and layout.
func TestFrameRingConfig(t *testing.T) {
	c, err := (&Config{FrameRing: &FrameRing{}}).withDefaults(4096)
	if err != nil || c.FrameRing.FrameSize != DefaultFrameRingSize || c.FrameRing.Frames != DefaultFrameRingBytes/DefaultFrameRingSize {
		t.Fatalf("defaults: %+v, %v", c.FrameRing, err)
	}
	if DefaultFrameRingSize-FrameSlotOverhead < 1518 {
		t.Fatalf("a default slot holds %d bytes of frame, less than 1518", DefaultFrameRingSize-FrameSlotOverhead)
	}
	for _, bad := range []Config{
		{FrameRing: &FrameRing{Frames: -1}},
		{FrameRing: &FrameRing{Frames: 1<<20 + 1}},
		{FrameRing: &FrameRing{FrameSize: 100}},
		{FrameRing: &FrameRing{FrameSize: 2050}},
		{FrameRing: &FrameRing{FrameSize: 1 << 18}},
		{FrameRing: &FrameRing{Frames: 1 << 20, FrameSize: 1 << 17}}, // 128 GiB
		{FrameRing: &FrameRing{FrameSize: 256}, Headroom: 200},
		{FrameRing: &FrameRing{}, TxRing: &TxRing{}},
		{FrameRing: &FrameRing{FrameSize: 8192}, Headroom: 4097},
	} {
		if _, err := bad.withDefaults(4096); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v (%+v): %v, want ErrConfig", bad, *bad.FrameRing, err)
		}
	}
	// The TPACKET_V3 fields do not apply: a Headroom too large for a V3 FrameSize fits a larger slot.
	if c, err := (&Config{FrameRing: &FrameRing{FrameSize: 4096}, Headroom: 3000, BlockSize: 1}).withDefaults(4096); err != nil || c.FrameRing.Frames != DefaultFrameRingBytes/4096 {
		t.Errorf("Headroom 3000 in 4096-byte slots: %+v, %v", c.FrameRing, err)
	}
	for _, f := range []FrameRing{{1, 2048}, {8192, 2048}, {1000, 2048}, {64, 9088}, {3, 4096}, {100, 1616}, {7, 1 << 17}, {5, 144}} {
		g := frameGeometry(f, 4096)
		if g.blockSize%4096 != 0 || g.blockSize&(g.blockSize-1) != 0 || g.perBlock != g.blockSize/f.FrameSize ||
			g.slots != g.blocks*g.perBlock || g.slots < f.Frames || g.slots-f.Frames >= g.perBlock {
			t.Errorf("%+v: %+v", f, g)
		}
		if waste := g.blockSize - g.perBlock*f.FrameSize; g.blockSize < 128<<10 && waste > g.blockSize/16 {
			t.Errorf("%+v: %+v wastes %d bytes a block", f, g, waste)
		}
	}
}

// TestFrameRingOwnership holds frames of a small FrameRing and releases them out of order: a slot goes
// back to the kernel exactly when its frame is released; a slot the consumer holds stops the kernel
// (it drops and counts what arrives) and Recv (which does not hand it out again); releasing it lets
// reception continue; PollFD says nothing while the slot before Recv's position is held; releasing
// twice panics.
func TestFrameRingOwnership(t *testing.T) {
	l := newLink(t)
	a := openIn(t, l.nsA, l.ifA, nil)
	const slots = 8
	p := openIn(t, l.nsB, l.ifB, &Config{FrameRing: &FrameRing{Frames: slots}})
	if len(p.slotOff) != slots {
		t.Fatalf("%d slots, want %d", len(p.slotOff), slots)
	}
	pool, _ := frame.NewPool(nil)
	seq := uint32(0)
	send := func(n int) {
		t.Helper()
		var tx []txFrame
		for range n {
			seq++
			tx = append(tx, txFrame{data: testFrame(seq, 100)})
		}
		if k := sendFrames(t, a, pool, tx); k != n {
			t.Fatalf("sent %d of %d", k, n)
		}
	}
	flatten := func(held []*frame.Batch) []frame.Frame {
		var all []frame.Frame
		for _, b := range held {
			all = append(all, b.Frames...)
		}
		return all
	}
	status := func(slot uint32) uint32 { return atomic.LoadUint32(p.word(p.slotOff[slot])) }

	send(6)
	all := flatten(recvHold(t, p, 6, 2*time.Second))
	if h := p.held.Load(); h != 6 {
		t.Fatalf("%d slots held, want 6", h)
	}
	for i := len(all) - 1; i >= 0; i-- {
		s := all[i].Buf
		if st := status(s); st != slotHeld {
			t.Fatalf("slot %d of a held frame has status %#x", s, st)
		}
		p.Release(all[i : i+1])
		if st, h := status(s), p.held.Load(); st != tpStatusKernel || h != int32(i) {
			t.Fatalf("released slot %d: status %#x, %d held", s, st, h)
		}
	}

	// Hold the next frame (slot 6), fill the ring behind it: the kernel stops at it and drops.
	send(1)
	x := recvHold(t, p, 1, 2*time.Second)
	xs := x[0].Frames[0].Buf
	send(slots)
	rest := recvHold(t, p, slots-1, 2*time.Second)
	if fd, _ := p.PollFD(); fd >= 0 {
		t.Fatalf("PollFD = %d while the slot before Recv's position is held (the kernel reports it readable)", fd)
	}
	for _, b := range rest {
		b.Free()
	}
	waitDrops := func(want uint64) {
		t.Helper()
		for deadline := time.Now().Add(2 * time.Second); p.RingStats().Drops < want && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		if d := p.RingStats().Drops; d < want {
			t.Fatalf("%d drops, want %d", d, want)
		}
	}
	waitDrops(1)
	if p.ready() {
		t.Fatal("ready at a held slot")
	}
	if b := frame.NewBatch(8); func() int { n, _ := p.Recv(b); return n }() != 0 {
		t.Fatalf("Recv handed out slot %d again (or more): %+v", xs, b.Frames)
	}
	if fd, ready := p.PollFD(); fd < 0 || ready {
		t.Fatalf("PollFD = %d, %v with the ring stopped at a held slot and nothing to read", fd, ready)
	}
	send(1) // dropped too: the kernel is still stopped at the held slot
	waitDrops(2)
	if st := p.Stats(); st.RxDropped < 2 {
		t.Fatalf("RxDropped %d, want the kernel's drops", st.RxDropped)
	}
	x[0].Free()
	if h := p.held.Load(); h != 0 {
		t.Fatalf("%d slots held after every frame was released", h)
	}
	first := seq + 1
	send(3)
	got := recvFrames(t, p, 3, 2*time.Second)
	if len(got) != 3 {
		t.Fatalf("after releasing the held slot: %d of 3 frames", len(got))
	}
	for i, g := range got {
		if s, _ := seqOf(g.data); s != first+uint32(i) {
			t.Fatalf("frame %d is %d, want %d", i, s, first+uint32(i))
		}
	}

	// Double release panics, and leaves the slot alone.
	send(1)
	held := recvHold(t, p, 1, 2*time.Second)
	fr := append([]frame.Frame(nil), held[0].Frames...)
	held[0].Free()
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("releasing a frame twice did not panic")
			}
		}()
		p.Release(fr)
	}()
	if st := status(fr[0].Buf); st != tpStatusKernel {
		t.Fatalf("slot %d status %#x after the double release", fr[0].Buf, st)
	}
}

// TestSlotWalk fills an in-memory FrameRing with frames of random sizes, tags and malformed headers
// (data inside the header, longer than the slot, cut by the kernel), receives them in batches of
// random sizes and compares every descriptor and the drop count with what the headers say; every
// slot must go back to the kernel once its frame is freed.
func TestSlotWalk(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 3))
	for round := range 50 {
		f := FrameRing{Frames: 1 + rng.IntN(64), FrameSize: []int{256, 2048, 9088}[rng.IntN(3)]}
		g := frameGeometry(f, 4096)
		p := &Port{ring: make([]byte, g.blockSize*g.blocks)}
		p.cfg.PortID = uint16(round)
		p.setSlots(g, uint32(f.FrameSize))
		size := uint32(f.FrameSize)
		// Start anywhere: the walk wraps round the ring.
		p.slot = uint32(rng.IntN(g.slots))
		var want []frame.Frame
		bad := 0
		filled := rng.IntN(g.slots + 1)
		for i := range filled {
			s := (p.slot + uint32(i)) % uint32(g.slots)
			h := p.ring[p.slotOff[s]:]
			mac := uint32(FrameSlotOverhead + 16*rng.IntN(3))
			snap := uint32(14 + rng.IntN(int(size-mac-13)))
			wire := snap
			st := uint32(tpStatusUser)
			ok := true
			switch rng.IntN(12) {
			case 0:
				mac = uint32(rng.IntN(v2HdrLen)) // data inside the header
				ok = false
			case 1:
				snap = size - mac + 1 + uint32(rng.IntN(100)) // longer than the slot
				wire, ok = snap, false
			case 2:
				wire = snap + 1 + uint32(rng.IntN(9000)) // cut by the kernel
				ok = false
			}
			var tpid, tci uint16
			if rng.IntN(3) == 0 {
				st |= tpStatusVLAN
				tpid, tci = frame.TypeVLAN, uint16(rng.IntN(1<<16))
				if rng.IntN(2) == 0 {
					st |= tpStatusVLANTPID
					tpid = 0x88a8
				}
				ne.PutUint16(h[v2VlanTCIOff:], tci)
				ne.PutUint16(h[v2VlanTPIDOff:], 0x88a8)
			}
			ne.PutUint32(h[v2LenOff:], wire)
			ne.PutUint32(h[v2SnaplenOff:], snap)
			ne.PutUint16(h[v2MacOff:], uint16(mac))
			ne.PutUint32(h[v2StatusOff:], st)
			if !ok {
				bad++
				continue
			}
			fr := frame.Frame{Off: p.slotOff[s] + mac, Buf: s, Len: uint16(snap), Head: uint16(mac - v2HdrLen),
				Tail: uint16(size - mac - snap), Port: p.cfg.PortID}
			if st&tpStatusVLAN != 0 {
				fr.Flags, fr.TPID, fr.TCI = frame.FlagVLAN, tpid, tci
			}
			want = append(want, fr)
		}
		var got []frame.Frame
		var batches []*frame.Batch
		for {
			b := frame.NewBatch(1 + rng.IntN(16))
			n, err := p.Recv(b)
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				break
			}
			got = append(got, b.Frames...)
			batches = append(batches, b)
		}
		if len(got) != len(want) {
			t.Fatalf("round %d: %d frames, want %d", round, len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("round %d frame %d: %+v, want %+v", round, i, got[i], want[i])
			}
		}
		if st := p.c.Stats(); st.RxPackets != uint64(len(want)) || st.RxDropped != uint64(bad) {
			t.Fatalf("round %d: stats %+v, want %d frames, %d dropped", round, st, len(want), bad)
		}
		// Free in random order.
		rng.Shuffle(len(batches), func(i, j int) { batches[i], batches[j] = batches[j], batches[i] })
		for _, b := range batches {
			b.Free()
		}
		for s := range uint32(g.slots) {
			if st := atomic.LoadUint32(p.word(p.slotOff[s])); st != tpStatusKernel {
				t.Fatalf("round %d: slot %d status %#x after every frame was freed", round, s, st)
			}
		}
		if h := p.held.Load(); h != 0 {
			t.Fatalf("round %d: %d slots held", round, h)
		}
	}
}

// BenchmarkWalk receives 60-byte frames (one in four with an out-of-band tag) from in-memory rings
// of each kind, in batches of 64, and frees them; between laps the slots or blocks are handed to
// user space again. It needs no socket, so it runs under valgrind: count the instructions of Recv
// and Release (callgrind --toggle-collect) and divide by the frames received. One op is one lap of
// ringFrames frames.
func BenchmarkWalk(b *testing.B) {
	const ringFrames = 8192
	b.Run("rx=blocks", func(b *testing.B) {
		const bs = 128 << 10
		nb := uint32(ringFrames / (bs / 144)) // 144 ring bytes a 60-byte frame
		s := newSynthRing(bs, nb, 1)
		rng := rand.New(rand.NewPCG(1, 2))
		sizes := make([]int, 2000)
		for i := range sizes {
			sizes[i] = 60
		}
		n := 0
		for blk := range nb {
			n += s.fill(rng, blk, sizes, func(int) int { return 0 })
		}
		benchWalk(b, s.p, n, func() {
			for blk := range nb {
				atomic.StoreUint32(s.p.word(blk*bs+blkStatusOff), tpStatusUser)
			}
		})
	})
	b.Run("rx=frames", func(b *testing.B) {
		f := FrameRing{Frames: ringFrames, FrameSize: DefaultFrameRingSize}
		g := frameGeometry(f, 4096)
		p := &Port{ring: make([]byte, g.blockSize*g.blocks)}
		p.setSlots(g, uint32(f.FrameSize))
		for i, off := range p.slotOff {
			h := p.ring[off:]
			ne.PutUint32(h[v2LenOff:], 60)
			ne.PutUint32(h[v2SnaplenOff:], 60)
			ne.PutUint16(h[v2MacOff:], FrameSlotOverhead)
			if i%4 == 0 {
				ne.PutUint16(h[v2VlanTCIOff:], uint16(i))
				ne.PutUint16(h[v2VlanTPIDOff:], frame.TypeVLAN)
			}
		}
		benchWalk(b, p, len(p.slotOff), func() {
			for i, off := range p.slotOff {
				st := uint32(tpStatusUser)
				if i%4 == 0 {
					st |= tpStatusVLAN | tpStatusVLANTPID
				}
				atomic.StoreUint32(p.word(off), st)
			}
		})
	})
}

func benchWalk(b *testing.B, p *Port, frames int, refill func()) {
	batch := frame.NewBatch(64)
	var sink byte
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		refill()
		got := 0
		for {
			n, _ := p.Recv(batch)
			if n == 0 {
				break
			}
			sink ^= batch.Mem[batch.Frames[0].Off]
			got += n
			batch.Free()
		}
		if got != frames {
			b.Fatalf("received %d of %d frames", got, frames)
		}
	}
	b.ReportMetric(float64(frames), "frames/op")
	_ = sink
}
