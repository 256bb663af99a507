package ring

import (
	"context"
	"sync/atomic"
)

// waiter is where one goroutine parks and another wakes it. The sleeper
// sets sleeping, re-checks its condition, then blocks on ch; the waker
// publishes its index, then loads sleeping. Both are sequentially consistent
// atomics, so at least one of them sees the other's store: either the
// sleeper's re-check sees the new index or the waker sees sleeping and sends
// a token. A waker pays one plain load per burst while nobody sleeps.
type waiter struct {
	sleeping atomic.Uint32 // 0: awake; the producer's waiter holds the room it waits for
	ch       chan struct{} // capacity 1: a token survives a wake before the park
	_        [cacheLine - 16]byte
}

func newWaiter() *waiter { return &waiter{ch: make(chan struct{}, 1)} }

// wakeIfParked is called by the waking side after every publish.
func (w *waiter) wakeIfParked() {
	if w.sleeping.Load() != 0 {
		w.wake()
	}
}

//go:noinline
func (w *waiter) wake() {
	if w.sleeping.Swap(0) != 0 {
		w.poke()
	}
}

// poke leaves a token unless one is already there. A stale token costs the
// sleeper one spurious loop, never a lost wake-up.
func (w *waiter) poke() {
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

// park blocks until a token arrives or done fires, and reports whether a
// token arrived. The caller has set sleeping and re-checked.
func (w *waiter) park(done <-chan struct{}) bool {
	if done == nil { // context.Background: a plain receive, cheaper than select
		<-w.ch
		return true
	}
	select {
	case <-w.ch:
		return true
	case <-done:
		w.sleeping.Store(0)
		return false
	}
}

// DequeueBurstWait is DequeueBurst that waits for at least one item: it
// polls the producer's index Config.Spin times, then parks the goroutine
// until the producer publishes, the ring is closed or ctx is done. It returns
// n > 0 and a nil error, or 0 and ErrClosed once the ring is closed and
// empty, or 0 and ctx.Err(). A busy consumer never parks: when items are
// queued it returns them at once. Consumer only.
func (r *SPSC[T]) DequeueBurstWait(ctx context.Context, out []T) (int, error) {
	// Fast path, as in DequeueBurst: len(out) items are queued and
	// do not wrap.
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
		return int(n), nil
	}
	return r.dequeueBurstWaitSlow(ctx, out)
}

//go:noinline
func (r *SPSC[T]) dequeueBurstWaitSlow(ctx context.Context, out []T) (int, error) {
	if n := r.dequeue(out); n > 0 || len(out) == 0 {
		return n, nil
	}
	r.c.empty.Add(1)
	return r.dequeueWait(ctx, out)
}

func (r *SPSC[T]) dequeueWait(ctx context.Context, out []T) (int, error) {
	for range r.spin {
		if n := r.dequeue(out); n > 0 {
			return n, nil
		}
	}
	w := r.cw
	done := ctx.Done()
	for {
		w.sleeping.Store(1)
		if n := r.dequeue(out); n > 0 {
			w.sleeping.Store(0)
			return n, nil
		}
		if r.closed.Load() {
			w.sleeping.Store(0)
			// Items published before Close are visible now.
			if n := r.dequeue(out); n > 0 {
				return n, nil
			}
			return 0, ErrClosed
		}
		if !w.park(done) {
			return 0, ctx.Err()
		}
	}
}

// EnqueueBurstWait adds all of items, waiting for room as needed: it adds
// what fits, polls the consumer's index Config.Spin times, then parks the
// goroutine until the consumer frees slots. It returns len(items) and nil, or
// the number added and ErrClosed (the ring was closed before the call, when
// it adds nothing, or while it waited) or ctx.Err(). Producer only.
func (r *SPSC[T]) EnqueueBurstWait(ctx context.Context, items []T) (int, error) {
	if r.closed.Load() {
		return 0, ErrClosed
	}
	// Fast path, as in EnqueueBurst: there is room for all of items
	// and they do not wrap.
	tail := r.p.tail.Load()
	n := uint64(len(items))
	if i, j := tail&r.mask, tail&r.mask+n; n-1 < r.free(tail, n) && j <= uint64(len(r.buf)) {
		copy(r.buf[i:j], items)
		r.p.tail.Store(tail + n)
		r.cw.wakeIfParked()
		return int(n), nil
	}
	return r.enqueueBurstWaitSlow(ctx, items)
}

//go:noinline
func (r *SPSC[T]) enqueueBurstWaitSlow(ctx context.Context, items []T) (int, error) {
	n := r.enqueue(items)
	if n == len(items) {
		return n, nil
	}
	r.p.full.Add(1)
	return r.enqueueWait(ctx, items, n)
}

func (r *SPSC[T]) enqueueWait(ctx context.Context, items []T, sent int) (int, error) {
	w := r.pw
	var done <-chan struct{}
	spins := 0
	for sent < len(items) {
		if n := r.enqueue(items[sent:]); n > 0 {
			sent += n
			spins = 0
			continue
		}
		if spins < r.spin {
			spins++
			continue
		}
		// Park until the consumer has freed room for the rest or half the
		// ring, whichever is less.
		want := min(uint64(len(items)-sent), r.size/2)
		want = max(want, 1)
		w.sleeping.Store(uint32(want))
		if r.free(r.p.tail.Load(), want) >= want {
			w.sleeping.Store(0)
			continue
		}
		if r.closed.Load() {
			w.sleeping.Store(0)
			return sent, ErrClosed
		}
		if done == nil {
			done = ctx.Done()
		}
		if !w.park(done) {
			return sent, ctx.Err()
		}
	}
	return sent, nil
}
