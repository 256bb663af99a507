package ring

import (
	"errors"
	"reflect"
	"sync"
	"sync/atomic"
	"unsafe"
)

// MaxSize is the largest capacity New accepts.
const MaxSize = 1 << 30

// cacheLine is the padding unit between fields written by different
// goroutines: two 64-byte lines, because the adjacent-line prefetcher of
// x86 pulls lines in 128-byte pairs.
const cacheLine = 128

var (
	// ErrSize reports a capacity below 1 or above MaxSize.
	ErrSize = errors.New("ring: size out of range")
	// ErrClosed is returned by the waiting calls once the ring is closed
	// (and, on the consumer side, drained).
	ErrClosed = errors.New("ring: closed")
)

// Config tunes a ring. The zero value and nil mean defaults.
type Config struct {
	// Spin is how many extra times a waiting call polls the other side
	// before it parks its goroutine; 0 (the default) parks at once. Spinning
	// pays only when both sides own dedicated cores: on a shared or small
	// machine the spinner steals the time slice the other side needs
	// (bench/notes/ring.md).
	// Negative values mean 0. A consumer that finds items never parks,
	// whatever Spin is.
	Spin int
}

func (c *Config) spin() int {
	if c == nil || c.Spin < 0 {
		return 0
	}
	return c.Spin
}

// Stats are a ring's counters. Enqueued and Dequeued count items; Full counts
// enqueue calls that found less room than they asked for (a waiting call
// counts once however long it waits); Empty counts dequeue calls that found
// nothing (likewise once per waiting call).
type Stats struct {
	Enqueued, Dequeued, Full, Empty uint64
}

func (s *Stats) add(o Stats) {
	s.Enqueued += o.Enqueued
	s.Dequeued += o.Dequeued
	s.Full += o.Full
	s.Empty += o.Empty
}

// SPSC is a bounded lock-free queue for exactly one producer goroutine and
// exactly one consumer goroutine.
//
// Concurrency contract: the enqueue methods (Enqueue, EnqueueBurst,
// EnqueueBulk, EnqueueBurstWait, and the zero-copy Reserve, ReserveWait and
// Commit) may be called by one goroutine at a time, the producer; the dequeue
// methods (Dequeue, DequeueBurst, DequeueBulk, DequeueBurstWait, and the
// zero-copy Peek, PeekWait and Release) by one goroutine at a time, the
// consumer. The slices the zero-copy methods return are the ring's own slots:
// only the side that obtained them may touch them, and only until its Commit
// or Release (see Reserve and Peek). The producer
// and the consumer may be different goroutines at different times if the
// hand-over is itself synchronised. Len, Cap, Stats, Closed and Close may be
// called from any goroutine. A second concurrent producer or consumer
// corrupts the ring; this is not checked.
//
// The burst methods publish once per call (one atomic store), so the cost of
// the memory barrier is shared by every item of the burst. Each side keeps a
// cached copy of the other side's index and reads the shared one only when the
// cache says the ring is full (producer) or empty (consumer).
//
// When T contains pointers, dequeued slots are zeroed so the ring does not
// keep garbage alive; for pointer-free T this costs nothing (decided once, in
// New).
//
// Create rings with New; the zero value is not usable. An SPSC must not be
// copied (go vet's copylocks check reports copies).
type SPSC[T any] struct {
	_ [0]sync.Mutex // no-copy marker for go vet

	// Read-only after New (but closed, written once); read by both sides.
	buf []T
	shared
	_ [cacheLine - 24 - unsafe.Sizeof(shared{})]byte

	p prodSide
	c consSide
}

// shared holds the fields both sides read and (almost) never write.
type shared struct {
	mask   uint64
	size   uint64
	spin   int
	cw     *waiter // the consumer parks here; the producer wakes it
	pw     *waiter // the producer parks here; the consumer wakes it
	clr    bool    // zero slots on dequeue: T holds pointers
	closed atomic.Bool
}

// prodSide is written only by the producer.
type prodSide struct {
	tail      atomic.Uint64 // next slot to fill; published by the producer
	headCache uint64        // producer's last view of c.head
	full      atomic.Uint64
	zcTail    uint64 // Reserve: the tail the reservation starts at
	zcN       uint64 // Reserve: slots reserved and not yet committed
	_         [cacheLine - 40]byte
}

// consSide is written only by the consumer.
type consSide struct {
	head      atomic.Uint64 // next slot to read; published by the consumer
	tailCache uint64        // consumer's last view of p.tail
	empty     atomic.Uint64
	zcHead    uint64 // Peek: the head the peeked items start at
	zcN       uint64 // Peek: items peeked and not yet released
	_         [cacheLine - 40]byte
}

// New returns an empty ring holding at least size items: size is rounded up
// to the next power of two (Cap reports the result). It returns ErrSize if
// size is below 1 or above MaxSize. cfg may be nil.
func New[T any](size int, cfg *Config) (*SPSC[T], error) {
	r := new(SPSC[T])
	if err := r.init(size, cfg, newWaiter(), newWaiter()); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *SPSC[T]) init(size int, cfg *Config, cw, pw *waiter) error {
	if size < 1 || size > MaxSize {
		return ErrSize
	}
	n := uint64(1)
	for n < uint64(size) {
		n <<= 1
	}
	r.buf = make([]T, n)
	r.size = n
	r.mask = n - 1
	r.clr = hasPointers(reflect.TypeFor[T]())
	r.spin = cfg.spin()
	r.cw, r.pw = cw, pw
	return nil
}

// hasPointers reports whether values of type t contain pointers the garbage
// collector must see.
func hasPointers(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Array:
		return t.Len() > 0 && hasPointers(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if hasPointers(t.Field(i).Type) {
				return true
			}
		}
		return false
	case reflect.Pointer, reflect.UnsafePointer, reflect.Map, reflect.Chan,
		reflect.Func, reflect.Interface, reflect.Slice, reflect.String:
		return true
	}
	return false
}

// Cap returns the number of items the ring holds when full.
func (r *SPSC[T]) Cap() int { return int(r.size) }

// Len returns the number of items in the ring. From a goroutine other than
// the producer or consumer it is a snapshot that may be stale at once.
func (r *SPSC[T]) Len() int {
	h := r.c.head.Load()
	t := r.p.tail.Load()
	n := t - h
	if n > r.size { // tail read after head moved on: clamp
		n = r.size
	}
	return int(n)
}

// Stats returns the ring's counters. Safe from any goroutine; each counter
// is read atomically, the four together are not a consistent snapshot.
func (r *SPSC[T]) Stats() Stats {
	return Stats{
		Dequeued: r.c.head.Load(),
		Enqueued: r.p.tail.Load(),
		Full:     r.p.full.Load(),
		Empty:    r.c.empty.Load(),
	}
}

// Close marks the ring closed and wakes a parked producer and consumer. The
// consumer's DequeueBurstWait returns the items still queued and then
// ErrClosed; EnqueueBurstWait returns ErrClosed. The non-waiting methods do
// not look at the flag: an item enqueued after Close may never be read.
// Close is normally called by the producer when it has nothing more to send,
// and may be called from any goroutine, more than once.
func (r *SPSC[T]) Close() {
	r.closed.Store(true)
	r.cw.poke()
	r.pw.poke()
}

// Closed reports whether Close has been called. A poll loop that must not
// miss the last items reads Closed before DequeueBurst:
//
//	closed := r.Closed()
//	if n := r.DequeueBurst(out); n == 0 && closed { /* drained */ }
func (r *SPSC[T]) Closed() bool { return r.closed.Load() }

// free returns how many slots the producer may fill, reading the consumer's
// index only if the cached view shows fewer than want.
func (r *SPSC[T]) free(tail, want uint64) uint64 {
	f := r.p.headCache + r.size - tail
	if f < want {
		r.p.headCache = r.c.head.Load()
		f = r.p.headCache + r.size - tail
	}
	return f
}

// avail returns how many items the consumer may read, reading the
// producer's index only if the cached view shows fewer than want.
func (r *SPSC[T]) avail(head, want uint64) uint64 {
	a := r.c.tailCache - head
	if a < want {
		r.c.tailCache = r.p.tail.Load()
		a = r.c.tailCache - head
	}
	return a
}

// put copies items into the slots from tail on. The common case (no wrap)
// is one copy; the wrap is out of line. (put is over the inliner's budget:
// enqueue and EnqueueBulk call it; the burst fast paths copy inline.)
func (r *SPSC[T]) put(tail uint64, items []T) {
	i := tail & r.mask
	if j := i + uint64(len(items)); j <= uint64(len(r.buf)) {
		copy(r.buf[i:j], items)
		return
	}
	r.putWrap(i, items)
}

//go:noinline
func (r *SPSC[T]) putWrap(i uint64, items []T) {
	k := copy(r.buf[i:], items)
	copy(r.buf, items[k:])
}

// take copies len(out) items from the slots from head on into out, zeroing
// the slots if T holds pointers. Like put, the wrap is out of line.
func (r *SPSC[T]) take(head uint64, out []T) {
	i := head & r.mask
	if j := i + uint64(len(out)); j <= uint64(len(r.buf)) {
		s := r.buf[i:j]
		copy(out, s)
		if r.clr {
			clear(s)
		}
		return
	}
	r.takeWrap(i, out)
}

// takeWrap is take's wrapping case: the read runs from slot i to the end of
// the buffer and on from slot 0 (i + len(out) > len(r.buf); both callers
// check it), so clearing r.buf[i:] clears only slots being read.
//
//go:noinline
func (r *SPSC[T]) takeWrap(i uint64, out []T) {
	k := copy(out, r.buf[i:])
	if r.clr {
		clear(r.buf[i:])
	}
	m := copy(out[k:], r.buf)
	if r.clr {
		clear(r.buf[:m])
	}
}

// enqueue adds as many of items as fit, publishes them with one store and
// returns how many. It does not count.
func (r *SPSC[T]) enqueue(items []T) int {
	tail := r.p.tail.Load()
	n := uint64(len(items))
	if f := r.free(tail, n); f < n {
		n = f
	}
	if n == 0 {
		return 0
	}
	r.put(tail, items[:n])
	r.p.tail.Store(tail + n)
	r.cw.wakeIfParked()
	return int(n)
}

// dequeue moves up to len(out) items into out, publishes the freed slots
// with one store and returns how many. It does not count. The copy is
// inline unless it wraps.
func (r *SPSC[T]) dequeue(out []T) int {
	head := r.c.head.Load()
	n := uint64(len(out))
	if a := r.avail(head, n); a < n {
		n = a
	}
	if n == 0 {
		return 0
	}
	if i, j := head&r.mask, head&r.mask+n; j <= uint64(len(r.buf)) {
		s := r.buf[i:j]
		copy(out, s)
		if r.clr {
			clear(s)
		}
	} else {
		r.takeWrap(i, out[:n])
	}
	r.c.head.Store(head + n)
	r.wakeProducer(head + n)
	return int(n)
}

// wakeProducer is called by the consumer after publishing head. A parked
// producer stored in pw.sleeping how much room it waits for (at most half
// the ring, so that it wakes to a large gap rather than once per consumer
// burst); wake it once the consumer's view shows that much room. The view
// may overstate the room (its tail is stale), never understate it, so a
// wake-up can come early but is never lost. The check while nobody sleeps
// (one load) is inlined; the rest is out of line.
func (r *SPSC[T]) wakeProducer(head uint64) {
	if r.pw.sleeping.Load() != 0 {
		r.wakeProducerSlow(head)
	}
}

//go:noinline
func (r *SPSC[T]) wakeProducerSlow(head uint64) {
	if want := r.pw.sleeping.Load(); want != 0 && r.size-(r.c.tailCache-head) >= uint64(want) {
		r.pw.wake()
	}
}

// EnqueueBurst adds as many items as fit, in order, and returns how many:
// items[:n] are in the ring, items[n:] are not. Producer only.
func (r *SPSC[T]) EnqueueBurst(items []T) int {
	// Fast path: there is room for all of items (by the cached view of
	// head, refreshed if it shows too little) and they do not wrap. This is enqueue's body written out, so that the
	// common call is one frame with one copy; everything else is out of line.
	tail := r.p.tail.Load()
	n := uint64(len(items))
	if i, j := tail&r.mask, tail&r.mask+n; n-1 < r.free(tail, n) && j <= uint64(len(r.buf)) {
		copy(r.buf[i:j], items)
		r.p.tail.Store(tail + n)
		r.cw.wakeIfParked()
		return int(n)
	}
	return r.enqueueBurstSlow(items)
}

//go:noinline
func (r *SPSC[T]) enqueueBurstSlow(items []T) int {
	n := r.enqueue(items)
	if n < len(items) {
		r.p.full.Add(1)
	}
	return n
}

// EnqueueBulk adds all items or, if they do not all fit, none, and reports
// which. A bulk larger than Cap never fits. Producer only.
func (r *SPSC[T]) EnqueueBulk(items []T) bool {
	tail := r.p.tail.Load()
	n := uint64(len(items))
	if r.free(tail, n) < n {
		r.p.full.Add(1)
		return false
	}
	if n == 0 {
		return true
	}
	r.put(tail, items)
	r.p.tail.Store(tail + n)
	r.cw.wakeIfParked()
	return true
}

// Enqueue adds one item and reports whether there was room. It pays one
// atomic store per item; prefer EnqueueBurst. Producer only.
func (r *SPSC[T]) Enqueue(v T) bool {
	tail := r.p.tail.Load()
	if r.free(tail, 1) == 0 {
		r.p.full.Add(1)
		return false
	}
	r.buf[tail&r.mask] = v
	r.p.tail.Store(tail + 1)
	r.cw.wakeIfParked()
	return true
}

// DequeueBurst moves up to len(out) items into out[:n], oldest first, and
// returns n; 0 means the ring was empty. Consumer only.
func (r *SPSC[T]) DequeueBurst(out []T) int {
	// Fast path: len(out) items are queued (by the cached view of tail,
	// refreshed if it shows too few) and they do not wrap (see EnqueueBurst).
	head := r.c.head.Load()
	n := uint64(len(out))
	if i, j := head&r.mask, head&r.mask+n; n-1 < r.avail(head, n) && j <= uint64(len(r.buf)) {
		s := r.buf[i:j]
		copy(out, s)
		if r.clr {
			clear(s)
		}
		r.c.head.Store(head + n)
		r.wakeProducer(head + n)
		return int(n)
	}
	return r.dequeueBurstSlow(out)
}

//go:noinline
func (r *SPSC[T]) dequeueBurstSlow(out []T) int {
	n := r.dequeue(out)
	if n == 0 && len(out) > 0 {
		r.c.empty.Add(1)
	}
	return n
}

// DequeueBulk fills all of out or, if fewer items are queued, takes none,
// and reports which. Consumer only.
func (r *SPSC[T]) DequeueBulk(out []T) bool {
	head := r.c.head.Load()
	n := uint64(len(out))
	if r.avail(head, n) < n {
		r.c.empty.Add(1)
		return false
	}
	if n == 0 {
		return true
	}
	r.take(head, out)
	r.c.head.Store(head + n)
	r.wakeProducer(head + n)
	return true
}

// Dequeue removes and returns the oldest item; ok is false if the ring was
// empty. It pays one atomic store per item; prefer DequeueBurst. Consumer
// only.
func (r *SPSC[T]) Dequeue() (v T, ok bool) {
	head := r.c.head.Load()
	if r.avail(head, 1) == 0 {
		r.c.empty.Add(1)
		return v, false
	}
	i := head & r.mask
	v = r.buf[i]
	if r.clr {
		var zero T
		r.buf[i] = zero
	}
	r.c.head.Store(head + 1)
	r.wakeProducer(head + 1)
	return v, true
}
