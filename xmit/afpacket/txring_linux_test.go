package afpacket

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/xmit"
)

// TestTxGeometry checks the TX ring's block layout: whole pages, at least the slots asked for, every
// slot inside its block.
func TestTxGeometry(t *testing.T) {
	for _, tc := range []TxRing{{1, 2048}, {1024, 2048}, {1000, 2048}, {64, 9216}, {3, 4096}, {100, 1616}, {7, 1 << 17}} {
		req, fpb, slots := txGeometry(tc, 4096)
		if req.Block_size%4096 != 0 || slots < tc.Frames || slots-tc.Frames >= fpb {
			t.Errorf("%+v: block %d, %d per block, %d slots", tc, req.Block_size, fpb, slots)
		}
		if fpb*tc.FrameSize > int(req.Block_size) || int(req.Block_nr)*fpb != slots || int(req.Frame_nr) != slots ||
			int(req.Block_size)/tc.FrameSize != fpb {
			t.Errorf("%+v: %+v, %d per block, %d slots", tc, req, fpb, slots)
		}
	}
}

// TestTxRingConfig checks TxRing's validation and defaults.
func TestTxRingConfig(t *testing.T) {
	c, err := (&Config{TxRing: &TxRing{}}).withDefaults(4096)
	if err != nil || c.TxRing.Frames != DefaultTxFrames || c.TxRing.FrameSize != DefaultTxFrameSize {
		t.Fatalf("defaults: %+v, %v", c.TxRing, err)
	}
	for _, bad := range []TxRing{{Frames: -1}, {FrameSize: 100}, {FrameSize: 2050}, {FrameSize: 1 << 18}, {Frames: 1<<20 + 1}} {
		if _, err := (&Config{TxRing: &bad}).withDefaults(4096); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: %v, want ErrConfig", bad, err)
		}
	}
}

// TestTxRingFull holds every slot of a small TX ring in flight (a token bucket on the sending veth
// keeps the skbs, so the kernel cannot give the slots back): Send must not hang, must count what did
// not fit, release every frame, and recover once the slots come back. With QdiscBypass the bucket
// is skipped and nothing is held.
func TestTxRingFull(t *testing.T) {
	l := newLink(t)
	const slots = 16
	for _, retries := range []int{0, 3} {
		a := openIn(t, l.nsA, l.ifA, &Config{TxRing: &TxRing{Frames: slots}, TxRetries: retries})
		b := openIn(t, l.nsB, l.ifB, nil)
		l.nsA.Exec(t, "tc", "qdisc", "add", "dev", l.ifA, "root", "tbf", "rate", "8kbit", "burst", "1600", "limit", "1000000")
		pool, _ := frame.NewPool(nil)
		var tx []txFrame
		for i := range 200 {
			tx = append(tx, txFrame{data: testFrame(uint32(i), 1000)}) // the bucket passes ~1 a second
		}
		start := time.Now()
		sent := sendFrames(t, a, pool, tx)
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("retries %d: 200 frames into a full ring took %v", retries, d)
		}
		st := a.Stats()
		if st.TxPackets+st.TxDropped != uint64(len(tx)) || uint64(sent) != st.TxPackets {
			t.Fatalf("retries %d: sent %d, stats %+v: not every frame accounted for", retries, sent, st)
		}
		if n := len(a.txOffs); st.TxPackets > uint64(n)+2 || st.TxDropped < uint64(len(tx)-n-2) {
			t.Fatalf("retries %d: %d sent through a ring of %d slots held in flight", retries, st.TxPackets, n)
		}
		if pool.InUse() != 0 {
			t.Fatalf("%d frames not released", pool.InUse())
		}
		// The qdisc goes: its skbs are freed (their slots come back) and the ring works again.
		l.nsA.Exec(t, "tc", "qdisc", "del", "dev", l.ifA, "root")
		recvFrames(t, b, int(st.TxPackets), 100*time.Millisecond) // whatever the bucket let through
		before := a.Stats()
		if k := sendFrames(t, a, pool, tx[:40]); k != 40 {
			after := a.Stats()
			t.Fatalf("retries %d: after the slots came back %d of 40 sent (%+v → %+v)", retries, k, before, after)
		}
		if got := recvFrames(t, b, 40, 2*time.Second); len(got) != 40 {
			t.Fatalf("retries %d: received %d of 40 after recovery", retries, len(got))
		}
		a.Close()
		b.Close()
	}
	// PACKET_QDISC_BYPASS on the TX ring: the same token bucket holds nothing, every frame goes.
	a := openIn(t, l.nsA, l.ifA, &Config{TxRing: &TxRing{Frames: slots}, QdiscBypass: true})
	b := openIn(t, l.nsB, l.ifB, nil)
	l.nsA.Exec(t, "tc", "qdisc", "add", "dev", l.ifA, "root", "tbf", "rate", "8kbit", "burst", "1600", "limit", "1000000")
	pool, _ := frame.NewPool(nil)
	var tx []txFrame
	for i := range 200 {
		tx = append(tx, txFrame{data: testFrame(uint32(i), 1000)})
	}
	if k := sendFrames(t, a, pool, tx); k != len(tx) {
		t.Fatalf("QdiscBypass: sent %d of %d (%+v): the qdisc held the frames", k, len(tx), a.Stats())
	}
	if got := recvFrames(t, b, len(tx), 2*time.Second); len(got) != len(tx) {
		t.Fatalf("QdiscBypass: received %d of %d", len(got), len(tx))
	}
	if pool.InUse() != 0 {
		t.Fatalf("QdiscBypass: %d frames not released", pool.InUse())
	}
}

// TestTxRingTooBig sends frames that do not fit a slot or the MTU among frames that do: the first
// are dropped and counted, the others arrive intact and in order.
func TestTxRingTooBig(t *testing.T) {
	l := newLink(t)
	a := openIn(t, l.nsA, l.ifA, &Config{TxRing: &TxRing{Frames: 8, FrameSize: 1024}})
	b := openIn(t, l.nsB, l.ifB, nil)
	pool, _ := frame.NewPool(nil)
	tx := []txFrame{
		{data: testFrame(1, 976)},                                  // exactly a slot (1024-48)
		{data: testFrame(2, 977)},                                  // one byte over
		{data: testFrame(3, 60)},                                   //
		{data: testFrame(4, 974), oob: true, tpid: 0x8100, tci: 3}, // 978 with the tag: over
		{data: testFrame(5, 60)},                                   // not an Ethernet frame
		{data: testFrame(6, 22)},                                   // runt, padded
	}
	tx[4].data = tx[4].data[:13]
	if k := sendFrames(t, a, pool, tx); k != 3 {
		t.Fatalf("sent %d, want 3", k)
	}
	if s := a.Stats(); s.TxDropped != 3 || s.TxPackets != 3 || s.TxCopied != 3 {
		t.Fatalf("stats %+v, want 3 sent (copied) and 3 dropped", s)
	}
	got := recvFrames(t, b, 3, 2*time.Second)
	if len(got) != 3 {
		t.Fatalf("received %d of 3", len(got))
	}
	for i, j := range []int{0, 2, 5} {
		if d := diff(got[i].data, expectRx(wire(tx[j]), false).data); d != "" {
			t.Fatalf("frame %d: %s", j, d)
		}
	}
	// Over the MTU: the same rule as sendmmsg (MTU+14, +18 with an 802.1Q tag).
	l.nsA.Exec(t, "ip", "link", "set", l.ifA, "mtu", "500")
	l.nsB.Exec(t, "ip", "link", "set", l.ifB, "mtu", "500")
	before := a.Stats()
	tx = []txFrame{
		{data: testFrame(7, 514)},
		{data: testFrame(8, 515)},
		{data: tagged(testFrame(9, 514), 0x8100, 1)},
		{data: testFrame(10, 514), oob: true, tpid: 0x88a8, tci: 1}, // 802.1ad gets no allowance
	}
	if k := sendFrames(t, a, pool, tx); k != 2 {
		t.Fatalf("MTU 500: sent %d, want 2", k)
	}
	if s := a.Stats(); s.TxDropped-before.TxDropped != 2 {
		t.Fatalf("MTU 500: stats %+v (before %+v)", s, before)
	}
}

// TestTxRingLinkDown sends while the peer is down (veth drops every frame: the kernel hands the slot
// back as not sent) and after it comes back up.
func TestTxRingLinkDown(t *testing.T) {
	l := newLink(t)
	a := openIn(t, l.nsA, l.ifA, &Config{TxRing: &TxRing{Frames: 32}, TxRetries: 2})
	pool, _ := frame.NewPool(nil)
	var tx []txFrame
	for i := range 100 {
		tx = append(tx, txFrame{data: testFrame(uint32(i), 80)})
	}
	l.nsB.Exec(t, "ip", "link", "set", l.ifB, "down")
	sendFrames(t, a, pool, tx)
	s := a.Stats()
	t.Logf("peer down: %+v", s)
	if s.TxPackets+s.TxDropped != 100 || pool.InUse() != 0 {
		t.Fatalf("peer down: %+v, %d in use", s, pool.InUse())
	}
	l.nsB.Exec(t, "ip", "link", "set", l.ifB, "up")
	b := openIn(t, l.nsB, l.ifB, nil)
	for start := time.Now(); !a.LinkUp() && time.Since(start) < 3*time.Second; {
		time.Sleep(10 * time.Millisecond)
	}
	before := a.Stats()
	if k := sendFrames(t, a, pool, tx[:50]); k != 50 {
		t.Fatalf("after link up: sent %d of 50 (%+v → %+v)", k, before, a.Stats())
	}
	if got := recvFrames(t, b, 50, 2*time.Second); len(got) != 50 {
		t.Fatalf("after link up: received %d of 50", len(got))
	}
}

// TestTxRingCloseDuringSend closes the port while another goroutine sends through the TX ring as
// fast as it can: Send returns ErrClosed, every frame offered is sent or counted, none is lost.
func TestTxRingCloseDuringSend(t *testing.T) {
	l := newLink(t)
	openIn(t, l.nsB, l.ifB, nil) // a receiver, so that the link is busy
	for range 3 {
		a := openIn(t, l.nsA, l.ifA, &Config{TxRing: &TxRing{Frames: 64}, TxRetries: 1})
		pool, _ := frame.NewPool(nil)
		var offered uint64
		var wg sync.WaitGroup
		var lastErr error
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := frame.NewBatch(64)
			data := testFrame(1, 200)
			for {
				n, _ := pool.Alloc(b, 64)
				for i := range n {
					b.Frames[i].Resize(len(data))
					copy(b.Bytes(i), data)
				}
				offered += uint64(n)
				if _, err := a.Send(b); err != nil {
					lastErr = err
					return
				}
			}
		}()
		time.Sleep(20 * time.Millisecond)
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("sender still running 5 s after Close")
		}
		if !errors.Is(lastErr, xmit.ErrClosed) {
			t.Fatalf("Send after Close: %v", lastErr)
		}
		if s := a.Stats(); s.TxPackets+s.TxDropped != offered || s.TxPackets == 0 {
			t.Fatalf("offered %d, stats %+v", offered, s)
		}
		if pool.InUse() != 0 {
			t.Fatalf("%d frames not released", pool.InUse())
		}
	}
}
