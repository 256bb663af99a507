//go:build linux

package bench

import (
	"runtime"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wirespeed/wirespeed/bench/internal/sender"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/internal/nettest"
	"github.com/wirespeed/wirespeed/xmit/afpacket"
)

// The receive benchmark's registry. Each entry opens a receiver on an interface (called on a thread
// inside the benchmark's network namespace); other files add entries in init().
type rxOpener func(ifname string) (rx rxRunner, err error)

// rxRunner receives for d on the calling goroutine (locked to the pinned thread whose CPU time is
// measured) and returns how many frames it received. A receiver must read every frame's first byte, as
// any real consumer does, so that none is faster for not touching the data.
type rxRunner interface {
	RecvFor(d time.Duration) (frames uint64, err error)
	Close() error
}

var rxCases = map[string]rxOpener{}

func init() {
	rxCases["wirespeed-afpacket"] = openWS(nil)
	// The same with gopacket's ring geometry and block timeout (64 ms instead of 1 ms): shows what the
	// short default timeout costs in CPU per frame at rates that do not fill a block within 1 ms.
	rxCases["wirespeed-afpacket-tov64ms"] = openWS(&afpacket.Config{
		BlockSize: 512 << 10, BlockCount: 128, FrameSize: 4096, RetireTimeout: 64 * time.Millisecond})
}

func openWS(cfg *afpacket.Config) rxOpener {
	return func(ifname string) (rxRunner, error) {
		p, err := afpacket.Open(ifname, cfg)
		if err != nil {
			return nil, err
		}
		return &wsAFPacket{p: p, b: frame.NewBatch(64)}, nil
	}
}

// wsAFPacket is wirespeed's AF_PACKET port with the default Config, read a batch at a time.
type wsAFPacket struct {
	p    *afpacket.Port
	b    *frame.Batch
	sink byte
}

func (w *wsAFPacket) RecvFor(d time.Duration) (uint64, error) {
	var frames uint64
	end := time.Now().Add(d)
	b := w.b
	for {
		n, err := w.p.Recv(b)
		if err != nil {
			return frames, err
		}
		if n == 0 {
			left := time.Until(end)
			if left <= 0 {
				return frames, nil
			}
			if err := w.p.Wait(int64(left)); err != nil {
				return frames, err
			}
			continue
		}
		for i := range b.Frames {
			w.sink ^= b.Mem[b.Frames[i].Off]
		}
		frames += uint64(n)
		b.Free()
		if frames&1023 < uint64(n) && time.Now().After(end) {
			return frames, nil
		}
	}
}

func (w *wsAFPacket) Drain(want uint64, timeout time.Duration) (frames, waits uint64, err error) {
	return drainBatches(w.p, w.b, &w.sink, want, timeout)
}

// drainBatches is Drain for wirespeed's ports: Recv a batch, touch each frame's first byte, free
// it; wait only when the ring is empty before want frames came. want == 0 is the settle step: one
// Recv, which must find nothing (it also refills an AF_XDP fill ring).
func drainBatches(p interface {
	Recv(*frame.Batch) (int, error)
	Wait(int64) error
}, b *frame.Batch, sink *byte, want uint64, timeout time.Duration) (frames, waits uint64, err error) {
	if want == 0 {
		n, err := p.Recv(b)
		b.Free()
		return uint64(n), 0, err
	}
	var end time.Time
	for frames < want {
		n, err := p.Recv(b)
		if err != nil {
			return frames, waits, err
		}
		if n == 0 {
			left := waitBudget(&end, timeout)
			if left <= 0 {
				return frames, waits, nil
			}
			waits++
			if err := p.Wait(int64(left)); err != nil {
				return frames, waits, err
			}
			continue
		}
		for i := range b.Frames {
			*sink ^= b.Mem[b.Frames[i].Off]
		}
		frames += uint64(n)
		b.Free()
	}
	return frames, waits, nil
}

// rxSetup is the receive benchmarks' topology: a fresh namespace with IPv6 off (no ND or MLD frames
// in the rings) and one veth pair in it (sender end, receiver end); names are the registered
// receivers in order.
func rxSetup(b *testing.B, nsName string) (ns *nettest.NS, ifS, ifR string, names []string) {
	nettest.RequirePriv(b)
	ns = nettest.NewNS(b, nsName)
	ns.Exec(b, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
	ifS, ifR = nettest.Veth(b, ns, ns, "s", "r")
	for name := range rxCases {
		names = append(names, name)
	}
	slices.Sort(names)
	return ns, ifS, ifR, names
}

// pinThread locks the calling goroutine to its thread and pins the thread to cpu (best effort); the
// returned function restores the thread's affinity and unlocks it, so that the runtime gets the
// thread back as it was.
func pinThread(cpu int) (undo func()) {
	runtime.LockOSThread()
	var old, set unix.CPUSet
	if unix.SchedGetaffinity(0, &old) == nil {
		set.Set(cpu)
		if unix.SchedSetaffinity(0, &set) == nil {
			return func() { unix.SchedSetaffinity(0, &old); runtime.UnlockOSThread() }
		}
	}
	return runtime.UnlockOSThread
}

// waitBudget starts a drain's wait clock at its first wait and returns how long it may still wait.
func waitBudget(end *time.Time, timeout time.Duration) time.Duration {
	if end.IsZero() {
		*end = time.Now().Add(timeout)
	}
	return time.Until(*end)
}

func (w *wsAFPacket) Close() error { return w.p.Close() }

// BenchmarkRecv measures each registered receiver on one veth pair in a fresh namespace, fed by the
// same sendmmsg sender (one flow of 60-byte UDP frames) on CPU 1 while the receiver runs on CPU 0. It
// reports the receiver's rate (Mpps), the sender's (sent-Mpps), the receiver thread's CPU time per
// frame (getrusage RUSAGE_THREAD) and allocations per frame.
func BenchmarkRecv(b *testing.B) {
	ns, ifS, ifR, names := rxSetup(b, "rx")
	for _, name := range names {
		b.Run("rx="+name, func(b *testing.B) { benchRecv(b, ns, ifS, ifR, rxCases[name]) })
	}
}

func benchRecv(b *testing.B, ns *nettest.NS, ifS, ifR string, open rxOpener) {
	var rx rxRunner
	if err := ns.Do(func() (err error) { rx, err = open(ifR); return err }); err != nil {
		b.Fatal(err)
	}
	defer rx.Close()
	var snd *sender.Sender
	if err := ns.Do(func() (err error) { snd, err = sender.Open(ifS, &sender.Config{CPU: 1}); return err }); err != nil {
		b.Fatal(err)
	}
	snd.Start()
	defer snd.Stop()

	defer pinThread(0)()
	if _, err := rx.RecvFor(200 * time.Millisecond); err != nil { // warm up: ring, caches, sender
		b.Fatal(err)
	}
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	cpu0, sent0, t0 := threadCPUTime(), snd.Sent(), time.Now()
	b.ResetTimer()
	var frames uint64
	for range b.N {
		n, err := rx.RecvFor(100 * time.Millisecond)
		frames += n
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	el, cpu, sent := time.Since(t0), threadCPUTime()-cpu0, snd.Sent()-sent0
	runtime.ReadMemStats(&ms1)
	if frames == 0 {
		b.Fatal("received nothing")
	}
	b.ReportMetric(float64(frames)/el.Seconds()/1e6, "Mpps")
	b.ReportMetric(float64(sent)/el.Seconds()/1e6, "sent-Mpps")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(frames), "cpu-ns/frame")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/float64(frames), "allocs/frame")
}
