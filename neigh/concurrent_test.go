package neigh

import (
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/fib"
	"github.com/wirespeed/wirespeed/frame"
)

// TestConcurrent: Input, Hold, Poll and the control calls from several goroutines while "workers"
// read the next hops (run it with -race); afterwards every buffer is accounted for.
func TestConcurrent(t *testing.T) {
	var clock atomic.Int64
	start := time.Unix(0, 0)
	r := newRig(t, func(c *Config) { c.Now = func() time.Time { return start.Add(time.Duration(clock.Load())) } })
	const rounds = 300
	r.tab.AddNextHop(nhN, 0, hostN)
	r.tab.AddNextHop(nhN+1, 1, host1)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	reply := arpBytes(t, 2, mac0, macA, hostN, mac0, own0)
	request := arpBytes(t, 1, macBC, macB, hostM, frame.MAC{}, own0)
	wg.Add(3)
	go func() { // ARP in
		defer wg.Done()
		out := frame.NewBatch(64)
		b := frame.NewBatch(64)
		for range rounds {
			r.refill(b, 0, [][]byte{reply, request})
			r.tab.Input(b, out)
			out.Free()
		}
	}()
	go func() { // held frames, timers
		defer wg.Done()
		out, ready, failed := frame.NewBatch(64), frame.NewBatch(64), frame.NewBatch(64)
		b := frame.NewBatch(64)
		data := [][]byte{make([]byte, 90), make([]byte, 90)}
		for range rounds {
			r.refill(b, 0, data)
			b.Frames[0].Meta, b.Frames[1].Meta = nhN, nhN+1
			r.tab.Hold(b, out)
			clock.Add(int64(300 * time.Millisecond))
			r.tab.Poll(out, ready, failed)
			out.Free()
			ready.Free()
			failed.Free()
		}
	}()
	go func() { // control and operators
		defer wg.Done()
		for i := range rounds {
			r.tab.AddNextHop(nhN, 0, hostN)
			r.tab.AddNextHop(nhN+1, 1, netip.AddrFrom4([4]byte{192, 168, 2, byte(100 + i%3)}))
			if i%7 == 0 {
				r.tab.RemoveNextHop(nhN + 1)
			}
			r.tab.Entries()
			r.tab.Counters()
			r.tab.NextTimer()
		}
	}()
	var bad atomic.Value
	var readers sync.WaitGroup
	readers.Add(1)
	go func() { // a worker: one view per batch; a resolved next hop always has the neighbour's MAC
		defer readers.Done()
		for {
			v := r.tab.NextHops().View()
			if h := v.At(nhN); h != nil && (h.Ifindex != 0 || (h.Flags&fib.NextHopUnresolved == 0 && h.DstMAC != macA)) {
				bad.Store(*h)
			}
			select {
			case <-stop:
				return
			default:
			}
		}
	}()
	wg.Wait()
	close(stop)
	readers.Wait()
	if h := bad.Load(); h != nil {
		t.Fatalf("a worker saw next hop %+v", h)
	}
	r.replyFrom(0, macA, hostN, own0, mac0)
	if h := r.nextHop(nhN); h.Flags != 0 || h.DstMAC != macA {
		t.Fatalf("next hop %+v after a reply", h)
	}
	r.out.Free()
	r.checkConserved()
	if r.rx.InUse() != 0 {
		t.Fatalf("%d input buffers in use", r.rx.InUse())
	}
}
