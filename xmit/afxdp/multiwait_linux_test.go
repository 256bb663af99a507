package afxdp

import (
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/xmit"
)

// TestMultiWait: two AF_XDP ports waited on together. Idle, the wait ends by its timeout; a frame
// sent to the second wakes it, PollFD reports it ready and Recv returns the frame; Wait allocates
// nothing.
func TestMultiWait(t *testing.T) {
	p1, p2 := newPair(t, 0), newPair(t, 0)
	a, b := p1.open(t, nil), p2.open(t, nil)
	mw := xmit.NewMultiWait([]xmit.Port{a, b})
	if mw == nil {
		t.Fatal("NewMultiWait: nil for two AF_XDP ports")
	}
	in := frame.NewBatch(64)
	for _, p := range []*Port{a, b} {
		for n, _ := p.Recv(in); n > 0; n, _ = p.Recv(in) {
			in.Free()
		}
	}
	if err := mw.Wait(int64(20 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*Port{a, b} {
		if fd, _ := p.PollFD(); fd < 0 { // ready may be true: the veth's IPv6 chatter reaches the ports
			t.Fatalf("open port: PollFD = %d", fd)
		}
	}
	if n := testing.AllocsPerRun(20, func() { mw.Wait(0) }); n != 0 {
		t.Errorf("Wait: %v allocs", n)
	}

	p2.raw(t).send(t, testFrame(60, 1))
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
	if got := recvXDP(t, b, 1, time.Second); len(got) != 1 {
		t.Fatalf("received %d test frames, want 1", len(got))
	}
}
