package afpacket

import (
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/xmit"
)

// TestMultiWait: a worker's two ports waited on together. With nothing arriving the wait ends by
// its timeout and neither port is ready; a frame sent to the second port wakes it, PollFD then
// reports it ready and Recv returns the frame; Wait allocates nothing.
func TestMultiWait(t *testing.T) {
	for _, r := range rxModes {
		t.Run("rx="+r.name, func(t *testing.T) { testMultiWait(t, r.ring) })
	}
}

func testMultiWait(t *testing.T, ring *FrameRing) {
	l := newLink(t)
	a := openIn(t, l.nsA, l.ifA, withRing(ring, nil))
	b := openIn(t, l.nsB, l.ifB, withRing(ring, nil))
	mw := xmit.NewMultiWait([]xmit.Port{a, b})
	if mw == nil {
		t.Fatal("NewMultiWait: nil for two AF_PACKET ports")
	}
	in := frame.NewBatch(64)
	drain := func(p *Port) {
		for n, _ := p.Recv(in); n > 0; n, _ = p.Recv(in) {
			in.Free()
		}
	}
	drain(a)
	drain(b)
	if err := mw.Wait(int64(20 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*Port{a, b} {
		if fd, ready := p.PollFD(); fd < 0 || ready {
			t.Fatalf("idle port: PollFD = %d, %v", fd, ready)
		}
	}
	if n := testing.AllocsPerRun(20, func() { mw.Wait(0) }); n != 0 {
		t.Errorf("Wait: %v allocs", n)
	}

	pool, _ := frame.NewPool(nil)
	if k := sendFrames(t, a, pool, []txFrame{{data: testFrame(1, 60)}}); k != 1 {
		t.Fatalf("sent %d", k)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if err := mw.Wait(int64(time.Second)); err != nil {
			t.Fatal(err)
		}
		if _, ready := b.PollFD(); ready || time.Now().After(deadline) {
			break
		}
	}
	if _, ready := b.PollFD(); !ready {
		t.Fatal("the frame sent to the second port never made it ready")
	}
	got := recvFrames(t, b, 1, time.Second)
	if len(got) != 1 {
		t.Fatalf("received %d test frames, want 1", len(got))
	}
}
