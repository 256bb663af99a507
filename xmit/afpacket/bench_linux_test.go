package afpacket

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/internal/benchutil"
)

// BenchmarkRecv receives 60-byte frames over a veth pair (between two namespaces) that another port
// of this package sends from a goroutine as fast as it can, into each receive ring (rxModes). ns/op
// is per frame received.
func BenchmarkRecv(b *testing.B) {
	for _, r := range rxModes {
		b.Run("rx="+r.name, func(b *testing.B) { benchRecv(b, r.ring) })
	}
}

func benchRecv(b *testing.B, ring *FrameRing) {
	l := newLink(b)
	tx := openIn(b, l.nsA, l.ifA, nil)
	rx := openIn(b, l.nsB, l.ifB, withRing(ring, nil))
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

// BenchmarkSend compares the two transmit paths side by side on a veth pair between two namespaces:
// sendmmsg with iovecs into the frames (the default) and the PACKET_TX_RING (Config.TxRing), with
// 60- and 1500-byte frames in batches of 64 from a Pool, PACKET_QDISC_BYPASS on. The sender runs on
// the benchmark goroutine (its thread pinned to CPU 0), a receiver port of this package on another
// goroutine pinned to CPU 1 counts what arrives. One op is one frame offered to Send. Metrics: Mpps
// (frames Send accepted per second), rx-Mpps (frames the receiver got in the same time),
// cpu-ns/frame (CPU time of the sending thread per frame accepted: on veth it includes the kernel's
// delivery into the receiver's ring, done in the sender's softirq), drop-% (offered but not accepted).
func BenchmarkSend(b *testing.B) {
	l := newLink(b)
	for _, size := range []int{60, 1500} {
		for _, m := range []struct {
			name string
			cfg  Config
		}{
			{"sendmmsg", Config{QdiscBypass: true}},
			{"txring", Config{QdiscBypass: true, TxRing: &TxRing{}}},
		} {
			b.Run(fmt.Sprintf("tx=%s/size=%d", m.name, size), func(b *testing.B) {
				cfg := m.cfg
				benchSend(b, l, &cfg, size)
			})
		}
	}
}

// pinThread locks the goroutine to its thread and the thread to one CPU; the returned func restores
// the thread's affinity and unlocks it, so no pinned thread goes back to the scheduler.
func pinThread(b *testing.B, cpu int) (unpin func()) {
	runtime.LockOSThread()
	var old, set unix.CPUSet
	haveOld := unix.SchedGetaffinity(0, &old) == nil
	set.Set(cpu % runtime.NumCPU())
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		b.Logf("pin to CPU %d: %v", cpu, err)
	}
	return func() {
		if haveOld {
			unix.SchedSetaffinity(0, &old)
		}
		runtime.UnlockOSThread()
	}
}

func benchSend(b *testing.B, l *link, cfg *Config, size int) {
	tx := openIn(b, l.nsA, l.ifA, cfg)
	rx := openIn(b, l.nsB, l.ifB, &Config{BlockCount: 64})
	pool := filledPool(b, size)
	var got atomic.Uint64
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer pinThread(b, 1)()
		batch := frame.NewBatch(64)
		for !stop.Load() {
			n, err := rx.Recv(batch)
			if err != nil {
				return
			}
			if n == 0 {
				rx.Wait(int64(10 * time.Millisecond))
				continue
			}
			got.Add(uint64(n))
			batch.Free()
		}
	}()
	defer func() { stop.Store(true); wg.Wait() }()

	defer pinThread(b, 0)()
	sb := frame.NewBatch(64)
	send := func(frames int) {
		for off := 0; off < frames; off += 64 {
			n, _ := pool.Alloc(sb, min(64, frames-off))
			for i := range n {
				sb.Frames[i].Resize(size)
			}
			tx.Send(sb)
		}
	}
	send(20000) // warm up: rings, caches
	s0, r0 := tx.Stats(), got.Load()
	b.ReportAllocs()
	b.ResetTimer()
	m := benchutil.Start(b)
	send(b.N)
	b.StopTimer()
	s1 := tx.Stats()
	accepted := int(s1.TxPackets - s0.TxPackets)
	m.Report(b, max(accepted, 1))
	b.ReportMetric(float64(got.Load()-r0)/b.Elapsed().Seconds()/1e6, "rx-Mpps")
	b.ReportMetric(100*float64(s1.TxDropped-s0.TxDropped)/float64(b.N), "drop-%")
}

// BenchmarkRecvGeometry receives 60-byte frames over a veth pair with several ring geometries and
// block timeouts, the sender (a sendmmsg port of this package) pinned to CPU 1 and the receiver to
// CPU 0, as bench's BenchmarkRecv does. Besides Mpps and the receiving thread's cpu-ns/frame it
// reports the sender's rate (sent-Mpps), the frames the kernel dropped for want of a free block
// (drop-%: the receiver was too slow or slept too long), the receiver's wake-ups per second (Recv
// found nothing and it called Wait) and the longest Wait (max-wait-ms: how long the receiving thread
// was away, a stall the ring must absorb). One op is one frame received.
func BenchmarkRecvGeometry(b *testing.B) {
	l := newLink(b)
	for _, c := range []struct {
		name string
		cfg  Config
	}{
		{"default", Config{}}, // 128 x 128 KiB, 1 ms
		{"default-tov64ms", Config{RetireTimeout: 64 * time.Millisecond}},
		{"16x256KiB-tov1ms", Config{BlockSize: 256 << 10, BlockCount: 16}},
		{"128x128KiB-tov1ms", Config{BlockSize: 128 << 10, BlockCount: 128}},
		{"gopacket-geometry-tov1ms", Config{BlockSize: 512 << 10, BlockCount: 128, FrameSize: 4096}},
		{"gopacket-geometry-tov64ms", Config{BlockSize: 512 << 10, BlockCount: 128, FrameSize: 4096, RetireTimeout: 64 * time.Millisecond}},
	} {
		b.Run("rx="+c.name, func(b *testing.B) {
			cfg := c.cfg
			benchRecvGeometry(b, l, &cfg)
		})
	}
}

func benchRecvGeometry(b *testing.B, l *link, cfg *Config) {
	tx := openIn(b, l.nsA, l.ifA, &Config{QdiscBypass: true})
	rx := openIn(b, l.nsB, l.ifB, cfg)
	pool := filledPool(b, 60)
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer pinThread(b, 1)()
		sb := frame.NewBatch(64)
		for !stop.Load() {
			n, _ := pool.Alloc(sb, 64)
			for i := range n {
				sb.Frames[i].Resize(60)
			}
			tx.Send(sb)
		}
	}()
	defer func() { stop.Store(true); wg.Wait() }()
	defer pinThread(b, 0)()
	batch := frame.NewBatch(64)
	var sink byte
	waits := 0
	var maxWait time.Duration
	recv := func(n int) {
		for got := 0; got < n; {
			k, err := rx.Recv(batch)
			if err != nil {
				b.Fatal(err)
			}
			if k == 0 {
				waits++
				t0 := time.Now()
				if err := rx.Wait(int64(100 * time.Millisecond)); err != nil {
					b.Fatal(err)
				}
				if d := time.Since(t0); d > maxWait {
					maxWait = d
				}
				continue
			}
			for i := range batch.Frames {
				sink ^= batch.Mem[batch.Frames[i].Off]
			}
			got += k
			batch.Free()
		}
	}
	recv(100000) // warm up
	rs0, ts0 := rx.RingStats(), tx.Stats()
	waits, maxWait = 0, 0
	b.ReportAllocs()
	b.ResetTimer()
	m := benchutil.Start(b)
	recv(b.N)
	b.StopTimer()
	m.Report(b, b.N)
	rs1, ts1 := rx.RingStats(), tx.Stats()
	el := b.Elapsed().Seconds()
	b.ReportMetric(float64(ts1.TxPackets-ts0.TxPackets)/el/1e6, "sent-Mpps")
	if p := rs1.Packets - rs0.Packets; p > 0 {
		b.ReportMetric(100*float64(rs1.Drops-rs0.Drops)/float64(p), "drop-%")
	}
	b.ReportMetric(float64(waits)/el, "waits/s")
	b.ReportMetric(float64(maxWait.Microseconds())/1000, "max-wait-ms")
	_ = sink
}

// filledPool returns a pool of 256 buffers, each holding a test frame of size bytes: Send does not
// modify them, so a sender can allocate and send without copying anything.
func filledPool(b *testing.B, size int) *frame.Pool {
	pool, err := frame.NewPool(&frame.PoolConfig{Buffers: 256, BufSize: 2048})
	if err != nil {
		b.Fatal(err)
	}
	all := frame.NewBatch(256)
	pool.Alloc(all, 256)
	data := testFrame(1, size)
	for i := range all.Frames {
		all.Frames[i].Resize(size)
		copy(all.Bytes(i), data)
	}
	all.Free()
	return pool
}
