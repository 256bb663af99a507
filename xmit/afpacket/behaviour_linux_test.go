package afpacket

import (
	"encoding/binary"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/internal/nettest"
	"github.com/wirespeed/wirespeed/xmit"
)

// flowFrame is a UDP/IPv4 frame of flow f (source port 1000+f), carrying seq after the UDP header.
func flowFrame(f int, seq uint32) []byte {
	b := make([]byte, 64)
	copy(b[0:6], []byte{2, 0, 0, 0, 0, 2})
	copy(b[6:12], []byte{2, 0, 0, 0, 0, 1})
	binary.BigEndian.PutUint16(b[12:14], 0x0800)
	ip := b[14:34]
	ip[0], ip[8], ip[9] = 0x45, 64, 17
	binary.BigEndian.PutUint16(ip[2:4], 50)
	copy(ip[12:16], []byte{198, 18, 0, 1})
	copy(ip[16:20], []byte{198, 18, 0, 2})
	s := uint32(0)
	for i := 0; i < 20; i += 2 {
		s += uint32(binary.BigEndian.Uint16(ip[i:]))
	}
	s = s&0xffff + s>>16
	binary.BigEndian.PutUint16(ip[10:12], ^uint16(s))
	binary.BigEndian.PutUint16(b[34:36], uint16(1000+f))
	binary.BigEndian.PutUint16(b[36:38], 9)
	binary.BigEndian.PutUint16(b[38:40], 30)
	binary.BigEndian.PutUint32(b[42:46], seq)
	return b
}

// TestFanout opens the receiving interface twice in one hash fanout group: every frame arrives once,
// each flow on one socket only, and both sockets get some flows.
func TestFanout(t *testing.T) {
	for i, r := range rxModes {
		t.Run("rx="+r.name, func(t *testing.T) { testFanout(t, r.ring, uint16(77+i)) })
	}
}

func testFanout(t *testing.T, ring *FrameRing, group uint16) {
	l := newLink(t)
	a := openIn(t, l.nsA, l.ifA, nil)
	cfg := withRing(ring, &Config{Fanout: &Fanout{Group: group, Mode: FanoutHash}})
	r := [2]*Port{openIn(t, l.nsB, l.ifB, cfg), openIn(t, l.nsB, l.ifB, cfg)}
	const flows, per = 32, 20
	pool, _ := frame.NewPool(nil)
	var tx []txFrame
	for s := range per {
		for f := range flows {
			tx = append(tx, txFrame{data: flowFrame(f, uint32(s))})
		}
	}
	if k := sendFrames(t, a, pool, tx); k != len(tx) {
		t.Fatalf("sent %d of %d", k, len(tx))
	}
	owner := map[int]int{} // flow → socket
	count := [2]int{}
	seen := map[[2]int]bool{}
	b := frame.NewBatch(64)
	deadline := time.Now().Add(2 * time.Second)
	for count[0]+count[1] < len(tx) && time.Now().Before(deadline) {
		idle := true
		for i, p := range r {
			n, err := p.Recv(b)
			if err != nil {
				t.Fatal(err)
			}
			for j := range n {
				d := b.Bytes(j)
				if len(d) < 46 || binary.BigEndian.Uint16(d[12:14]) != 0x0800 {
					continue
				}
				f, s := int(binary.BigEndian.Uint16(d[34:36]))-1000, int(binary.BigEndian.Uint32(d[42:46]))
				if o, ok := owner[f]; ok && o != i {
					t.Fatalf("flow %d on both sockets", f)
				}
				owner[f] = i
				if seen[[2]int{f, s}] {
					t.Fatalf("flow %d frame %d received twice", f, s)
				}
				seen[[2]int{f, s}] = true
				count[i]++
				idle = false
			}
			b.Free()
		}
		if idle {
			r[0].Wait(int64(time.Millisecond))
		}
	}
	if count[0]+count[1] != len(tx) {
		t.Fatalf("received %d+%d of %d", count[0], count[1], len(tx))
	}
	if count[0] == 0 || count[1] == 0 {
		t.Fatalf("one socket got every flow (%d, %d)", count[0], count[1])
	}
}

// TestCloseWhileReceiving closes ports while a goroutine is blocked in Wait (no timeout) or looping in
// Recv/Wait: both must return ErrClosed promptly.
func TestCloseWhileReceiving(t *testing.T) {
	l := newLink(t)
	for _, r := range rxModes {
		for _, mode := range []string{"wait-forever", "recv-loop"} {
			t.Run("rx="+r.name+"/"+mode, func(t *testing.T) { testCloseWhileReceiving(t, l, r.ring, mode) })
		}
	}
}

func testCloseWhileReceiving(t *testing.T, l *link, ring *FrameRing, mode string) {
	p := openIn(t, l.nsB, l.ifB, withRing(ring, nil))
	done := make(chan error, 1)
	go func() {
		b := frame.NewBatch(32)
		for {
			if mode == "recv-loop" {
				if _, err := p.Recv(b); err != nil {
					done <- err
					return
				}
				b.Free()
				if err := p.Wait(int64(time.Millisecond)); err != nil {
					done <- err
					return
				}
				continue
			}
			if err := p.Wait(-1); err != nil {
				done <- err
				return
			}
		}
	}()
	time.Sleep(20 * time.Millisecond)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, xmit.ErrClosed) {
			t.Fatalf("got %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("receiver still blocked 5 s after Close")
	}
	b := frame.NewBatch(8)
	if _, err := p.Recv(b); !errors.Is(err, xmit.ErrClosed) {
		t.Fatalf("Recv after Close: %v", err)
	}
	if p.LinkUp() {
		t.Fatal("LinkUp after Close")
	}
	pool, _ := frame.NewPool(nil)
	pool.Alloc(b, 3)
	for i := range b.Frames {
		b.Frames[i].Resize(60)
	}
	if n, err := p.Send(b); n != 0 || !errors.Is(err, xmit.ErrClosed) || p.Stats().TxDropped != 3 || pool.InUse() != 0 {
		t.Fatalf("Send after Close: %d, %v, %+v, %d in use", n, err, p.Stats(), pool.InUse())
	}
	if err := p.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
}

// TestCloseWithFramesHeld closes a port while a consumer holds received frames: their bytes stay
// readable until released, and the last release unmaps the ring.
func TestCloseWithFramesHeld(t *testing.T) {
	for _, r := range rxModes {
		t.Run("rx="+r.name, func(t *testing.T) { testCloseWithFramesHeld(t, r.ring) })
	}
}

func testCloseWithFramesHeld(t *testing.T, ring *FrameRing) {
	l := newLink(t)
	a := openIn(t, l.nsA, l.ifA, nil)
	p := openIn(t, l.nsB, l.ifB, withRing(ring, nil))
	pool, _ := frame.NewPool(nil)
	sendFrames(t, a, pool, []txFrame{{data: testFrame(1, 100)}, {data: testFrame(2, 100)}})
	b := frame.NewBatch(8)
	deadline := time.Now().Add(2 * time.Second)
	for b.Len() == 0 && time.Now().Before(deadline) {
		p.Wait(int64(10 * time.Millisecond))
		p.Recv(b)
	}
	if b.Len() == 0 {
		t.Fatal("nothing received")
	}
	p.Close()
	if p.unmapped.Load() {
		t.Fatal("ring unmapped while frames are held")
	}
	for i := range b.Frames {
		if _, ok := seqOf(b.Bytes(i)); !ok {
			t.Fatalf("frame %d unreadable after Close: %x", i, b.Bytes(i))
		}
	}
	b.Free()
	if !p.unmapped.Load() {
		t.Fatal("ring still mapped after the last frame was released")
	}
}

// TestLinkDown takes the link down in the middle of a stream: Send drops and counts, Wait does not
// hang or spin, LinkUp follows, and traffic resumes when the link comes back.
func TestLinkDown(t *testing.T) {
	l := newLink(t)
	a := openIn(t, l.nsA, l.ifA, nil)
	b := openIn(t, l.nsB, l.ifB, nil)
	for start := time.Now(); !(a.LinkUp() && b.LinkUp()) && time.Since(start) < 3*time.Second; {
		time.Sleep(10 * time.Millisecond) // carrier comes up asynchronously (link watch)
	}
	if !a.LinkUp() || !b.LinkUp() {
		t.Fatal("link not up at start")
	}
	pool, _ := frame.NewPool(nil)
	var stop sync.WaitGroup
	quit := make(chan struct{})
	var waits, wakeErr int
	stop.Add(1)
	go func() { // the receiver: Recv/Wait with no timeout until closed
		defer stop.Done()
		batch := frame.NewBatch(32)
		for {
			select {
			case <-quit:
				return
			default:
			}
			if _, err := b.Recv(batch); err != nil {
				return
			}
			batch.Free()
			waits++
			if err := b.Wait(int64(50 * time.Millisecond)); err != nil {
				if !errors.Is(err, xmit.ErrClosed) {
					wakeErr++
				}
				return
			}
		}
	}()
	send := func(n int) {
		var tx []txFrame
		for i := range n {
			tx = append(tx, txFrame{data: testFrame(uint32(i), 80)})
		}
		sendFrames(t, a, pool, tx)
	}
	send(100)
	l.nsB.Exec(t, "ip", "link", "set", l.ifB, "down") // peer down: a loses carrier
	for start := time.Now(); a.LinkUp() && time.Since(start) < 3*time.Second; {
		time.Sleep(10 * time.Millisecond)
	}
	if a.LinkUp() || b.LinkUp() {
		t.Fatalf("LinkUp after down: a %v b %v", a.LinkUp(), b.LinkUp())
	}
	before := a.Stats()
	send(100)
	after := a.Stats()
	if got := (after.TxPackets - before.TxPackets) + (after.TxDropped - before.TxDropped); got != 100 {
		t.Fatalf("while down: %d sent+dropped of 100 (%+v)", got, after)
	}
	l.nsB.Exec(t, "ip", "link", "set", l.ifB, "up")
	deadline := time.Now().Add(3 * time.Second)
	for !a.LinkUp() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !a.LinkUp() {
		t.Fatal("carrier did not come back")
	}
	close(quit)
	stop.Wait()
	if wakeErr != 0 {
		t.Fatalf("Wait failed %d times", wakeErr)
	}
	// Traffic flows again to a fresh reader.
	send(10)
	if got := recvFrames(t, b, 10, 2*time.Second); len(got) < 10 {
		t.Fatalf("after link up: received %d of 10", len(got))
	}
}

// TestTxAccounting offers many frames to a receiver that does not read and has a tiny ring: every
// frame is accounted for, at the sender (sent or dropped) and at the receiver (delivered or dropped
// by the kernel for want of a block).
func TestTxAccounting(t *testing.T) {
	for _, r := range []struct {
		name string
		cfg  *Config
	}{
		{"blocks", &Config{BlockSize: 16384, BlockCount: 2}},
		{"frames", &Config{FrameRing: &FrameRing{Frames: 64}}},
	} {
		t.Run("rx="+r.name, func(t *testing.T) { testTxAccounting(t, r.cfg) })
	}
}

func testTxAccounting(t *testing.T, rxCfg *Config) {
	l := newLink(t)
	a := openIn(t, l.nsA, l.ifA, nil)
	b := openIn(t, l.nsB, l.ifB, rxCfg)
	pool, _ := frame.NewPool(nil)
	const n = 20000
	var tx []txFrame
	for i := range 64 {
		tx = append(tx, txFrame{data: testFrame(uint32(i), 60)})
	}
	for range n / 64 {
		sendFrames(t, a, pool, tx)
	}
	offered := uint64(n / 64 * 64)
	sa := a.Stats()
	if sa.TxPackets+sa.TxDropped != offered {
		t.Fatalf("sender: %d sent + %d dropped != %d offered", sa.TxPackets, sa.TxDropped, offered)
	}
	got := recvFrames(t, b, int(offered), 300*time.Millisecond)
	// Frames the kernel accepted from Send but dropped on the way (the veth peer's backlog full) are
	// counted by the sending veth (tx_dropped): sendmmsg reports success for them. Frames still in
	// the backlog (softirq deferred to ksoftirqd on a loaded machine) arrive a little later.
	var rs RingStats
	var vethDrops uint64
	for start := time.Now(); ; {
		got = append(got, recvFrames(t, b, int(offered), 10*time.Millisecond)...)
		rs, vethDrops = b.RingStats(), sysCounter(t, l.nsA, l.ifA, "tx_dropped")
		if rs.Packets+vethDrops == sa.TxPackets || time.Since(start) > 3*time.Second {
			break
		}
	}
	sb := b.Stats()
	t.Logf("sent %d (dropped %d), socket saw %d (ring drops %d), veth dropped %d", sa.TxPackets, sa.TxDropped, rs.Packets, rs.Drops, vethDrops)
	if rs.Drops == 0 {
		t.Fatalf("a small ring took %d frames without a drop", len(got))
	}
	if rs.Packets+vethDrops != sa.TxPackets {
		t.Fatalf("kernel saw %d frames for the socket and veth dropped %d, sender sent %d", rs.Packets, vethDrops, sa.TxPackets)
	}
	if sb.RxPackets+sb.RxDropped != rs.Packets || sb.RxDropped != rs.Drops {
		t.Fatalf("receiver: %d received + %d dropped != %d (ring %+v)", sb.RxPackets, sb.RxDropped, rs.Packets, rs)
	}
	if uint64(len(got)) != sb.RxPackets {
		t.Fatalf("read %d frames, port counted %d", len(got), sb.RxPackets)
	}
}

// sysCounter reads /sys/class/net/<ifname>/statistics/<name> as the namespace sees it.
func sysCounter(t *testing.T, ns *nettest.NS, ifname, name string) uint64 {
	t.Helper()
	out := ns.Exec(t, "cat", "/sys/class/net/"+ifname+"/statistics/"+name)
	v, err := strconv.ParseUint(strings.TrimSpace(out), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
