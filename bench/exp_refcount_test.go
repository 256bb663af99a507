package bench

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/wirespeed/wirespeed/fib"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/vlan"
)

// BenchmarkExpRefcount re-runs the 2017 netdev lesson in memory: per-packet reference counts on the
// route (skb_dst_force / dst_release) cost Linux 20-30 % with VLANs, because every packet of every
// core does two atomic read-modify-writes on the same few cache lines. Here 1 or 2 workers (one
// goroutine each; GOMAXPROCS must be at least the worker count) forward the same frames over the
// same real table (901,899 prefixes, 16 next hops) through the same pipeline (VLAN classification,
// IPv4 checks, LookupBatch, next hop, Encap, TTL/checksum), differing only in how a frame gets its
// next hop:
//
//	nh=refcount  a shared table of entries {refcount, next hop} (one 64-byte line each, the
//	             refcount beside the fields every packet reads, as in struct dst_entry): the
//	             refcount is incremented at lookup and decremented once the batch is done
//	             ("after transmit"), an atomic add each
//	nh=view      wirespeed: one fib.NextHops.View() per batch, an immutable table read without
//	             any write
//
// Each worker forwards its own 1024 frames in place, over and over (they are built so that the
// forwarded frame is again a valid frame for the router: the next hop's MAC is the router's own on
// the egress VLAN), and restores their TTL every 250 rounds; no port, no pool, nothing else shared.
// One op is one batch of 64 frames of one worker; ns/frame is the wall time over all frames of all
// workers (with 2 workers, half the 1-worker figure is perfect scaling), Mpps their sum.
func BenchmarkExpRefcount(b *testing.B) {
	rt, probes := realFIB(b)
	for _, workers := range []int{1, 2} {
		for _, mode := range []string{"refcount", "view"} {
			b.Run(fmt.Sprintf("workers=%d/nh=%s", workers, mode), func(b *testing.B) {
				if runtime.GOMAXPROCS(0) < workers {
					b.Skipf("GOMAXPROCS %d < %d workers", runtime.GOMAXPROCS(0), workers)
				}
				runRefcount(b, rt, probes, workers, mode == "refcount")
			})
		}
	}
}

// rcEntry is a next hop with its reference count, one cache line each.
type rcEntry struct {
	ref atomic.Int64
	hop fib.NextHop
	_   [64 - 8 - unsafe.Sizeof(fib.NextHop{})]byte
}

// rcRouter is what the workers share: read-only tables, plus the refcounts.
type rcRouter struct {
	routes lpm
	demux  *vlan.Demux
	ifMAC  []frame.MAC
	nhs    *fib.NextHops
	rc     []rcEntry
}

func newRCRouter(tb testing.TB, routes lpm) *rcRouter {
	r := &rcRouter{routes: routes, demux: vlan.NewDemux(2, vlan.Parser{}), nhs: new(fib.NextHops), rc: make([]rcEntry, numNextHops)}
	r.ifMAC = []frame.MAC{routerMAC(0)}
	for i := 1; i <= pipeVLANs; i++ {
		if err := r.demux.Add(vlan.Interface{ID: uint16(i), Port: portTrunk, Outer: vlan.C(pipeVID(i))}); err != nil {
			tb.Fatal(err)
		}
		r.ifMAC = append(r.ifMAC, routerMAC(i))
	}
	for k := uint32(0); k < numNextHops; k++ {
		// Hairpin: next hop k is the router itself on VLAN k+1, so what it forwards can be forwarded again.
		h := fib.NextHop{Ifindex: uint16(k + 1), DstMAC: routerMAC(int(k + 1))}
		if err := r.nhs.Set(k, h); err != nil {
			tb.Fatal(err)
		}
		r.rc[k].hop = h
	}
	return r
}

// rcWorker forwards its own frames in place.
type rcWorker struct {
	r        *rcRouter
	refcount bool
	pool     *frame.Pool
	batches  []*frame.Batch
	vw       *vlan.Worker
	dst, nh  []uint32
	next     int // next batch
	rounds   int
	fwd, bad uint64
}

const (
	rcBatches = 16  // per worker: 1024 frames
	rcTTL     = 255 // restored every rcRounds passes over the frames
	rcRounds  = 250
)

func newRCWorker(tb testing.TB, r *rcRouter, refcount bool, probes []uint32, seed uint64) *rcWorker {
	pool, err := frame.NewPool(&frame.PoolConfig{Buffers: rcBatches * pipeBatch})
	if err != nil {
		tb.Fatal(err)
	}
	w := &rcWorker{r: r, refcount: refcount, pool: pool, vw: r.demux.NewWorker(),
		dst: make([]uint32, pipeBatch), nh: make([]uint32, pipeBatch)}
	n := 0
	for j := 0; j < rcBatches; j++ {
		b := frame.NewBatch(pipeBatch)
		pool.Alloc(b, pipeBatch)
		for i := range b.Frames {
			b.Frames[i].Resize(frameLen)
			vl := 1 + int((seed+uint64(n))%pipeVLANs)
			writeFrame(b.Bytes(i), vl, probes[(int(seed)*7919+n)%len(probes)], rcTTL, uint16(n), uint16(n), 9)
			n++
		}
		w.batches = append(w.batches, b)
	}
	return w
}

// forward forwards one batch in place; the frames stay in it.
func (w *rcWorker) forward(b *frame.Batch) {
	r := w.r
	w.vw.ClassifyInPlace(portTrunk, b)
	fr := b.Frames
	mem := b.Mem
	dst := w.dst[:len(fr)]
	for i := range fr {
		f := &fr[i]
		d := f.Data(mem)
		ip, err := frame.ParseIPv4(d[f.L3:])
		if err != nil || frame.Ether(d).Dst() != r.ifMAC[f.Port] || !ip.ChecksumOK() || ip.TTL() <= 1 {
			w.bad++
			dst[i] = 0 // no route in the real table: left alone below
			continue
		}
		dst[i] = ip.Dst()
	}
	nh := w.nh[:len(fr)]
	r.routes.LookupBatch(dst, nh)
	if w.refcount {
		rc := r.rc
		for i := range fr {
			if nh[i] >= uint32(len(rc)) {
				continue
			}
			e := &rc[nh[i]]
			e.ref.Add(1) // dst_hold / skb_dst_force
			w.rewrite(b, i, &e.hop)
		}
		for i := range fr { // the batch has been sent: dst_release
			if nh[i] < uint32(len(rc)) {
				rc[nh[i]].ref.Add(-1)
			}
		}
		return
	}
	view := r.nhs.View()
	for i := range fr {
		if hop := view.At(nh[i]); hop != nil {
			w.rewrite(b, i, hop)
		}
	}
}

func (w *rcWorker) rewrite(b *frame.Batch, i int, hop *fib.NextHop) {
	f := &b.Frames[i]
	ip := frame.IPv4(f.Data(b.Mem)[f.L3:])
	f.Out = hop.Ifindex
	if _, err := w.vw.Encap(b, i, hop.DstMAC, w.r.ifMAC[hop.Ifindex]); err != nil {
		w.bad++
		return
	}
	ip.DecTTL()
	w.fwd++
}

// step forwards the next batch, restoring the TTLs after every rcRounds passes.
func (w *rcWorker) step() {
	w.forward(w.batches[w.next])
	if w.next++; w.next == len(w.batches) {
		w.next = 0
		if w.rounds++; w.rounds == rcRounds {
			w.rounds = 0
			for _, b := range w.batches {
				for i := range b.Frames {
					f := &b.Frames[i]
					ip := frame.IPv4(f.Data(b.Mem)[f.L3:])
					ip[8] = rcTTL
					ip.SetChecksum()
				}
			}
		}
	}
}

func runRefcount(b *testing.B, routes lpm, probes []uint32, workers int, refcount bool) {
	r := newRCRouter(b, routes)
	ws := make([]*rcWorker, workers)
	for i := range ws {
		ws[i] = newRCWorker(b, r, refcount, probes, uint64(i)*100003)
		for range rcBatches { // warm up: one pass
			ws[i].step()
		}
		ws[i].fwd = 0
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, w := range ws {
		n := b.N / workers
		if i == 0 {
			n += b.N % workers
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for range n {
				w.step()
			}
		}()
	}
	b.ReportAllocs()
	b.ResetTimer()
	t0 := time.Now()
	close(start)
	wg.Wait()
	el := time.Since(t0)
	b.StopTimer()
	frames := b.N * pipeBatch
	var fwd, bad uint64
	for _, w := range ws {
		fwd, bad = fwd+w.fwd, bad+w.bad
	}
	if fwd != uint64(frames) || bad != 0 {
		b.Fatalf("forwarded %d of %d frames (%d bad)", fwd, frames, bad)
	}
	for k := range r.rc {
		if n := r.rc[k].ref.Load(); n != 0 {
			b.Fatalf("next hop %d: refcount %d after the run", k, n)
		}
	}
	b.ReportMetric(float64(el.Nanoseconds())/float64(frames), "ns/frame")
	b.ReportMetric(float64(frames)/el.Seconds()/1e6, "Mpps")
	for _, w := range ws {
		for _, bt := range w.batches {
			bt.Free()
		}
	}
}

func TestRefcountEntryLayout(t *testing.T) {
	if s := unsafe.Sizeof(rcEntry{}); s != 64 {
		t.Fatalf("rcEntry is %d bytes, want one cache line", s)
	}
}

// TestExpRefcountForwards runs both variants with two workers on a small table past a TTL restore:
// every frame forwarded every time, no reference left taken.
func TestExpRefcountForwards(t *testing.T) {
	steps := rcBatches*rcRounds + 3*rcBatches
	if testing.Short() {
		steps = 3 * rcBatches
	}
	for _, refcount := range []bool{true, false} {
		r := newRCRouter(t, smallFIB(t))
		var wg sync.WaitGroup
		ws := []*rcWorker{newRCWorker(t, r, refcount, testProbes(4096), 0), newRCWorker(t, r, refcount, testProbes(4096), 7)}
		for _, w := range ws {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range steps {
					w.step()
				}
			}()
		}
		wg.Wait()
		for i, w := range ws {
			if w.fwd != uint64(steps*pipeBatch) || w.bad != 0 {
				t.Errorf("refcount=%v worker %d: forwarded %d of %d, %d bad", refcount, i, w.fwd, steps*pipeBatch, w.bad)
			}
		}
		for k := range r.rc {
			if n := r.rc[k].ref.Load(); n != 0 {
				t.Errorf("next hop %d: refcount %d", k, n)
			}
		}
	}
}
