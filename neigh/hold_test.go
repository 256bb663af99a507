package neigh

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/fib"
	"github.com/wirespeed/wirespeed/frame"
)

// TestHoldQueueFrames: a queue keeps at most QueueFrames frames, the newest, in order; the older
// ones are counted as they are pushed out.
func TestHoldQueueFrames(t *testing.T) {
	r := newRig(t, func(c *Config) { c.QueueFrames = 4 })
	r.tab.AddNextHop(nhN, 0, hostN)
	for i := range 10 {
		r.hold(nhN, 0, 100+i, byte(i))
		if e := r.entry(0, hostN); e.Held != min(i+1, 4) {
			t.Fatalf("after %d frames: %d held", i+1, e.Held)
		}
		r.checkConserved()
	}
	if c := r.tab.Counters(); c.QueueOverflow != 6 || c.Held != 10 {
		t.Fatalf("counters %+v", c)
	}
	r.replyFrom(0, macA, hostN, own0, mac0)
	r.poll()
	if len(r.ready.Frames) != 4 {
		t.Fatalf("%d ready, want 4", len(r.ready.Frames))
	}
	for k := range r.ready.Frames {
		if n := r.ready.Frames[k].Len; n != uint16(106+k) || r.ready.Bytes(k)[20] != byte(6+k) {
			t.Fatalf("ready frame %d: %d bytes of %x", k, n, r.ready.Bytes(k)[20])
		}
	}
	r.ready.Free()
	r.drainOut()
	r.checkConserved()
}

// TestHoldQueueBytes: a queue keeps at most QueueBytes bytes; a frame larger than that is dropped
// alone, and a frame larger than a pool buffer too.
func TestHoldQueueBytes(t *testing.T) {
	r := newRig(t, func(c *Config) { c.QueueFrames = 100; c.QueueBytes = 1000 })
	r.tab.AddNextHop(nhN, 0, hostN)
	sizes := []int{400, 400, 300, 200, 999, 1000, 1001, 60, 60}
	// Queue after each:   400; 800; 700 (pushes out 400); 900; 999 (pushes out everything); 1000 (same); 1000 (too big: dropped); 60 (pushes out the 1000); 120.
	wantHeld := []int{1, 2, 2, 3, 1, 1, 1, 1, 2}
	for i, n := range sizes {
		r.hold(nhN, 0, n, byte(i))
		e := r.entry(0, hostN)
		if e.Held != wantHeld[i] {
			t.Fatalf("after frame %d (%d bytes): %d held, want %d", i, n, e.Held, wantHeld[i])
		}
		r.tab.mu.Lock()
		qb := r.tab.ents[r.tab.byKey[key{0, be32(hostN)}]].qBytes
		r.tab.mu.Unlock()
		if qb > 1000 {
			t.Fatalf("after frame %d: %d bytes held", i, qb)
		}
		r.checkConserved()
	}
	if c := r.tab.Counters(); c.HoldTooBig != 1 || c.QueueOverflow != 6 {
		t.Fatalf("counters %+v", c)
	}
	// Larger than the pool's buffers (2112 - 128 bytes of headroom).
	r2 := newRig(t, func(c *Config) { c.QueueBytes = 1 << 20 })
	r2.tab.AddNextHop(nhN, 0, hostN)
	r2.hold(nhN, 0, 1984, 1)
	r2.hold(nhN, 0, 1985, 2)
	if c := r2.tab.Counters(); c.Held != 1 || c.HoldTooBig != 1 {
		t.Fatalf("counters %+v", c)
	}
	r2.drainOut()
	r2.checkConserved()
}

// TestHoldNoNeighbourNoBuffer: frames for next hops the table does not follow, and frames the pool
// has no buffer for, are counted and released.
func TestHoldNoNeighbourNoBuffer(t *testing.T) {
	pool, err := frame.NewPool(&frame.PoolConfig{Buffers: 3})
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, func(c *Config) { c.Pool = pool; c.QueueFrames = 10 })
	r.pool = pool
	r.tab.AddNextHop(nhN, 0, hostN)
	b := frame.NewBatch(8)
	r.rx.Alloc(b, 6)
	for i := range b.Frames {
		b.Frames[i].Resize(80)
		b.Frames[i].Meta = nhN
	}
	b.Frames[0].Meta = 99
	r.tab.Hold(b, r.out) // 5 frames for nhN, 3 buffers: 3 held, 2 without a buffer, and none for the request
	if c := r.tab.Counters(); c.HoldNoNeighbour != 1 || c.Held != 3 || c.HoldNoBuffer != 2 || c.HoldIn != 6 {
		t.Fatalf("counters %+v", c)
	}
	if r.rx.InUse() != 0 || len(b.Frames) != 0 {
		t.Fatal("originals not released")
	}
	// The request found no buffer: counted.
	if c := r.tab.Counters(); c.GenNoBuffer != 1 || c.RequestsSent != 0 {
		t.Fatalf("counters %+v", c)
	}
	r.checkConserved()
}

// TestHoldKeepsMetadata: a held frame comes out of ready as it went in: bytes, Port, L3, Meta,
// the out-of-band VLAN tag.
func TestHoldKeepsMetadata(t *testing.T) {
	r := newRig(t)
	r.tab.AddNextHop(nhN, 1, host1)
	b := r.held(nhN, 1, 200, 0x33)
	f := &b.Frames[0]
	f.Flags, f.TPID, f.TCI, f.L3 = frame.FlagVLAN, 0x8100, 0x2005, 18
	orig := append([]byte(nil), b.Bytes(0)...)
	want := *f
	r.tab.Hold(b, r.out)
	r.replyFrom(1, macA, host1, own1b, mac1)
	r.poll()
	if len(r.ready.Frames) != 1 {
		t.Fatalf("%d ready", len(r.ready.Frames))
	}
	g := r.ready.Frames[0]
	if !bytes.Equal(r.ready.Bytes(0), orig) || g.Flags != want.Flags || g.TPID != want.TPID || g.TCI != want.TCI ||
		g.Port != want.Port || g.L3 != want.L3 || g.Meta != want.Meta || g.Len != want.Len {
		t.Fatalf("ready %+v, want %+v", g, want)
	}
	if r.ready.Owner != frame.Owner(r.pool) {
		t.Fatal("ready is not a batch of the table's pool")
	}
	r.ready.Free()
	r.drainOut()
	r.checkConserved()
}

// TestFailedFrames: a neighbour that never answers sends its held frames to failed, as received.
func TestFailedFrames(t *testing.T) {
	r := newRig(t)
	r.tab.AddNextHop(nhN, 0, hostN)
	r.tab.AddNextHop(nhN+1, 0, hostM)
	for i := range 3 {
		r.hold(nhN, 0, 64+i, byte(i))
	}
	r.hold(nhN+1, 0, 70, 9)
	r.replyFrom(0, macB, hostM, own0, mac0) // hostM answers
	for d := time.Duration(0); d <= 3*time.Second; d += 100 * time.Millisecond {
		r.at(d)
		r.poll()
	}
	if e := r.entry(0, hostN); e.State != StateFailed || e.Held != 0 {
		t.Fatalf("entry %+v", e)
	}
	if len(r.failed.Frames) != 3 || len(r.ready.Frames) != 1 {
		t.Fatalf("%d failed, %d ready", len(r.failed.Frames), len(r.ready.Frames))
	}
	for k := range r.failed.Frames {
		f := &r.failed.Frames[k]
		if f.Meta != nhN || f.Len != uint16(64+k) || r.failed.Bytes(k)[20] != byte(k) {
			t.Fatalf("failed frame %d: %+v", k, *f)
		}
	}
	if h := r.nextHop(nhN); h.Flags&fib.NextHopUnresolved == 0 {
		t.Fatalf("next hop of a failed neighbour %+v", h)
	}
	if c := r.tab.Counters(); c.Failed != 3 || c.Ready != 1 || c.Failures != 1 || c.RequestsSent != 4 {
		t.Fatalf("counters %+v", c)
	}
	r.ready.Free()
	r.failed.Free()
	r.drainOut()
	r.checkConserved()
}

// TestReadyBatchFull: frames that do not fit ready wait for the next Poll.
func TestReadyBatchFull(t *testing.T) {
	r := newRig(t, func(c *Config) { c.QueueFrames = 10 })
	r.ready = frame.NewBatch(4)
	r.tab.AddNextHop(nhN, 0, hostN)
	for i := range 10 {
		r.hold(nhN, 0, 64, byte(i))
	}
	r.replyFrom(0, macA, hostN, own0, mac0)
	if _, ok := r.tab.NextTimer(); !ok {
		t.Fatal("ready frames waiting, no timer")
	}
	var got []byte
	for len(got) < 10 {
		r.poll()
		if len(r.ready.Frames) == 0 {
			t.Fatalf("nothing ready after %d", len(got))
		}
		for k := range r.ready.Frames {
			got = append(got, r.ready.Bytes(k)[20])
		}
		r.ready.Free()
		r.checkConserved()
	}
	if !bytes.Equal(got, []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}) {
		t.Fatalf("ready in order %v", got)
	}
	r.drainOut()
}

// TestMACChange: the next hop's DstMAC follows the neighbour's MAC, whatever teaches it.
func TestMACChange(t *testing.T) {
	r := newRig(t)
	r.tab.AddNextHop(nhN, 0, hostN)
	r.tab.AddNextHop(nhN+1, 0, hostN) // two next hops on one neighbour
	check := func(mac frame.MAC) {
		t.Helper()
		for _, idx := range []uint32{nhN, nhN + 1} {
			if h := r.nextHop(idx); h.DstMAC != mac || h.Flags != 0 || h.Ifindex != 0 {
				t.Fatalf("next hop %d: %+v, want %v", idx, h, mac)
			}
		}
	}
	r.replyFrom(0, macA, hostN, own0, mac0)
	check(macA)
	r.requestFrom(0, macB, hostN, hostN) // gratuitous
	check(macB)
	r.requestFrom(0, macC, hostN, own0) // a request for us
	check(macC)
	r.replyFrom(0, macA, hostN, own0, macBC) // a broadcast reply
	check(macA)
	r.requestFrom(0, macB, hostN, hostM) // a request for another host
	check(macB)
	if err := r.tab.AddStatic(0, hostN, macC); err != nil {
		t.Fatal(err)
	}
	check(macC)
	r.replyFrom(0, macA, hostN, own0, mac0) // static now
	check(macC)
	if c := r.tab.Counters(); c.MACChanges != 5 {
		t.Fatalf("counters %+v", c)
	}
	r.drainOut()
}

// TestNextHopLifecycle: AddNextHop writes the entry at once, moves it to another neighbour when
// added again, and RemoveNextHop leaves it alone.
func TestNextHopLifecycle(t *testing.T) {
	r := newRig(t)
	if err := r.tab.AddStatic(0, hostM, macB); err != nil {
		t.Fatal(err)
	}
	r.tab.AddNextHop(3, 0, hostN)
	if h := r.nextHop(3); h.Flags != fib.NextHopUnresolved || h.Ifindex != 0 {
		t.Fatalf("%+v", h)
	}
	r.tab.AddNextHop(3, 0, hostM) // moved to a known neighbour: usable at once
	if h := r.nextHop(3); h.Flags != 0 || h.DstMAC != macB {
		t.Fatalf("%+v", h)
	}
	if e := r.entry(0, hostN); len(e.NextHops) != 0 {
		t.Fatalf("old neighbour still has %v", e.NextHops)
	}
	r.tab.RemoveNextHop(3)
	r.tab.RemoveNextHop(3)
	r.tab.Delete(0, hostM)
	if h := r.nextHop(3); h.Flags != 0 || h.DstMAC != macB {
		t.Fatalf("%+v after RemoveNextHop", h)
	}
	for _, err := range []error{
		r.tab.AddNextHop(fib.MaxNextHop+1, 0, hostN),
		r.tab.AddNextHop(1, 2, hostN),
		r.tab.AddNextHop(1, 0, netip.MustParseAddr("::1")),
		r.tab.AddNextHop(1, 0, own0),
		r.tab.AddNextHop(1, 0, netip.MustParseAddr("224.0.0.5")),
		r.tab.AddStatic(0, hostN, macBC),
		r.tab.Delete(0, netip.MustParseAddr("10.0.0.99")),
	} {
		if err == nil {
			t.Fatal("no error")
		}
	}
	r.drainOut()
}

// TestConfigErrors: New rejects what cannot work, with ErrConfig.
func TestConfigErrors(t *testing.T) {
	small, _ := frame.NewPool(&frame.PoolConfig{Buffers: 4, BufSize: 100, Headroom: 50})
	for _, c := range []Config{
		{Retrans: -1},
		{McastProbes: -1},
		{MaxEntries: 1 << 21},
		{QueueFrames: 5000},
		{Pool: small},
		{Ifaces: []Iface{{MAC: macBC}}},
		{Ifaces: []Iface{{MAC: macA, Addrs: []netip.Prefix{netip.MustParsePrefix("::1/128")}}}},
		{Ifaces: []Iface{{MAC: macA, Addrs: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/8")}}}},
	} {
		if _, err := New(&c); err == nil {
			t.Fatalf("%+v: no error", c)
		}
	}
	if _, err := New(nil); err != nil {
		t.Fatal(err)
	}
}
