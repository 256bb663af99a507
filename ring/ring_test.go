package ring_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"weak"

	"github.com/wirespeed/wirespeed/ring"
)

func TestNewSize(t *testing.T) {
	tests := []struct {
		size, cap int
		err       error
	}{
		{1, 1, nil},
		{2, 2, nil},
		{3, 4, nil},
		{1000, 1024, nil},
		{1024, 1024, nil},
		{1025, 2048, nil},
		{0, 0, ring.ErrSize},
		{-5, 0, ring.ErrSize},
		{ring.MaxSize + 1, 0, ring.ErrSize},
	}
	for _, tt := range tests {
		r, err := ring.New[int](tt.size, nil)
		if err != tt.err {
			t.Errorf("New(%d): err %v, want %v", tt.size, err, tt.err)
			continue
		}
		if err == nil && r.Cap() != tt.cap {
			t.Errorf("New(%d).Cap() = %d, want %d", tt.size, r.Cap(), tt.cap)
		}
	}
	if _, err := ring.NewFanIn[int](0, 8, nil); err != ring.ErrCount {
		t.Errorf("NewFanIn(0): %v", err)
	}
	if _, err := ring.NewFanOut[int](0, 8, nil); err != ring.ErrCount {
		t.Errorf("NewFanOut(0): %v", err)
	}
	if _, err := ring.NewFanIn[int](2, 0, nil); err != ring.ErrSize {
		t.Errorf("NewFanIn(size 0): %v", err)
	}
	if _, err := ring.NewFanOut[int](2, 0, nil); err != ring.ErrSize {
		t.Errorf("NewFanOut(size 0): %v", err)
	}
}

// model is the oracle: a plain bounded FIFO on a slice.
type model struct {
	q                              []int
	cap                            int
	enq, deq, full, empty, started uint64
}

func (m *model) burstIn(items []int) int {
	n := min(len(items), m.cap-len(m.q))
	m.q = append(m.q, items[:n]...)
	m.enq += uint64(n)
	if n < len(items) {
		m.full++
	}
	return n
}

func (m *model) bulkIn(items []int) bool {
	if len(items) > m.cap-len(m.q) {
		m.full++
		return false
	}
	m.burstIn(items)
	return true
}

func (m *model) burstOut(k int) []int {
	n := min(k, len(m.q))
	out := slices.Clone(m.q[:n])
	m.q = m.q[n:]
	m.deq += uint64(n)
	if n == 0 && k > 0 {
		m.empty++
	}
	return out
}

func (m *model) bulkOut(k int) ([]int, bool) {
	if k > len(m.q) {
		m.empty++
		return nil, false
	}
	return m.burstOut(k), true
}

// TestAgainstModel drives one ring and the slice model with the same random
// single-goroutine operations and demands identical answers and counters.
func TestAgainstModel(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rnd := rand.New(rand.NewPCG(seed, 1))
	for _, size := range []int{1, 2, 5, 8, 64} {
		r, _ := ring.New[int](size, nil)
		m := &model{cap: r.Cap()}
		next := 0
		items := make([]int, 3*r.Cap()+2)
		out := make([]int, len(items))
		for op := range 20000 {
			k := rnd.IntN(len(items) + 1)
			if rnd.IntN(4) == 0 {
				k = rnd.IntN(3)
			}
			for i := range k {
				items[i] = next + i
			}
			switch rnd.IntN(8) {
			case 6:
				// EnqueueBurstWait where it cannot block: all of items fit.
				k = min(k, m.cap-len(m.q))
				n, err := r.EnqueueBurstWait(context.Background(), items[:k])
				if want := m.burstIn(items[:k]); n != want || err != nil {
					t.Fatalf("size %d op %d: EnqueueBurstWait(%d) = %d %v, want %d", size, op, k, n, err, want)
				}
				next += n
			case 7:
				// DequeueBurstWait where it cannot block: items are queued
				// (or out is empty).
				if len(m.q) == 0 {
					k = 0
				}
				n, err := r.DequeueBurstWait(context.Background(), out[:k])
				if want := m.burstOut(k); err != nil || !slices.Equal(out[:n], want) {
					t.Fatalf("size %d op %d: DequeueBurstWait(%d) = %v %v, want %v", size, op, k, out[:n], err, want)
				}
			case 0:
				n := r.EnqueueBurst(items[:k])
				if want := m.burstIn(items[:k]); n != want {
					t.Fatalf("size %d op %d: EnqueueBurst(%d) = %d, want %d", size, op, k, n, want)
				}
				next += n
			case 1:
				ok := r.EnqueueBulk(items[:k])
				if want := m.bulkIn(items[:k]); ok != want {
					t.Fatalf("size %d op %d: EnqueueBulk(%d) = %v, want %v", size, op, k, ok, want)
				}
				if ok {
					next += k
				}
			case 2:
				ok := r.Enqueue(next)
				if want := m.burstIn([]int{next}) == 1; ok != want {
					t.Fatalf("size %d op %d: Enqueue = %v, want %v", size, op, ok, want)
				}
				if ok {
					next++
				}
			case 3:
				n := r.DequeueBurst(out[:k])
				if want := m.burstOut(k); !slices.Equal(out[:n], want) {
					t.Fatalf("size %d op %d: DequeueBurst(%d) = %v, want %v", size, op, k, out[:n], want)
				}
			case 4:
				ok := r.DequeueBulk(out[:k])
				want, wok := m.bulkOut(k)
				if ok != wok || ok && !slices.Equal(out[:k], want) {
					t.Fatalf("size %d op %d: DequeueBulk(%d) = %v %v, want %v %v", size, op, k, ok, out[:k], wok, want)
				}
			case 5:
				v, ok := r.Dequeue()
				want := m.burstOut(1)
				if ok != (len(want) == 1) || ok && v != want[0] {
					t.Fatalf("size %d op %d: Dequeue = %d %v, want %v", size, op, v, ok, want)
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

// TestFanInAgainstModel drives a FanIn from one goroutine with random bursts
// into random producers' rings and random DequeueBurst(Wait) calls, against
// per-ring slice models and the documented order: each call starts one ring
// further on and takes from each ring in turn as many as fit.
func TestFanInAgainstModel(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rnd := rand.New(rand.NewPCG(seed, 2))
	for _, producers := range []int{1, 2, 3} {
		for _, size := range []int{1, 4, 16} {
			f, _ := ring.NewFanIn[int](producers, size, nil)
			ms := make([]*model, producers)
			for p := range ms {
				ms[p] = &model{cap: f.Producer(p).Cap()}
			}
			start, next := 0, 0
			items := make([]int, 2*size+2)
			out := make([]int, producers*size+3)
			for op := range 5000 {
				if rnd.IntN(2) == 0 {
					p := rnd.IntN(producers)
					k := rnd.IntN(len(items) + 1)
					for i := range k {
						items[i] = next + i
					}
					n := f.Producer(p).EnqueueBurst(items[:k])
					if want := ms[p].burstIn(items[:k]); n != want {
						t.Fatalf("producers %d size %d op %d: EnqueueBurst(%d) into %d = %d, want %d", producers, size, op, k, p, n, want)
					}
					next += n
					continue
				}
				k := rnd.IntN(len(out) + 1)
				queued := 0
				for _, m := range ms {
					queued += len(m.q)
				}
				var want []int
				for i, p := 0, start; i < producers && len(want) < k; i, p = i+1, (p+1)%producers {
					take := min(k-len(want), len(ms[p].q))
					want = append(want, ms[p].q[:take]...)
					ms[p].q = ms[p].q[take:]
				}
				start = (start + 1) % producers
				var n int
				var err error
				if rnd.IntN(2) == 0 || queued == 0 {
					n = f.DequeueBurst(out[:k])
				} else {
					n, err = f.DequeueBurstWait(context.Background(), out[:k])
				}
				if err != nil || !slices.Equal(out[:n], want) {
					t.Fatalf("producers %d size %d op %d: dequeue(%d) = %v %v, want %v", producers, size, op, k, out[:n], err, want)
				}
			}
		}
	}
}

func TestBulkAllOrNothing(t *testing.T) {
	r, _ := ring.New[int](8, nil)
	if !r.EnqueueBulk([]int{1, 2, 3, 4, 5}) {
		t.Fatal("bulk of 5 into empty 8 refused")
	}
	if r.EnqueueBulk([]int{6, 7, 8, 9}) {
		t.Fatal("bulk of 4 into 3 free slots accepted")
	}
	if r.Len() != 5 {
		t.Fatalf("refused bulk changed Len to %d", r.Len())
	}
	if r.EnqueueBulk(make([]int, 9)) {
		t.Fatal("bulk larger than Cap accepted")
	}
	out := make([]int, 6)
	if r.DequeueBulk(out) {
		t.Fatal("bulk dequeue of 6 from 5 accepted")
	}
	if r.Len() != 5 {
		t.Fatalf("refused bulk dequeue changed Len to %d", r.Len())
	}
	if !r.DequeueBulk(out[:5]) || !slices.Equal(out[:5], []int{1, 2, 3, 4, 5}) {
		t.Fatalf("bulk dequeue got %v", out[:5])
	}
	if !r.EnqueueBulk(nil) || !r.DequeueBulk(nil) {
		t.Fatal("empty bulk refused")
	}
	if s := r.Stats(); s.Full != 2 || s.Empty != 1 {
		t.Fatalf("stats %+v, want Full 2 Empty 1", s)
	}
}

type big struct{ pad [64]int }

// TestDequeuedPointerCollectable checks through a weak pointer that once an
// item has left the ring the ring no longer keeps it alive, and (the
// control) that a queued item is kept alive.
func TestDequeuedPointerCollectable(t *testing.T) {
	for _, how := range []string{"queued", "burst", "bulk", "single", "wait", "fanin"} {
		t.Run(how, func(t *testing.T) {
			r, _ := ring.New[*big](4, nil)
			f, _ := ring.NewFanIn[*big](2, 4, nil)
			// Move the indices so the item sits mid-ring.
			r.EnqueueBurst([]*big{nil, nil, nil})
			r.DequeueBurst(make([]*big, 3))
			p := new(big)
			wp := weak.Make(p)
			if how == "fanin" {
				f.Producer(1).Enqueue(p)
			} else {
				r.Enqueue(p)
			}
			p = nil
			out := make([]*big, 2)
			switch how {
			case "burst":
				r.DequeueBurst(out)
			case "bulk":
				r.DequeueBulk(out[:1])
			case "single":
				r.Dequeue()
			case "wait":
				r.DequeueBurstWait(context.Background(), out)
			case "fanin":
				f.DequeueBurst(out)
			}
			clear(out)
			runtime.GC()
			runtime.GC()
			alive := wp.Value() != nil
			if how == "queued" && !alive {
				t.Fatal("control failed: a queued item was collected")
			}
			if how != "queued" && alive {
				t.Fatal("dequeued item still reachable from the ring")
			}
			runtime.KeepAlive(r)
			runtime.KeepAlive(f)
		})
	}
}

// msg carries its producer, its sequence number and a pointer, so that the
// pointer-clearing path runs under the race detector too.
type msg struct {
	prod int
	seq  int
	tag  *int
}

func stall(rnd *rand.Rand) {
	switch rnd.IntN(200) {
	case 0:
		time.Sleep(time.Duration(rnd.IntN(200)) * time.Microsecond)
	case 1, 2, 3:
		runtime.Gosched()
	}
}

// checker verifies per-producer order: each producer's items arrive once,
// in order, none missing.
type checker struct {
	t    *testing.T
	next []int
	tags []*int
}

func newChecker(t *testing.T, producers int) *checker {
	c := &checker{t: t, next: make([]int, producers), tags: make([]*int, producers)}
	for i := range c.tags {
		c.tags[i] = new(int)
	}
	return c
}

func (c *checker) see(m msg) {
	c.t.Helper()
	if m.prod < 0 || m.prod >= len(c.next) || m.tag != c.tags[m.prod] {
		c.t.Fatalf("corrupt item %+v", m)
	}
	if m.seq != c.next[m.prod] {
		c.t.Fatalf("producer %d: got seq %d, want %d (lost, duplicated or reordered)", m.prod, m.seq, c.next[m.prod])
	}
	c.next[m.prod]++
}

func (c *checker) done(per int) {
	c.t.Helper()
	for p, n := range c.next {
		if n != per {
			c.t.Errorf("producer %d: received %d of %d", p, n, per)
		}
	}
}

func perProducer(t *testing.T) int {
	if testing.Short() {
		return 20000
	}
	return 200000
}

// produce sends per items from producer id in random bursts through
// EnqueueBurst, EnqueueBulk, Enqueue, EnqueueBurstWait and the zero-copy
// Reserve(Wait)+Commit, with random stalls, then closes.
func produce(r *ring.SPSC[msg], id, per int, tag *int, seed uint64) error {
	rnd := rand.New(rand.NewPCG(seed, uint64(id)))
	buf := make([]msg, 80)
	seq := 0
	for seq < per {
		k := min(1+rnd.IntN(len(buf)), per-seq)
		for i := range k {
			buf[i] = msg{id, seq + i, tag}
		}
		switch rnd.IntN(6) {
		case 4, 5: // zero-copy: Reserve or ReserveWait, then Commit all or part
			var s []msg
			var err error
			if rnd.IntN(2) == 0 {
				s = r.Reserve(k)
			} else if s, err = r.ReserveWait(context.Background(), k); err != nil {
				return err
			}
			for i := range s {
				s[i] = msg{id, seq + i, tag}
			}
			c := len(s)
			if c > 0 && rnd.IntN(3) == 0 {
				c = rnd.IntN(c + 1)
			}
			r.Commit(c)
			seq += c
		case 0:
			seq += r.EnqueueBurst(buf[:k])
		case 1:
			if r.EnqueueBulk(buf[:k]) {
				seq += k
			}
		case 2:
			if r.Enqueue(buf[0]) {
				seq++
			}
		case 3:
			n, err := r.EnqueueBurstWait(context.Background(), buf[:k])
			seq += n
			if err != nil {
				return err
			}
		}
		stall(rnd)
	}
	r.Close()
	return nil
}

func TestSPSCConcurrent(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	for _, cfg := range []*ring.Config{nil, {Spin: 64}} {
		per := perProducer(t)
		r, _ := ring.New[msg](64, cfg)
		c := newChecker(t, 1)
		errc := make(chan error, 1)
		go func() { errc <- produce(r, 0, per, c.tags[0], seed) }()
		rnd := rand.New(rand.NewPCG(seed, 99))
		out := make([]msg, 100)
		for {
			k := 1 + rnd.IntN(len(out))
			var n int
			var err error
			switch rnd.IntN(5) {
			case 4:
				_, err = zcConsumer[msg]{r.Peek, r.PeekWait, r.Release}.take(rnd, k, c.see)
			case 0:
				n = r.DequeueBurst(out[:k])
			case 1:
				if r.DequeueBulk(out[:k]) {
					n = k
				}
			case 2:
				var ok bool
				if out[0], ok = r.Dequeue(); ok {
					n = 1
				}
			case 3:
				n, err = r.DequeueBurstWait(context.Background(), out[:k])
			}
			for _, m := range out[:n] {
				c.see(m)
			}
			if errors.Is(err, ring.ErrClosed) {
				break
			} else if err != nil {
				t.Fatal(err)
			}
			stall(rnd)
		}
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		c.done(per)
		if s := r.Stats(); s.Enqueued != uint64(per) || s.Dequeued != uint64(per) {
			t.Errorf("stats %+v", s)
		}
	}
}

func TestFanInConcurrent(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	for producers := 2; producers <= 4; producers++ {
		per := perProducer(t) / producers
		f, _ := ring.NewFanIn[msg](producers, 32, nil)
		c := newChecker(t, producers)
		var wg sync.WaitGroup
		errs := make(chan error, producers)
		for p := range producers {
			wg.Go(func() {
				if err := produce(f.Producer(p), p, per, c.tags[p], seed); err != nil {
					errs <- err
				}
			})
		}
		rnd := rand.New(rand.NewPCG(seed, 77))
		out := make([]msg, 100)
		for {
			k := 1 + rnd.IntN(len(out))
			var n int
			var err error
			switch rnd.IntN(3) {
			case 0:
				n = f.DequeueBurst(out[:k])
			case 1:
				n, err = f.DequeueBurstWait(context.Background(), out[:k])
			case 2:
				_, err = zcConsumer[msg]{f.Peek, f.PeekWait, f.Release}.take(rnd, k, c.see)
			}
			for _, m := range out[:n] {
				c.see(m)
			}
			if errors.Is(err, ring.ErrClosed) {
				break
			} else if err != nil {
				t.Fatal(err)
			}
			stall(rnd)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		c.done(per)
		if s := f.Stats(); s.Enqueued != uint64(per*producers) || s.Dequeued != s.Enqueued {
			t.Errorf("producers=%d: stats %+v", producers, s)
		}
	}
}

func TestFanOutConcurrent(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	for _, consumers := range []int{1, 2, 3, 4} {
		total := perProducer(t)
		f, _ := ring.NewFanOut[msg](consumers, 32, nil)
		tag := new(int)
		// Each consumer checks that it sees its share of the single
		// producer's sequence in increasing order, and the union is exact.
		got := make([][]int, consumers)
		var wg sync.WaitGroup
		for i := range consumers {
			wg.Go(func() {
				rnd := rand.New(rand.NewPCG(seed, uint64(i)))
				r := f.Consumer(i)
				out := make([]msg, 50)
				for {
					n, err := r.DequeueBurstWait(context.Background(), out[:1+rnd.IntN(len(out))])
					for _, m := range out[:n] {
						want := m.seq % consumers // by index
						if m.prod == 1 {
							want = int(hashOf(m.seq) % uint32(consumers))
						}
						if m.tag != tag || want != i {
							t.Errorf("consumer %d: misrouted %+v", i, m)
						}
						got[i] = append(got[i], m.seq)
					}
					if err != nil {
						if !errors.Is(err, ring.ErrClosed) {
							t.Error(err)
						}
						return
					}
					stall(rnd)
				}
			})
		}
		rnd := rand.New(rand.NewPCG(seed, 1000))
		buf := make([]msg, 64)
		hashes := make([]uint32, 64)
		for seq := 0; seq < total; {
			k := min(1+rnd.IntN(len(buf)), total-seq)
			if rnd.IntN(2) == 0 {
				// by index: seq%consumers, one burst per run of equal index
				for i := range k {
					buf[i] = msg{0, seq + i, tag}
				}
				j := seq % consumers
				n, err := f.EnqueueBurstWait(context.Background(), j, buf[:1])
				if err != nil || n != 1 {
					t.Fatal(n, err)
				}
				if c := f.EnqueueBurst(j, buf[:0]); c != 0 {
					t.Fatal(c)
				}
				seq++
			} else {
				for i := range k {
					buf[i] = msg{1, seq + i, tag}
					hashes[i] = hashOf(seq + i)
				}
				seq += f.EnqueueBurstHash(buf[:k], hashes)
			}
			stall(rnd)
		}
		f.Close()
		wg.Wait()
		var all []int
		for i := range got {
			if !slices.IsSorted(got[i]) {
				t.Errorf("consumer %d: out of order", i)
			}
			all = append(all, got[i]...)
		}
		slices.Sort(all)
		for i, v := range all {
			if v != i {
				t.Fatalf("consumers=%d: item %d missing or duplicated (got %d)", consumers, i, v)
			}
		}
		if len(all) != total {
			t.Fatalf("consumers=%d: got %d items, want %d", consumers, len(all), total)
		}
	}
}

func hashOf(seq int) uint32 { return uint32(seq) * 2654435761 }

// TestEnqueueBurstHash checks the routing and the prefix semantics against
// a per-ring model.
func TestEnqueueBurstHash(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 5} {
		f, _ := ring.NewFanOut[int](n, 4, nil)
		items := make([]int, 40)
		hashes := make([]uint32, 40)
		for i := range items {
			items[i] = i
			hashes[i] = uint32(i * 7)
		}
		room := make([]int, n)
		for i := range room {
			room[i] = f.Consumer(i).Cap()
		}
		want := len(items)
		for k, h := range hashes {
			j := int(h % uint32(n))
			if room[j] == 0 {
				want = k
				break
			}
			room[j]--
		}
		got := f.EnqueueBurstHash(items, hashes)
		if got != want {
			t.Fatalf("n=%d: EnqueueBurstHash = %d, want %d", n, got, want)
		}
		seen := 0
		for j := range n {
			out := make([]int, 8)
			c := f.Consumer(j).DequeueBurst(out)
			for _, v := range out[:c] {
				if int(hashes[v]%uint32(n)) != j {
					t.Fatalf("n=%d: item %d in ring %d", n, v, j)
				}
			}
			if !slices.IsSorted(out[:c]) {
				t.Fatalf("n=%d ring %d: %v out of order", n, j, out[:c])
			}
			seen += c
		}
		if seen != got {
			t.Fatalf("n=%d: %d items in rings, %d reported", n, seen, got)
		}
		if s := f.Stats(); s.Full != 1 || s.Enqueued != uint64(got) {
			t.Fatalf("n=%d: stats %+v", n, s)
		}
	}
}

func TestAllocs(t *testing.T) {
	r, _ := ring.New[uint64](1024, nil)
	rp, _ := ring.New[*big](1024, nil)
	f, _ := ring.NewFanIn[uint64](2, 1024, nil)
	o, _ := ring.NewFanOut[uint64](3, 1024, nil)
	in := make([]uint64, 32)
	inp := make([]*big, 32)
	out := make([]uint64, 32)
	outp := make([]*big, 32)
	hashes := make([]uint32, 32)
	for i := range hashes {
		hashes[i] = uint32(i)
	}
	ctx := context.Background()
	tests := []struct {
		name string
		fn   func()
	}{
		{"burst", func() { r.EnqueueBurst(in); r.DequeueBurst(out) }},
		{"burst-pointers", func() { rp.EnqueueBurst(inp); rp.DequeueBurst(outp) }},
		{"bulk", func() { r.EnqueueBulk(in); r.DequeueBulk(out) }},
		{"single", func() { r.Enqueue(1); r.Dequeue() }},
		{"empty-and-full", func() {
			r.DequeueBurst(out)
			for r.EnqueueBurst(in) > 0 {
			}
			for r.DequeueBurst(out) > 0 {
			}
		}},
		{"wait-ready", func() { r.EnqueueBurstWait(ctx, in); r.DequeueBurstWait(ctx, out) }},
		{"fanin", func() {
			f.Producer(0).EnqueueBurst(in)
			f.Producer(1).EnqueueBurst(in)
			f.DequeueBurst(out)
			f.DequeueBurstWait(ctx, out)
		}},
		{"fanout", func() {
			o.EnqueueBurstHash(in, hashes)
			for i := range o.N() {
				o.Consumer(i).DequeueBurst(out)
			}
		}},
		{"stats", func() { _ = r.Stats(); _ = f.Stats(); _ = o.Len() }},
		{"zc", func() {
			copy(r.Reserve(32), in)
			r.Commit(32)
			r.Release(len(r.Peek(32)))
			s, _ := r.ReserveWait(ctx, 32)
			r.Commit(len(s))
			s, _ = r.PeekWait(ctx, 32)
			r.Release(len(s))
		}},
		{"zc-pointers", func() {
			copy(rp.Reserve(32), inp)
			rp.Commit(32)
			rp.Release(len(rp.Peek(32)))
		}},
		{"zc-fanin", func() {
			f.Producer(0).Commit(copy(f.Producer(0).Reserve(32), in))
			f.Producer(1).Commit(copy(f.Producer(1).Reserve(32), in))
			f.Release(len(f.Peek(32)))
			s, _ := f.PeekWait(ctx, 32)
			f.Release(len(s))
			f.Release(len(f.Peek(32)))
		}},
	}
	for _, tt := range tests {
		if a := testing.AllocsPerRun(100, tt.fn); a != 0 {
			t.Errorf("%s: %v allocs per run, want 0", tt.name, a)
		}
	}
}

// TestVetCatchesCopies runs go vet on testdata/vetcopy, which copies an
// SPSC, a FanIn and a FanOut, and expects copylocks to report all three.
func TestVetCatchesCopies(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go vet")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	cmd := exec.Command(gobin, "vet", "./testdata/vetcopy")
	cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false")
	outb, err := cmd.CombinedOutput()
	out := string(outb)
	if err == nil {
		t.Fatalf("go vet accepted copies of ring values:\n%s", out)
	}
	for _, typ := range []string{"ring.SPSC[int] contains sync.Mutex", "ring.FanIn[int] contains sync.Mutex", "ring.FanOut[int] contains sync.Mutex"} {
		if !strings.Contains(out, typ) {
			t.Errorf("go vet did not report a copy of %s:\n%s", typ, out)
		}
	}
}

func TestPinToCPU(t *testing.T) {
	done := make(chan error)
	go func() {
		release, err := ring.PinToCPU(pinnableCPU())
		if runtime.GOOS != "linux" {
			if !errors.Is(err, errors.ErrUnsupported) {
				err = errors.New("want ErrUnsupported, got " + errString(err))
			} else {
				err = nil
			}
			done <- err
			return
		}
		if err != nil {
			done <- err
			return
		}
		release()
		release() // idempotent
		if _, err := ring.PinToCPU(-1); err == nil {
			done <- errors.New("PinToCPU(-1) succeeded")
			return
		}
		done <- nil
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func errString(err error) string {
	if err == nil {
		return "nil"
	}
	return err.Error()
}
