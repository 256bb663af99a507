package ring_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/ring"
)

// benchCap is the capacity, in items, of every queue in BenchmarkRing, unless a sub-benchmark
// names another (cap=N).
const benchCap = 1024

type item = uint64

// share is how many of n items producer p of np sends.
func share(n, p, np int) int {
	s := n / np
	if p < n%np {
		s++
	}
	return s
}

func report(b *testing.B, items int, elapsed time.Duration) {
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(items), "ns/item")
	b.ReportMetric(float64(items)/elapsed.Seconds(), "items/s")
}

// reportCPU adds the process CPU time (all threads, user + system) per item
// since cpu0: on a machine shared with other work it shows the cost of the
// transfer better than wall time, which also measures how much CPU the
// scheduler happened to give us.
func reportCPU(b *testing.B, items int, cpu0 time.Duration) {
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(items), "cpu-ns/item")
}

// BenchmarkRing moves b.N items from producer goroutines to one consumer
// goroutine (the benchmark's own). Run it with GOMAXPROCS=2.
//
//	ring-burst32  SPSC (FanIn for 2 producers), bursts of 32, spin-then-park waits
//	ring-single   the same, one item per Enqueue/Dequeue
//	ring-zc32     ring-burst32 with the zero-copy calls: the producer writes its
//	              values into ReserveWait's slots and commits them, the consumer
//	              sums PeekWait's items in place and releases them
//	chan-batch32  a buffered channel of recycled *[32]item batches; a second
//	              channel returns empty batches
//	chan          a buffered channel of items, capacity 1024
func BenchmarkRing(b *testing.B) {
	impls := []struct {
		name string
		run  func(b *testing.B, producers, capacity int, cfg *ring.Config) uint64
	}{
		{"ring-burst32", benchRingBurst},
		{"ring-single", benchRingSingle},
		{"ring-zc32", benchRingZC},
		{"chan-batch32", benchChanBatch},
		{"chan", benchChan},
	}
	for _, impl := range impls {
		for _, p := range []int{1, 2} {
			b.Run(fmt.Sprintf("impl=%s/producers=%d", impl.name, p), func(b *testing.B) {
				b.ReportAllocs()
				checkSum(b, impl.run(b, p, benchCap, nil))
			})
		}
	}
	// The same two contenders with 8x the capacity (8192 items: the ring 8192 or 2 x 4096, the
	// channel 256 batches of 32): fewer park/wake round trips per item on both sides.
	const bigCap = 8 * benchCap
	for _, impl := range []int{0, 3} { // ring-burst32, chan-batch32
		for _, p := range []int{1, 2} {
			b.Run(fmt.Sprintf("impl=%s/producers=%d/cap=%d", impls[impl].name, p, bigCap), func(b *testing.B) {
				b.ReportAllocs()
				checkSum(b, impls[impl].run(b, p, bigCap, nil))
			})
		}
	}
}

// BenchmarkRingSpin is ring-burst32 (1 producer: SPSC; 2: FanIn) at several spin counts, to
// choose Config.Spin's default.
func BenchmarkRingSpin(b *testing.B) {
	for _, p := range []int{1, 2} {
		for _, spin := range []int{0, 16, 64, 256, 4096} {
			b.Run(fmt.Sprintf("producers=%d/spin=%d", p, spin), func(b *testing.B) {
				b.ReportAllocs()
				benchRingBurst(b, p, benchCap, &ring.Config{Spin: spin})
			})
		}
	}
}

// checkSum fails b unless sum is 0+1+...+(b.N-1), what the consumer must have summed.
func checkSum(b *testing.B, sum uint64) {
	if want := uint64(b.N) * uint64(b.N-1) / 2; sum != want {
		b.Fatalf("checksum %d, want %d", sum, want)
	}
}

// consumer is the consumer's side of a ring under test: the copying calls and
// the zero-copy ones, bound to an SPSC (1 producer) or a FanIn.
type consumer struct {
	deq      func([]item) int
	wait     func(context.Context, []item) (int, error)
	peekWait func(context.Context, int) ([]item, error)
	release  func(int)
}

// ringPair builds an SPSC (1 producer) or a FanIn and returns the producers'
// rings and the consumer's calls.
func ringPair(b *testing.B, producers, capacity int, cfg *ring.Config) ([]*ring.SPSC[item], consumer) {
	if producers == 1 {
		r, err := ring.New[item](capacity, cfg)
		if err != nil {
			b.Fatal(err)
		}
		return []*ring.SPSC[item]{r}, consumer{r.DequeueBurst, r.DequeueBurstWait, r.PeekWait, r.Release}
	}
	f, err := ring.NewFanIn[item](producers, capacity/producers, cfg)
	if err != nil {
		b.Fatal(err)
	}
	var prods []*ring.SPSC[item]
	for i := range producers {
		prods = append(prods, f.Producer(i))
	}
	return prods, consumer{f.DequeueBurst, f.DequeueBurstWait, f.PeekWait, f.Release}
}

// Producer p sends the values p, p+np, p+2np, ... below b.N, so that the
// consumer's sum is 0+1+...+(b.N-1) whatever the interleaving.

func benchRingBurst(b *testing.B, producers, capacity int, cfg *ring.Config) uint64 {
	prods, c := ringPair(b, producers, capacity, cfg)
	wait := c.wait
	ctx := context.Background()
	var wg sync.WaitGroup
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuTime()
	for p, r := range prods {
		wg.Go(func() {
			var buf [32]item
			v := item(p)
			for left := share(b.N, p, producers); left > 0; {
				k := min(left, len(buf))
				for i := range k {
					buf[i] = v
					v += item(producers)
				}
				if _, err := r.EnqueueBurstWait(ctx, buf[:k]); err != nil {
					panic(err)
				}
				left -= k
			}
		})
	}
	var out [32]item
	var sum uint64
	for got := 0; got < b.N; {
		n, err := wait(ctx, out[:])
		if err != nil {
			b.Fatal(err)
		}
		for _, v := range out[:n] {
			sum += v
		}
		got += n
	}
	elapsed := time.Since(start)
	wg.Wait()
	b.StopTimer()
	report(b, b.N, elapsed)
	reportCPU(b, b.N, cpu0)
	return sum
}

func benchRingZC(b *testing.B, producers, capacity int, cfg *ring.Config) uint64 {
	prods, c := ringPair(b, producers, capacity, cfg)
	peekWait, release := c.peekWait, c.release
	ctx := context.Background()
	var wg sync.WaitGroup
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuTime()
	for p, r := range prods {
		wg.Go(func() {
			v := item(p)
			for left := share(b.N, p, producers); left > 0; {
				s, err := r.ReserveWait(ctx, min(left, 32))
				if err != nil {
					panic(err)
				}
				for i := range s {
					s[i] = v
					v += item(producers)
				}
				r.Commit(len(s))
				left -= len(s)
			}
		})
	}
	var sum uint64
	for got := 0; got < b.N; {
		s, err := peekWait(ctx, 32)
		if err != nil {
			b.Fatal(err)
		}
		for _, v := range s {
			sum += v
		}
		release(len(s))
		got += len(s)
	}
	elapsed := time.Since(start)
	wg.Wait()
	b.StopTimer()
	report(b, b.N, elapsed)
	reportCPU(b, b.N, cpu0)
	return sum
}

func benchRingSingle(b *testing.B, producers, capacity int, cfg *ring.Config) uint64 {
	prods, c := ringPair(b, producers, capacity, cfg)
	deq, wait := c.deq, c.wait
	ctx := context.Background()
	var wg sync.WaitGroup
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuTime()
	for p, r := range prods {
		wg.Go(func() {
			var one [1]item
			v := item(p)
			for range share(b.N, p, producers) {
				if !r.Enqueue(v) {
					one[0] = v
					if _, err := r.EnqueueBurstWait(ctx, one[:]); err != nil {
						panic(err)
					}
				}
				v += item(producers)
			}
		})
	}
	var one [1]item
	var sum uint64
	single := prods[0].Dequeue
	for got := 0; got < b.N; got++ {
		var v item
		var ok bool
		if producers == 1 {
			v, ok = single()
		} else if deq(one[:]) == 1 {
			v, ok = one[0], true
		}
		if !ok {
			if _, err := wait(ctx, one[:]); err != nil {
				b.Fatal(err)
			}
			v = one[0]
		}
		sum += v
	}
	elapsed := time.Since(start)
	wg.Wait()
	b.StopTimer()
	report(b, b.N, elapsed)
	reportCPU(b, b.N, cpu0)
	return sum
}

type batch struct {
	n int
	v [32]item
}

func benchChanBatch(b *testing.B, producers, capacity int, _ *ring.Config) uint64 {
	nb := capacity / 32
	full := make(chan *batch, nb)
	free := make(chan *batch, nb+2*producers)
	for range cap(free) {
		free <- new(batch)
	}
	var wg sync.WaitGroup
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuTime()
	for p := range producers {
		wg.Go(func() {
			v := item(p)
			for left := share(b.N, p, producers); left > 0; {
				bt := <-free
				k := min(left, len(bt.v))
				for i := range k {
					bt.v[i] = v
					v += item(producers)
				}
				bt.n = k
				full <- bt
				left -= k
			}
		})
	}
	var sum uint64
	for got := 0; got < b.N; {
		bt := <-full
		for _, v := range bt.v[:bt.n] {
			sum += v
		}
		got += bt.n
		free <- bt
	}
	elapsed := time.Since(start)
	wg.Wait()
	b.StopTimer()
	report(b, b.N, elapsed)
	reportCPU(b, b.N, cpu0)
	return sum
}

func benchChan(b *testing.B, producers, capacity int, _ *ring.Config) uint64 {
	ch := make(chan item, capacity)
	var wg sync.WaitGroup
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuTime()
	for p := range producers {
		wg.Go(func() {
			v := item(p)
			for range share(b.N, p, producers) {
				ch <- v
				v += item(producers)
			}
		})
	}
	var sum uint64
	for range b.N {
		sum += <-ch
	}
	elapsed := time.Since(start)
	wg.Wait()
	b.StopTimer()
	report(b, b.N, elapsed)
	reportCPU(b, b.N, cpu0)
	return sum
}

// BenchmarkBurstLocal enqueues and dequeues bursts of 32 on one goroutine:
// the cost of the ring's own code with no cache line crossing cores.
func BenchmarkBurstLocal(b *testing.B) {
	b.Run("T=uint64", func(b *testing.B) {
		r, _ := ring.New[item](benchCap, nil)
		var in, out [32]item
		burstLocal(b, func() { r.EnqueueBurst(in[:]); r.DequeueBurst(out[:]) })
	})
	b.Run("T=pointer", func(b *testing.B) {
		r, _ := ring.New[*big](benchCap, nil)
		var in, out [32]*big
		for i := range in {
			in[i] = new(big)
		}
		burstLocal(b, func() { r.EnqueueBurst(in[:]); r.DequeueBurst(out[:]) })
	})
}

func burstLocal(b *testing.B, op func()) {
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		op()
	}
	report(b, b.N*32, b.Elapsed())
	reportCPU(b, b.N*32, cpu0)
}
