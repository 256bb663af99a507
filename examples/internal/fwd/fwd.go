// Package fwd is the IPv4 forwarding step the wirespeed examples assemble: VLAN demux, IPv4
// validation, a batched route lookup, TTL and checksum update, MAC rewrite, egress tagging and one
// Send per egress port per batch. Every frame that does not leave is counted under one reason.
// A Tap (Worker.SetTap) sees a sample of the verdicts, for a capture file; off, it costs one branch
// per frame.
package fwd

import (
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/wirespeed/wirespeed/fib"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/vlan"
	"github.com/wirespeed/wirespeed/xmit"
)

// Routes is a batched longest-prefix-match table: for each destination address it writes a next-hop
// index to nh, or NoRoute, and returns how many it wrote. It is called once per batch, never per
// frame. *fib.Table is the real one; Static is a tiny one for tests.
type Routes interface {
	LookupBatch(dst []uint32, nh []uint32) int
}

// NoRoute marks a destination without a route.
const NoRoute = fib.NoRoute

// Iface is a logical interface (as numbered in the vlan.Demux) as the router sees it.
type Iface struct {
	Name string
	MAC  frame.MAC // the router's address on it: frames to other unicast MACs are not routed
	MTU  int       // largest IPv4 packet it sends (0: 1500)
}

// Reason is why a frame was dropped.
type Reason int

const (
	DropVLAN      Reason = iota // no interface for the frame's port/VLAN (or malformed tag, or an interface added to the demux after New)
	DropNotIPv4                 // ARP, IPv6, anything else: this router only forwards IPv4
	DropNotForUs                // unicast to another MAC (promiscuous traffic)
	DropMalformed               // IPv4 header invalid or truncated
	DropChecksum                // IPv4 header checksum wrong
	DropTTL                     // TTL expired (a full router would send ICMP time exceeded)
	DropNoRoute                 // no route, or a route to an unknown next hop
	DropTooBig                  // larger than the egress MTU with DF set (would need ICMP frag-needed)
	DropEgress                  // header rewrite failed (no headroom), egress interface unknown to the demux, or egress port beyond the worker's ports
	NumReasons
)

var reasonNames = [NumReasons]string{"vlan", "not-ipv4", "not-for-us", "malformed", "checksum", "ttl", "no-route", "too-big", "egress"}

// Forwarded is the verdict a Tap sees for a frame handed to an egress port (not a drop reason).
const Forwarded = NumReasons

func (r Reason) String() string {
	if r == Forwarded {
		return "forwarded"
	}
	if r < 0 || r > NumReasons {
		return "?"
	}
	return reasonNames[r]
}

// Tap sees a sample of the frames a Worker forwards or drops (see Worker.SetTap): d is the frame's
// bytes as they leave (forwarded: rewritten and tagged) or as they were judged (dropped; an
// out-of-band VLAN tag is no longer in them), valid only during the call. A Tap must not keep d,
// must not block and, to keep the forwarding path allocation-free, must not allocate. It is called
// from the worker's goroutine; a Tap shared by several workers must be safe for concurrent use.
type Tap interface {
	Capture(d []byte, verdict Reason)
}

// Router holds the configuration all workers share. Build it, then start workers. The route table
// and the next hops may change at any time (fib's tables are RCU-style): a worker reads each once
// per batch and holds no reference count. SetRoutes swaps the whole route table.
//
// A next hop's Ifindex is the egress interface (the demux's interface ID, whose tags its Rewrite writes) and
// DstMAC the neighbour's address; the source address is the interface's MAC (Iface.MAC). Next hops
// flagged fib.NextHopDrop are blackholes.
type Router struct {
	demux  *vlan.Demux
	ifaces []Iface
	routes atomic.Pointer[routesBox]
	nh     *fib.NextHops
	ports  int

	mu      sync.Mutex
	workers []*Worker
}

type routesBox struct{ r Routes }

// New returns a router over demux's interfaces (ifaces indexed by interface ID) with ports physical
// ports.
func New(demux *vlan.Demux, ports int, ifaces []Iface, routes Routes, nexthops *fib.NextHops) (*Router, error) {
	for _, id := range demux.Interfaces() {
		if int(id) >= len(ifaces) {
			return nil, fmt.Errorf("fwd: demux interface %d has no Iface entry", id)
		}
	}
	r := &Router{demux: demux, ifaces: append([]Iface(nil), ifaces...), ports: ports, nh: nexthops}
	for i := range r.ifaces {
		if r.ifaces[i].MTU == 0 {
			r.ifaces[i].MTU = 1500
		}
	}
	r.SetRoutes(routes)
	return r, nil
}

// SetRoutes swaps the route table.
func (r *Router) SetRoutes(rt Routes) { r.routes.Store(&routesBox{rt}) }

// Ifaces returns the interface table.
func (r *Router) Ifaces() []Iface { return r.ifaces }

// Worker forwards batches for one goroutine. Its counters are plain per-frame increments published by
// Flush.
type Worker struct {
	r     *Router
	vw    *vlan.Worker
	dst   []uint32
	nh    []uint32
	out   []*frame.Batch // per egress port
	drops [NumReasons]uint64
	fwd   uint64
	pub   [NumReasons + 1]atomic.Uint64

	macs []uint64 // per interface ID, the router's MAC as mac48 reads it

	tap      Tap // nil: off (one predictable branch per frame)
	tapEvery uint32
	tapN     uint32

	// Per next-hop index, the egress decision and its prebuilt L2 header (vlan.Rewrite), built the
	// first time a version of the next-hop table sends a frame to that index: a per-worker
	// adjacency cache, so a frame's L2 rewrite is one fixed-size copy. rwView is the version the
	// entries with gen == rwGen were built from; a new version bumps rwGen and so invalidates them all.
	rw      []adj
	rwView  *fib.NextHopView
	rwGen   uint64 // 0 only before the first batch; never wraps
	noRoute adj
}

// adj is one next hop as the worker's egress needs it.
type adj struct {
	rw   vlan.Rewrite
	mtu  uint16
	drop Reason // NumReasons: forward; DropNoRoute or DropEgress: drop
	gen  uint64
}

// SetTap makes the worker hand every nth frame it forwards or drops (n <= 1: every frame) to t;
// nil turns it off. Frames the VLAN demux drops are not seen. Call it from the worker's goroutine
// or before the worker starts.
func (w *Worker) SetTap(t Tap, n int) {
	w.tap, w.tapEvery, w.tapN = t, uint32(max(n, 1)), 0
}

func (w *Worker) capture(d []byte, verdict Reason) {
	if w.tapN++; w.tapN >= w.tapEvery {
		w.tapN = 0
		w.tap.Capture(d, verdict)
	}
}

// NewWorker returns a worker whose batches hold at most batch frames.
func (r *Router) NewWorker(batch int) *Worker {
	if batch <= 0 {
		batch = frame.DefaultBatch
	}
	w := &Worker{r: r, vw: r.demux.NewWorker(), dst: make([]uint32, batch), nh: make([]uint32, batch)}
	w.noRoute = adj{drop: DropNoRoute}
	for _, ifc := range r.ifaces {
		w.macs = append(w.macs, mac48(ifc.MAC[:]))
	}
	for i := 0; i < r.ports; i++ {
		w.out = append(w.out, frame.NewBatch(batch))
	}
	r.mu.Lock()
	r.workers = append(r.workers, w)
	r.mu.Unlock()
	return w
}

// Forward routes every frame of in, received on physical port `port`, and sends the survivors with
// one Send per egress port; in is empty afterwards. ports are indexed by physical port number.
func (w *Worker) Forward(port uint16, in *frame.Batch, ports []xmit.Port) {
	before := len(in.Frames)
	w.vw.ClassifyInPlace(port, in) // no byte moves: the next hop's vlan.Rewrite replaces the whole L2 header below
	w.drops[DropVLAN] += uint64(before - len(in.Frames))
	if len(in.Frames) > len(w.dst) {
		panic("fwd: batch larger than the worker's capacity")
	}

	// Pass 1: validate; gather destinations. Dropped frames are moved behind the kept ones.
	fr := in.Frames
	macs := w.macs
	k := 0
	for i := range fr {
		f := &fr[i]
		d := f.Data(in.Mem)
		l3 := int(f.L3)
		reason := NumReasons
		switch {
		case binary.BigEndian.Uint16(d[l3-2:]) != frame.TypeIPv4:
			reason = DropNotIPv4
		case int(f.Port) >= len(macs): // an interface the demux gained after New: no Iface for it
			reason = DropVLAN
		case d[0]&1 == 0 && mac48(d) != macs[f.Port]: // unicast, not to us
			reason = DropNotForUs
		default:
			ip, err := frame.ParseIPv4(d[l3:])
			switch {
			case err != nil:
				reason = DropMalformed
			case !ip.ChecksumOK():
				reason = DropChecksum
			case ip.TTL() <= 1:
				reason = DropTTL
			default:
				w.dst[k] = ip.Dst()
			}
		}
		if reason != NumReasons {
			w.drops[reason]++
			if w.tap != nil {
				w.capture(d, reason)
			}
			continue
		}
		if k != i {
			fr[k], fr[i] = fr[i], fr[k]
		}
		k++
	}
	w.release(in, k)

	// Pass 2: one lookup call for the whole batch.
	w.r.routes.Load().r.LookupBatch(w.dst[:k], w.nh[:k])
	nhs := w.r.nh.View()
	if nhs != w.rwView {
		w.rwView = nhs
		w.rwGen++
	}

	// Pass 3: next hop, MTU, the next hop's prebuilt L2 header (Apply), TTL; sort by egress port.
	for _, o := range w.out {
		o.Adopt(in)
	}
	fr = in.Frames
	k2 := 0
	rw, gen := w.rw, w.rwGen
	for i := range fr {
		f := &fr[i]
		// The adjacency cache, looked up inline (buildAdj fills a missing entry).
		var a *adj
		if idx := w.nh[i]; uint64(idx) < uint64(len(rw)) && rw[idx].gen == gen {
			a = &rw[idx]
		} else {
			a = w.buildAdj(nhs, idx)
			rw = w.rw // buildAdj may have grown it
		}
		if a.drop != NumReasons {
			w.drops[a.drop]++
			if w.tap != nil {
				w.capture(f.Data(in.Mem), a.drop)
			}
			fr[k2], fr[i] = fr[i], fr[k2]
			k2++
			continue
		}
		ip := frame.IPv4(f.Data(in.Mem)[f.L3:])
		if ip.TotalLen() > int(a.mtu) && ip.DontFragment() {
			w.drops[DropTooBig]++
			if w.tap != nil {
				w.capture(f.Data(in.Mem), DropTooBig)
			}
			fr[k2], fr[i] = fr[i], fr[k2]
			k2++
			continue
		}
		p := int(a.rw.Port()) // < len(w.out): buildAdj checked it
		if w.vw.Apply(in, i, &a.rw) != nil {
			w.drops[DropEgress]++
			if w.tap != nil {
				w.capture(f.Data(in.Mem), DropEgress)
			}
			fr[k2], fr[i] = fr[i], fr[k2]
			k2++
			continue
		}
		ip.DecTTL()
		if w.tap != nil {
			w.capture(f.Data(in.Mem), Forwarded)
		}
		w.out[p].Append(*f)
	}
	// The first k2 frames were dropped in pass 3; the rest moved to the per-port batches.
	if k2 > 0 && in.Owner != nil {
		in.Owner.Release(fr[:k2])
	}
	in.Reset()
	for p, o := range w.out {
		if len(o.Frames) == 0 {
			continue
		}
		w.fwd += uint64(len(o.Frames))
		ports[p].Send(o)
	}
}

// mac48 reads the first 6 bytes of b (a MAC address) as one integer.
func mac48(b []byte) uint64 {
	_ = b[5]
	return uint64(binary.LittleEndian.Uint32(b)) | uint64(binary.LittleEndian.Uint16(b[4:]))<<32
}

// buildAdj builds (or finds shared) the worker's egress entry for next-hop index idx of version nhs:
// Forward's adjacency cache had no entry of this version for it.
func (w *Worker) buildAdj(nhs *fib.NextHopView, idx uint32) *adj {
	if uint64(idx) >= uint64(len(w.rw)) {
		if uint64(idx) >= uint64(nhs.Len()) {
			// NoRoute, or an index this version never had: the shared drop entry.
			return &w.noRoute
		}
		w.rw = append(w.rw, make([]adj, nhs.Len()-len(w.rw))...) // on a table change only
	}
	a := &w.rw[idx]
	*a = adj{drop: DropNoRoute, gen: w.rwGen}
	hop := nhs.At(idx)
	ifaces := w.r.ifaces
	if hop == nil || hop.Flags&fib.NextHopDrop != 0 || int(hop.Ifindex) >= len(ifaces) {
		return a
	}
	rw, err := w.r.demux.Rewrite(hop.Ifindex, hop.DstMAC, ifaces[hop.Ifindex].MAC, frame.TypeIPv4)
	if err != nil || int(rw.Port()) >= len(w.out) {
		a.drop = DropEgress
		return a
	}
	a.rw, a.mtu, a.drop = rw, uint16(min(ifaces[hop.Ifindex].MTU, 0xffff)), NumReasons
	return a
}

// release frees in.Frames[k:] (the dropped ones) and truncates in to k frames.
func (w *Worker) release(in *frame.Batch, k int) {
	if k < len(in.Frames) && in.Owner != nil {
		in.Owner.Release(in.Frames[k:])
	}
	in.Frames = in.Frames[:k]
}

// Flush publishes the worker's counters (and its vlan worker's). Call it from the worker's goroutine
// every few milliseconds.
func (w *Worker) Flush() {
	for i := range w.drops {
		w.pub[i].Store(w.drops[i])
	}
	w.pub[NumReasons].Store(w.fwd)
	w.vw.Flush()
}

// Counters is the sum over workers of frames handed to Send (Forwarded: the ports count what they
// then queued or dropped) and frames dropped by reason.
type Counters struct {
	Forwarded uint64
	Drops     [NumReasons]uint64
}

// Counters sums the published counters of every worker. Safe from any goroutine.
func (r *Router) Counters() Counters {
	var c Counters
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, w := range r.workers {
		for i := range c.Drops {
			c.Drops[i] += w.pub[i].Load()
		}
		c.Forwarded += w.pub[NumReasons].Load()
	}
	return c
}

// IfaceStats returns interface id's counters.
func (r *Router) IfaceStats(id uint16) vlan.Counters { return r.demux.Stats(id) }
