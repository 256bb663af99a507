package neigh

import (
	"net/netip"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/frame"
)

// refill fills b with fresh rx buffers holding frames (each with Frame.Port port, L3 14).
func (r *rig) refill(b *frame.Batch, port uint16, frames [][]byte) {
	if n, _ := r.rx.Alloc(b, len(frames)); n != len(frames) {
		r.t.Fatalf("rx pool: %d of %d", n, len(frames))
	}
	for i, d := range frames {
		f := &b.Frames[i]
		f.Resize(len(d))
		copy(f.Data(b.Mem), d)
		f.Port, f.L3 = port, frame.EtherLen
	}
}

// TestZeroAllocsInput: answering requests and taking replies from known neighbours allocates
// nothing, and really answers.
func TestZeroAllocsInput(t *testing.T) {
	r := newRig(t)
	var frames [][]byte
	for i := range 16 {
		a := netip.AddrFrom4([4]byte{10, 0, 0, byte(10 + i)})
		m := frame.MAC{2, 0, 0, 0, 1, byte(i)}
		if i%2 == 0 {
			frames = append(frames, arpBytes(t, 1, macBC, m, a, frame.MAC{}, own0))
		} else {
			r.tab.AddNextHop(uint32(i), 0, a)
			frames = append(frames, arpBytes(t, 2, mac0, m, a, mac0, own0))
		}
	}
	r.input(0, frames...) // learn them first
	r.out.Free()
	b := frame.NewBatch(64)
	before := r.tab.Counters()
	runs := 0
	allocs := testing.AllocsPerRun(100, func() {
		r.refill(b, 0, frames)
		if r.tab.Input(b, r.out) != 16 {
			t.Fatal("not taken")
		}
		r.out.Free()
		runs++
	})
	if allocs != 0 {
		t.Fatalf("%v allocs per Input", allocs)
	}
	c := r.tab.Counters()
	if got := c.RepliesSent - before.RepliesSent; got != uint64(runs*8) {
		t.Fatalf("%d replies sent in %d runs", got, runs)
	}
	if got := c.Replies - before.Replies; got != uint64(runs*8) {
		t.Fatalf("%d replies taken in %d runs", got, runs)
	}
	for _, e := range r.tab.Entries() {
		if e.State != StateReachable && e.State != StateStale {
			t.Fatalf("%+v", e)
		}
	}
}

// TestZeroAllocsHold: holding frames for a neighbour that never answers (queue overflow, requests,
// FAILED, traffic restarting it, failed frames out of Poll) allocates nothing.
func TestZeroAllocsHold(t *testing.T) {
	r := newRig(t)
	r.tab.AddNextHop(nhN, 0, hostN)
	frames := make([][]byte, 16)
	for i := range frames {
		frames[i] = make([]byte, 100)
		frames[i][12], frames[i][13] = 8, 0
	}
	b := frame.NewBatch(64)
	now := time.Duration(0)
	runs := 0
	allocs := testing.AllocsPerRun(200, func() {
		r.refill(b, 0, frames)
		for i := range b.Frames {
			b.Frames[i].Meta = nhN
		}
		r.tab.Hold(b, r.out)
		now += 300 * time.Millisecond
		r.at(now)
		r.tab.Poll(r.out, r.ready, r.failed)
		r.out.Free()
		r.failed.Free()
		runs++
	})
	if allocs != 0 {
		t.Fatalf("%v allocs per Hold and Poll", allocs)
	}
	c := r.tab.Counters()
	if c.Held != uint64(runs*16) || c.RequestsSent < uint64(runs/4) || c.Failures == 0 || c.Failed == 0 || c.QueueOverflow == 0 {
		t.Fatalf("after %d runs: %+v", runs, c)
	}
	r.checkConserved()
}

// TestZeroAllocsPoll: frames held for a valid neighbour going out of Poll's ready batch, and the
// DELAY-PROBE-REACHABLE cycle of a next hop in use, allocate nothing.
func TestZeroAllocsPoll(t *testing.T) {
	r := newRig(t)
	r.tab.AddNextHop(nhN, 0, hostN)
	r.replyFrom(0, macA, hostN, own0, mac0)
	r.out.Free()
	frames := make([][]byte, 8)
	for i := range frames {
		frames[i] = make([]byte, 80)
	}
	reply := [][]byte{arpBytes(t, 2, mac0, macA, hostN, mac0, own0)}
	in := frame.NewBatch(64)
	b := frame.NewBatch(64)
	now := time.Duration(0)
	runs := 0
	allocs := testing.AllocsPerRun(300, func() {
		r.refill(b, 0, frames)
		for i := range b.Frames {
			b.Frames[i].Meta = nhN
		}
		r.tab.Hold(b, r.out)
		now += time.Second
		r.at(now)
		r.tab.Poll(r.out, r.ready, r.failed)
		if len(r.out.Frames) > 0 && now%(2*time.Second) == 0 { // a probe: answer it (every other time)
			r.refill(in, 0, reply)
			r.tab.Input(in, nil)
		}
		r.out.Free()
		r.ready.Free()
		runs++
	})
	if allocs != 0 {
		t.Fatalf("%v allocs per Hold and Poll", allocs)
	}
	c := r.tab.Counters()
	if c.Ready != uint64(runs*8) || c.ProbesSent == 0 || c.Replies < 2 {
		t.Fatalf("after %d runs: %+v", runs, c)
	}
	if e := r.entry(0, hostN); !e.State.Valid() {
		t.Fatalf("%+v", e)
	}
	r.checkConserved()
}
