//go:build linux

package bench

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/bench/internal/sender"
	"github.com/wirespeed/wirespeed/internal/nettest"
)

// rxDrainer is a receiver that can also drain: receive until it has want frames, touching each
// frame's first byte, without waiting while frames are there; it waits (at most timeout after the
// first wait) only when its ring is empty before want frames came, and counts those waits. want == 0
// is the settle step: one receive, which must find nothing.
type rxDrainer interface {
	Drain(want uint64, timeout time.Duration) (frames, waits uint64, err error)
}

// drainSize is the number of frames one fill phase puts in a receiver's ring, the same for the
// receivers a goal compares, and settle how long the fill phase then waits for the kernel to hand
// every frame over. AF_XDP: the receivers have 2048-entry fill and RX rings, all posted to the fill
// ring when a drain starts; the frames are on the RX ring once the sender's softirq has run. AF_PACKET:
// a TPACKET_V3 ring holds at most BlockCount blocks whatever their fill, and the block-retire timer
// hands a block over part-full (1 ms: wirespeed's default, 64 ms: gopacket's), so at the sender's
// ~0.5 Mpps wirespeed's default 128 blocks hold ~64,000 frames (a 65,536-frame fill lost ~10,000 of
// them); 16,384 leaves room for a sender twice as fast, and the wait covers gopacket's 64 ms timer.
func drainSize(name string) (frames uint64, settle time.Duration) {
	if strings.Contains(name, "xdp") {
		return 1536, 10 * time.Millisecond
	}
	return 16384, 100 * time.Millisecond
}

// BenchmarkRecvDrain measures how fast each receiver empties a full ring: what it costs to receive
// when frames are waiting, which BenchmarkRecv and BenchmarkRecvXDPLive cannot show because on veth
// the kernel's copy into the ring runs on the sender's CPU and the sender sets the rate (see notes/rx.md).
//
// Each cycle has two phases. Fill: the receiver does nothing while the sendmmsg sender (the same for
// every receiver, pinned to CPU 1) puts drainSize 60-byte UDP frames through the veth into its ring,
// then the benchmark waits (see drainSize) until every frame is in a block handed to user space
// (AF_XDP: every descriptor is on the RX ring). Drain: the
// receiver, on a thread pinned to CPU 0, reads until it has all of them; only this phase is measured:
// drain-Mpps is frames per second of its wall time, cpu-ns/frame the receiving thread's CPU time
// (CLOCK_THREAD_CPUTIME_ID) per frame, allocs/frame the allocations during drains. A drain that
// ends short (frames lost in the fill phase) or has to wait for frames (the fill had not finished)
// fails the benchmark, as does a frame found before a fill. One op is one frame, fill included,
// so ns/op is not the receiver's figure: read drain-Mpps and cpu-ns/frame. The first cycle is a
// warm-up.
func BenchmarkRecvDrain(b *testing.B) {
	ns, ifS, ifR, names := rxSetup(b, "rxd")
	for _, name := range names {
		k, settle := drainSize(name)
		b.Run("rx="+name, func(b *testing.B) { benchDrain(b, ns, ifS, ifR, rxCases[name], k, settle) })
	}
}

func benchDrain(b *testing.B, ns *nettest.NS, ifS, ifR string, open rxOpener, k uint64, settle time.Duration) {
	var rx rxRunner
	if err := ns.Do(func() (err error) { rx, err = open(ifR); return err }); err != nil {
		b.Fatal(err)
	}
	defer rx.Close()
	dr, ok := rx.(rxDrainer)
	if !ok {
		b.Skip("receiver cannot drain")
	}
	var snd *sender.Sender
	if err := ns.Do(func() (err error) { snd, err = sender.Open(ifS, &sender.Config{CPU: 1}); return err }); err != nil {
		b.Fatal(err)
	}
	defer snd.Stop()

	defer pinThread(0)()
	fill := func() {
		// Settle first: a receive on the ring must find nothing (a frame left over would be counted
		// in place of one lost in the fill).
		if n, _, err := dr.Drain(0, 0); err != nil || n != 0 {
			b.Fatalf("settle: %d stray frames, err %v", n, err)
		}
		done := make(chan error)
		go func() { done <- snd.SendN(k) }()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		time.Sleep(settle)
	}
	var wall, cpu time.Duration
	var frames, mallocs uint64
	var ms0, ms1 runtime.MemStats
	cycles := (uint64(b.N) + k - 1) / k
	b.ResetTimer()
	for c := uint64(0); c <= cycles; c++ { // cycle 0 is the warm-up
		fill()
		runtime.ReadMemStats(&ms0)
		cpu0, t0 := threadCPUTime(), time.Now()
		n, waits, err := dr.Drain(k, 2*time.Second)
		el, ce := time.Since(t0), threadCPUTime()-cpu0
		runtime.ReadMemStats(&ms1)
		if err != nil {
			b.Fatal(err)
		}
		if n < k {
			b.Fatalf("drained %d of %d frames: frames were lost in the fill phase", n, k)
		}
		if waits > 0 {
			b.Fatalf("the drain waited %d times for frames: the fill phase had not finished (settle %v)", waits, settle)
		}
		if c > 0 {
			wall += el
			cpu += ce
			frames += n
			mallocs += ms1.Mallocs - ms0.Mallocs
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(frames)/wall.Seconds()/1e6, "drain-Mpps")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(frames), "cpu-ns/frame")
	b.ReportMetric(float64(mallocs)/float64(frames), "allocs/frame")
}
