package bench

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/frame"
)

// BenchmarkPipelineWorkers is BenchmarkPipeline's +enqueue stage (the real table, random
// destinations) on 1, 2, ... GOMAXPROCS workers at once: each worker is a goroutine with its own
// in-memory ports, pool and fwd.Router, and all of them look up the same fib.Table, as vlanrouter's
// workers do. Each worker times only its forwarding (its refills are left out, as BenchmarkPipeline
// leaves them out), so its rate is frames over its own forwarding time; Mpps is the sum of the
// workers' rates, and x1 that sum over the one-worker rate of the same run. One op is one batch per
// worker.
//
//	go test -run '^$' -bench PipelineWorkers -benchtime 20000x -count 5
func BenchmarkPipelineWorkers(b *testing.B) {
	routes, probes := realFIB(b)
	var one float64
	for n := 1; n <= runtime.GOMAXPROCS(0); n++ {
		b.Run(fmt.Sprintf("workers=%d", n), func(b *testing.B) {
			ps := make([]*pipeline, n)
			for i := range ps {
				ps[i] = newPipeline(b, pipeConfig{routes: routes, probes: probes, upto: stageEnqueue, lag: "rr"})
				ps[i].refill(b, pipeBatches)
			}
			busy := make([]time.Duration, n)
			runtime.GC()
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			for i, p := range ps {
				wg.Add(1)
				go func() {
					defer wg.Done()
					in := frame.NewBatch(pipeBatch)
					left := pipeBatches
					t0 := time.Now()
					for j := 0; j < b.N; j++ {
						if left == 0 {
							busy[i] += time.Since(t0)
							p.refill(b, pipeBatches)
							left = pipeBatches
							t0 = time.Now()
						}
						p.rx.Recv(in)
						p.forward(in)
						left--
					}
					busy[i] += time.Since(t0)
				}()
			}
			wg.Wait()
			b.StopTimer()
			var mpps float64
			for i, p := range ps {
				mpps += float64(b.N*pipeBatch) / busy[i].Seconds() / 1e6
				p.checkForwarded(b, uint64(b.N*pipeBatch))
				p.drain()
			}
			b.ReportMetric(mpps, "Mpps")
			if n == 1 {
				one = mpps
			}
			if one > 0 {
				b.ReportMetric(mpps/one, "x1")
			}
		})
	}
}
