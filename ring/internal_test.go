package ring

import (
	"context"
	"errors"
	"reflect"
	"runtime"
	"sync"
	"testing"
	"time"
	"unsafe"
)

func TestLayout(t *testing.T) {
	var r SPSC[uint64]
	base := uintptr(unsafe.Pointer(&r))
	tail := uintptr(unsafe.Pointer(&r.p.tail)) - base
	head := uintptr(unsafe.Pointer(&r.c.head)) - base
	sh := uintptr(unsafe.Pointer(&r.shared)) - base
	if sh >= cacheLine || tail < cacheLine || head-tail < cacheLine {
		t.Errorf("shared at %d, tail at %d, head at %d: want %d bytes apart", sh, tail, head, cacheLine)
	}
	if s := unsafe.Sizeof(r); s%cacheLine != 0 || s-head < cacheLine {
		t.Errorf("size %d, head at %d: the consumer line is not padded to the end", s, head)
	}
	// The 128-byte layout must not depend on T.
	if a, b := unsafe.Sizeof(SPSC[byte]{}), unsafe.Sizeof(SPSC[[64]string]{}); a != b || a != unsafe.Sizeof(r) {
		t.Errorf("sizes differ with T: %d %d %d", a, b, unsafe.Sizeof(r))
	}
	var f FanIn[int]
	if off := unsafe.Offsetof(f.next); off < cacheLine {
		t.Errorf("FanIn consumer fields at %d, want >= %d", off, cacheLine)
	}
	if s := unsafe.Sizeof(f); s != 2*cacheLine {
		t.Errorf("FanIn size %d", s)
	}
	var o FanOut[int]
	if off := unsafe.Offsetof(o.pend); off < cacheLine {
		t.Errorf("FanOut producer fields at %d, want >= %d", off, cacheLine)
	}
	if s := unsafe.Sizeof(waiter{}); s != cacheLine {
		t.Errorf("waiter size %d", s)
	}
}

func TestNoCopyMarker(t *testing.T) {
	mutex := reflect.TypeFor[[0]sync.Mutex]()
	for _, typ := range []reflect.Type{reflect.TypeFor[SPSC[int]](), reflect.TypeFor[FanIn[int]](), reflect.TypeFor[FanOut[int]]()} {
		if f := typ.Field(0); f.Type != mutex || f.Name != "_" {
			t.Errorf("%v: first field %s %v, want _ [0]sync.Mutex", typ, f.Name, f.Type)
		}
	}
}

type withString struct {
	a int
	s string
}
type flat struct {
	a, b uint64
	c    [4]uint16
	d    [0]*int // zero-length: no pointers stored
}
type nested struct {
	f flat
	g [2]struct {
		x int
		m map[int]int
	}
}

func TestHasPointers(t *testing.T) {
	tests := []struct {
		typ  reflect.Type
		want bool
	}{
		{reflect.TypeFor[uint64](), false},
		{reflect.TypeFor[flat](), false},
		{reflect.TypeFor[[8]flat](), false},
		{reflect.TypeFor[struct{}](), false},
		{reflect.TypeFor[uintptr](), false},
		{reflect.TypeFor[complex128](), false},
		{reflect.TypeFor[*int](), true},
		{reflect.TypeFor[string](), true},
		{reflect.TypeFor[[]byte](), true},
		{reflect.TypeFor[withString](), true},
		{reflect.TypeFor[nested](), true},
		{reflect.TypeFor[any](), true},
		{reflect.TypeFor[error](), true},
		{reflect.TypeFor[func()](), true},
		{reflect.TypeFor[chan int](), true},
		{reflect.TypeFor[unsafe.Pointer](), true},
		{reflect.TypeFor[[1][]int](), true},
	}
	for _, tt := range tests {
		if got := hasPointers(tt.typ); got != tt.want {
			t.Errorf("hasPointers(%v) = %v, want %v", tt.typ, got, tt.want)
		}
	}
}

// TestSlotsCleared inspects the slots after every kind of dequeue, across the
// wrap-around.
func TestSlotsCleared(t *testing.T) {
	r, _ := New[*int](8, nil)
	if !r.clr {
		t.Fatal("pointer ring does not clear")
	}
	v := new(int)
	items := make([]*int, 8)
	for i := range items {
		items[i] = v
	}
	out := make([]*int, 8)
	check := func(what string) {
		t.Helper()
		h := r.c.head.Load()
		tl := r.p.tail.Load()
		for s := uint64(0); s < r.size; s++ {
			queued := (s-h)&r.mask < tl-h
			if !queued && r.buf[s] != nil {
				t.Fatalf("%s: slot %d (head %d tail %d) still holds a pointer", what, s, h, tl)
			}
			if queued && r.buf[s] == nil {
				t.Fatalf("%s: slot %d (head %d tail %d) is queued but cleared", what, s, h, tl)
			}
		}
	}
	r.EnqueueBurst(items[:5])
	r.DequeueBurst(out[:3])
	check("burst")
	r.EnqueueBurst(items[:6]) // wraps
	r.DequeueBurst(out[:7])   // wraps
	check("burst wrap")
	r.EnqueueBulk(items[:7])
	r.DequeueBulk(out[:7])
	check("bulk")
	r.Enqueue(v)
	r.Dequeue()
	check("single")
	r.EnqueueBurst(items[:3]) // DequeueBurstWait's fast path: the whole burst is there
	if n, err := r.DequeueBurstWait(context.Background(), out[:3]); n != 3 || err != nil {
		t.Fatalf("DequeueBurstWait: %d, %v", n, err)
	}
	check("burst wait")
	if r.Len() != 1 {
		t.Fatalf("Len %d, want 1", r.Len())
	}
	for range 3 { // Peek/Release in parts, across the wrap
		r.Commit(copy(r.Reserve(5), items))
		s := r.Peek(8)
		r.Release(len(s) / 2)
		check("release part")
		r.Release(len(s) - len(s)/2)
		check("release")
		r.Release(len(r.Peek(8)))
		check("release rest")
	}
	f, _ := NewFanIn[*int](2, 4, nil)
	f.Producer(0).EnqueueBurst(items[:3])
	f.Producer(1).EnqueueBurst(items[:3])
	f.DequeueBurst(out[:6])
	f.Producer(1).EnqueueBurst(items[:3])
	for s := f.Peek(4); len(s) > 0; s = f.Peek(4) {
		f.Release(len(s))
	}
	for i := range f.rings {
		for s, p := range f.rings[i].buf {
			if p != nil {
				t.Fatalf("fan-in ring %d slot %d still holds a pointer", i, s)
			}
		}
	}
}

// TestNoClearForFlat shows that a pointer-free ring skips the clearing.
func TestNoClearForFlat(t *testing.T) {
	r, _ := New[flat](4, nil)
	if r.clr {
		t.Fatal("pointer-free ring clears")
	}
	r.Enqueue(flat{a: 7})
	r.Dequeue()
	if r.buf[0].a != 7 {
		t.Fatal("slot zeroed although T has no pointers")
	}
}

// waitFor polls cond until it holds; a hang is reported after a generous
// deadline (a failure of the protocol, not a timing assertion).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

type result struct {
	n   int
	v   []int
	err error
}

// parkedConsumer starts DequeueBurstWait on r and returns once the consumer
// is parked.
func parkedConsumer(t *testing.T, ctx context.Context, r *SPSC[int], burst int) <-chan result {
	t.Helper()
	ch := make(chan result, 1)
	go func() {
		out := make([]int, burst)
		n, err := r.DequeueBurstWait(ctx, out)
		ch <- result{n, out[:n], err}
	}()
	waitFor(t, "the consumer to park", func() bool { return r.cw.sleeping.Load() == 1 })
	return ch
}

func recv(t *testing.T, ch <-chan result) result {
	t.Helper()
	select {
	case res := <-ch:
		return res
	case <-time.After(20 * time.Second):
		t.Fatal("parked goroutine was never woken")
		return result{}
	}
}

func TestParkedConsumerWakesForOneItem(t *testing.T) {
	for _, how := range []string{"Enqueue", "EnqueueBurst", "EnqueueBulk", "EnqueueBurstWait", "Commit"} {
		t.Run(how, func(t *testing.T) {
			r, _ := New[int](16, nil)
			ch := parkedConsumer(t, context.Background(), r, 8)
			switch how {
			case "Enqueue":
				r.Enqueue(42)
			case "EnqueueBurst":
				r.EnqueueBurst([]int{42})
			case "EnqueueBulk":
				r.EnqueueBulk([]int{42})
			case "EnqueueBurstWait":
				r.EnqueueBurstWait(context.Background(), []int{42})
			case "Commit":
				s := r.Reserve(4)
				s[0] = 42
				r.Commit(1)
			}
			res := recv(t, ch)
			if res.err != nil || res.n != 1 || res.v[0] != 42 {
				t.Fatalf("got %d %v %v, want 1 [42] <nil>", res.n, res.v, res.err)
			}
			if r.cw.sleeping.Load() != 0 {
				t.Error("sleeping flag left set")
			}
			if s := r.Stats(); s.Empty != 1 || s.Enqueued != 1 || s.Dequeued != 1 {
				t.Errorf("stats %+v", s)
			}
		})
	}
}

func TestParkedConsumerWakesOnClose(t *testing.T) {
	r, _ := New[int](16, nil)
	ch := parkedConsumer(t, context.Background(), r, 8)
	r.Close()
	if res := recv(t, ch); res.n != 0 || !errors.Is(res.err, ErrClosed) {
		t.Fatalf("got %d %v, want 0 ErrClosed", res.n, res.err)
	}
	// Items queued before Close are still delivered, then ErrClosed.
	r2, _ := New[int](16, nil)
	r2.EnqueueBurst([]int{1, 2, 3})
	r2.Close()
	out := make([]int, 2)
	var got []int
	for {
		n, err := r2.DequeueBurstWait(context.Background(), out)
		if err != nil {
			if !errors.Is(err, ErrClosed) {
				t.Fatal(err)
			}
			break
		}
		got = append(got, out[:n]...)
	}
	if !reflect.DeepEqual(got, []int{1, 2, 3}) {
		t.Fatalf("drained %v", got)
	}
}

func TestParkedConsumerWakesOnCancel(t *testing.T) {
	r, _ := New[int](16, nil)
	ctx, cancel := context.WithCancel(context.Background())
	ch := parkedConsumer(t, ctx, r, 8)
	cancel()
	if res := recv(t, ch); res.n != 0 || !errors.Is(res.err, context.Canceled) {
		t.Fatalf("got %d %v, want 0 context.Canceled", res.n, res.err)
	}
	if r.cw.sleeping.Load() != 0 {
		t.Error("sleeping flag left set")
	}
}

// parkedProducer fills r and starts EnqueueBurstWait with extra more items;
// it returns once the producer is parked.
func parkedProducer(t *testing.T, ctx context.Context, r *SPSC[int], extra int) <-chan result {
	t.Helper()
	full := make([]int, r.Cap())
	for i := range full {
		full[i] = i
	}
	if !r.EnqueueBulk(full) {
		t.Fatal("cannot fill")
	}
	ch := make(chan result, 1)
	go func() {
		more := make([]int, extra)
		for i := range more {
			more[i] = r.Cap() + i
		}
		n, err := r.EnqueueBurstWait(ctx, more)
		ch <- result{n: n, err: err}
	}()
	waitFor(t, "the producer to park", func() bool { return r.pw.sleeping.Load() != 0 })
	return ch
}

func TestParkedProducer(t *testing.T) {
	for _, how := range []string{"Dequeue", "DequeueBurst", "DequeueBulk", "DequeueBurstWait", "Release"} {
		t.Run(how, func(t *testing.T) {
			r, _ := New[int](8, nil)
			ch := parkedProducer(t, context.Background(), r, 3)
			out := make([]int, 2)
			switch how {
			case "Dequeue":
				r.Dequeue()
				r.Dequeue()
			case "DequeueBurst":
				r.DequeueBurst(out)
			case "DequeueBulk":
				r.DequeueBulk(out)
			case "DequeueBurstWait":
				r.DequeueBurstWait(context.Background(), out)
			case "Release":
				r.Peek(5)
				r.Release(2)
			}
			// The producer waits for room for all 3 (less than half the
			// ring): 2 free slots do not wake it. The consumer's wake-up
			// decision is synchronous, so the flag is still set now.
			if w := r.pw.sleeping.Load(); w != 3 || r.Len() != 6 {
				t.Fatalf("after freeing 2: producer waits for %d, Len %d; want 3, 6", w, r.Len())
			}
			r.DequeueBurst(out)
			if res := recv(t, ch); res.n != 3 || res.err != nil {
				t.Fatalf("got %d %v, want 3 <nil>", res.n, res.err)
			}
			all := make([]int, 7)
			if !r.DequeueBulk(all) || r.Len() != 0 {
				t.Fatalf("ring holds %d, want 7", r.Len())
			}
			for i, v := range all {
				if v != i+4 {
					t.Fatalf("got %v, want 4..10", all)
				}
			}
			if s := r.Stats(); s.Full != 1 {
				t.Errorf("Full %d, want 1 (a waiting call counts once)", s.Full)
			}
		})
	}
}

func TestParkedProducerWakesOnCloseAndCancel(t *testing.T) {
	r, _ := New[int](4, nil)
	ch := parkedProducer(t, context.Background(), r, 2)
	r.Close()
	if res := recv(t, ch); res.n != 0 || !errors.Is(res.err, ErrClosed) {
		t.Fatalf("close: got %d %v, want 0 ErrClosed", res.n, res.err)
	}
	if n, err := r.EnqueueBurstWait(context.Background(), []int{1}); n != 0 || !errors.Is(err, ErrClosed) {
		t.Fatalf("enqueue on closed: %d %v", n, err)
	}

	r, _ = New[int](4, nil)
	ctx, cancel := context.WithCancel(context.Background())
	ch = parkedProducer(t, ctx, r, 2)
	cancel()
	if res := recv(t, ch); res.n != 0 || !errors.Is(res.err, context.Canceled) {
		t.Fatalf("cancel: got %d %v, want 0 context.Canceled", res.n, res.err)
	}
}

func TestFanInParkedConsumer(t *testing.T) {
	for p := range 3 {
		f, _ := NewFanIn[int](3, 8, nil)
		ch := make(chan result, 1)
		go func() {
			out := make([]int, 4)
			n, err := f.DequeueBurstWait(context.Background(), out)
			ch <- result{n, out[:n], err}
		}()
		waitFor(t, "the fan-in consumer to park", func() bool { return f.cw.sleeping.Load() == 1 })
		f.Producer(p).Enqueue(100 + p)
		if res := recv(t, ch); res.n != 1 || res.v[0] != 100+p || res.err != nil {
			t.Fatalf("producer %d: got %d %v %v", p, res.n, res.v, res.err)
		}
	}

	// A cancelled context wakes the parked fan-in consumer.
	{
		f, _ := NewFanIn[int](2, 8, nil)
		ctx, cancel := context.WithCancel(context.Background())
		ch := make(chan result, 1)
		go func() {
			n, err := f.DequeueBurstWait(ctx, make([]int, 4))
			ch <- result{n: n, err: err}
		}()
		waitFor(t, "the fan-in consumer to park", func() bool { return f.cw.sleeping.Load() == 1 })
		cancel()
		if res := recv(t, ch); res.n != 0 || !errors.Is(res.err, context.Canceled) {
			t.Fatalf("cancel: got %d %v", res.n, res.err)
		}
	}

	// Closing some producers does not end the stream; closing all does.
	f, _ := NewFanIn[int](3, 8, nil)
	ch := make(chan result, 1)
	go func() {
		out := make([]int, 4)
		n, err := f.DequeueBurstWait(context.Background(), out)
		ch <- result{n, out[:n], err}
	}()
	waitFor(t, "the fan-in consumer to park", func() bool { return f.cw.sleeping.Load() == 1 })
	f.Producer(0).Close()
	f.Producer(2).Close()
	waitFor(t, "the fan-in consumer to park again", func() bool { return f.cw.sleeping.Load() == 1 })
	select {
	case res := <-ch:
		t.Fatalf("consumer returned %v with a producer still open", res)
	default:
	}
	f.Producer(1).Close()
	if res := recv(t, ch); res.n != 0 || !errors.Is(res.err, ErrClosed) {
		t.Fatalf("got %d %v, want 0 ErrClosed", res.n, res.err)
	}
	runtime.KeepAlive(f)
}

// parkedZC starts fn (a PeekWait or ReserveWait) in a goroutine and returns
// once it is parked on w.
func parkedZC(t *testing.T, w *waiter, fn func() ([]int, error)) <-chan result {
	t.Helper()
	ch := make(chan result, 1)
	go func() {
		s, err := fn()
		ch <- result{n: len(s), v: append([]int(nil), s...), err: err}
	}()
	waitFor(t, "the zero-copy call to park", func() bool { return w.sleeping.Load() != 0 })
	return ch
}

// TestZCParked: a consumer parked in PeekWait wakes for one item (copied in
// or committed) and on Close; a producer parked in ReserveWait wakes once the
// consumer has released the room it waits for (not before) and on cancel; a
// FanIn consumer parked in PeekWait wakes for any producer's Commit.
func TestZCParked(t *testing.T) {
	ctx := context.Background()
	for _, how := range []string{"EnqueueBurst", "Commit"} {
		r, _ := New[int](16, nil)
		ch := parkedZC(t, r.cw, func() ([]int, error) { return r.PeekWait(ctx, 8) })
		if how == "Commit" {
			r.Reserve(1)[0] = 42
			r.Commit(1)
		} else {
			r.EnqueueBurst([]int{42})
		}
		if res := recv(t, ch); res.err != nil || res.n != 1 || res.v[0] != 42 {
			t.Fatalf("%s: got %v %v, want [42] <nil>", how, res.v, res.err)
		}
		if s := r.Stats(); s.Empty != 1 || r.cw.sleeping.Load() != 0 {
			t.Errorf("%s: stats %+v, sleeping %d", how, s, r.cw.sleeping.Load())
		}
	}
	r, _ := New[int](16, nil)
	ch := parkedZC(t, r.cw, func() ([]int, error) { return r.PeekWait(ctx, 8) })
	r.Close()
	if res := recv(t, ch); res.n != 0 || !errors.Is(res.err, ErrClosed) {
		t.Fatalf("Close: got %v %v", res.v, res.err)
	}

	r, _ = New[int](8, nil)
	copy(r.Reserve(8), []int{0, 1, 2, 3, 4, 5, 6, 7})
	r.Commit(8)
	ch = parkedZC(t, r.pw, func() ([]int, error) { return r.ReserveWait(ctx, 3) })
	r.Release(len(r.Peek(2)))
	if w := r.pw.sleeping.Load(); w != 3 {
		t.Fatalf("after releasing 2: producer waits for %d, want 3", w)
	}
	r.Release(len(r.Peek(1)))
	if res := recv(t, ch); res.err != nil || res.n != 3 {
		t.Fatalf("ReserveWait: got %d %v, want 3 slots", res.n, res.err)
	}
	cctx, cancel := context.WithCancel(ctx)
	r, _ = New[int](2, nil)
	r.EnqueueBurst([]int{1, 2})
	ch = parkedZC(t, r.pw, func() ([]int, error) { return r.ReserveWait(cctx, 1) })
	cancel()
	if res := recv(t, ch); !errors.Is(res.err, context.Canceled) || r.pw.sleeping.Load() != 0 {
		t.Fatalf("cancel: got %v, sleeping %d", res.err, r.pw.sleeping.Load())
	}

	for p := range 3 {
		f, _ := NewFanIn[int](3, 8, nil)
		ch := parkedZC(t, f.cw, func() ([]int, error) {
			s, err := f.PeekWait(ctx, 4)
			f.Release(len(s))
			return s, err
		})
		f.Producer(p).Reserve(2)[0] = 100 + p
		f.Producer(p).Commit(1)
		if res := recv(t, ch); res.n != 1 || res.v[0] != 100+p || res.err != nil || f.Len() != 0 {
			t.Fatalf("fan-in producer %d: got %v %v, Len %d", p, res.v, res.err, f.Len())
		}
	}
}
