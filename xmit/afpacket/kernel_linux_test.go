package afpacket

import (
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/xmit"
)

func waitLinkUp(t *testing.T, p *Port, want bool) {
	t.Helper()
	for start := time.Now(); p.LinkUp() != want && time.Since(start) < 3*time.Second; {
		time.Sleep(5 * time.Millisecond) // carrier changes reach the operstate through linkwatch
	}
	if p.LinkUp() != want {
		t.Fatalf("LinkUp() stays %v", !want)
	}
}

func seqFrames(n, size int) []txFrame {
	var tx []txFrame
	for i := range n {
		tx = append(tx, txFrame{data: testFrame(uint32(i), size)})
	}
	return tx
}

// TestSendCarrierDown: once the port's interface has lost its carrier (the veth peer is down, and
// LinkUp says so), Send hands nothing to the kernel, where veth would drop it after reporting it
// sent: every frame is counted in TxDropped, and the interface's tx_dropped does not move. When
// the carrier is back, frames flow again.
func TestSendCarrierDown(t *testing.T) {
	for _, m := range txModes {
		t.Run(m.name, func(t *testing.T) {
			l := newLink(t)
			a := openIn(t, l.nsA, l.ifA, m.cfg)
			waitLinkUp(t, a, true)
			pool, _ := frame.NewPool(nil)
			tx := seqFrames(100, 80)
			l.nsB.Exec(t, "ip", "link", "set", l.ifB, "down")
			waitLinkUp(t, a, false)
			time.Sleep(3 * carrierEvery) // Send reads the carrier at most every carrierEvery
			before, kd := a.Stats(), sysCounter(t, l.nsA, l.ifA, "tx_dropped")
			if k := sendFrames(t, a, pool, tx); k != 0 {
				t.Fatalf("Send queued %d frames on an interface without a carrier", k)
			}
			after, kd2 := a.Stats(), sysCounter(t, l.nsA, l.ifA, "tx_dropped")
			if after.TxPackets != before.TxPackets || after.TxDropped-before.TxDropped != 100 || kd2 != kd {
				t.Fatalf("carrier down: %+v → %+v, interface tx_dropped %d → %d", before, after, kd, kd2)
			}
			l.nsB.Exec(t, "ip", "link", "set", l.ifB, "up")
			b := openIn(t, l.nsB, l.ifB, nil)
			waitLinkUp(t, a, true)
			time.Sleep(3 * carrierEvery)
			if k := sendFrames(t, a, pool, tx[:10]); k != 10 {
				t.Fatalf("carrier back: Send queued %d of 10 (%+v)", k, a.Stats())
			}
			if got := recvFrames(t, b, 10, 2*time.Second); len(got) != 10 {
				t.Fatalf("carrier back: received %d of 10", len(got))
			}
		})
	}
}

// TestKernelCounters: frames the kernel takes from Send and then drops below the port show in the
// kernel counters of the ports' interfaces, which the ports read into Stats.
func TestKernelCounters(t *testing.T) {
	const n = 40
	// The peer is down and Send does not look at the carrier (as in the millisecond before it
	// notices the carrier went): the kernel drops every frame and, except with QDISC_BYPASS, reports it sent. Every
	// frame reported sent is in KernelTxDropped, which is what the interface counted.
	t.Run("peer-down", func(t *testing.T) {
		for _, m := range txModes {
			t.Run(m.name, func(t *testing.T) {
				l := newLink(t)
				a := openIn(t, l.nsA, l.ifA, m.cfg)
				waitLinkUp(t, a, true)
				a.txMu.Lock()
				a.linkEvery, a.linkUp = int64(time.Hour), true // Send takes the carrier for up from now on
				a.txMu.Unlock()
				l.nsB.Exec(t, "ip", "link", "set", l.ifB, "down")
				waitLinkUp(t, a, false)
				txd := sysCounter(t, l.nsA, l.ifA, "tx_dropped")
				pool, _ := frame.NewPool(nil)
				tx := seqFrames(n, 80)
				for i := range tx {
					sendFrames(t, a, pool, tx[i:i+1]) // one a batch: each reaches the kernel
				}
				s := waitStats(t, a, func(s xmit.Stats) bool { return s.KernelTxDropped >= n })
				txd2 := sysCounter(t, l.nsA, l.ifA, "tx_dropped")
				t.Logf("%+v", s)
				if s.TxPackets+s.TxDropped != n || s.KernelTxDropped != txd2-txd || s.KernelTxDropped != n {
					t.Fatalf("%+v: the interface's tx_dropped went up by %d for %d frames", s, txd2-txd, n)
				}
				a.Close()
				if s := a.Stats(); s.KernelTxDropped != n {
					t.Fatalf("after Close: %+v", s)
				}
			})
		}
	})
	// b's MTU is too small for the frames: a's veth drops them and b's counts them in its
	// rx_dropped, where b's socket never sees them.
	t.Run("mtu", func(t *testing.T) {
		l := newLink(t)
		l.nsB.Exec(t, "ip", "link", "set", l.ifB, "mtu", "500")
		a := openIn(t, l.nsA, l.ifA, nil)
		b := openIn(t, l.nsB, l.ifB, nil)
		waitLinkUp(t, a, true)
		rxd := sysCounter(t, l.nsB, l.ifB, "rx_dropped")
		pool, _ := frame.NewPool(nil)
		tx := seqFrames(n, 1000)
		for i := range tx {
			sendFrames(t, a, pool, tx[i:i+1])
		}
		if got := recvFrames(t, b, 1, 50*time.Millisecond); len(got) != 0 {
			t.Fatalf("b received %d frames larger than its MTU", len(got))
		}
		sb := waitStats(t, b, func(s xmit.Stats) bool { return s.KernelRxDropped >= n })
		sa := a.Stats()
		rxd2 := sysCounter(t, l.nsB, l.ifB, "rx_dropped")
		if sb.RxPackets != 0 || sb.KernelRxDropped != rxd2-rxd || sb.KernelRxDropped != n {
			t.Fatalf("b %+v: the interface's rx_dropped went up by %d for %d frames", sb, rxd2-rxd, n)
		}
		if sa.TxPackets+sa.TxDropped != n || sa.KernelTxDropped != n {
			t.Fatalf("a %+v", sa)
		}
	})
}

// waitStats returns p.Stats() once ok accepts it, or after 3 s (the ports read the kernel's
// counters at most every 100 ms).
func waitStats(t *testing.T, p *Port, ok func(xmit.Stats) bool) xmit.Stats {
	t.Helper()
	s := p.Stats()
	for start := time.Now(); !ok(s) && time.Since(start) < 3*time.Second; {
		time.Sleep(20 * time.Millisecond)
		s = p.Stats()
	}
	return s
}
