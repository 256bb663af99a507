package xmit

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wirespeed/wirespeed/frame"
)

// PipeConfig configures an in-memory link. The zero value is usable.
type PipeConfig struct {
	Names [2]string // names of the two ends (default "mem0a", "mem0b" style)
	Depth int       // frames each direction can hold (default 1024, rounded up to a power of two)
	MTU   int       // largest L3 packet; frames longer than MTU+22 (Ethernet with two tags) are dropped; 0: no limit
}

var pipeSeq atomic.Uint64

// MemPort is one end of an in-memory link made by Pipe: what one end sends, the other receives, like a
// veth pair. Frames live in the Pool given to Pipe and cross the link as descriptors, without
// copying; frames sent from another arena are copied into the pool.
//
// It follows the Port contract: one goroutine at a time in Recv, one in Send; Stats, LinkUp,
// SetLinkUp, Wait (from the receiving goroutine) and Close from anywhere. Each direction is a queue
// guarded by a mutex taken once per batch, never per frame.
type MemPort struct {
	_      [0]sync.Mutex
	name   string
	pool   *frame.Pool
	rx     *memQueue // what this end receives
	tx     *memQueue // the peer's rx
	link   *atomic.Bool
	mtu    int
	closed atomic.Bool
	timer  *time.Timer  // Wait's timeout, made by its first call with one and reused (receiving goroutine only)
	copyB  *frame.Batch // Send's scratch for frames of another arena, reused (sending goroutine only)
	c      Counters
}

type memQueue struct {
	mu      sync.Mutex
	q       []frame.Frame // power-of-two ring
	head    uint64        // next to dequeue
	tail    uint64        // next to enqueue
	closed  bool
	waiting atomic.Bool
	notify  chan struct{}
}

// Pipe returns the two ends of a new in-memory link whose frames live in pool.
func Pipe(pool *frame.Pool, cfg *PipeConfig) (*MemPort, *MemPort) {
	var c PipeConfig
	if cfg != nil {
		c = *cfg
	}
	depth := 1024
	if c.Depth > 0 {
		depth = 1
		for depth < c.Depth {
			depth <<= 1
		}
	}
	seq := pipeSeq.Add(1) - 1
	for i := range c.Names {
		if c.Names[i] == "" {
			c.Names[i] = fmt.Sprintf("mem%d%c", seq, 'a'+i)
		}
	}
	qa := &memQueue{q: make([]frame.Frame, depth), notify: make(chan struct{}, 1)}
	qb := &memQueue{q: make([]frame.Frame, depth), notify: make(chan struct{}, 1)}
	link := new(atomic.Bool)
	link.Store(true)
	a := &MemPort{name: c.Names[0], pool: pool, rx: qa, tx: qb, link: link, mtu: c.MTU}
	b := &MemPort{name: c.Names[1], pool: pool, rx: qb, tx: qa, link: link, mtu: c.MTU}
	return a, b
}

// Name is the end's name.
func (p *MemPort) Name() string { return p.name }

// Pool is the pool the link's frames live in.
func (p *MemPort) Pool() *frame.Pool { return p.pool }

// LinkUp reports the link's carrier (shared by both ends, as on a veth pair).
func (p *MemPort) LinkUp() bool { return p.link.Load() }

// SetLinkUp sets the carrier of the link. While it is down both ends drop what they send, counted in
// TxDropped; frames already queued stay receivable.
func (p *MemPort) SetLinkUp(up bool) { p.link.Store(up) }

// Stats returns the end's counters.
func (p *MemPort) Stats() Stats { return p.c.Stats() }

// Recv implements Port.
func (p *MemPort) Recv(b *frame.Batch) (int, error) {
	if len(b.Frames) != 0 {
		return 0, ErrNotEmpty
	}
	q := p.rx
	q.mu.Lock()
	n := int(min(q.tail-q.head, uint64(cap(b.Frames))))
	if n == 0 {
		closed := q.closed
		q.mu.Unlock()
		if closed {
			return 0, ErrClosed
		}
		return 0, nil
	}
	mask := uint64(len(q.q) - 1)
	b.Frames = b.Frames[:n]
	start := q.head & mask
	k := copy(b.Frames, q.q[start:min(start+uint64(n), uint64(len(q.q)))])
	copy(b.Frames[k:], q.q[:n-k])
	q.head += uint64(n)
	q.mu.Unlock()
	b.Mem, b.Owner = p.pool.Mem(), p.pool
	bytes := 0
	fr := b.Frames
	for i := range fr { // nothing crosses the wire but bytes: clear what stages had noted
		f := &fr[i]
		bytes += int(f.Len)
		f.ClearMeta()
	}
	p.c.Rx(n, bytes)
	return n, nil
}

// Send implements Port.
func (p *MemPort) Send(b *frame.Batch) (int, error) {
	if len(b.Frames) == 0 {
		return 0, nil
	}
	if p.closed.Load() {
		p.c.TxDrop(len(b.Frames))
		b.Free()
		return 0, ErrClosed
	}
	if !p.link.Load() {
		p.c.TxDrop(len(b.Frames))
		b.Free()
		return 0, nil
	}
	if b.Owner != frame.Owner(p.pool) {
		if err := p.adopt(b); err != nil {
			return 0, err
		}
	}
	// Put out-of-band tags in band, drop what does not fit the MTU; the rest stays in order.
	fr := b.Frames
	k, bytes := 0, 0
	maxLen := 0xffff
	if p.mtu > 0 {
		maxLen = p.mtu + frame.EtherLen + 2*frame.VLANLen
	}
	for i := range fr {
		f := &fr[i]
		if f.Flags&frame.FlagVLAN != 0 && b.ReinsertVLAN(i) != nil {
			continue
		}
		l := int(f.Len)
		if l > maxLen || l < frame.EtherLen {
			continue
		}
		bytes += l
		if k != i { // after a drop only: keep the dropped frame behind the kept ones
			fr[k], fr[i] = fr[i], fr[k]
		}
		k++
	}
	q := p.tx
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		p.c.TxDrop(len(fr))
		b.Free()
		return 0, ErrClosed
	}
	room := uint64(len(q.q)) - (q.tail - q.head)
	n := int(min(uint64(k), room))
	mask := uint64(len(q.q) - 1)
	start := q.tail & mask
	c := copy(q.q[start:], fr[:n])
	copy(q.q, fr[c:n])
	q.tail += uint64(n)
	q.mu.Unlock()
	if n < k {
		for i := n; i < k; i++ {
			bytes -= int(fr[i].Len)
		}
	}
	if n < len(fr) {
		p.pool.Release(fr[n:])
		p.c.TxDrop(len(fr) - n)
	}
	p.c.Tx(n, bytes)
	b.Frames = fr[:0]
	if n > 0 && q.waiting.Load() {
		select {
		case q.notify <- struct{}{}:
		default:
		}
	}
	return n, nil
}

// adopt copies b's frames (from another arena) into pool buffers and releases the originals. Its
// scratch batch is the port's, grown only for a larger batch than any before.
func (p *MemPort) adopt(b *frame.Batch) error {
	if p.copyB == nil || p.copyB.Cap() < len(b.Frames) {
		p.copyB = frame.NewBatch(len(b.Frames))
	}
	tmp := p.copyB
	tmp.Frames = tmp.Frames[:0]
	n, _ := p.pool.Alloc(tmp, len(b.Frames))
	for i := 0; i < n; i++ {
		src := &b.Frames[i]
		dst := &tmp.Frames[i]
		if !dst.Resize(int(src.Len)) {
			dst.Resize(0)
			continue // too big for a pool buffer: MTU check drops the empty frame below
		}
		copy(tmp.Bytes(i), src.Data(b.Mem))
		dst.Flags, dst.TPID, dst.TCI, dst.Port, dst.Out, dst.Meta = src.Flags, src.TPID, src.TCI, src.Port, src.Out, src.Meta
	}
	p.c.TxCopy(n)
	if n < len(b.Frames) {
		p.c.TxDrop(len(b.Frames) - n) // pool exhausted
	}
	b.Free()
	b.Frames = append(b.Frames[:0], tmp.Frames...)
	b.Mem, b.Owner = tmp.Mem, tmp.Owner
	tmp.Frames = tmp.Frames[:0]
	return nil
}

// Wait blocks until the peer has sent something, the timeout passes (timeoutNs < 0: no timeout) or
// the port is closed. Call it from the receiving goroutine when Recv returned 0. It allocates nothing
// (one timer per port, made by the first Wait with a timeout, is reset for each later one); it may
// return before the timeout with nothing to receive.
func (p *MemPort) Wait(timeoutNs int64) error {
	q := p.rx
	q.waiting.Store(true)
	defer q.waiting.Store(false)
	q.mu.Lock()
	ready, closed := q.tail != q.head, q.closed
	q.mu.Unlock()
	if closed {
		return ErrClosed
	}
	if ready {
		return nil
	}
	if timeoutNs < 0 {
		<-q.notify
		return nil
	}
	t := p.timer
	if t == nil {
		t = time.NewTimer(time.Duration(timeoutNs))
		p.timer = t
	} else {
		t.Reset(time.Duration(timeoutNs))
	}
	select {
	case <-q.notify:
		if !t.Stop() {
			// Fired meanwhile: with asynchronous timer channels (GODEBUG asynctimerchan=1) its
			// value may wait in the channel, where the next Wait would take it for its own.
			select {
			case <-t.C:
			default:
			}
		}
	case <-t.C:
	}
	return nil
}

// Close closes this end: frames queued toward it are released (counted in RxDropped), its Recv and
// Wait return ErrClosed, its Send and the peer's Send drop and count. Closing twice is harmless.
func (p *MemPort) Close() error {
	p.closed.Store(true)
	q := p.rx
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return nil
	}
	q.closed = true
	mask := uint64(len(q.q) - 1)
	var left []frame.Frame
	for ; q.head != q.tail; q.head++ {
		left = append(left, q.q[q.head&mask])
	}
	q.mu.Unlock()
	p.pool.Release(left)
	p.c.RxDrop(len(left))
	select {
	case q.notify <- struct{}{}:
	default:
	}
	return nil
}

var _ Port = (*MemPort)(nil)
var _ Waiter = (*MemPort)(nil)
var _ LinkStater = (*MemPort)(nil)
