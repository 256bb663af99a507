package afxdp

import (
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/frame"
)

// waitLink waits until p.LinkUp() is want (linkwatch updates the operstate asynchronously).
func waitLink(t *testing.T, p *Port, want bool) {
	t.Helper()
	for deadline := time.Now().Add(3 * time.Second); p.LinkUp() != want && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if p.LinkUp() != want {
		t.Fatalf("LinkUp() stays %v", !want)
	}
}

// sendTest sends n test frames (from a pool) in one batch and returns how many Send queued.
func sendTest(t *testing.T, p *Port, n int, seq uint32) int {
	t.Helper()
	pool, _ := frame.NewPool(nil)
	b := frame.NewBatch(n)
	pool.Alloc(b, n)
	for j := range b.Frames {
		f := testFrame(64, seq+uint32(j))
		b.Frames[j].Resize(len(f))
		copy(b.Bytes(j), f)
	}
	k, err := p.Send(b)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestTxLost: frames the TX ring took but the kernel never transmitted are counted in TxLost, so
// that TxPackets-TxLost is what reached the interface: frames still on the ring when the port
// closes (its interface down: the kernel refuses to send), and frames the kernel takes off the
// ring and drops because the interface is up without a carrier (sendto answers EBUSY).
func TestTxLost(t *testing.T) {
	const n = 16
	// queueDown takes the port's own interface down and leaves n frames on its TX ring.
	queueDown := func(t *testing.T, pr *pair, p *Port) {
		waitLink(t, p, true)
		pr.b.Exec(t, "ip", "link", "set", pr.vb, "down")
		if k := sendTest(t, p, n, 0); k != n {
			t.Fatalf("queued %d of %d with the interface down", k, n)
		}
		if a := p.UMEM().Accounting(); a.TX != n {
			t.Fatalf("accounting %+v, want %d on the TX side", a, n)
		}
	}
	t.Run("close", func(t *testing.T) {
		pr := newPair(t, 0)
		p := pr.open(t, &Config{RingSize: 32})
		raw := pr.raw(t)
		queueDown(t, pr, p)
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		if f := raw.recv(t, 100*time.Millisecond); f != nil {
			t.Fatalf("a frame reached the peer: %x", f)
		}
		if s := p.Stats(); s.TxPackets != n || s.TxLost != n {
			t.Fatalf("closed with %d frames on the TX ring: stats %+v, want TxLost %d", n, s, n)
		}
	})
	t.Run("no-carrier", func(t *testing.T) {
		pr := newPair(t, 0)
		p := pr.open(t, &Config{RingSize: 32})
		queueDown(t, pr, p)
		pr.a.Exec(t, "ip", "link", "set", pr.va, "down")
		pr.b.Exec(t, "ip", "link", "set", pr.vb, "up") // up, but no carrier: the peer is down
		for deadline := time.Now().Add(3 * time.Second); p.UMEM().Accounting().TX != 0 && time.Now().Before(deadline); {
			p.Send(frame.NewBatch(1)) // kick: the kernel drops one frame per call
			time.Sleep(time.Millisecond)
		}
		checkAcct(t, p.UMEM())
		if a := p.UMEM().Accounting(); a.TX != 0 {
			t.Fatalf("the kernel kept frames: %+v", a)
		}
		if s := p.Stats(); s.TxPackets != n || s.TxLost != n {
			t.Fatalf("the kernel dropped %d frames for want of a carrier: stats %+v, want TxLost %d", n, s, n)
		}
	})
}
