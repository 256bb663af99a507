package afpacket

import (
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/frame"
)

func TestRoundTrip(t *testing.T) {
	l := newLink(t)
	a := openIn(t, l.nsA, l.ifA, nil)
	b := openIn(t, l.nsB, l.ifB, nil)
	pool, _ := frame.NewPool(nil)
	const n = 200
	var tx []txFrame
	for i := range n {
		tx = append(tx, txFrame{data: testFrame(uint32(i), 60+i*7)})
	}
	if k := sendFrames(t, a, pool, tx); k != n {
		t.Fatalf("sent %d of %d", k, n)
	}
	got := recvFrames(t, b, n, 2*time.Second)
	if len(got) != n {
		t.Fatalf("received %d of %d", len(got), n)
	}
	for i, g := range got {
		if d := diff(g.data, tx[i].data); d != "" {
			t.Fatalf("frame %d: %s", i, d)
		}
		if g.flags != 0 {
			t.Fatalf("frame %d: flags %v", i, g.flags)
		}
	}
	if pool.InUse() != 0 {
		t.Fatalf("%d pool buffers not released by Send", pool.InUse())
	}
	sa, sb := a.Stats(), b.Stats()
	if sa.TxPackets != n || sa.TxDropped != 0 {
		t.Fatalf("sender stats %+v", sa)
	}
	if sb.RxPackets < n || sb.RxDropped != 0 {
		t.Fatalf("receiver stats %+v", sb)
	}
	if h := b.held.Load(); h != 0 {
		t.Fatalf("%d blocks still held after every frame was freed", h)
	}
}
