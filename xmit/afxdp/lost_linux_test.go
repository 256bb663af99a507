package afxdp

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/internal/nettest"
	"github.com/wirespeed/wirespeed/xmit"
	"golang.org/x/sys/unix"
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
		ignoreCarrier(p)
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
		// The interface counted them too (tx_dropped), and Stats reads that.
		if s := waitStats(t, p, func(s xmit.Stats) bool { return s.KernelTxDropped >= n }); s.KernelTxDropped != n {
			t.Fatalf("stats %+v, want KernelTxDropped %d", s, n)
		}
	})
}

// ignoreCarrier makes Send take the carrier for up from now on without reading it, as in the
// millisecond before it notices the interface went down.
func ignoreCarrier(p *Port) {
	p.txMu.Lock()
	p.linkEvery, p.linkUp = int64(time.Hour), true
	p.txMu.Unlock()
}

// waitStats returns p.Stats() once ok accepts it, or after 3 s (the port reads the kernel's
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

// sysCounter reads /sys/class/net/<ifname>/statistics/<name> as the namespace sees it.
func sysCounter(t *testing.T, ns *nettest.NS, ifname, name string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(strings.TrimSpace(ns.Exec(t, "cat", "/sys/class/net/"+ifname+"/statistics/"+name)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestSendCarrierDown: once the port's interface has lost its carrier (the veth peer is down, and
// LinkUp says so), Send puts nothing on the TX ring, from which the kernel would take the frames
// and drop them: every frame is counted in TxDropped and the interface's tx_dropped does not move.
func TestSendCarrierDown(t *testing.T) {
	pr := newPair(t, 0)
	for _, ns := range []*nettest.NS{pr.a, pr.b} { // no IPv6: the kernel's own frames would be dropped too
		ns.Exec(t, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
	}
	p := pr.open(t, &Config{RingSize: 32})
	waitLink(t, p, true)
	pr.a.Exec(t, "ip", "link", "set", pr.va, "down")
	waitLink(t, p, false)
	time.Sleep(3 * carrierEvery) // Send reads the carrier at most every carrierEvery
	kd := sysCounter(t, pr.b, pr.vb, "tx_dropped")
	for i := range 4 {
		if k := sendTest(t, p, 16, uint32(16*i)); k != 0 {
			t.Fatalf("Send queued %d frames on an interface without a carrier", k)
		}
		p.Send(frame.NewBatch(1))
	}
	s := p.Stats()
	if kd2 := sysCounter(t, pr.b, pr.vb, "tx_dropped"); s.TxPackets != 0 || s.TxDropped != 64 || s.TxLost != 0 || kd2 != kd {
		t.Fatalf("carrier down: stats %+v, interface tx_dropped %d → %d", s, kd, kd2)
	}
	checkAcct(t, p.UMEM())
	pr.a.Exec(t, "ip", "link", "set", pr.va, "up")
	waitLink(t, p, true)
	time.Sleep(3 * carrierEvery)
	raw := pr.raw(t)
	if k := sendTest(t, p, 16, 100); k != 16 {
		t.Fatalf("carrier back: Send queued %d of 16", k)
	}
	for i := range 16 {
		if f := raw.recv(t, 2*time.Second); f == nil {
			t.Fatalf("carrier back: received %d of 16", i)
		}
	}
}

// TestKernelRxDropped: frames too big for the port's interface (its MTU is smaller than its veth
// peer's) are dropped by the interface before XDP sees them, counted in its rx_dropped, which the
// port reads into Stats.
func TestKernelRxDropped(t *testing.T) {
	pr := newPair(t, 0)
	pr.b.Exec(t, "ip", "link", "set", pr.vb, "mtu", "500")
	p := pr.open(t, nil)
	raw := pr.raw(t)
	waitLink(t, p, true)
	rxd := sysCounter(t, pr.b, pr.vb, "rx_dropped")
	const n = 20
	f := testFrame(1000, 1)
	for range n {
		unix.Sendto(raw.fd, f, 0, &unix.SockaddrLinklayer{Ifindex: raw.ifindex, Halen: 6}) // ENOBUFS: veth dropped it
	}
	s := waitStats(t, p, func(s xmit.Stats) bool { return s.KernelRxDropped >= n })
	if rxd2 := sysCounter(t, pr.b, pr.vb, "rx_dropped"); s.RxPackets != 0 || s.KernelRxDropped != n || rxd2-rxd != n {
		t.Fatalf("stats %+v; the interface's rx_dropped went up by %d for %d frames", s, rxd2-rxd, n)
	}
}
