package ops

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/fwd"
)

// Limits of a Trace.
const (
	// MaxTrace is the most frames one trace request captures.
	MaxTrace = 1024
	// DefaultTraceSnap is how many bytes of each frame a trace keeps.
	DefaultTraceSnap = 128
)

// Trace captures the next N frames the workers handle, each with the stage's verdict, as VPP's
// `trace add` does: a request arms it (Capture), the workers copy the frames they judge into a
// fixed ring of slots until N are taken, and the request returns them.
//
// The workers' side is a TraceHook per worker: its Poll, called from the worker's goroutine once
// per round of its loop, turns the worker's tap (fwd.Worker.SetTap) on when a request is armed
// and back off when the ring is full. While no request is armed the workers see nothing of the
// trace but that one atomic load in Poll; while one is armed, each frame judged costs a
// compare-and-swap on a shared word and a copy of at most the snap length into a preallocated
// slot. Nothing on the workers' side allocates. The trace sees what the tap sees: every frame the
// stage judges (a held frame again when it is routed once resolved), not the frames the VLAN
// demux drops before the stage.
//
// Concurrency: Capture may be called from any goroutine; requests are served one at a time.
type Trace struct {
	snap  int
	buf   []byte // len(slots) * snap
	slots []traceSlot
	// state is gen<<32 | want<<16 | taken: the request's generation, the frames it wants and the
	// slots taken so far. Workers take slot `taken` with a compare-and-swap while taken < want.
	state atomic.Uint64
	mu    sync.Mutex // one request at a time
	gen   uint32     // under mu
}

type traceSlot struct {
	gen     atomic.Uint32 // the generation whose frame the slot holds (stored last)
	n, orig int32
	ts      int64
	worker  uint16
	ingress uint16 // the physical port (TraceHook.Ingress); noIngress: unknown
	verdict fwd.Reason
}

// noIngress marks a frame whose ingress port the worker did not say.
const noIngress = 0xffff

// NewTrace returns a trace whose requests capture at most size frames (0 or more than MaxTrace:
// MaxTrace) of at most snap bytes each (0: DefaultTraceSnap).
func NewTrace(size, snap int) *Trace {
	if size <= 0 || size > MaxTrace {
		size = MaxTrace
	}
	if snap <= 0 {
		snap = DefaultTraceSnap
	}
	return &Trace{snap: snap, buf: make([]byte, size*snap), slots: make([]traceSlot, size)}
}

// Size is the most frames one request captures.
func (t *Trace) Size() int { return len(t.slots) }

// take reserves a slot of the armed request: its index and the request's generation.
func (t *Trace) take() (int, uint32, bool) {
	for {
		s := t.state.Load()
		taken, want := s&0xffff, s>>16&0xffff
		if taken >= want {
			return 0, 0, false
		}
		if t.state.CompareAndSwap(s, s+1) {
			return int(taken), uint32(s >> 32), true
		}
	}
}

// capture copies d into a slot if a request wants more frames.
func (t *Trace) capture(d []byte, verdict fwd.Reason, worker, ingress uint16) {
	i, gen, ok := t.take()
	if !ok {
		return
	}
	s := &t.slots[i]
	s.n = int32(copy(t.buf[i*t.snap:(i+1)*t.snap], d))
	s.orig, s.ts, s.worker, s.ingress, s.verdict = int32(len(d)), time.Now().UnixNano(), worker, ingress, verdict
	s.gen.Store(gen)
}

// Armed reports whether a request is waiting for frames.
func (t *Trace) Armed() bool { return t.armed() }

// armed reports whether a request wants more frames.
func (t *Trace) armed() bool {
	s := t.state.Load()
	return s&0xffff < s>>16&0xffff
}

// TracedFrame is one frame a trace captured.
type TracedFrame struct {
	Worker int `json:"worker"`
	// Ingress is the physical port the frame came in on (Source.Ports' name, or its number), as
	// the worker's loop said (TraceHook.Ingress); "" when it did not.
	Ingress string `json:"ingress,omitempty"`
	Port    *int   `json:"port,omitempty"` // the ingress port's number
	Time    string `json:"time"`           // RFC 3339, nanoseconds
	Verdict string `json:"verdict"`        // forwarded, local, echoed, held, or the drop reason (fwd.Reason)
	Dropped bool   `json:"dropped"`
	Len     int    `json:"len"` // the frame's length; Data holds at most the trace's snap length
	// The frame's headers as the verdict saw them: a forwarded or echoed frame rewritten (the
	// egress MACs and tags), any other as it arrived.
	DstMAC    string     `json:"dst_mac,omitempty"`
	SrcMAC    string     `json:"src_mac,omitempty"`
	VLANs     []uint16   `json:"vlans,omitempty"` // outer first
	EtherType string     `json:"ethertype,omitempty"`
	Src       netip.Addr `json:"src,omitzero"`
	Dst       netip.Addr `json:"dst,omitzero"`
	Protocol  int        `json:"protocol,omitempty"`
	TTL       int        `json:"ttl,omitempty"`
	// Egress is, for a forwarded, echoed or held frame, where the route table sends its
	// destination now: the interface and next hop (looked up when the request returns).
	Egress *TraceEgress `json:"egress,omitempty"`
	Data   string       `json:"data"` // hex
}

// TraceEgress is the egress of a traced frame.
type TraceEgress struct {
	Interface string   `json:"interface,omitempty"`
	NextHop   *uint32  `json:"next_hop,omitempty"`
	Prefix    string   `json:"prefix,omitempty"`
	MAC       string   `json:"mac,omitempty"`
	Flags     []string `json:"flags,omitempty"`
}

// TraceResult is the answer to a trace request.
type TraceResult struct {
	Requested int           `json:"requested"`
	Captured  int           `json:"captured"`
	TimedOut  bool          `json:"timed_out"` // fewer frames came before the request's timeout
	Frames    []TracedFrame `json:"frames"`
}

// Capture arms the trace for the next n frames (at most Size), waits until the workers have
// taken them or ctx ends, and returns what was taken, decoded; the egress of each forwarded,
// echoed or held frame is looked up with lookup (nil: none). Concurrent requests wait for each
// other.
func (t *Trace) Capture(ctx context.Context, n int, lookup func(netip.Addr) *TraceEgress) TraceResult {
	return t.capture2(ctx, n, lookup, nil)
}

// capture2 is Capture with the ingress ports' names (nil: their numbers).
func (t *Trace) capture2(ctx context.Context, n int, lookup func(netip.Addr) *TraceEgress, ports []Port) TraceResult {
	n = max(1, min(n, len(t.slots)))
	t.mu.Lock()
	defer t.mu.Unlock()
	t.gen++
	gen := t.gen
	t.state.Store(uint64(gen)<<32 | uint64(n)<<16)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	timedOut := false
	for t.state.Load()&0xffff < uint64(n) {
		select {
		case <-ctx.Done():
			timedOut = true
		case <-tick.C:
		}
		if timedOut {
			break
		}
	}
	// Close the request: want = taken, so that no worker takes another slot.
	var taken int
	for {
		s := t.state.Load()
		taken = int(s & 0xffff)
		if t.state.CompareAndSwap(s, s&^(0xffff<<16)|uint64(taken)<<16) {
			break
		}
	}
	// A worker that took a slot is copying the frame; wait until it has stored it.
	for i := 0; i < taken; i++ {
		for spins := 0; t.slots[i].gen.Load() != gen; spins++ {
			if spins > 1000 {
				time.Sleep(10 * time.Microsecond)
			}
		}
	}
	res := TraceResult{Requested: n, Captured: taken, TimedOut: timedOut && taken < n, Frames: []TracedFrame{}}
	egress := map[netip.Addr]*TraceEgress{} // one lookup per destination
	for i := 0; i < taken; i++ {
		s := &t.slots[i]
		d := t.buf[i*t.snap : i*t.snap+int(s.n)]
		f := decodeTraced(d)
		f.Worker, f.Len, f.Verdict = int(s.worker), int(s.orig), s.verdict.String()
		if s.ingress != noIngress {
			p := int(s.ingress)
			f.Port, f.Ingress = &p, strconv.Itoa(p)
			if p < len(ports) && ports[p].Name != "" {
				f.Ingress = ports[p].Name
			}
		}
		f.Time = time.Unix(0, s.ts).UTC().Format(time.RFC3339Nano)
		f.Dropped = s.verdict < fwd.NumReasons
		switch s.verdict {
		case fwd.Forwarded, fwd.Echoed, fwd.Held:
			if lookup != nil && f.Dst.IsValid() {
				e, ok := egress[f.Dst]
				if !ok {
					e = lookup(f.Dst)
					egress[f.Dst] = e
				}
				f.Egress = e
			}
		}
		res.Frames = append(res.Frames, f)
	}
	return res
}

// decodeTraced reads the Ethernet, VLAN and IPv4 headers of d, as far as they go.
func decodeTraced(d []byte) TracedFrame {
	f := TracedFrame{Data: hex.EncodeToString(d)}
	if len(d) < 14 {
		return f
	}
	f.DstMAC, f.SrcMAC = frame.MAC(d[0:6]).String(), frame.MAC(d[6:12]).String()
	off := 12
	typ := binary.BigEndian.Uint16(d[off:])
	for (typ == 0x8100 || typ == 0x88a8 || typ == 0x9100) && len(d) >= off+6 {
		f.VLANs = append(f.VLANs, binary.BigEndian.Uint16(d[off+2:])&0x0fff)
		off += 4
		typ = binary.BigEndian.Uint16(d[off:])
	}
	off += 2
	f.EtherType = "0x" + hex.EncodeToString([]byte{byte(typ >> 8), byte(typ)})
	if typ == frame.TypeIPv4 && len(d) >= off+20 && d[off]>>4 == 4 {
		ip := frame.IPv4(d[off:])
		f.Src, f.Dst = netip.AddrFrom4([4]byte(ip[12:16])), netip.AddrFrom4([4]byte(ip[16:20]))
		f.Protocol, f.TTL = int(ip[9]), int(ip[8])
	}
	return f
}

// EgressLookup returns the lookup Trace.Capture wants, from src's route table, next hops and
// neighbours (as /route answers).
func EgressLookup(src *Source) func(netip.Addr) *TraceEgress { return NewCollector(src).egress }

// egress looks up where the route table sends a: the route, its next hop, the interface.
func (c *Collector) egress(a netip.Addr) *TraceEgress {
	ri := c.route(a, false)
	if !ri.Found && ri.Local == "" {
		return &TraceEgress{Flags: []string{"no-route"}}
	}
	e := &TraceEgress{Interface: ri.Interface, NextHop: ri.NextHop, Prefix: ri.Prefix, MAC: ri.MAC, Flags: ri.Flags}
	if ri.Local != "" {
		e.Flags = append(e.Flags, "local-"+ri.Local)
	}
	return e
}

// TraceHook is one worker's end of a Trace: its Poll turns the worker's tap on while a request
// wants frames and restores the worker's own tap (a pcap writer, say) when it does not. While on,
// the worker's own tap still sees every frame it would have seen.
//
// A TraceHook belongs to its worker's goroutine.
type TraceHook struct {
	t     *Trace
	w     *fwd.Worker
	on    bool
	base  fwd.Tap
	every int
	tap   traceTap
}

// traceTap is the tap a worker has while traced: the trace, then the worker's own tap sampled
// as SetTap would.
type traceTap struct {
	t       *Trace
	worker  uint16
	ingress uint16
	base    fwd.Tap
	every   uint32
	n       uint32
}

func (p *traceTap) Capture(d []byte, verdict fwd.Reason) {
	p.t.capture(d, verdict, p.worker, p.ingress)
	if p.base != nil {
		if p.n++; p.n >= p.every {
			p.n = 0
			p.base.Capture(d, verdict)
		}
	}
}

// Hook returns the hook of worker w, numbered id in the captures, whose own tap is base, given
// every every-th frame (nil: none). It sets w's tap to base (call it before the worker starts,
// or from its goroutine). A nil Trace returns a hook whose Poll does nothing.
func (t *Trace) Hook(id int, w *fwd.Worker, base fwd.Tap, every int) *TraceHook {
	every = max(every, 1)
	if base != nil {
		w.SetTap(base, every)
	}
	return &TraceHook{t: t, w: w, base: base, every: every, tap: traceTap{t: t, worker: uint16(id), ingress: noIngress, base: base, every: uint32(every)}}
}

// Ingress tells the hook the physical port of the batch the worker judges next (p < 0: none, for
// frames the worker judges outside a received batch, such as held frames routed once resolved).
// Call it from the worker's goroutine around each step; it is one store. A nil hook does nothing.
func (h *TraceHook) Ingress(p int) {
	if h != nil {
		h.tap.ingress = uint16(p)
		if p < 0 || p >= noIngress {
			h.tap.ingress = noIngress
		}
	}
}

// Poll turns the worker's trace tap on or off as the trace's request wants. Call it from the
// worker's goroutine, every few batches; it is one atomic load when nothing changes. A nil hook
// does nothing.
func (h *TraceHook) Poll() {
	if h == nil || h.t == nil {
		return
	}
	switch a := h.t.armed(); {
	case a && !h.on:
		h.tap.n = 0
		h.w.SetTap(&h.tap, 1)
		h.on = true
	case !a && h.on:
		h.w.SetTap(h.base, h.every) // nil base: off
		h.on = false
	}
}
