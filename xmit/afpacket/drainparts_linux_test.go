package afpacket

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wirespeed/wirespeed/frame"
)

func cpuNow() time.Duration {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return time.Duration(ts.Nano())
}

// heldBlocks opens every ready block without handing out its frames; it returns their indices.
func (p *Port) heldBlocks() (blks []uint32, frames uint64) {
	for p.openBlock() {
		blks = append(blks, p.cur)
		frames += uint64(p.left)
		p.left = 0
		p.advance()
	}
	return
}

// giveBack returns blocks opened by heldBlocks to the kernel.
func (p *Port) giveBack(blks []uint32) {
	for _, b := range blks {
		num := ne.Uint32(p.ring[b*p.blockSize+blkNumPktsOff:])
		p.releaseRun(b, num)
	}
}

var sinkU uint32

// walkChain follows each block's tp_next_offset chain, reading each header (and, with touch, each
// frame's first byte).
func (p *Port) walkChain(blks []uint32, touch bool) {
	ring := p.ring
	var s uint32
	for _, b := range blks {
		base := b * p.blockSize
		num := ne.Uint32(ring[base+blkNumPktsOff:])
		off := base + ne.Uint32(ring[base+blkFirstOff:])
		for range num {
			h := ring[off : off+pktHdrLen]
			s += ne.Uint32(h[pktSnaplenOff:])
			if touch {
				s += uint32(ring[off+uint32(ne.Uint16(h[pktMacOff:]))])
			}
			off += ne.Uint32(h[pktNextOff:])
		}
	}
	sinkU += s
}

// walkStride reads one byte every step bytes of each block's frames.
func (p *Port) walkStride(blks []uint32, step uint32) {
	ring := p.ring
	var s byte
	for _, b := range blks {
		base := b * p.blockSize
		end := base + ne.Uint32(ring[base+blkLenOff:])
		for o := base; o < end; o += step {
			s += ring[o]
		}
	}
	sinkU += uint32(s)
}

// The drain variants, one per cycle in turn: recv is Recv, reading each frame's first byte, as
// bench's BenchmarkRecvDrain does; the others walk the blocks directly: desc only hands the blocks
// back, chain follows tp_next_offset reading each header, chain+byte also reads each frame's first
// byte, stride64 reads one byte of every cache line of the blocks' frames (no chain: independent
// loads), 2ndpass is chain+byte over blocks that chain+byte has just walked (the lines in this CPU's
// caches).
var variants = []string{"recv", "desc", "chain", "chain+byte", "stride64", "2ndpass"}

// BenchmarkDrainParts splits bench's BenchmarkRecvDrain into parts (see bench/notes/rx.md): each cycle fills
// the ring with k 60-byte frames (a sendmmsg port of this package on CPU 1), waits 100 ms for every
// block to retire, then empties it on CPU 0 with one of the variants above, in turn, so that every
// variant sees the same conditions; only the emptying is timed (the receiving thread's CPU time per
// frame). The first lap is a warm-up.
func BenchmarkDrainParts(b *testing.B) {
	for _, g := range []struct {
		name string
		cfg  Config
	}{
		{"default", Config{}},
		{"gopacket-geometry-tov64ms", Config{BlockSize: 512 << 10, BlockCount: 128, FrameSize: 4096, RetireTimeout: 64 * time.Millisecond}},
	} {
		b.Run("ring="+g.name, func(b *testing.B) { benchDrainParts(b, &g.cfg) })
	}
}

func benchDrainParts(b *testing.B, cfg *Config) {
	const k = 16384
	l := newLink(b)
	tx := openIn(b, l.nsA, l.ifA, &Config{QdiscBypass: true, TxRetries: 1000})
	rx := openIn(b, l.nsB, l.ifB, cfg)
	pool := filledPool(b, 60)
	fill := func() {
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer pinThread(b, 1)()
			sb := frame.NewBatch(64)
			for sent := 0; sent < k; {
				n, _ := pool.Alloc(sb, min(64, k-sent))
				for i := range n {
					sb.Frames[i].Resize(60)
				}
				m, _ := tx.Send(sb)
				sent += m
			}
		}()
		<-done
		time.Sleep(100 * time.Millisecond)
	}
	defer pinThread(b, 0)()
	cpu := make([]time.Duration, len(variants))
	cnt := make([]uint64, len(variants))
	batch := frame.NewBatch(64)
	var sink byte
	cycles := (b.N + k - 1) / k
	cycles = max(cycles, 2*len(variants))
	b.ResetTimer()
	for c := 0; c <= cycles; c++ {
		fill()
		v := c % len(variants)
		rx.rxMu.Lock()
		blks, frames := rx.heldBlocks()
		rx.rxMu.Unlock()
		if frames != k {
			b.Fatalf("cycle %d: %d frames in the ring, want %d", c, frames, k)
		}
		c0 := cpuNow()
		switch variants[v] {
		case "recv":
			// Recv opens the blocks itself: undo heldBlocks' bookkeeping (no ring access).
			for _, bl := range blks {
				rx.blocks[bl].pending.Store(0)
				rx.held.Add(-1)
			}
			rx.cur = blks[0]
			c0 = cpuNow()
			for got := uint64(0); got < frames; {
				n, err := rx.Recv(batch)
				if err != nil || n == 0 {
					b.Fatalf("recv: %d %v after %d of %d", n, err, got, frames)
				}
				for i := range batch.Frames {
					sink ^= batch.Mem[batch.Frames[i].Off]
				}
				got += uint64(n)
				batch.Free()
			}
			blks = nil
		case "desc":
		case "chain":
			rx.walkChain(blks, false)
		case "chain+byte":
			rx.walkChain(blks, true)
		case "stride64":
			rx.walkStride(blks, 64)
		case "2ndpass":
			rx.walkChain(blks, true)
			c0 = cpuNow()
			rx.walkChain(blks, true)
		}
		rx.giveBack(blks)
		ce := cpuNow() - c0
		if c >= len(variants) { // the first lap is a warm-up
			cpu[v] += ce
			cnt[v] += frames
		}
	}
	b.StopTimer()
	for i, n := range variants {
		if cnt[i] > 0 {
			b.ReportMetric(float64(cpu[i].Nanoseconds())/float64(cnt[i]), n+"-cpu-ns/frame")
		}
	}
	sinkU += uint32(sink)
}
