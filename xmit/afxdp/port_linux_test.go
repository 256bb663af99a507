package afxdp

import (
	"bytes"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/frame"
)

func TestRoundTrip(t *testing.T) {
	pr := newPair(t, 0)
	p := pr.open(t, nil)
	raw := pr.raw(t)
	t.Logf("mode %s, attach %s", p.Mode(), p.AttachMode())

	// a → b through AF_XDP receive.
	var sent [][]byte
	for i, n := range []int{14, 42, 60, 61, 200, 1514} {
		f := testFrame(n, uint32(i))
		sent = append(sent, f)
		raw.send(t, f)
	}
	got := recvXDP(t, p, len(sent), 2*time.Second)
	if len(got) != len(sent) {
		t.Fatalf("received %d of %d frames", len(got), len(sent))
	}
	for i := range sent {
		if !bytes.Equal(got[i], sent[i]) {
			t.Errorf("frame %d: got %x\nwant %x", i, got[i], sent[i])
		}
	}
	checkAcct(t, p.UMEM())

	// b → a through AF_XDP send, frames of another arena (copied).
	pool, _ := frame.NewPool(nil)
	b := frame.NewBatch(8)
	pool.Alloc(b, 3)
	var want [][]byte
	for i := range b.Frames {
		f := testFrame(100+i*10, uint32(100+i))
		b.Frames[i].Resize(len(f))
		copy(b.Bytes(i), f)
		want = append(want, f)
	}
	if n, err := p.Send(b); n != 3 || err != nil {
		t.Fatalf("Send = %d, %v", n, err)
	}
	if pool.InUse() != 0 {
		t.Fatalf("pool frames not released: %d", pool.InUse())
	}
	for i := range want {
		f := raw.recv(t, 2*time.Second)
		if !bytes.Equal(f, want[i]) {
			t.Fatalf("a received %x\nwant %x", f, want[i])
		}
	}
	p.Send(frame.NewBatch(1)) // reap completions
	checkAcct(t, p.UMEM())
	s := p.Stats()
	if s.RxPackets < uint64(len(sent)) || s.TxPackets != 3 || s.TxCopied != 3 || s.TxDropped != 0 {
		t.Fatalf("stats %+v", s)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}
