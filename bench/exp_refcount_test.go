package bench

import (
	"fmt"
	"github.com/wirespeed/wirespeed/bench/internal/stats"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/wirespeed/wirespeed/fib"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/fwd"
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
	routes fwd.Routes
	demux  *vlan.Demux
	ifMAC  []frame.MAC
	nhs    *fib.NextHops
	rc     []rcEntry
}

func newRCRouter(tb testing.TB, routes fwd.Routes) *rcRouter {
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

func runRefcount(b *testing.B, routes fwd.Routes, probes []uint32, workers int, refcount bool) {
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
	runtime.GC() // the previous sub-benchmark's pools are garbage: collect them now
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

// TestExpRefcountInterleaved is BenchmarkExpRefcount made resistant to a shared machine's drift
// (skipped unless WIRESPEED_REFCOUNT_INTERLEAVED is set): the four cases (1 and 2 workers, refcount
// and view) run in turn for WIRESPEED_REFCOUNT_ROUNDS rounds (default 21) of
// WIRESPEED_REFCOUNT_BATCHES batches per worker (default 2048), the order rotated every round; it
// reports each case's median wall ns/frame (all workers' frames) and min-max, and the median of the
// per-round ratio refcount/view for each worker count.
func TestExpRefcountInterleaved(t *testing.T) {
	if os.Getenv("WIRESPEED_REFCOUNT_INTERLEAVED") == "" {
		t.Skip("set WIRESPEED_REFCOUNT_INTERLEAVED=1 to run (takes a minute; loads the real table)")
	}
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs GOMAXPROCS >= 2")
	}
	rt, probes := realFIB(t)
	rounds := envInt("WIRESPEED_REFCOUNT_ROUNDS", 21)
	per := envInt("WIRESPEED_REFCOUNT_BATCHES", 2048)
	type rcCase struct {
		workers  int
		refcount bool
		r        *rcRouter
		ws       []*rcWorker
		ns       []float64
	}
	var cases []*rcCase
	for _, n := range []int{1, 2} {
		for _, rc := range []bool{true, false} {
			c := &rcCase{workers: n, refcount: rc, r: newRCRouter(t, rt)}
			for i := range n {
				c.ws = append(c.ws, newRCWorker(t, c.r, rc, probes, uint64(i)*100003))
			}
			cases = append(cases, c)
		}
	}
	run := func(c *rcCase) float64 {
		var wg sync.WaitGroup
		start := make(chan struct{})
		for _, w := range c.ws {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for range per {
					w.step()
				}
			}()
		}
		t0 := time.Now()
		close(start)
		wg.Wait()
		return float64(time.Since(t0).Nanoseconds()) / float64(per*pipeBatch*c.workers)
	}
	for _, c := range cases {
		run(c) // warm up
	}
	for r := range rounds {
		for j := range cases {
			c := cases[(j+r)%len(cases)]
			c.ns = append(c.ns, run(c))
		}
	}
	var out strings.Builder
	fmt.Fprintf(&out, "load average: %s%d rounds x %d batches of %d frames per worker; wall ns/frame over all workers\n", loadavg(), rounds, per, pipeBatch)
	fmt.Fprintf(&out, "| workers | nh | median ns/frame | min-max | Mpps (median) | refcount/view (per-round median) |\n|---|---|---|---|---|---|\n")
	for i, c := range cases {
		mode, ratio := "view", ""
		if c.refcount {
			mode = "refcount"
			rs := make([]float64, rounds)
			for r := range rounds {
				rs[r] = c.ns[r] / cases[i+1].ns[r]
			}
			ratio = fmt.Sprintf("%.2f", stats.Median(rs))
		}
		fmt.Fprintf(&out, "| %d | %s | %.1f | %.1f-%.1f | %.2f | %s |\n", c.workers, mode, stats.Median(c.ns), slices.Min(c.ns), slices.Max(c.ns), 1e3/stats.Median(c.ns), ratio)
	}
	for _, c := range cases {
		for _, w := range c.ws {
			if w.bad != 0 {
				t.Errorf("%d bad frames", w.bad)
			}
			for _, bt := range w.batches {
				bt.Free()
			}
		}
	}
	fmt.Fprintf(&out, "load average after: %s", loadavg())
	t.Log("\n" + out.String())
	if f := os.Getenv("WIRESPEED_REFCOUNT_OUT"); f != "" {
		if err := os.WriteFile(f, []byte(out.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
}
