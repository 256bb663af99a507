package ops_test

import (
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// forwardStep is one step of the forwarding goroutine: host 0 sends a batch to host 1 and the
// router forwards it. It returns the frames host 1 received.
//
//go:noinline
func forwardStep(g *rig) int {
	g.send(0, 64, hostAddr[1], 64)
	return g.forward()
}

// TestScrapeAllocatesNothingOnDataPath: the forwarding step allocates nothing, and still nothing
// while a scraper scrapes the whole Source over and over on another goroutine.
//
// testing.AllocsPerRun counts the allocations of every goroutine (runtime.MemStats.Mallocs), so
// with the scraper running it counts the scraper's too. The test therefore records every
// allocation's stack (runtime.MemProfileRate = 1) while the scraper runs and checks that none
// was made below forwardStep; it checks as well that the profile saw the scraper's own
// allocations, so that the method finds allocations where there are some.
func TestScrapeAllocatesNothingOnDataPath(t *testing.T) {
	g := newRig(t)
	h := handler(g.source())
	for range 4 {
		forwardStep(g)
	}
	scrape(t, h)
	if a := testing.AllocsPerRun(200, func() { forwardStep(g) }); a != 0 {
		t.Fatalf("the forwarding step allocates %v times, with no scraper", a)
	}

	old := runtime.MemProfileRate
	runtime.MemProfileRate = 1
	defer func() { runtime.MemProfileRate = old }()
	var scrapes atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
			if rec.Code != http.StatusOK {
				t.Errorf("scrape: %d", rec.Code)
				return
			}
			scrapes.Add(1)
		}
	}()
	for scrapes.Load() == 0 {
		runtime.Gosched()
	}
	frames, runs := 0, 0
	before := scrapes.Load()
	var global float64
	for runs < 500 || scrapes.Load()-before < 5 {
		global += testing.AllocsPerRun(100, func() { frames += forwardStep(g) })
		runs += 100
	}
	during := scrapes.Load() - before
	close(stop)
	wg.Wait()
	if frames < 64*runs {
		t.Fatalf("%d frames moved in %d steps of 64", frames, runs)
	}
	runtime.GC()
	runtime.GC() // the profile is published a cycle late
	var recs []runtime.MemProfileRecord
	n, _ := runtime.MemProfile(nil, true)
	for {
		recs = make([]runtime.MemProfileRecord, n+64)
		var ok bool
		if n, ok = runtime.MemProfile(recs, true); ok {
			recs = recs[:n]
			break
		}
	}
	var onPath, scraper int64
	for _, r := range recs {
		fs := runtime.CallersFrames(r.Stack())
		var funcs []string
		for {
			f, more := fs.Next()
			funcs = append(funcs, f.Function)
			if !more {
				break
			}
		}
		stack := strings.Join(funcs, " < ")
		switch {
		case strings.Contains(stack, "ops_test.forwardStep"):
			onPath += r.AllocObjects
			t.Errorf("%d allocations on the forwarding path: %s", r.AllocObjects, stack)
		case strings.Contains(stack, "ops.(*Collector).Collect"):
			scraper += r.AllocObjects
		}
	}
	t.Logf("%d steps, %d frames, %d scrapes during them; AllocsPerRun (all goroutines) %.1f per step; profiled: %d allocations below forwardStep, %d in Collector.Collect",
		runs, frames, during, global/float64(runs/100), onPath, scraper)
	if scraper == 0 {
		t.Fatal("the profile holds none of the scraper's allocations: it cannot see the forwarding path's either")
	}
}
