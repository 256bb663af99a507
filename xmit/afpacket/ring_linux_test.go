package afpacket

import (
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/frame"
)

// recvAll receives into fresh batches until want frames are held (not freed) or the deadline passes.
func recvHold(t *testing.T, p *Port, want int, d time.Duration) []*frame.Batch {
	t.Helper()
	var held []*frame.Batch
	got := 0
	deadline := time.Now().Add(d)
	for got < want && time.Now().Before(deadline) {
		b := frame.NewBatch(16)
		n, err := p.Recv(b)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			p.Wait(int64(5 * time.Millisecond))
			continue
		}
		got += n
		held = append(held, b)
	}
	if got < want {
		t.Fatalf("received %d of %d", got, want)
	}
	return held
}

// TestRingOwnership holds frames across blocks, releases them out of order and checks that a block
// goes back to the kernel exactly when its last frame is released, that a ring full of held frames
// stalls (the kernel drops and counts) and resumes once they are released, and that releasing twice
// panics.
func TestRingOwnership(t *testing.T) {
	l := newLink(t)
	a := openIn(t, l.nsA, l.ifA, nil)
	// 4 blocks of one page: a few 1000-byte frames per block.
	p := openIn(t, l.nsB, l.ifB, &Config{BlockSize: 4096, BlockCount: 4, FrameSize: 2048})
	pool, _ := frame.NewPool(nil)
	var tx []txFrame
	for i := range 40 {
		tx = append(tx, txFrame{data: testFrame(uint32(i), 1000)})
	}
	sendFrames(t, a, pool, tx[:6])
	held := recvHold(t, p, 6, 2*time.Second)
	if h := p.held.Load(); h < 2 {
		t.Fatalf("6 frames of 1000 bytes in %d blocks of 4 KiB", h)
	}
	// Release in reverse order, one frame at a time; a block must return only with its last frame.
	var all []frame.Frame
	for _, b := range held {
		all = append(all, b.Frames...)
	}
	mem, owner := held[0].Mem, held[0].Owner
	for i := len(all) - 1; i >= 0; i-- {
		blk := all[i].Buf
		last := true
		for j := 0; j < i; j++ {
			if all[j].Buf == blk {
				last = false
			}
		}
		before := p.held.Load()
		owner.Release(all[i : i+1])
		returned := before - p.held.Load()
		if last != (returned == 1) {
			t.Fatalf("frame %d (block %d, last %v): %d blocks returned", i, blk, last, returned)
		}
	}
	_ = mem
	// Hold everything: the ring fills, the kernel drops and freezes.
	sendFrames(t, a, pool, tx)
	held = recvHold(t, p, 1, 2*time.Second)
	time.Sleep(20 * time.Millisecond)
	for {
		b := frame.NewBatch(16)
		if n, _ := p.Recv(b); n == 0 {
			break
		}
		held = append(held, b)
	}
	if rs := p.RingStats(); rs.Drops == 0 {
		t.Fatalf("40 frames of 1000 bytes into a 16 KiB ring held by the consumer: no drop (%+v)", rs)
	}
	if p.ready() {
		t.Fatal("ready while every block is held")
	}
	for _, b := range held {
		b.Free()
	}
	if h := p.held.Load(); h != 0 {
		t.Fatalf("%d blocks held after every frame was released", h)
	}
	sendFrames(t, a, pool, tx[:3])
	if got := recvFrames(t, p, 3, 2*time.Second); len(got) != 3 {
		t.Fatalf("after the stall: %d of 3 frames", len(got))
	}
	// Double release panics.
	sendFrames(t, a, pool, tx[:1])
	held = recvHold(t, p, 1, 2*time.Second)
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
}

// TestAllocs proves Recv, Free and Send allocate nothing per batch.
func TestAllocs(t *testing.T) { rxTxModes(t, testAllocs) }

func testAllocs(t *testing.T, txCfg *Config, ring *FrameRing) {
	l := newLink(t)
	a := openIn(t, l.nsA, l.ifA, txCfg)
	p := openIn(t, l.nsB, l.ifB, withRing(ring, nil))
	pool, _ := frame.NewPool(nil)
	tx := frame.NewBatch(64)
	rx := frame.NewBatch(64)
	fill := func() {
		pool.Alloc(tx, 64)
		for i := range tx.Frames {
			f := &tx.Frames[i]
			f.Resize(60)
			copy(tx.Bytes(i), testFrame(uint32(i), 60))
			if i%4 == 0 {
				f.Flags, f.TCI = frame.FlagVLAN, 5
			}
		}
	}
	var got int
	allocs := testing.AllocsPerRun(50, func() {
		fill()
		a.Send(tx)
		for range 3 {
			n, _ := p.Recv(rx)
			got += n
			rx.Free()
		}
		p.Wait(0)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per Send+Recv round", allocs)
	}
	if got == 0 {
		t.Fatal("received nothing")
	}
}
