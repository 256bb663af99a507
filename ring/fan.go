package ring

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

// ErrCount reports a number of producers or consumers below 1.
var ErrCount = errors.New("ring: count out of range")

// FanIn carries items from N producer goroutines to one consumer goroutine.
// It is N SPSC rings, one per producer, so producers never contend with each
// other: no compare-and-swap, no shared index. The consumer drains the rings
// round-robin in bursts and parks, when all are empty, on one wake-up shared
// by every ring.
//
// Concurrency contract: producer i owns the enqueue side of Producer(i) (one
// goroutine at a time per i); one consumer goroutine calls DequeueBurst and
// DequeueBurstWait. Never call the dequeue methods of a Producer(i) ring.
// Len, Stats, Closed and Close may be called from any goroutine. Items from
// one producer arrive in the order it enqueued them; items from different
// producers interleave.
type FanIn[T any] struct {
	_     [0]sync.Mutex // no-copy marker for go vet
	rings []SPSC[T]
	cw    *waiter
	spin  int
	_     [cacheLine - 24 - 8 - 8]byte

	// Consumer only.
	next  int
	empty atomic.Uint64
	zc    int // the ring of the current Peek
	_     [cacheLine - 24]byte
}

// NewFanIn returns a fan-in for producers producer goroutines, each with a
// ring of at least size items (rounded up to a power of two). cfg may be nil.
func NewFanIn[T any](producers, size int, cfg *Config) (*FanIn[T], error) {
	if producers < 1 {
		return nil, ErrCount
	}
	f := &FanIn[T]{rings: make([]SPSC[T], producers), cw: newWaiter(), spin: cfg.spin()}
	for i := range f.rings {
		if err := f.rings[i].init(size, cfg, f.cw, newWaiter()); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// Producer returns producer i's ring (0 <= i < N). Its goroutine uses the
// ring's enqueue methods and, when done, its Close.
func (f *FanIn[T]) Producer(i int) *SPSC[T] { return &f.rings[i] }

// N returns the number of producers.
func (f *FanIn[T]) N() int { return len(f.rings) }

// Len returns the number of items queued in all rings.
func (f *FanIn[T]) Len() int {
	n := 0
	for i := range f.rings {
		n += f.rings[i].Len()
	}
	return n
}

// Stats returns the sum of the rings' counters; Empty counts the fan-in's
// dequeue calls that found every ring empty.
func (f *FanIn[T]) Stats() Stats {
	var s Stats
	for i := range f.rings {
		s.add(f.rings[i].Stats())
	}
	s.Empty = f.empty.Load()
	return s
}

// Close closes every ring (see SPSC.Close): producers waiting for room get
// ErrClosed, the consumer drains what is queued and then gets ErrClosed.
func (f *FanIn[T]) Close() {
	for i := range f.rings {
		f.rings[i].Close()
	}
}

// Closed reports whether every ring is closed.
func (f *FanIn[T]) Closed() bool {
	for i := range f.rings {
		if !f.rings[i].closed.Load() {
			return false
		}
	}
	return true
}

// poll fills out from the rings in turn, starting one ring further on each
// call so that every ring is first in turn.
func (f *FanIn[T]) poll(out []T) int {
	return f.pollFrom(f.advance(), len(f.rings), out)
}

// advance returns the ring the next poll starts at and moves f.next on.
func (f *FanIn[T]) advance() int {
	i := f.next
	if f.next++; f.next == len(f.rings) {
		f.next = 0
	}
	return i
}

// pollFrom is poll over k rings starting at ring i, without moving f.next.
func (f *FanIn[T]) pollFrom(i, k int, out []T) int {
	rings := f.rings
	got := 0
	for range k {
		got += rings[i].dequeue(out[got:])
		if got == len(out) {
			break
		}
		if i++; i == len(rings) {
			i = 0
		}
	}
	return got
}

// DequeueBurst moves up to len(out) items into out[:n] and returns n; 0
// means every ring was empty. Each call starts at the ring after the one the
// previous call started at and takes from each ring in turn as many as fit.
// Consumer only.
func (f *FanIn[T]) DequeueBurst(out []T) int {
	// The first ring in turn is polled here: when it fills out (the common
	// case under load) that is the whole call.
	i := f.advance()
	n := f.rings[i].dequeue(out)
	if n < len(out) {
		n += f.pollRest(i, out[n:])
	}
	if n == 0 && len(out) > 0 {
		f.empty.Add(1)
	}
	return n
}

// DequeueBurstWait is DequeueBurst that waits, as SPSC.DequeueBurstWait
// does, until some ring has items (n > 0, nil), every ring is closed and
// empty (0, ErrClosed) or ctx is done (0, ctx.Err()). Consumer only.
func (f *FanIn[T]) DequeueBurstWait(ctx context.Context, out []T) (int, error) {
	// As in DequeueBurst, the first ring in turn is polled here.
	i := f.advance()
	if n := f.rings[i].dequeue(out); n == len(out) {
		return n, nil
	} else if n > 0 {
		return n + f.pollRest(i, out[n:]), nil
	}
	return f.dequeueBurstWaitSlow(ctx, out, i)
}

// pollRest finishes a poll that started at ring i and took what ring i had:
// it polls the other rings in turn into out.
//
//go:noinline
func (f *FanIn[T]) pollRest(i int, out []T) int {
	if i++; i == len(f.rings) {
		i = 0
	}
	return f.pollFrom(i, len(f.rings)-1, out)
}

//go:noinline
func (f *FanIn[T]) dequeueBurstWaitSlow(ctx context.Context, out []T, i int) (int, error) {
	if n := f.pollRest(i, out); n > 0 {
		return n, nil
	}
	f.empty.Add(1)
	for range f.spin {
		if n := f.poll(out); n > 0 {
			return n, nil
		}
	}
	w := f.cw
	done := ctx.Done()
	for {
		w.sleeping.Store(1)
		if n := f.poll(out); n > 0 {
			w.sleeping.Store(0)
			return n, nil
		}
		if f.Closed() {
			w.sleeping.Store(0)
			if n := f.poll(out); n > 0 {
				return n, nil
			}
			return 0, ErrClosed
		}
		if !w.park(done) {
			return 0, ctx.Err()
		}
	}
}

// FanOut carries items from one producer goroutine to N consumer
// goroutines: N SPSC rings, one per consumer. The producer picks the ring by
// index (EnqueueBurst) or per item by a hash it computed (EnqueueBurstHash).
//
// Concurrency contract: one producer goroutine calls the FanOut's enqueue
// methods; consumer i owns the dequeue side of Consumer(i) (one goroutine at
// a time per i). Never call the enqueue methods of a Consumer(i) ring. Len,
// Stats and Close may be called from any goroutine.
type FanOut[T any] struct {
	_     [0]sync.Mutex // no-copy marker for go vet
	rings []SPSC[T]
	jmask uint32 // N-1 if N is a power of two, else 0 and % is used
	_     [cacheLine - 24 - 8]byte

	// Producer only.
	pend []uint64 // items written but not yet published, per ring
	_    [cacheLine - 24]byte
}

// NewFanOut returns a fan-out to consumers consumer goroutines, each with a
// ring of at least size items (rounded up to a power of two). cfg may be nil.
func NewFanOut[T any](consumers, size int, cfg *Config) (*FanOut[T], error) {
	if consumers < 1 {
		return nil, ErrCount
	}
	f := &FanOut[T]{rings: make([]SPSC[T], consumers), pend: make([]uint64, consumers)}
	if consumers&(consumers-1) == 0 {
		f.jmask = uint32(consumers - 1)
	}
	for i := range f.rings {
		if err := f.rings[i].init(size, cfg, newWaiter(), newWaiter()); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// Consumer returns consumer i's ring (0 <= i < N). Its goroutine uses the
// ring's dequeue methods.
func (f *FanOut[T]) Consumer(i int) *SPSC[T] { return &f.rings[i] }

// N returns the number of consumers.
func (f *FanOut[T]) N() int { return len(f.rings) }

// Len returns the number of items queued in all rings.
func (f *FanOut[T]) Len() int {
	n := 0
	for i := range f.rings {
		n += f.rings[i].Len()
	}
	return n
}

// Stats returns the sum of the rings' counters.
func (f *FanOut[T]) Stats() Stats {
	var s Stats
	for i := range f.rings {
		s.add(f.rings[i].Stats())
	}
	return s
}

// Close closes every ring (see SPSC.Close).
func (f *FanOut[T]) Close() {
	for i := range f.rings {
		f.rings[i].Close()
	}
}

// EnqueueBurst adds as many items as fit to ring i and returns how many
// (see SPSC.EnqueueBurst). Producer only.
func (f *FanOut[T]) EnqueueBurst(i int, items []T) int { return f.rings[i].EnqueueBurst(items) }

// EnqueueBurstWait adds all items to ring i, waiting for room (see
// SPSC.EnqueueBurstWait). Producer only.
func (f *FanOut[T]) EnqueueBurstWait(ctx context.Context, i int, items []T) (int, error) {
	return f.rings[i].EnqueueBurstWait(ctx, items)
}

// EnqueueBurstHash adds items in order, items[k] to ring hashes[k] mod N,
// until one does not fit, and returns how many were added: items[:n] are
// queued, items[n:] are not. Each ring touched is published once, with one
// atomic store. hashes must be at least as long as items. Producer only.
func (f *FanOut[T]) EnqueueBurstHash(items []T, hashes []uint32) int {
	hashes = hashes[:len(items)]
	pend := f.pend
	rings := f.rings
	nr := uint32(len(rings))
	k := 0
	for ; k < len(items); k++ {
		var j uint32
		if f.jmask != 0 || nr == 1 {
			j = hashes[k] & f.jmask
		} else {
			j = hashes[k] % nr
		}
		r := &rings[j]
		tail := r.p.tail.Load() + pend[j]
		if r.free(tail, 1) == 0 {
			r.p.full.Add(1)
			break
		}
		r.buf[tail&r.mask] = items[k]
		pend[j]++
	}
	for j := range pend {
		if pend[j] != 0 {
			r := &rings[j]
			r.p.tail.Store(r.p.tail.Load() + pend[j])
			r.cw.wakeIfParked()
			pend[j] = 0
		}
	}
	return k
}
