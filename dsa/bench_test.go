package dsa

import (
	"testing"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/internal/benchutil"
)

// Decode and Encode change the frame, so the benchmarks work on a ring of 64 distinct frames (in
// 4160-byte buffers: 65 cache lines apart, so they do not alias in the L1 cache): one round first
// restores all 64 (descriptors, then the first 20 bytes of each: what a head tag's MAC move
// touches), then decodes (encodes) all 64. Restoring and decoding in separate passes means no
// codec call reads bytes or descriptor fields that a store of a different width just wrote (one
// frame restored and decoded in turn measures store-forwarding stalls of the benchmark, not the
// codec). The sub-benchmark tagger=restore runs the restore pass alone, measured the same way:
// subtract it to get the codec's own cost. One op is one frame; cpu-ns/frame is the thread's CPU
// time (internal/benchutil), robust to other processes on a shared machine.

const (
	restoreLen = 20
	nframes    = 64
)

func benchFrames(name string) (rx, tx []byte, port int) {
	tg, _ := ByName(name)
	port = 1 % min(tg.Spec().Ports, rxWidth[name])
	return naiveRx(name, hx(inner), 0, port), hx(inner), port
}

// ring is 64 copies of one frame in distinct buffers and what it takes to put them back.
type ring struct {
	b    *frame.Batch
	orig []frame.Frame
	head []*[restoreLen]byte // each frame's first restoreLen bytes in the arena
	src  [restoreLen]byte
}

func newRing(b *testing.B, data []byte) *ring {
	pool, err := frame.NewPool(&frame.PoolConfig{Buffers: nframes, BufSize: 4160, Headroom: 64})
	if err != nil {
		b.Fatal(err)
	}
	r := &ring{b: frame.NewBatch(nframes)}
	copy(r.src[:], data)
	if n, _ := pool.Alloc(r.b, nframes); n != nframes {
		b.Fatal("alloc")
	}
	for i := range r.b.Frames {
		setFrame(r.b, i, data)
		r.head = append(r.head, (*[restoreLen]byte)(r.b.Bytes(i)))
	}
	r.orig = append([]frame.Frame(nil), r.b.Frames...)
	return r
}

// restore puts all 64 frames back: descriptors in one copy, then the head bytes, each as one
// 20-byte array assignment (a 16-byte and a 4-byte store, where a copy of a slice would call
// memmove for every frame).
func (r *ring) restore() {
	copy(r.b.Frames, r.orig)
	src := r.src
	for _, h := range r.head {
		*h = src
	}
}

func BenchmarkDecode(b *testing.B) {
	b.Run("tagger=restore", func(b *testing.B) {
		rx, _, _ := benchFrames("edsa")
		r := newRing(b, rx)
		b.ReportAllocs()
		m := benchutil.Start(b)
		done := 0
		for done < b.N {
			r.restore()
			done += nframes
		}
		m.Report(b, done)
	})
	for _, name := range Names() {
		b.Run("tagger="+name, func(b *testing.B) {
			tg := mustTagger(b, name)
			rx, _, _ := benchFrames(name)
			r := newRing(b, rx)
			var in Info
			b.ReportAllocs()
			m := benchutil.Start(b)
			done := 0
			for done < b.N {
				r.restore()
				for i := range nframes {
					if err := tg.Decode(r.b, i, &in); err != nil {
						b.Fatal(err)
					}
				}
				done += nframes
			}
			m.Report(b, done)
		})
	}
}

// BenchmarkDecodeBatch is BenchmarkDecode through DecodeBatch: one call per 64 frames.
func BenchmarkDecodeBatch(b *testing.B) {
	for _, name := range Names() {
		b.Run("tagger="+name, func(b *testing.B) {
			tg := mustTagger(b, name)
			rx, _, _ := benchFrames(name)
			r := newRing(b, rx)
			ins, rs := make([]Info, nframes), make([]Reason, nframes)
			b.ReportAllocs()
			m := benchutil.Start(b)
			done := 0
			for done < b.N {
				r.restore()
				if tg.DecodeBatch(r.b, ins, rs) != nframes {
					b.Fatal(rs[0])
				}
				done += nframes
			}
			m.Report(b, done)
		})
	}
}

// BenchmarkEncodeBatch is BenchmarkEncode through EncodeBatch: one call per 64 frames.
func BenchmarkEncodeBatch(b *testing.B) {
	for _, name := range Names() {
		b.Run("tagger="+name, func(b *testing.B) {
			tg := mustTagger(b, name)
			_, tx, port := benchFrames(name)
			r := newRing(b, tx)
			rs := make([]Reason, nframes)
			b.ReportAllocs()
			m := benchutil.Start(b)
			done := 0
			for done < b.N {
				r.restore()
				if tg.EncodeBatch(r.b, To(port), rs) != nframes {
					b.Fatal(rs[0])
				}
				done += nframes
			}
			m.Report(b, done)
		})
	}
}

func BenchmarkEncode(b *testing.B) {
	b.Run("tagger=restore", func(b *testing.B) {
		_, tx, _ := benchFrames("edsa")
		r := newRing(b, tx)
		b.ReportAllocs()
		m := benchutil.Start(b)
		done := 0
		for done < b.N {
			r.restore()
			done += nframes
		}
		m.Report(b, done)
	})
	for _, name := range Names() {
		b.Run("tagger="+name, func(b *testing.B) {
			tg := mustTagger(b, name)
			_, tx, port := benchFrames(name)
			r := newRing(b, tx)
			d := To(port)
			b.ReportAllocs()
			m := benchutil.Start(b)
			done := 0
			for done < b.N {
				r.restore()
				for i := range nframes {
					if err := tg.Encode(r.b, i, d); err != nil {
						b.Fatal(err)
					}
				}
				done += nframes
			}
			m.Report(b, done)
		})
	}
}

// BenchmarkParse is the read-only decode over 64 distinct frames: nothing to restore.
func BenchmarkParse(b *testing.B) {
	for _, name := range Names() {
		b.Run("tagger="+name, func(b *testing.B) {
			tg := mustTagger(b, name)
			rx, _, _ := benchFrames(name)
			r := newRing(b, rx)
			views := make([][]byte, nframes)
			for i := range views {
				views[i] = r.b.Bytes(i)
			}
			var in Info
			b.ReportAllocs()
			m := benchutil.Start(b)
			for i := 0; i < b.N; i++ {
				if err := tg.Parse(views[i&(nframes-1)], &in); err != nil {
					b.Fatal(err)
				}
			}
			m.Report(b, b.N)
		})
	}
}

// conduitBatch is a batch of 64 tagged frames and what it takes to put it back.
type conduitBatch struct {
	b        *frame.Batch
	orig     []frame.Frame
	pristine [][]byte
}

func newConduitBatch(b *testing.B, frames func(i int) []byte) *conduitBatch {
	pool := newPool(b)
	cb := &conduitBatch{b: frame.NewBatch(64)}
	for i := range 64 {
		fill(b, pool, cb.b, frames(i))
		cb.pristine = append(cb.pristine, frames(i))
	}
	cb.orig = append([]frame.Frame(nil), cb.b.Frames...)
	return cb
}

func (cb *conduitBatch) restore() {
	cb.b.Frames = cb.b.Frames[:64]
	copy(cb.b.Frames, cb.orig)
	for i := range cb.b.Frames {
		copy(cb.b.Frames[i].Data(cb.b.Mem)[:restoreLen], cb.pristine[i])
	}
}

func perBatch(b *testing.B, n int) {
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "frames/s")
}

// BenchmarkConduitRecv: one Recv of a 64-frame batch spread over the switch's ports.
func BenchmarkConduitRecv(b *testing.B) {
	b.Run("tagger=restore", func(b *testing.B) {
		cb := newConduitBatch(b, func(i int) []byte { return naiveRx("edsa", hx(inner), 0, i%4) })
		b.ReportAllocs()
		for b.Loop() {
			cb.restore()
		}
		perBatch(b, 64)
	})
	for _, name := range []string{"edsa", "brcm", "qca", "mtk", "ksz9477", "rtl8_4", "ocelot-8021q"} {
		b.Run("tagger="+name, func(b *testing.B) {
			tg := mustTagger(b, name)
			ports := min(tg.Spec().Ports, rxWidth[name])
			c, _ := NewConduit(Config{Tagger: tg})
			cb := newConduitBatch(b, func(i int) []byte { return naiveRx(name, hx(inner), 0, i%ports) })
			b.ReportAllocs()
			for b.Loop() {
				cb.restore()
				if c.Recv(cb.b, nil) != 64 {
					b.Fatal("dropped")
				}
			}
			perBatch(b, 64)
		})
	}
}

// BenchmarkConduitSend: one Send of a 64-frame batch toward Frame.Out.
func BenchmarkConduitSend(b *testing.B) {
	for _, name := range []string{"edsa", "brcm", "qca", "mtk", "ksz9477", "rtl8_4", "ocelot-8021q"} {
		b.Run("tagger="+name, func(b *testing.B) {
			tg := mustTagger(b, name)
			c, _ := NewConduit(Config{Tagger: tg})
			cb := newConduitBatch(b, func(i int) []byte { return hx(inner) })
			for i := range cb.orig {
				cb.orig[i].Out = uint16(i % 4)
			}
			b.ReportAllocs()
			for b.Loop() {
				cb.restore()
				if c.Send(cb.b, nil) != 64 {
					b.Fatal("dropped")
				}
			}
			perBatch(b, 64)
		})
	}
}

// BenchmarkConduitPTP: the optional per-frame PTP work (classifying every frame of a port that
// asked for timestamps) must cost nothing while no port asked.
// ts=off runs with no port enabled; ts=on with every port enabled (each frame classified). Run it
// again with -tags dsa_noptp, where the branch does not exist, and compare ts=off across builds.
func BenchmarkConduitPTP(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "ts=off"
		if on {
			name = "ts=on"
		}
		b.Run(name, func(b *testing.B) {
			c, _ := NewConduit(Config{Tagger: mustTagger(b, "ksz9477")})
			if on {
				for u := range c.NumPorts() {
					_ = c.EnableTimestamps(u, true)
				}
			}
			// Mixed traffic: every 8th frame a PTP event message with a timestamp in the tag.
			cb := newConduitBatch(b, func(i int) []byte {
				if i%8 == 0 {
					return cat(ptpUDP, []byte{0x40, 0, 0, 9, 0x80 | byte(i%7)})
				}
				return cat(hx(inner), []byte{byte(i % 7)})
			})
			b.ReportAllocs()
			for b.Loop() {
				cb.restore()
				c.Recv(cb.b, nil)
			}
			perBatch(b, 64)
		})
	}
}
