package ring

import (
	"context"
	"fmt"
)

// Zero-copy bursts (DPDK's rte_ring_enqueue_zc_burst_start/finish and the
// dequeue pair): the producer writes items straight into the ring's slots and
// the consumer reads them where they lie, so neither side copies a burst
// through a buffer of its own.
//
// Each call returns at most one slice: the slots from the current index up to
// the end of the ring's array. A burst that would wrap is cut at the wrap
// (the next call returns the rest from slot 0), so a short slice does not by
// itself mean the ring is full or nearly empty; an empty one does.

// Reserve returns up to n free slots for the producer to fill in place: the
// slice is empty only if the ring is full (or n <= 0), and shorter than n if
// the ring has less room or the free slots wrap around the end of the ring.
// Nothing is visible to the consumer until Commit. Reserve counts Full when
// the ring has less room than n (as EnqueueBurst does). Producer only.
//
// Contract: the slice is valid until the producer's next call on the ring; it
// may be written only, and only by the producer, up to Commit. Another Reserve
// replaces the reservation; an enqueue call that adds items (EnqueueBurst,
// Enqueue, ...) cancels it, and a later Commit of a cancelled reservation
// panics. Slots reserved and not committed keep what was written into them
// (for pointer-holding T, until a later enqueue overwrites them). Reserve
// does not look at Close, like EnqueueBurst; ReserveWait does.
func (r *SPSC[T]) Reserve(n int) []T {
	// Fast path as in EnqueueBurst: room for all n by the cached view of
	// head (refreshed if it shows too little), no wrap.
	tail := r.p.tail.Load()
	m := uint64(max(n, 0))
	if i, j := tail&r.mask, tail&r.mask+m; m-1 < r.free(tail, m) && j <= uint64(len(r.buf)) {
		r.p.zcTail, r.p.zcN = tail, m
		return r.buf[i:j:j]
	}
	return r.reserveSlow(n)
}

//go:noinline
func (r *SPSC[T]) reserveSlow(n int) []T {
	s, short := r.reserve(n)
	if short {
		r.p.full.Add(1)
	}
	return s
}

// reserve is Reserve without counting; short reports that the ring had less
// room than n.
func (r *SPSC[T]) reserve(n int) (s []T, short bool) {
	tail := r.p.tail.Load()
	want := uint64(max(n, 0))
	room := r.free(tail, want)
	i := tail & r.mask
	m := min(want, room, uint64(len(r.buf))-i)
	r.p.zcTail, r.p.zcN = tail, m
	return r.buf[i : i+m : i+m], room < want
}

// Commit publishes the first k slots of the current reservation to the
// consumer with one atomic store, and wakes a parked consumer, as
// EnqueueBurst does. The slots after k stay reserved: a further Commit
// publishes the next ones. k must not exceed the slots reserved and not yet
// committed, and the reservation must be the current one (no enqueue call
// since Reserve): anything else is a bug in the caller and panics. Commit(0)
// publishes nothing (it may wake a parked consumer for nothing). Producer only.
func (r *SPSC[T]) Commit(k int) {
	tail := r.p.tail.Load()
	n := uint64(k)
	if tail != r.p.zcTail || n > r.p.zcN {
		if k == 0 {
			return
		}
		r.commitMisuse(k)
	}
	r.p.zcTail = tail + n
	r.p.zcN -= n
	r.p.tail.Store(tail + n)
	r.cw.wakeIfParked()
}

//go:noinline
func (r *SPSC[T]) commitMisuse(k int) {
	if r.p.tail.Load() != r.p.zcTail {
		panic(fmt.Sprintf("ring: Commit(%d) of a reservation cancelled by an enqueue call", k))
	}
	panic(fmt.Sprintf("ring: Commit(%d) of %d reserved slots", k, r.p.zcN))
}

// ReserveWait is Reserve that waits for room: it returns at least one slot
// (and at most n) and a nil error, or nil and ErrClosed (the ring was closed
// before the call or while it waited) or ctx.Err(). It waits as
// EnqueueBurstWait does: Config.Spin polls, then the producer parks until the
// consumer has freed min(n, Cap/2) slots. n <= 0 returns an empty slice at
// once (ErrClosed on a closed ring, as EnqueueBurstWait). Producer only; the
// contract of Reserve applies.
func (r *SPSC[T]) ReserveWait(ctx context.Context, n int) ([]T, error) {
	if r.closed.Load() {
		return nil, ErrClosed
	}
	tail := r.p.tail.Load()
	m := uint64(max(n, 0))
	if i, j := tail&r.mask, tail&r.mask+m; m-1 < r.free(tail, m) && j <= uint64(len(r.buf)) {
		r.p.zcTail, r.p.zcN = tail, m
		return r.buf[i:j:j], nil
	}
	return r.reserveWaitSlow(ctx, n)
}

//go:noinline
func (r *SPSC[T]) reserveWaitSlow(ctx context.Context, n int) ([]T, error) {
	s := r.reserveSlow(n)
	for len(s) == 0 && n > 0 {
		if err := r.waitRoom(ctx, uint64(n)); err != nil {
			return nil, err
		}
		s, _ = r.reserve(n)
	}
	return s, nil
}

// waitRoom waits until the ring has room for at least one item, polling
// Config.Spin times, then parks until the consumer has freed min(want,
// Cap/2) slots (the protocol of enqueueWait). It returns nil, ErrClosed or
// ctx.Err().
func (r *SPSC[T]) waitRoom(ctx context.Context, want uint64) error {
	for range r.spin {
		if r.free(r.p.tail.Load(), 1) > 0 {
			return nil
		}
	}
	want = max(min(want, r.size/2), 1)
	w := r.pw
	done := ctx.Done()
	for {
		w.sleeping.Store(uint32(want))
		if r.free(r.p.tail.Load(), want) >= want {
			w.sleeping.Store(0)
			return nil
		}
		if r.closed.Load() {
			w.sleeping.Store(0)
			return ErrClosed
		}
		if !w.park(done) {
			return ctx.Err()
		}
	}
}

// Peek returns up to n queued items, oldest first, in place, without taking
// them: the slice is empty only if the ring is empty (or n <= 0), and shorter
// than n if fewer items are queued or they wrap around the end of the ring.
// Release takes them. Peek counts Empty when it finds nothing (as
// DequeueBurst does). Consumer only.
//
// Contract: the slice is valid until Release (after Release(k), s[k:] stays
// valid) or the consumer's next call on the ring; it may be read (and its items modified in place) by the consumer
// only. After Release the producer may overwrite the released slots at any
// time, so the caller must copy out anything it keeps. Another Peek replaces
// the previous one; a dequeue call that takes items cancels it, and a later
// Release of a cancelled Peek panics. Peek does not look at Close: to tell a
// drained ring from a momentarily empty one, read Closed first, as for
// DequeueBurst, or use PeekWait.
func (r *SPSC[T]) Peek(n int) []T {
	// Fast path as in DequeueBurst: n items queued by the cached view of
	// tail (refreshed if it shows too few), no wrap.
	head := r.c.head.Load()
	m := uint64(max(n, 0))
	if i, j := head&r.mask, head&r.mask+m; m-1 < r.avail(head, m) && j <= uint64(len(r.buf)) {
		r.c.zcHead, r.c.zcN = head, m
		return r.buf[i:j:j]
	}
	return r.peekSlow(n)
}

//go:noinline
func (r *SPSC[T]) peekSlow(n int) []T {
	s := r.peek(n)
	if len(s) == 0 && n > 0 {
		r.c.empty.Add(1)
	}
	return s
}

// peek is Peek without counting.
func (r *SPSC[T]) peek(n int) []T {
	head := r.c.head.Load()
	want := uint64(max(n, 0))
	i := head & r.mask
	m := min(want, r.avail(head, want), uint64(len(r.buf))-i)
	r.c.zcHead, r.c.zcN = head, m
	return r.buf[i : i+m : i+m]
}

// Release takes the first k items of the current Peek out of the ring: it
// zeroes their slots if T holds pointers and publishes the freed slots to
// the producer with one atomic store, waking a parked producer as
// DequeueBurst does. The items after k stay queued and peeked: a further
// Release takes the next ones. k must not exceed the items peeked and not
// yet released, and the Peek must be the current one (no dequeue call
// since): anything else is a bug in the caller and panics. Release(0) frees
// nothing (it may wake a parked producer for nothing). Consumer only.
func (r *SPSC[T]) Release(k int) {
	head := r.c.head.Load()
	n := uint64(k)
	if head != r.c.zcHead || n > r.c.zcN {
		if k == 0 {
			return
		}
		r.releaseMisuse(k)
	}
	if r.clr {
		i := head & r.mask
		clear(r.buf[i : i+n])
	}
	r.c.zcHead = head + n
	r.c.zcN -= n
	r.c.head.Store(head + n)
	r.wakeProducer(head + n)
}

//go:noinline
func (r *SPSC[T]) releaseMisuse(k int) {
	if r.c.head.Load() != r.c.zcHead {
		panic(fmt.Sprintf("ring: Release(%d) of a Peek cancelled by a dequeue call", k))
	}
	panic(fmt.Sprintf("ring: Release(%d) of %d peeked items", k, r.c.zcN))
}

// PeekWait is Peek that waits for at least one item, as DequeueBurstWait
// does: it returns a non-empty slice and a nil error, or nil and ErrClosed
// once the ring is closed and empty, or nil and ctx.Err(). n <= 0 returns an
// empty slice at once. Consumer only; the contract of Peek applies.
func (r *SPSC[T]) PeekWait(ctx context.Context, n int) ([]T, error) {
	head := r.c.head.Load()
	m := uint64(max(n, 0))
	if i, j := head&r.mask, head&r.mask+m; m-1 < r.avail(head, m) && j <= uint64(len(r.buf)) {
		r.c.zcHead, r.c.zcN = head, m
		return r.buf[i:j:j], nil
	}
	return r.peekWaitSlow(ctx, n)
}

//go:noinline
func (r *SPSC[T]) peekWaitSlow(ctx context.Context, n int) ([]T, error) {
	s := r.peekSlow(n)
	for len(s) == 0 && n > 0 {
		if err := r.waitItems(ctx); err != nil {
			return nil, err
		}
		s = r.peek(n)
	}
	return s, nil
}

// waitItems waits until at least one item is queued (nil), the ring is
// closed and empty (ErrClosed) or ctx is done, with the protocol of
// dequeueWait.
func (r *SPSC[T]) waitItems(ctx context.Context) error {
	for range r.spin {
		if r.avail(r.c.head.Load(), 1) > 0 {
			return nil
		}
	}
	w := r.cw
	done := ctx.Done()
	for {
		w.sleeping.Store(1)
		if r.avail(r.c.head.Load(), 1) > 0 {
			w.sleeping.Store(0)
			return nil
		}
		if r.closed.Load() {
			w.sleeping.Store(0)
			// Items published before Close are visible now.
			if r.avail(r.c.head.Load(), 1) > 0 {
				return nil
			}
			return ErrClosed
		}
		if !w.park(done) {
			return ctx.Err()
		}
	}
}

// Peek returns up to n items in place from one producer's ring (see
// SPSC.Peek): the first ring with items, in turn from the ring after the one
// the previous Peek or DequeueBurst started at. Unlike DequeueBurst it never
// gathers items from several rings into one call. Release takes them. An
// empty slice means every ring was empty (counted in Stats.Empty). Consumer
// only; the contract of SPSC.Peek applies, and a FanIn dequeue call that takes
// items from the peeked ring cancels the Peek.
func (f *FanIn[T]) Peek(n int) []T {
	i := f.advance()
	if s := f.rings[i].peek(n); len(s) > 0 || n <= 0 {
		f.zc = i
		return s
	}
	s := f.peekRest(i, n)
	if len(s) == 0 {
		f.empty.Add(1)
	}
	return s
}

// peekRest finishes a Peek that started at ring i and found it empty: it
// tries the other rings in turn.
//
//go:noinline
func (f *FanIn[T]) peekRest(i, n int) []T {
	f.zc = i
	if i++; i == len(f.rings) {
		i = 0
	}
	return f.peekFrom(i, len(f.rings)-1, n)
}

// peekFrom peeks at up to k rings from ring i on and returns the first
// non-empty slice; f.zc names its ring. If all are empty f.zc is unchanged.
func (f *FanIn[T]) peekFrom(i, k, n int) []T {
	for range k {
		if s := f.rings[i].peek(n); len(s) > 0 {
			f.zc = i
			return s
		}
		if i++; i == len(f.rings) {
			i = 0
		}
	}
	return nil
}

// Release takes the first k items of the current Peek out of their ring
// (see SPSC.Release; the same misuse panics). Consumer only.
func (f *FanIn[T]) Release(k int) { f.rings[f.zc].Release(k) }

// PeekWait is Peek that waits, as DequeueBurstWait does, until some ring has
// items (a non-empty slice, nil), every ring is closed and empty (nil,
// ErrClosed) or ctx is done (nil, ctx.Err()). Consumer only.
func (f *FanIn[T]) PeekWait(ctx context.Context, n int) ([]T, error) {
	i := f.advance()
	if s := f.rings[i].peek(n); len(s) > 0 || n <= 0 {
		f.zc = i
		return s, nil
	}
	return f.peekWaitSlow(ctx, n, i)
}

//go:noinline
func (f *FanIn[T]) peekWaitSlow(ctx context.Context, n, i int) ([]T, error) {
	if s := f.peekRest(i, n); len(s) > 0 {
		return s, nil
	}
	f.empty.Add(1)
	for range f.spin {
		if s := f.peekFrom(f.advance(), len(f.rings), n); len(s) > 0 {
			return s, nil
		}
	}
	w := f.cw
	done := ctx.Done()
	for {
		w.sleeping.Store(1)
		if s := f.peekFrom(f.advance(), len(f.rings), n); len(s) > 0 {
			w.sleeping.Store(0)
			return s, nil
		}
		if f.Closed() {
			w.sleeping.Store(0)
			if s := f.peekFrom(f.advance(), len(f.rings), n); len(s) > 0 {
				return s, nil
			}
			return nil, ErrClosed
		}
		if !w.park(done) {
			return nil, ctx.Err()
		}
	}
}
