package afpacket

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/frame"
)

// BenchmarkRecv receives 60-byte frames over a veth pair (between two namespaces) that another port
// of this package sends from a goroutine as fast as it can. ns/op is per frame received.
func BenchmarkRecv(b *testing.B) {
	l := newLink(b)
	tx := openIn(b, l.nsA, l.ifA, nil)
	rx := openIn(b, l.nsB, l.ifB, nil)
	pool, _ := frame.NewPool(nil)
	data := testFrame(1, 60)
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sb := frame.NewBatch(64)
		for !stop.Load() {
			pool.Alloc(sb, 64)
			for i := range sb.Frames {
				sb.Frames[i].Resize(60)
				copy(sb.Bytes(i), data)
			}
			tx.Send(sb)
		}
	}()
	defer func() { stop.Store(true); wg.Wait() }()
	batch := frame.NewBatch(64)
	recv := func(n int) {
		for got := 0; got < n; {
			k, err := rx.Recv(batch)
			if err != nil {
				b.Fatal(err)
			}
			if k == 0 {
				if err := rx.Wait(int64(100 * time.Millisecond)); err != nil {
					b.Fatal(err)
				}
				continue
			}
			got += k
			batch.Free()
		}
	}
	recv(1000) // warm up
	b.ReportAllocs()
	b.ResetTimer()
	recv(b.N)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "Mpps")
}
