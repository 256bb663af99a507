package afxdp

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/internal/nettest"
	"github.com/wirespeed/wirespeed/xmit"
	"golang.org/x/sys/unix"
)

func TestRoundTrip(t *testing.T) {
	pr := newPair(t, 0)
	p := pr.open(t, nil)
	raw := pr.raw(t)
	t.Logf("mode %s, attach %s", p.Mode(), p.AttachMode())
	if p.Mode() != ModeCopy && p.Mode() != ModeZeroCopy {
		t.Fatalf("Mode() = %s after Open", p.Mode())
	}

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
	// In copy mode the UMEM is in unaligned chunk mode (Linux 5.4 and later; older kernels
	// ignore the flag): the kernel wrote the frames' offsets into the top bits of the
	// descriptors' addresses, which Recv added back.
	if d := p.rx.descs[(p.rx.local-1)&p.rx.mask]; p.Mode() == ModeCopy && kernelAtLeast(5, 4) && d.Addr>>48 == 0 {
		t.Errorf("last RX descriptor address %#x has no offset bits: want unaligned chunk mode", d.Addr)
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
	if pool.InUse() != 0 || b.Len() != 0 {
		t.Fatalf("pool frames not released (%d) or batch not emptied (%d)", pool.InUse(), b.Len())
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
	if a := p.UMEM().Accounting(); a.Free != a.Total {
		t.Fatalf("after Close: %+v", a)
	}
	if n, err := p.Recv(frame.NewBatch(4)); n != 0 || err != xmit.ErrClosed {
		t.Fatalf("Recv after Close = %d, %v", n, err)
	}
}

// TestFrames sends every kind of frame both ways and checks every byte, in each attach mode and
// chunk size, up to the largest frame that mode takes on veth.
func TestFrames(t *testing.T) {
	cases := []struct {
		name      string
		attach    Attach
		frameSize int
		mtu       int
		max       int // largest frame received
	}{
		// 2048-byte chunks: the kernel puts frames 256 bytes in (XDP_PACKET_HEADROOM).
		{"native-2k", AttachNative, 2048, 1500, 1514},
		// Native XDP on veth refuses a peer MTU above 3506 (one page less headroom and
		// skb_shared_info), so 3520-byte frames are the largest.
		{"native-4k", AttachNative, 4096, 3506, 3520},
		// Generic XDP takes any MTU; the chunk limits a frame to 4096-256 = 3840 bytes.
		{"generic-4k", AttachGeneric, 4096, 9000, 3840},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pr := newPair(t, c.mtu)
			p := pr.open(t, &Config{Attach: c.attach, UMEMConfig: UMEMConfig{FrameSize: c.frameSize}})
			if p.AttachMode() != c.attach {
				t.Fatalf("attached %s, want %s", p.AttachMode(), c.attach)
			}
			raw := pr.raw(t)
			var sent [][]byte
			add := func(n int, tags ...uint16) {
				f := testFrame(n, uint32(len(sent)), tags...)
				sent = append(sent, f)
				raw.send(t, f)
			}
			for _, n := range []int{14, 15, 20, 59, 60, 64, 128, 1000, c.max - 1, c.max} {
				add(n)
				if n >= 22 {
					add(n, 100)
					add(n, 7, 4094)
				}
			}
			got := recvXDP(t, p, len(sent), 3*time.Second)
			if len(got) != len(sent) {
				t.Fatalf("received %d of %d frames", len(got), len(sent))
			}
			for i := range sent {
				if !bytes.Equal(got[i], sent[i]) {
					t.Fatalf("frame %d (%d bytes): got %d bytes %x...\nwant %x...", i, len(sent[i]), len(got[i]), got[i][:min(40, len(got[i]))], sent[i][:40])
				}
			}
			if c.attach == AttachGeneric {
				// One byte over the chunk: the kernel drops it and counts it.
				before := p.Stats().RxDropped
				raw.send(t, testFrame(c.max+1, 999))
				deadline := time.Now().Add(2 * time.Second)
				for p.Stats().RxDropped == before && time.Now().Before(deadline) {
					time.Sleep(5 * time.Millisecond)
				}
				if p.Stats().RxDropped == before {
					t.Fatalf("a %d-byte frame was not counted as dropped", c.max+1)
				}
			}

			// Send them back: received frames (zero copy, same UMEM), with the outer tag of every
			// tagged one taken out of band so Send must put it back in.
			b := frame.NewBatch(len(sent))
			pool, _ := frame.NewPool(&frame.PoolConfig{BufSize: 4096})
			pool.Alloc(b, len(sent))
			for i, f := range sent {
				if len(f) >= 22 && isTagged(f) {
					// As AF_PACKET hands it over: the outer tag out of band, the rest unpadded.
					b.Frames[i].Resize(len(f) - 4)
					copy(b.Bytes(i), f[:12])
					copy(b.Bytes(i)[12:], f[16:])
					b.Frames[i].Flags |= frame.FlagVLAN
					b.Frames[i].TPID, b.Frames[i].TCI = 0x8100, uint16(f[14])<<8|uint16(f[15])
				} else {
					b.Frames[i].Resize(len(f))
					copy(b.Bytes(i), f)
				}
			}
			if n, err := p.Send(b); n != len(sent) || err != nil {
				t.Fatalf("Send = %d, %v (stats %+v)", n, err, p.Stats())
			}
			for i := range sent {
				f := raw.recv(t, 2*time.Second)
				if !bytes.Equal(f, sent[i]) {
					t.Fatalf("a received frame %d: %d bytes %x...\nwant %d bytes %x...", i, len(f), f[:min(len(f), 40)], len(sent[i]), sent[i][:min(len(sent[i]), 40)])
				}
			}
			p.Send(frame.NewBatch(1))
			checkAcct(t, p.UMEM())
		})
	}
}

func isTagged(f []byte) bool { return f[12] == 0x81 && f[13] == 0 }

// TestEcho sends received frames straight back (no copy) and checks that nothing allocates.
func TestEcho(t *testing.T) {
	pr := newPair(t, 0)
	p := pr.open(t, nil)
	raw := pr.raw(t)
	const n = 300
	for i := 0; i < n; i++ {
		raw.send(t, testFrame(60+i%200, uint32(i)))
	}
	b := frame.NewBatch(64)
	echoed := 0
	step := func() {
		k, err := p.Recv(b)
		if err != nil {
			t.Fatal(err)
		}
		m, _ := p.Send(b)
		echoed += m
		if k == 0 {
			p.Wait(int64(time.Millisecond))
		}
	}
	if allocs := testing.AllocsPerRun(50, step); allocs != 0 {
		t.Errorf("Recv+Send allocates %.1f times per batch", allocs)
	}
	deadline := time.Now().Add(2 * time.Second)
	for echoed < n && time.Now().Before(deadline) {
		step()
	}
	if echoed < n {
		t.Fatalf("echoed %d of %d", echoed, n)
	}
	for i := 0; i < n; i++ {
		f := raw.recv(t, 2*time.Second)
		if want := testFrame(60+i%200, uint32(i)); !bytes.Equal(f, want) {
			t.Fatalf("echo %d: %x\nwant %x", i, f, want)
		}
	}
	if s := p.Stats(); s.TxCopied != 0 || s.TxDropped != 0 {
		t.Fatalf("echo copied or dropped: %+v", s)
	}
	p.Send(b)
	checkAcct(t, p.UMEM())
}

// TestCloseWhileReceiving closes the port while one goroutine blocks in Wait and another keeps
// frames it received; no hang, no lost chunk, and the UMEM is unmapped after the last release.
func TestCloseWhileReceiving(t *testing.T) {
	pr := newPair(t, 0)
	p := pr.open(t, nil)
	raw := pr.raw(t)
	for i := 0; i < 10; i++ {
		raw.send(t, testFrame(100, uint32(i)))
	}
	held := frame.NewBatch(64)
	deadline := time.Now().Add(2 * time.Second)
	for held.Len() == 0 && time.Now().Before(deadline) {
		if n, _ := p.Recv(held); n == 0 {
			p.Wait(int64(time.Millisecond))
		}
	}
	if held.Len() == 0 {
		t.Fatal("nothing received")
	}
	u := p.UMEM()
	// What the held frames hold (the veth may also deliver the kernel's own IPv6 ND/MLD frames, so
	// compare with this copy, not with the test frame's pattern).
	want := make([][]byte, held.Len())
	for i := range held.Frames {
		want[i] = append([]byte(nil), held.Bytes(i)...)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		b := frame.NewBatch(64)
		for {
			if err := p.Wait(-1); err != nil {
				errs <- err
				return
			}
			if _, err := p.Recv(b); err != nil {
				errs <- err
				return
			}
			b.Free()
		}
	}()
	time.Sleep(20 * time.Millisecond) // let it block (the test holds whether or not it did)
	for i := 0; i < 5; i++ {
		raw.send(t, testFrame(100, uint32(100+i)))
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if err := <-errs; err != xmit.ErrClosed {
		t.Fatalf("receiver ended with %v, want ErrClosed", err)
	}
	// The held frames are still readable and accounted for.
	for i := range held.Frames {
		if !bytes.Equal(held.Bytes(i), want[i]) {
			t.Fatalf("held frame %d changed after Close: % x, was % x", i, held.Bytes(i), want[i])
		}
	}
	a := u.Accounting()
	if a.User != held.Len() || a.Free+a.User != a.Total || a.Fill != 0 || a.TX != 0 {
		t.Fatalf("after Close, holding %d: %+v", held.Len(), a)
	}
	checkAcct(t, u)
	held.Free()
	if a := u.Accounting(); a.Free != a.Total || u.Mem() != nil {
		t.Fatalf("after the last release: %+v, mapped %v", a, u.Mem() != nil)
	}
	// Send after Close drops and counts.
	pool, _ := frame.NewPool(nil)
	b := frame.NewBatch(4)
	pool.Alloc(b, 2)
	if n, err := p.Send(b); n != 0 || err != xmit.ErrClosed || pool.InUse() != 0 || p.Stats().TxDropped != 2 {
		t.Fatalf("Send after Close = %d, %v; pool in use %d; stats %+v", n, err, pool.InUse(), p.Stats())
	}
	if err := p.Wait(0); err != xmit.ErrClosed {
		t.Fatalf("Wait after Close = %v", err)
	}
	if p.Close() != nil {
		t.Fatal("second Close failed")
	}
}

// TestFullTXRing offers a batch larger than the TX ring: what does not fit is dropped and counted.
func TestFullTXRing(t *testing.T) {
	pr := newPair(t, 0)
	p := pr.open(t, &Config{RingSize: 16, UMEMConfig: UMEMConfig{Frames: 128}})
	pool, _ := frame.NewPool(nil)
	b := frame.NewBatch(100)
	pool.Alloc(b, 100)
	for i := range b.Frames {
		f := testFrame(64, uint32(i))
		b.Frames[i].Resize(len(f))
		copy(b.Bytes(i), f)
	}
	n, err := p.Send(b)
	if err != nil || n != 16 {
		t.Fatalf("Send = %d, %v; want 16 (the ring)", n, err)
	}
	s := p.Stats()
	// 100 frames: 64 copied (half the UMEM went to the fill ring), 16 of them queued.
	if s.TxPackets != 16 || s.TxPackets+s.TxDropped != 100 || pool.InUse() != 0 {
		t.Fatalf("stats %+v, pool in use %d", s, pool.InUse())
	}
	checkAcct(t, p.UMEM())
}

// TestLinkDown: with the link down nothing leaves: Send drops and counts every frame (none waits on
// the TX ring). When the link comes back frames flow again and every chunk returns.
func TestLinkDown(t *testing.T) {
	pr := newPair(t, 0)
	p := pr.open(t, &Config{RingSize: 32})
	deadline := time.Now().Add(3 * time.Second)
	for !p.LinkUp() && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond) // operstate follows carrier through linkwatch
	}
	if !p.LinkUp() {
		t.Fatal("link down at start")
	}
	pr.a.Exec(t, "ip", "link", "set", pr.va, "down") // the peer: carrier off
	deadline = time.Now().Add(3 * time.Second)
	for p.LinkUp() && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if p.LinkUp() {
		t.Fatal("LinkUp with the peer down")
	}
	pr.b.Exec(t, "ip", "link", "set", pr.vb, "down")
	pool, _ := frame.NewPool(nil)
	sent, queued := 0, 0
	for i := 0; i < 5; i++ {
		b := frame.NewBatch(16)
		pool.Alloc(b, 16)
		for j := range b.Frames {
			b.Frames[j].Resize(64)
			copy(b.Bytes(j), testFrame(64, uint32(sent+j)))
		}
		sent += 16
		n, err := p.Send(b)
		if err != nil {
			t.Fatal(err)
		}
		queued += n
		checkAcct(t, p.UMEM())
	}
	s := p.Stats()
	if queued != 0 || s.TxDropped != uint64(sent) {
		t.Fatalf("queued %d of %d with the link down, stats %+v", queued, sent, s)
	}
	if a := p.UMEM().Accounting(); a.TX != 0 {
		t.Fatalf("accounting %+v, want nothing on the TX side", a)
	}
	pr.b.Exec(t, "ip", "link", "set", pr.vb, "up")
	pr.a.Exec(t, "ip", "link", "set", pr.va, "up")
	waitLink(t, p, true)
	time.Sleep(3 * carrierEvery)
	raw := pr.raw(t)
	if k := sendTest(t, p, 16, 0); k != 16 {
		t.Fatalf("link back: queued %d of 16", k)
	}
	if f := raw.recv(t, 2*time.Second); f == nil {
		t.Fatal("link back: nothing received")
	}
	deadline = time.Now().Add(3 * time.Second)
	for p.UMEM().Accounting().TX != 0 && time.Now().Before(deadline) {
		p.Send(frame.NewBatch(1)) // kick and reap
		time.Sleep(5 * time.Millisecond)
	}
	if a := p.UMEM().Accounting(); a.TX != 0 {
		t.Fatalf("TX ring did not drain after link up: %+v", a)
	}
	checkAcct(t, p.UMEM())
}

// TestSharedUMEM forwards frames from one port to another port of the same UMEM: descriptors move
// from one socket's RX ring to the other's TX ring without a copy.
func TestSharedUMEM(t *testing.T) {
	nettest.RequirePriv(t)
	a, r, c := nettest.NewNS(t, "xa"), nettest.NewNS(t, "xr"), nettest.NewNS(t, "xc")
	va, ra := nettest.Veth(t, a, r, "va", "ra")
	rc, vc := nettest.Veth(t, r, c, "rc", "vc")
	u, err := NewUMEM(nil)
	if err != nil {
		t.Fatal(err)
	}
	var in, out *Port
	err = r.Do(func() (err error) {
		if in, err = Open(ra, 0, &Config{UMEM: u}); err != nil {
			return err
		}
		out, err = Open(rc, 0, &Config{UMEM: u})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if u.Close() != ErrUMEMInUse {
		t.Fatal("UMEM closed under its ports")
	}
	src := (&pair{a: a, va: va}).raw(t)
	dst := (&pair{a: c, va: vc}).raw(t)
	const n = 200
	for i := 0; i < n; i++ {
		src.send(t, testFrame(60+i, uint32(i), uint16(i%3)))
	}
	b := frame.NewBatch(64)
	fwd := 0
	deadline := time.Now().Add(3 * time.Second)
	for fwd < n && time.Now().Before(deadline) {
		k, err := in.Recv(b)
		if err != nil {
			t.Fatal(err)
		}
		if k == 0 {
			in.Wait(int64(time.Millisecond))
			continue
		}
		// Keep only test frames.
		j := 0
		for i := range b.Frames {
			if isTest(b.Bytes(i)) {
				b.Frames[i], b.Frames[j] = b.Frames[j], b.Frames[i]
				j++
			}
		}
		u.Release(b.Frames[j:])
		b.Frames = b.Frames[:j]
		m, _ := out.Send(b)
		fwd += m
		checkAcct(t, u)
	}
	for i := 0; i < n; i++ {
		f := dst.recv(t, 2*time.Second)
		if want := testFrame(60+i, uint32(i), uint16(i%3)); !bytes.Equal(f, want) {
			t.Fatalf("forwarded frame %d: %x\nwant %x", i, f, want)
		}
	}
	if s := out.Stats(); s.TxCopied != 0 || s.TxPackets != n {
		t.Fatalf("out stats %+v: want %d sent without copies", s, n)
	}
	out.Send(b)
	checkAcct(t, u)
	// Close one port while the other keeps the UMEM: its chunks come back.
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	checkAcct(t, u)
	if a := u.Accounting(); a.Fill != out.acct.fill {
		t.Fatalf("after closing one port: %+v", a)
	}
	out.Close()
	if a := u.Accounting(); a.Free != a.Total {
		t.Fatalf("after closing both: %+v", a)
	}
	if err := u.Close(); err != nil || u.Mem() != nil {
		t.Fatalf("UMEM Close: %v, mapped %v", err, u.Mem() != nil)
	}
}

// TestKernelDrops: with a tiny UMEM and nobody receiving, the kernel runs out of fill chunks and
// the drops show in Stats and XDPStats.
func TestKernelDrops(t *testing.T) {
	pr := newPair(t, 0)
	p := pr.open(t, &Config{RingSize: 16, UMEMConfig: UMEMConfig{Frames: 16}})
	raw := pr.raw(t)
	for i := 0; i < 64; i++ {
		raw.send(t, testFrame(64, uint32(i)))
	}
	deadline := time.Now().Add(2 * time.Second)
	for p.Stats().RxDropped == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	x, err := p.XDPStats()
	if err != nil {
		t.Fatal(err)
	}
	if s := p.Stats(); s.RxDropped == 0 || x.RxDropped+x.RxRingFull == 0 {
		t.Fatalf("no drop counted: %+v %+v", s, x)
	}
	t.Logf("xdp stats %+v", x)
	checkAcct(t, p.UMEM())
}

// TestOpenErrors: zero-copy on veth fails with ErrZeroCopy (and auto falls back to copy), a queue
// the interface lacks fails cleanly, and a failed Open leaves the working port alone.
func TestOpenErrors(t *testing.T) {
	pr := newPair(t, 0)
	var err error
	pr.b.Do(func() error {
		_, err = Open(pr.vb, 0, &Config{Mode: ModeZeroCopy})
		return nil
	})
	if !errors.Is(err, ErrZeroCopy) {
		t.Fatalf("zero-copy on veth: %v, want ErrZeroCopy", err)
	}
	if _, err := Open(pr.vb, 0, nil); err == nil {
		t.Fatal("opened an interface of another namespace")
	}
	if _, err := Open(pr.vb, 0, &Config{RingSize: 100}); err == nil {
		t.Fatal("ring size 100 accepted")
	}
	p := pr.open(t, nil)
	if p.Mode() != ModeCopy {
		t.Fatalf("auto mode on veth runs %s", p.Mode())
	}
	err = pr.b.Do(func() error {
		q, err := Open(pr.vb, 5, nil)
		if err == nil {
			q.Close()
			return fmt.Errorf("queue 5 of a one-queue veth opened")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	raw := pr.raw(t)
	raw.send(t, testFrame(80, 1))
	if got := recvXDP(t, p, 1, 2*time.Second); len(got) != 1 {
		t.Fatal("first port stopped receiving after a failed second Open")
	}
}

// TestBusyPoll opens a port with preferred busy polling: the socket carries the options and still
// receives; a budget out of range is refused.
func TestBusyPoll(t *testing.T) {
	pr := newPair(t, 0)
	p := pr.open(t, &Config{BusyPoll: 32, BusyPollMicros: 50})
	// (Linux reads SO_BUSY_POLL_BUDGET back with no getsockopt.)
	for _, o := range [][2]int{{unix.SO_PREFER_BUSY_POLL, 1}, {unix.SO_BUSY_POLL, 50}} {
		if v, err := unix.GetsockoptInt(p.FD(), unix.SOL_SOCKET, o[0]); err != nil || v != o[1] {
			t.Errorf("getsockopt %#x = %d, %v; want %d", o[0], v, err, o[1])
		}
	}
	raw := pr.raw(t)
	var sent [][]byte
	for i := range 8 {
		f := testFrame(60, uint32(i))
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
	for _, c := range []Config{{BusyPoll: -1}, {BusyPoll: 1 << 16}, {BusyPoll: 8, BusyPollMicros: -1}} {
		err := pr.b.Do(func() error {
			q, err := Open(pr.vb, 0, &c)
			if err == nil {
				q.Close()
			}
			return err
		})
		if err == nil {
			t.Errorf("Open with %+v: no error", c)
		}
	}
}
