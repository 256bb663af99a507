package gen

import (
	"runtime"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/bench/internal/sender"
	"github.com/wirespeed/wirespeed/internal/nettest"
)

// BenchmarkEngines measures what each engine offers into a veth whose peer takes the frames the
// cheapest way the kernel has (no XDP program: the XDP engine's frames are dropped at the
// redirect, sendmmsg's go up the peer's stack and are dropped as PACKET_OTHERHOST), 60-byte frames
// of 64 flows, sending thread pinned to CPU 1, side by side with the receive benchmarks' sender
// (package sender) as the peer. It reports Mpps and the sending thread's CPU time per frame.
func BenchmarkEngines(b *testing.B) {
	nettest.RequirePriv(b)
	ns := nettest.NewNS(b, "gb")
	ns.Exec(b, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
	a, _ := nettest.Veth(b, ns, ns, "a", "b")
	for _, eng := range []Engine{EngineAFPacket, EngineXDP, EngineAFXDP} {
		b.Run("engine=gen-"+string(eng), func(b *testing.B) {
			g, err := Open(&Config{Netns: ns.Name, Interface: a, Engine: eng, Flows: 64, CPU: 1, Repeat: 1 << 18})
			if err != nil {
				b.Fatal(err)
			}
			var ms0, ms1 runtime.MemStats
			g.Start()
			time.Sleep(100 * time.Millisecond)
			runtime.ReadMemStats(&ms0)
			s0, t0 := g.Sent(), time.Now()
			for range b.N {
				time.Sleep(100 * time.Millisecond)
			}
			s1, el := g.Sent(), time.Since(t0)
			runtime.ReadMemStats(&ms1)
			r := g.Stop()
			if r.Sent == 0 {
				b.Fatalf("sent nothing: %v", g.LastError())
			}
			b.ReportMetric(float64(s1-s0)/el.Seconds()/1e6, "Mpps")
			b.ReportMetric(float64(r.CPU.Nanoseconds())/float64(r.Sent), "cpu-ns/frame")
			b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/float64(s1-s0+1), "allocs/frame")
		})
	}
	b.Run("engine=sender", func(b *testing.B) {
		var s *sender.Sender
		if err := ns.Do(func() (err error) { s, err = sender.Open(a, &sender.Config{Flows: 64, CPU: 1}); return err }); err != nil {
			b.Fatal(err)
		}
		s.Start()
		time.Sleep(100 * time.Millisecond)
		s0, t0 := s.Sent(), time.Now()
		for range b.N {
			time.Sleep(100 * time.Millisecond)
		}
		s1, el := s.Sent(), time.Since(t0)
		n := s.Stop()
		b.ReportMetric(float64(s1-s0)/el.Seconds()/1e6, "Mpps")
		b.ReportMetric(float64(s.CPU().Nanoseconds())/float64(n), "cpu-ns/frame")
	})
}
