package app

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/wirespeed/wirespeed/examples/internal/monitor"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/ring"
	"github.com/wirespeed/wirespeed/xmit"
)

// Pipeline is the other shape of a forwarder besides run to completion: receive workers run the
// forwarding stage on their own ports' input and, instead of sending, hand each egress port's
// frames over a ring to the one transmit worker that owns the port, which sends them through its
// xmit.TxQueue (one Send per port per batch). Each port then has exactly one goroutine in Send,
// whatever the number of receive workers: the case of a transmit queue owned by another worker.
//
// The rings are one ring.FanIn per transmit worker, with one SPSC ring per receive worker, so no
// two goroutines ever write the same ring. A ring item is the frame descriptor itself, its Out set
// to the port's egress in the transmit worker's TxQueue and its Meta to the number of its arena
// (its batch's Mem and Owner, registered the first time a receive worker hands over a batch of
// it). The receive worker writes the descriptors into the ring's slots (Reserve, Commit) and the
// transmit worker routes them from there into its TxQueue (Peek, Release): a frame of any back-end
// crosses as two copies of its 32-byte descriptor (into the ring, out of it into a pending batch),
// its bytes stay where they are, and it goes back to its own owner: the transmit worker's ports
// release what they sent or refused, from the transmit worker's goroutine. Every owner the examples' back-ends use takes frames back from any
// goroutine: frame.Pool (a mutex per batch), afpacket.Port (an atomic per ring block) and
// afxdp.UMEM (a mutex per batch); an owner must be a comparable value (those are pointers), as
// arenas are told apart by their memory and owner. An AF_XDP socket sends frames of another UMEM by copying them
// (counted in the port's TxCopied): with more than one receive worker, the frames of all but the
// transmit port's own UMEM are copied once.
//
// Nothing is lost silently: a frame that finds its ring full is released and counted (RingFull),
// as is one of an arena past the table's room (NoArena) and one whose egress the transmit worker
// does not know (the TxQueue's Misrouted); what the ports refuse is their own TxDropped (and the
// TxQueue's Dropped). Stats and PipelineStats.Balanced check it.
//
// Use: NewPipeline; RxPorts(r, ports) are receive worker r's ports, to run the worker loop on (Run,
// RunTraced, any loop sending through fwd.Worker.Forward or SendOutput); when the loop returns,
// CloseRx(r). Transmit(t) runs transmit worker t on its own goroutine until every receive worker
// closed and everything was sent. Nothing allocates per batch.
type Pipeline struct {
	_      [0]sync.Mutex
	batch  int
	owner  []int    // transmit worker of each physical port
	egress []uint16 // each physical port's egress in its owner's TxQueue
	rx     []*pipeRx
	tx     []*pipeTx
	arenas arenaTable
}

// PipelineConfig says how many workers a Pipeline connects and which ports they send on.
type PipelineConfig struct {
	RxWorkers int // receive workers (1 or more)
	// TxPorts are the ports the transmit workers send on, by physical port; Owners[p] (0 to
	// TxWorkers-1) is the transmit worker of port p, nil: port p to worker p % TxWorkers.
	TxPorts   []xmit.Port
	TxWorkers int // transmit workers (1 to len(TxPorts))
	Owners    []int
	Batch     int // frames per TxQueue batch and per drained burst (frame.DefaultBatch if <= 0)
	Ring      int // items per ring (rounded up to a power of two; 0: DefaultPipelineRing)
	Spin      int // ring.Config.Spin of a transmit worker with nothing to do
}

// flushFull bounds the full bursts a transmit worker takes between two Flushes.
const flushFull = 16

// DefaultPipelineRing is a ring's size unless PipelineConfig.Ring says otherwise.
const DefaultPipelineRing = 2048

// maxArenas bounds the arenas a Pipeline carries frames of: every receive queue's memory (an
// AF_PACKET ring per socket, a UMEM per AF_XDP worker, a pool) and the stage's own pool.
const maxArenas = 1024

// ErrPipelineConfig is wrapped by NewPipeline's errors.
var ErrPipelineConfig = errors.New("pipeline configuration")

// NewPipeline returns a pipeline for cfg.
func NewPipeline(cfg PipelineConfig) (*Pipeline, error) {
	bad := func(format string, a ...any) (*Pipeline, error) {
		return nil, fmt.Errorf("%w: %s", ErrPipelineConfig, fmt.Sprintf(format, a...))
	}
	switch {
	case cfg.RxWorkers < 1:
		return bad("%d receive workers: want 1 or more", cfg.RxWorkers)
	case len(cfg.TxPorts) == 0:
		return bad("no ports to send on")
	case cfg.TxWorkers < 1 || cfg.TxWorkers > len(cfg.TxPorts):
		return bad("%d transmit workers: want 1 to %d (one port each at least)", cfg.TxWorkers, len(cfg.TxPorts))
	case cfg.Owners != nil && len(cfg.Owners) != len(cfg.TxPorts):
		return bad("%d owners for %d ports", len(cfg.Owners), len(cfg.TxPorts))
	case cfg.Ring < 0 || cfg.Ring > ring.MaxSize:
		return bad("ring of %d items: want 0 (default) to %d", cfg.Ring, ring.MaxSize)
	}
	if cfg.Batch <= 0 {
		cfg.Batch = frame.DefaultBatch
	}
	if cfg.Ring == 0 {
		cfg.Ring = DefaultPipelineRing
	}
	p := &Pipeline{batch: cfg.Batch, owner: make([]int, len(cfg.TxPorts)), egress: make([]uint16, len(cfg.TxPorts))}
	p.arenas.tab = make([]arena, maxArenas)
	for t := 0; t < cfg.TxWorkers; t++ {
		fan, err := ring.NewFanIn[frame.Frame](cfg.RxWorkers, cfg.Ring, &ring.Config{Spin: cfg.Spin})
		if err != nil {
			return nil, err
		}
		tx := &pipeTx{p: p, fan: fan, q: xmit.NewTxQueue(cfg.Batch), b: new(frame.Batch)}
		p.tx = append(p.tx, tx)
	}
	sends := make([]xmit.Port, len(cfg.TxPorts))
	for i, port := range cfg.TxPorts {
		o := i % cfg.TxWorkers
		if cfg.Owners != nil {
			o = cfg.Owners[i]
		}
		if o < 0 || o >= cfg.TxWorkers {
			return bad("port %d's owner %d: want 0 to %d", i, o, cfg.TxWorkers-1)
		}
		p.owner[i] = o
		sends[i] = port
	}
	for t, tx := range p.tx {
		for i := range sends {
			if p.owner[i] != t {
				continue
			}
			// The transmit worker's sends count their errors (CountSends) in its own PortErrors.
			id, err := tx.q.Add(CountSends(sends[i:i+1], &tx.errs)[0])
			if err != nil {
				return nil, err
			}
			p.egress[i] = id
		}
	}
	for r := 0; r < cfg.RxWorkers; r++ {
		rx := &pipeRx{p: p}
		for _, tx := range p.tx {
			rx.rings = append(rx.rings, tx.fan.Producer(r))
		}
		p.rx = append(p.rx, rx)
	}
	return p, nil
}

// arena is a batch's memory and owner.
type arena struct {
	mem   []byte
	owner frame.Owner
}

// arenaTable numbers the arenas receive workers hand frames of. An entry is written once, under
// mu, before any item naming it is put on a ring; the ring's publishing store orders it before the
// transmit worker's read, which takes no lock.
type arenaTable struct {
	mu  sync.Mutex
	n   int
	tab []arena
}

// id returns a's number, adding it if new; false: the table is full.
func (t *arenaTable) id(a arena) (uint32, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range t.n {
		if sameArena(t.tab[i], a) {
			return uint32(i), true
		}
	}
	if t.n == len(t.tab) {
		return 0, false
	}
	t.tab[t.n] = a
	t.n++
	return uint32(t.n - 1), true
}

func sameArena(a, b arena) bool {
	return len(a.mem) == len(b.mem) && unsafe.SliceData(a.mem) == unsafe.SliceData(b.mem) && a.owner == b.owner
}

// pipeRx is one receive worker's side: its producer ring to each transmit worker, the arenas it
// has numbered, and its counters (written by its goroutine only, published once per batch).
type pipeRx struct {
	p     *Pipeline
	rings []*ring.SPSC[frame.Frame] // by transmit worker
	known []arenaID                 // the arenas this worker has handed frames of, in the order first seen

	handed, ringFull, noArena uint64
	_                         [64]byte
	pub                       struct{ handed, ringFull, noArena atomic.Uint64 }
	_                         [64 - 24]byte
}

type arenaID struct {
	arena
	id uint32
}

// arenaOf returns the number of b's arena (false: the table is full).
func (rx *pipeRx) arenaOf(b *frame.Batch) (uint32, bool) {
	a := arena{mem: b.Mem, owner: b.Owner}
	for i := range rx.known {
		if sameArena(rx.known[i].arena, a) {
			return rx.known[i].id, true
		}
	}
	id, ok := rx.p.arenas.id(a)
	if ok {
		rx.known = append(rx.known, arenaID{a, id}) // once per arena
	}
	return id, ok
}

// send is what a receive worker's port p does with a batch it is to send: it puts every frame on
// the ring of p's transmit worker, Frame.Out set to p's egress in that worker's TxQueue and
// Frame.Meta to its arena's number, and releases and counts those the ring has no room for. b is
// left empty.
func (rx *pipeRx) send(port int, b *frame.Batch) int {
	fr := b.Frames
	n := len(fr)
	if n == 0 {
		return 0
	}
	rx.handed += uint64(n)
	id, ok := rx.arenaOf(b)
	if !ok {
		rx.noArena += uint64(n)
		b.Free()
		rx.publish()
		return 0
	}
	r := rx.rings[rx.p.owner[port]]
	out := rx.p.egress[port]
	put := 0
	for put < n {
		s := r.Reserve(n - put) // cut at the end of the ring's array: at most two rounds
		if len(s) == 0 {
			break
		}
		src := fr[put : put+len(s)]
		for i := range src {
			f := &s[i]
			*f = src[i]
			f.Out, f.Meta = out, id
		}
		r.Commit(len(s))
		put += len(s)
	}
	if put < n {
		rx.ringFull += uint64(n - put)
		if b.Owner != nil {
			b.Owner.Release(fr[put:])
		}
	}
	b.Frames = fr[:0]
	rx.publish()
	return put
}

func (rx *pipeRx) publish() {
	rx.pub.handed.Store(rx.handed)
	rx.pub.ringFull.Store(rx.ringFull)
	rx.pub.noArena.Store(rx.noArena)
}

// RxPorts returns receive worker r's ports for its worker loop: ports[p]'s own Recv, Stats, Name,
// Close (and Wait, if it is an xmit.Waiter), and a Send that hands the frames to the transmit
// worker of physical port p instead of sending them (Send reports how many it put on the ring,
// with a nil error: the frames the ring had no room for are counted in Stats().RingFull).
// ports is indexed by physical port, as the pipeline's TxPorts. Use them from worker r's
// goroutine only.
func (p *Pipeline) RxPorts(r int, ports []xmit.Port) []xmit.Port {
	out := make([]xmit.Port, len(ports))
	for i, port := range ports {
		h := handoffPort{Port: port, rx: p.rx[r], port: i}
		if w, ok := port.(xmit.Waiter); ok {
			out[i] = &handoffWaiter{handoffPort: h, w: w}
		} else {
			out[i] = &h
		}
	}
	return out
}

type handoffPort struct {
	xmit.Port
	rx   *pipeRx
	port int
}

func (h *handoffPort) Send(b *frame.Batch) (int, error) { return h.rx.send(h.port, b), nil }

type handoffWaiter struct {
	handoffPort
	w xmit.Waiter
}

func (h *handoffWaiter) Wait(timeoutNs int64) error { return h.w.Wait(timeoutNs) }

// CloseRx tells the transmit workers that receive worker r will hand over no more frames: once
// every receive worker has closed and they have sent what the rings hold, Transmit returns. Call
// it from worker r's goroutine after its loop returned.
func (p *Pipeline) CloseRx(r int) {
	for _, ring := range p.rx[r].rings {
		ring.Close()
	}
}

// pipeTx is one transmit worker's side: the rings from every receive worker, its TxQueue over the
// ports it owns, and its counters (written by its goroutine only).
type pipeTx struct {
	p      *Pipeline
	fan    *ring.FanIn[frame.Frame]
	q      *xmit.TxQueue
	b      *frame.Batch // a run of one arena's frames, in the ring's slots, on its way into q
	errs   PortErrors   // its ports' Send errors
	taken  uint64
	_      [64]byte
	pubTkn atomic.Uint64
	_      [56]byte
}

// Transmit runs transmit worker t: it takes the frames the receive workers hand over, in bursts,
// into its TxQueue (which sends a port's batch as soon as it is full), flushes the queue whenever
// a burst comes back short (the rings are caught up), after flushFull full bursts in a row (so
// that a quiet port's frames do not wait behind a busy one's) and before it waits, and waits
// (parks) while every ring is empty. It returns, after a last Flush, once every receive worker has
// called CloseRx and the rings are empty, with the errors its ports' Send calls returned. Run it
// on its own goroutine, one per transmit worker.
func (p *Pipeline) Transmit(t int) PortErrors {
	tx := p.tx[t]
	ctx := context.Background()
	full := 0
	for {
		n := tx.poll()
		if n == p.batch {
			if full++; full < flushFull {
				continue
			}
		}
		full = 0
		tx.flush()
		if n > 0 {
			continue
		}
		s, err := tx.fan.PeekWait(ctx, p.batch)
		if err != nil { // ring.ErrClosed: every receive worker closed, every ring drained
			tx.flush()
			return tx.errs
		}
		tx.take(s)
	}
}

// poll moves up to a burst of frames from one ring into the TxQueue and returns how many.
func (tx *pipeTx) poll() int {
	s := tx.fan.Peek(tx.p.batch)
	if len(s) > 0 {
		tx.take(s)
	}
	return len(s)
}

// take routes the frames s (a Peek's, in the ring's slots) into the TxQueue, one run of frames of
// one arena at a time, and releases them from the ring. Route copies each descriptor into its
// egress's pending batch (and, for frames it cannot route, compacts them in place: the ring's
// consumer may modify what it peeked).
func (tx *pipeTx) take(s []frame.Frame) {
	b, tab := tx.b, tx.p.arenas.tab
	for i := 0; i < len(s); {
		id := s[i].Meta
		j := i + 1
		for j < len(s) && s[j].Meta == id {
			j++
		}
		a := &tab[id]
		b.Frames, b.Mem, b.Owner = s[i:j:j], a.mem, a.owner
		tx.q.Route(b)
		i = j
	}
	b.Frames = nil
	tx.fan.Release(len(s))
	tx.taken += uint64(len(s))
}

// flush sends the TxQueue's partial batches and publishes the counters.
func (tx *pipeTx) flush() {
	tx.q.Flush()
	tx.pubTkn.Store(tx.taken)
}

// PipelineStats are a Pipeline's counters, summed over its workers.
type PipelineStats struct {
	Handed   uint64 // frames the receive workers' ports were given to send
	Queued   uint64 // of those, put on a ring
	RingFull uint64 // released: the ring to the transmit worker was full
	NoArena  uint64 // released: the frames' arena did not fit the pipeline's table
	Taken    uint64 // frames the transmit workers took off the rings
	// The transmit workers' TxQueues (as of their last Flush): Frames is what they routed to a
	// known egress, Sent what the ports queued, Dropped what they refused (also in the ports'
	// TxDropped), Misrouted what named no egress (released).
	TxQueue xmit.TxQueueStats
}

// Stats returns the counters (as of each worker's last batch or Flush). Any goroutine may call it.
func (p *Pipeline) Stats() PipelineStats {
	var s PipelineStats
	for _, rx := range p.rx {
		s.Handed += rx.pub.handed.Load()
		s.RingFull += rx.pub.ringFull.Load()
		s.NoArena += rx.pub.noArena.Load()
		for _, r := range rx.rings {
			s.Queued += r.Stats().Enqueued
		}
	}
	for _, tx := range p.tx {
		s.Taken += tx.pubTkn.Load()
		q := tx.q.Stats()
		s.TxQueue.Frames += q.Frames
		s.TxQueue.Sent += q.Sent
		s.TxQueue.Dropped += q.Dropped
		s.TxQueue.Misrouted += q.Misrouted
		s.TxQueue.Sends += q.Sends
		s.TxQueue.Early += q.Early
	}
	return s
}

// Released is the number of frames the pipeline itself dropped (released and counted): ring full,
// no arena number, misrouted. The ports' refusals are theirs (xmit.Stats.TxDropped).
func (s PipelineStats) Released() uint64 { return s.RingFull + s.NoArena + s.TxQueue.Misrouted }

// Balanced reports whether every frame handed over was put on a ring or released and counted,
// every frame put on a ring was taken off, and every frame taken was sent, refused by its port or
// misrouted. Call it after every worker stopped.
func (s PipelineStats) Balanced() bool {
	q := s.TxQueue
	return s.Handed == s.Queued+s.RingFull+s.NoArena && s.Queued == s.Taken &&
		s.Taken == q.Frames+q.Misrouted && q.Frames == q.Sent+q.Dropped
}

// String is a line for a final report.
func (s PipelineStats) String() string {
	g := monitor.Group
	q := s.TxQueue
	verdict := "balanced"
	if !s.Balanced() {
		verdict = "MISMATCH"
	}
	per := 0.0
	if q.Sends > 0 {
		per = float64(q.Sent+q.Dropped) / float64(q.Sends)
	}
	return fmt.Sprintf("pipeline: handed over %s (on the rings %s; released: ring full %s, no arena %s), taken %s; TxQueue sent %s, refused by the ports %s, misrouted %s, in %s sends (%.1f frames a send, %s early); %s",
		g(float64(s.Handed)), g(float64(s.Queued)), g(float64(s.RingFull)), g(float64(s.NoArena)), g(float64(s.Taken)),
		g(float64(q.Sent)), g(float64(q.Dropped)), g(float64(q.Misrouted)), g(float64(q.Sends)), per, g(float64(q.Early)), verdict)
}
