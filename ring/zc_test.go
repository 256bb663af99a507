package ring_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/ring"
)

// TestZCAgainstModel drives one ring with a random mix of the zero-copy calls
// (Reserve/ReserveWait + Commit, Peek/PeekWait + Release, committed and
// released in one or two parts or not at all) and the copying ones, against
// the slice model: same items in the same order, the slices cut where the
// documentation says (room, items, the wrap), same counters.
func TestZCAgainstModel(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rnd := rand.New(rand.NewPCG(seed, 3))
	ctx := context.Background()
	for _, size := range []int{1, 2, 5, 8, 64} {
		r, _ := ring.New[int](size, nil)
		m := &model{cap: r.Cap()}
		next := 0
		items := make([]int, 3*r.Cap()+2)
		out := make([]int, len(items))
		// parts splits k into one or two parts, or says to stop early.
		parts := func(k int) []int {
			switch rnd.IntN(4) {
			case 0:
				a := rnd.IntN(k + 1)
				return []int{a, k - a}
			case 1:
				return []int{rnd.IntN(k + 1)}
			}
			return []int{k}
		}
		for op := range 20000 {
			k := rnd.IntN(len(items) + 1)
			if rnd.IntN(4) == 0 {
				k = rnd.IntN(3)
			}
			switch rnd.IntN(6) {
			case 0, 1: // Reserve or ReserveWait (where it cannot block), Commit
				room := m.cap - len(m.q)
				tail := int(m.enq) % m.cap
				var s []int
				var err error
				if rnd.IntN(2) == 0 || room == 0 {
					s = r.Reserve(k)
				} else {
					s, err = r.ReserveWait(ctx, k)
				}
				want := min(k, room, m.cap-tail)
				if err != nil || len(s) != want || cap(s) != want {
					t.Fatalf("size %d op %d: Reserve(%d) = len %d cap %d %v, want %d (room %d, tail slot %d)", size, op, k, len(s), cap(s), err, want, room, tail)
				}
				if room < k {
					m.full++
				}
				for i := range s {
					s[i] = next + i
				}
				for _, c := range parts(len(s)) {
					r.Commit(c)
					m.burstIn(s[:c])
					next += c
					s = s[c:]
					for i := range s {
						s[i] = next + i
					}
				}
			case 2, 3: // Peek or PeekWait (where it cannot block), Release
				head := int(m.deq) % m.cap
				var s []int
				var err error
				if rnd.IntN(2) == 0 || len(m.q) == 0 {
					s = r.Peek(k)
				} else {
					s, err = r.PeekWait(ctx, k)
				}
				want := min(k, len(m.q), m.cap-head)
				if err != nil || !slices.Equal(s, m.q[:want]) || cap(s) != want {
					t.Fatalf("size %d op %d: Peek(%d) = %v cap %d %v, want %v (head slot %d)", size, op, k, s, cap(s), err, m.q[:want], head)
				}
				if len(m.q) == 0 && k > 0 {
					m.empty++
				}
				for _, c := range parts(len(s)) {
					r.Release(c)
					m.burstOut(c)
				}
			case 4:
				for i := range k {
					items[i] = next + i
				}
				n := r.EnqueueBurst(items[:k])
				if want := m.burstIn(items[:k]); n != want {
					t.Fatalf("size %d op %d: EnqueueBurst(%d) = %d, want %d", size, op, k, n, want)
				}
				next += n
			case 5:
				n := r.DequeueBurst(out[:k])
				if want := m.burstOut(k); !slices.Equal(out[:n], want) {
					t.Fatalf("size %d op %d: DequeueBurst(%d) = %v, want %v", size, op, k, out[:n], want)
				}
			}
			if r.Len() != len(m.q) {
				t.Fatalf("size %d op %d: Len %d, want %d", size, op, r.Len(), len(m.q))
			}
		}
		want := ring.Stats{Enqueued: m.enq, Dequeued: m.deq, Full: m.full, Empty: m.empty}
		if s := r.Stats(); s != want {
			t.Errorf("size %d: stats %+v, want %+v", size, s, want)
		}
	}
}

// TestFanInZCAgainstModel: FanIn.Peek/PeekWait return the items of the first
// non-empty ring in turn (from one ring further on each call, the turn shared
// with DequeueBurst), and Release takes them from that ring.
func TestFanInZCAgainstModel(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rnd := rand.New(rand.NewPCG(seed, 4))
	for _, producers := range []int{1, 2, 3} {
		for _, size := range []int{1, 4, 16} {
			f, _ := ring.NewFanIn[int](producers, size, nil)
			ms := make([]*model, producers)
			for p := range ms {
				ms[p] = &model{cap: f.Producer(p).Cap()}
			}
			start, next := 0, 0
			var empty uint64
			out := make([]int, 2*size+2)
			for op := range 5000 {
				k := rnd.IntN(len(out) + 1)
				switch rnd.IntN(3) {
				case 0: // a producer reserves and commits
					p := rnd.IntN(producers)
					s := f.Producer(p).Reserve(k)
					for i := range s {
						s[i] = next + i
					}
					f.Producer(p).Commit(len(s))
					ms[p].burstIn(s)
					next += len(s)
				case 1: // the consumer peeks and releases some
					queued := 0
					for _, m := range ms {
						queued += len(m.q)
					}
					var want []int
					wantRing := -1
					for i, p := 0, start; i < producers; i, p = i+1, (p+1)%producers {
						if len(ms[p].q) > 0 {
							head := int(ms[p].deq) % ms[p].cap
							want = ms[p].q[:min(k, len(ms[p].q), ms[p].cap-head)]
							wantRing = p
							break
						}
					}
					start = (start + 1) % producers
					var s []int
					var err error
					if rnd.IntN(2) == 0 || queued == 0 {
						s = f.Peek(k)
					} else {
						s, err = f.PeekWait(context.Background(), k)
					}
					if err != nil || !slices.Equal(s, want) {
						t.Fatalf("producers %d size %d op %d: Peek(%d) = %v %v, want %v from ring %d", producers, size, op, k, s, err, want, wantRing)
					}
					if k > 0 && queued == 0 {
						empty++
					}
					c := rnd.IntN(len(s) + 1)
					f.Release(c)
					if wantRing >= 0 {
						ms[wantRing].burstOut(c)
					}
				case 2: // a copying dequeue shares the turn
					var want []int
					for i, p := 0, start; i < producers && len(want) < k; i, p = i+1, (p+1)%producers {
						take := min(k-len(want), len(ms[p].q))
						want = append(want, ms[p].burstOut(take)...)
					}
					if k > 0 && len(want) == 0 {
						empty++
					}
					start = (start + 1) % producers
					if n := f.DequeueBurst(out[:k]); !slices.Equal(out[:n], want) {
						t.Fatalf("producers %d size %d op %d: DequeueBurst(%d) = %v, want %v", producers, size, op, k, out[:n], want)
					}
				}
				if l, wl := f.Len(), func() int {
					n := 0
					for _, m := range ms {
						n += len(m.q)
					}
					return n
				}(); l != wl {
					t.Fatalf("producers %d size %d op %d: Len %d, want %d", producers, size, op, l, wl)
				}
			}
			if s := f.Stats(); s.Empty != empty {
				t.Errorf("producers %d size %d: Empty %d, want %d", producers, size, s.Empty, empty)
			}
		}
	}
}

// TestZCMisusePanics: committing or releasing more than reserved or peeked,
// or after a copying call moved the index, panics with a clear message;
// Commit(0) and Release(0) without a reservation do nothing.
func TestZCMisusePanics(t *testing.T) {
	mustPanic := func(what, want string, fn func()) {
		t.Helper()
		defer func() {
			t.Helper()
			v := recover()
			if s, ok := v.(string); !ok || !strings.Contains(s, want) {
				t.Errorf("%s: panic %v, want one containing %q", what, v, want)
			}
		}()
		fn()
	}
	r, _ := ring.New[int](8, nil)
	r.Commit(0)
	r.Release(0)
	mustPanic("commit without reservation", "Commit(1) of 0 reserved", func() { r.Commit(1) })
	s := r.Reserve(3)
	mustPanic("commit > reserved", "Commit(4) of 3 reserved", func() { r.Commit(4) })
	mustPanic("negative commit", "Commit(-1)", func() { r.Commit(-1) })
	r.Commit(2)
	mustPanic("commit past the rest", "Commit(2) of 1 reserved", func() { r.Commit(2) })
	r.EnqueueBurst([]int{9})
	mustPanic("commit after enqueue", "cancelled by an enqueue", func() { r.Commit(1) })
	r.Commit(0)
	_ = s

	p := r.Peek(8)
	if len(p) != 3 {
		t.Fatalf("Peek = %v, want 3 items", p)
	}
	mustPanic("release > peeked", "Release(4) of 3 peeked", func() { r.Release(4) })
	r.Release(1)
	r.DequeueBurst(make([]int, 1))
	mustPanic("release after dequeue", "cancelled by a dequeue", func() { r.Release(1) })
	if r.Len() != 1 {
		t.Fatalf("Len %d after the misuse, want 1", r.Len())
	}

	f, _ := ring.NewFanIn[int](2, 4, nil)
	f.Release(0)
	mustPanic("fan-in release without peek", "Release(1) of 0 peeked", func() { f.Release(1) })
}

// TestZCCloseAndCancel: ReserveWait refuses a closed ring and wakes on Close
// or cancel; PeekWait drains a closed ring, then reports ErrClosed.
func TestZCCloseAndCancel(t *testing.T) {
	ctx := context.Background()
	r, _ := ring.New[int](4, nil)
	s, _ := r.ReserveWait(ctx, 3)
	copy(s, []int{1, 2, 3})
	r.Commit(3)
	r.Close()
	if s, err := r.ReserveWait(ctx, 1); s != nil || !errors.Is(err, ring.ErrClosed) {
		t.Fatalf("ReserveWait after Close = %v %v", s, err)
	}
	var got []int
	for {
		s, err := r.PeekWait(ctx, 2)
		if errors.Is(err, ring.ErrClosed) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		got = append(got, s...)
		r.Release(len(s))
	}
	if !slices.Equal(got, []int{1, 2, 3}) {
		t.Fatalf("drained %v", got)
	}

	// A producer parked in ReserveWait on a full ring wakes on Close.
	r2, _ := ring.New[int](2, nil)
	r2.EnqueueBurst([]int{1, 2})
	errc := make(chan error, 1)
	go func() {
		_, err := r2.ReserveWait(ctx, 1)
		errc <- err
	}()
	r2.Close()
	if err := <-errc; !errors.Is(err, ring.ErrClosed) {
		t.Fatalf("parked ReserveWait on Close: %v", err)
	}

	// A consumer parked in PeekWait wakes on cancel.
	r3, _ := ring.New[int](2, nil)
	cctx, cancel := context.WithCancel(ctx)
	go cancel()
	if s, err := r3.PeekWait(cctx, 1); s != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("PeekWait on cancel = %v %v", s, err)
	}
	f, _ := ring.NewFanIn[int](2, 2, nil)
	go f.Close()
	if s, err := f.PeekWait(ctx, 1); s != nil || !errors.Is(err, ring.ErrClosed) {
		t.Fatalf("FanIn.PeekWait on Close = %v %v", s, err)
	}
}

// consumeZC is the consumer loops of the concurrent tests with the
// zero-copy calls mixed in: it takes up to k items by Peek, PeekWait,
// or deq/wait (the copying calls), and hands them to see.
type zcConsumer[T any] struct {
	peek     func(int) []T
	peekWait func(context.Context, int) ([]T, error)
	release  func(int)
}

func (z zcConsumer[T]) take(rnd *rand.Rand, k int, see func(T)) (n int, err error) {
	var s []T
	if rnd.IntN(2) == 0 {
		s = z.peek(k)
	} else {
		s, err = z.peekWait(context.Background(), k)
	}
	c := len(s)
	if c > 0 && rnd.IntN(3) == 0 {
		c = rnd.IntN(c + 1)
	}
	for _, v := range s[:c] {
		see(v)
	}
	z.release(c)
	return c, err
}

// ExampleSPSC_Reserve moves items without copying them through buffers: the
// producer writes into the ring's slots and the consumer reads them where
// they lie.
func ExampleSPSC_Reserve() {
	r, _ := ring.New[int](8, nil)
	ctx := context.Background()
	go func() {
		for next := 1; next <= 20; {
			s, err := r.ReserveWait(ctx, min(6, 21-next)) // maybe fewer
			if err != nil {
				panic(err)
			}
			for i := range s {
				s[i] = next
				next++
			}
			r.Commit(len(s)) // the consumer sees them now
		}
		r.Close()
	}()
	sum := 0
	for {
		s, err := r.PeekWait(ctx, 6) // up to 6 queued items, in place
		if errors.Is(err, ring.ErrClosed) {
			break
		}
		for _, v := range s {
			sum += v
		}
		r.Release(len(s)) // the producer may reuse the slots now
	}
	fmt.Println(sum, r.Stats().Dequeued)
	// Output: 210 20
}
