package ops_test

import (
	"net/http/httptest"
	"sync"
	"sync/atomic"
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

// BenchmarkForwardScrapeInterleaved measures what scraping costs forwarding, side by side: the
// rig forwards (batches of 64 frames, the router's worker and the hosts on the benchmark's
// goroutine) in alternating segments, with the scraper off and then on (scraping at the start of
// the segment and every interval after), so that both see the same machine state over the run.
// A segment lasts twice the interval, at least 200 ms. It reports frames/s with the scraper off
// and on, the overhead in percent ((off-on)/off) and the scrapes made. With -cpu 1 the scrapes'
// CPU time comes out of forwarding's; with more, only their interference with it (caches, memory
// bandwidth, the collector's reads of the counters).
//
// Run it for long enough to have many segments: go test -run '^$' -bench ForwardScrapeInterleaved
// -benchtime 60s -cpu 1,2 ./ops/
func BenchmarkForwardScrapeInterleaved(b *testing.B) {
	for _, every := range []time.Duration{time.Second, 10 * time.Millisecond} {
		b.Run("scrape="+every.String(), func(b *testing.B) {
			g := newRig(b)
			h := promhttp.HandlerFor(routerRegistry(g.source()), promhttp.HandlerOpts{})
			segment := max(2*every, 200*time.Millisecond)
			on := make(chan bool)
			stop := make(chan struct{})
			var scrapes atomic.Int64
			var wg sync.WaitGroup
			wg.Add(1)
			go func() { // the scraper: scrapes every interval while on
				defer wg.Done()
				t := time.NewTicker(every)
				defer t.Stop()
				scraping := false
				scrape := func() {
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
					scrapes.Add(1)
				}
				for {
					select {
					case <-stop:
						return
					case s := <-on:
						if scraping = s; s {
							scrape()
							t.Reset(every)
						}
					case <-t.C:
						if scraping {
							scrape()
						}
					}
				}
			}()
			for range 256 { // the pool, the caches and the adjacencies warm
				forwardStep(g)
			}
			var frames [2]int
			var took [2]time.Duration
			cur := 0
			start := time.Now()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				frames[cur] += forwardStep(g)
				if i&255 == 255 {
					if now := time.Now(); now.Sub(start) >= segment {
						took[cur] += now.Sub(start)
						cur ^= 1
						on <- cur == 1
						start = time.Now()
					}
				}
			}
			took[cur] += time.Since(start)
			b.StopTimer()
			close(stop)
			wg.Wait()
			var rate [2]float64
			for k := range rate {
				if took[k] > 0 {
					rate[k] = float64(frames[k]) / took[k].Seconds()
				}
			}
			b.ReportMetric(rate[0], "frames/s-off")
			b.ReportMetric(rate[1], "frames/s-on")
			if rate[0] > 0 && rate[1] > 0 {
				b.ReportMetric(100*(rate[0]-rate[1])/rate[0], "overhead-%")
			}
			b.ReportMetric(float64(scrapes.Load()), "scrapes")
		})
	}
}
