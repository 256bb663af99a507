package ops_test

import (
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/wirespeed/wirespeed/ops"
)

func routerRegistry(src *ops.Source) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(ops.NewCollector(src), collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// BenchmarkScrape is one scrape of the rig, as examples/router serves it (router: the Source's
// collector, the Go and process collectors, text exposition) and of the Source's collector alone:
// its time is what a scraper costs a core per scrape.
func BenchmarkScrape(b *testing.B) {
	g := newRig(b)
	for range 4 {
		forwardStep(g)
	}
	opsReg := prometheus.NewRegistry()
	opsReg.MustRegister(ops.NewCollector(g.source()))
	for _, c := range []struct {
		name string
		reg  *prometheus.Registry
	}{{"router", routerRegistry(g.source())}, {"ops-only", opsReg}} {
		b.Run(c.name, func(b *testing.B) {
			h := promhttp.HandlerFor(c.reg, promhttp.HandlerOpts{})
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
				if rec.Code != 200 {
					b.Fatal(rec.Code)
				}
			}
		})
	}
}

// BenchmarkForwardScraped forwards on the rig (batches of 64 frames from one host to the other,
// the router's worker and the hosts on one goroutine) while another goroutine scrapes every
// interval: off, once a second, and every 10 ms (100 times as often, so that the cost per scrape
// shows above the noise). It reports frames forwarded per second and the scrapes made.
func BenchmarkForwardScraped(b *testing.B) {
	for _, every := range []time.Duration{0, time.Second, 10 * time.Millisecond} {
		name := "scrape=off"
		if every > 0 {
			name = "scrape=" + every.String()
		}
		b.Run(name, func(b *testing.B) {
			g := newRig(b)
			h := promhttp.HandlerFor(routerRegistry(g.source()), promhttp.HandlerOpts{})
			stop := make(chan struct{})
			var wg sync.WaitGroup
			scrapes := 0
			if every > 0 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					t := time.NewTicker(every)
					defer t.Stop()
					for {
						select {
						case <-stop:
							return
						case <-t.C:
						}
						rec := httptest.NewRecorder()
						h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
						scrapes++
					}
				}()
			}
			frames := 0
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				frames += forwardStep(g)
			}
			b.StopTimer()
			close(stop)
			wg.Wait()
			b.ReportMetric(float64(frames)/b.Elapsed().Seconds(), "frames/s")
			b.ReportMetric(float64(scrapes), "scrapes")
		})
	}
}
