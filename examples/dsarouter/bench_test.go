package main

import (
	"runtime"
	"testing"
)

// BenchmarkPipeline runs the router's whole per-batch step end to end over the in-memory conduit:
// eth0 Recv, DSA tag decode and demux, bridge learning, fwd (LAN/WAN demux, IPv4 checks, route
// lookup in the fib, TTL/checksum/MAC rewrite), bridge egress by learnt MAC, DSA tag encode, one
// eth0 Send. Traffic is half LAN→internet, half internet→LAN, one upstream frame in 32 a PTP
// event message, one frame in 64 each way an echo request the router answers, no bad frames. One op is one batch of 64 frames; ns/frame and Mpps are the
// figures. Refilling the conduit and sinking what the router sent (every 48 batches) is not timed.
//
// ptp=off must cost what a build without the classifier costs. Compare
//
//	go test -run '^$' -bench Pipeline -count 6 ./examples/dsarouter
//	go test -run '^$' -bench Pipeline -count 6 -tags dsa_noptp ./examples/dsarouter
//
// ptp=on turns classification on for every switch port (the worst case: every frame checked).
//
// Besides wall time it reports cpu-ns/frame, the CPU time of the benchmark's thread (Linux
// CLOCK_THREAD_CPUTIME_ID): on a shared machine wall time includes the time the thread waited
// for a core, and that noise hides differences of a few per cent.
func BenchmarkPipeline(b *testing.B) {
	for _, tagger := range []string{"edsa", "mtk"} {
		for _, ptp := range []string{"off", "on"} {
			b.Run("tagger="+tagger+"/ptp="+ptp, func(b *testing.B) { benchPipeline(b, tagger, ptp == "on") })
		}
	}
}

const benchBatches = 48 // per refill: 3072 frames, below the link's depth of 4096

func benchPipeline(b *testing.B, tagger string, ptp bool) {
	cfg := defaultConfig()
	cfg.Tagger, cfg.Bad = tagger, 0
	if ptp && ptpBuilt { // without the classifier ptp=on runs with none asked for: the reference
		cfg.PTP = swNames[:]
	}
	r := newRig(b, cfg)
	refill := func() {
		r.g.sink(r.sb)
		for i := 0; i < benchBatches; i++ {
			r.g.fill(r.out)
			if n, _ := r.l.swEnd.Send(r.out); n != cfg.Batch {
				b.Fatalf("refill queued %d", n)
			}
		}
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	refill()
	left := benchBatches
	b.ReportAllocs()
	var cpu int64
	b.ResetTimer()
	t0 := threadCPU()
	for i := 0; i < b.N; i++ {
		if left == 0 {
			cpu += threadCPU() - t0
			b.StopTimer()
			refill()
			left = benchBatches
			b.StartTimer()
			t0 = threadCPU()
		}
		r.l.eth0.Recv(r.in)
		r.d.step(r.in)
		left--
	}
	cpu += threadCPU() - t0
	b.StopTimer()
	r.d.flush()
	r.g.sink(r.sb)
	c := r.t.router.Counters()
	if want := uint64(b.N * cfg.Batch); c.Forwarded+c.Echoed != want || r.g.misdelivery.Load() != 0 {
		b.Fatalf("forwarded or answered %d of %d frames (%+v), %d wrong", c.Forwarded+c.Echoed, want, c, r.g.misdelivery.Load())
	}
	var classified uint64
	for u := range numSwPorts {
		classified += r.t.portStats(u).RxPTP
	}
	if (ptp && ptpBuilt) != (classified > 0) {
		b.Fatalf("ptp %v but %d frames classified", ptp, classified)
	}
	frames := float64(b.N * cfg.Batch)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/frames, "ns/frame")
	b.ReportMetric(frames/b.Elapsed().Seconds()/1e6, "Mpps")
	if cpu > 0 {
		b.ReportMetric(float64(cpu)/frames, "cpu-ns/frame")
	}
}

// BenchmarkPTPPaired measures the cost of PTP classification on every port with a paired design
// that a shared, noisy machine cannot blur: the same rig alternates refills of 48 batches with
// classification off and on, and the thread's CPU time of each is summed apart, so both see the
// same noise. It reports cpu-ns/frame for each and on/off-% (the extra cost of "on" in per cent).
// Together with BenchmarkPipeline under -tags dsa_noptp (off vs compiled out) it shows what off
// costs (nothing measurable) and what the measurement can resolve (what on costs).
func BenchmarkPTPPaired(b *testing.B) {
	for _, tagger := range []string{"edsa", "mtk"} {
		b.Run("tagger="+tagger, func(b *testing.B) {
			cfg := defaultConfig()
			cfg.Tagger, cfg.Bad = tagger, 0
			r := newRig(b, cfg)
			if threadCPU() == 0 {
				b.Skip("no thread CPU clock on this OS")
			}
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var cpu, frames [2]float64
			b.ReportAllocs()
			b.ResetTimer()
			for done, cycle := 0, 0; done < b.N; cycle++ {
				b.StopTimer()
				r.g.sink(r.sb)
				for i := 0; i < benchBatches; i++ {
					r.g.fill(r.out)
					r.l.swEnd.Send(r.out)
				}
				on := cycle & 1
				for u := range numSwPorts {
					r.d.conduit.EnableTimestamps(u, on == 1)
				}
				n := min(benchBatches, b.N-done)
				b.StartTimer()
				t0 := threadCPU()
				for i := 0; i < n; i++ {
					r.l.eth0.Recv(r.in)
					r.d.step(r.in)
				}
				cpu[on] += float64(threadCPU() - t0)
				frames[on] += float64(n * cfg.Batch)
				done += n
			}
			b.StopTimer()
			r.g.sink(r.sb)
			for r.l.eth0.Recv(r.in); len(r.in.Frames) > 0; r.l.eth0.Recv(r.in) {
				r.d.step(r.in)
			}
			r.g.sink(r.sb)
			if frames[1] == 0 {
				return // b.N too small to have an "on" cycle
			}
			off, on := cpu[0]/frames[0], cpu[1]/frames[1]
			b.ReportMetric(off, "off-cpu-ns/frame")
			b.ReportMetric(on, "on-cpu-ns/frame")
			b.ReportMetric((on/off-1)*100, "on/off-%")
		})
	}
}
