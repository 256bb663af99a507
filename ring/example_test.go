package ring_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/wirespeed/wirespeed/ring"
)

// A producer goroutine hands items to a consumer in bursts; the consumer
// parks while the ring is empty and stops when the producer closes it.
func Example() {
	r, err := ring.New[int](64, nil)
	if err != nil {
		panic(err)
	}
	go func() {
		batch := make([]int, 0, 32)
		for i := 1; i <= 100; i++ {
			batch = append(batch, i)
			if len(batch) == cap(batch) || i == 100 {
				// Waits for room instead of dropping.
				if _, err := r.EnqueueBurstWait(context.Background(), batch); err != nil {
					panic(err)
				}
				batch = batch[:0]
			}
		}
		r.Close()
	}()

	sum, items := 0, 0
	out := make([]int, 32)
	for {
		n, err := r.DequeueBurstWait(context.Background(), out)
		for _, v := range out[:n] {
			sum += v
		}
		items += n
		if errors.Is(err, ring.ErrClosed) {
			break
		}
	}
	s := r.Stats()
	fmt.Println(items, sum, s.Enqueued, s.Dequeued)
	// Output: 100 5050 100 100
}

// Two producers feed one consumer through a FanIn; each producer owns its
// ring, so per-producer order is kept.
func ExampleFanIn() {
	f, _ := ring.NewFanIn[string](2, 8, nil)
	f.Producer(0).EnqueueBurst([]string{"a1", "a2"})
	f.Producer(1).EnqueueBurst([]string{"b1"})
	out := make([]string, 8)
	n := f.DequeueBurst(out)
	fmt.Println(out[:n])
	// Output: [a1 a2 b1]
}

// A FanOut spreads items over consumers by a hash the producer computed,
// here the flow number.
func ExampleFanOut_EnqueueBurstHash() {
	f, _ := ring.NewFanOut[int](2, 8, nil)
	flows := []int{10, 11, 12, 13}
	hashes := []uint32{0, 1, 0, 1}
	fmt.Println(f.EnqueueBurstHash(flows, hashes))
	for i := range f.N() {
		out := make([]int, 8)
		n := f.Consumer(i).DequeueBurst(out)
		fmt.Println(i, out[:n])
	}
	// Output:
	// 4
	// 0 [10 12]
	// 1 [11 13]
}
