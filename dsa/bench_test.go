package dsa

import (
	"testing"

	"github.com/wirespeed/wirespeed/frame"
)

// Decode and Encode change the frame, so every iteration first restores the frame descriptor and
// its first 20 bytes (what a head tag's MAC move touches). The sub-benchmark tagger=restore
// measures that restore alone; subtract it to get the codec's own cost.

const restoreLen = 20

func benchFrames(name string) (rx, tx []byte, port int) {
	tg, _ := ByName(name)
	port = 1 % min(tg.Spec().Ports, rxWidth[name])
	return naiveRx(name, hx(inner), 0, port), hx(inner), port
}

func perFrame(b *testing.B) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "frames/s")
}

func BenchmarkDecode(b *testing.B) {
	b.Run("tagger=restore", func(b *testing.B) {
		rx, _, _ := benchFrames("edsa")
		_, bt := oneFrame(b, rx)
		orig, data := bt.Frames[0], bt.Bytes(0)
		b.ReportAllocs()
		for b.Loop() {
			bt.Frames[0] = orig
			copy(data[:restoreLen], rx)
		}
		perFrame(b)
	})
	for _, name := range Names() {
		b.Run("tagger="+name, func(b *testing.B) {
			tg := mustTagger(b, name)
			rx, _, _ := benchFrames(name)
			_, bt := oneFrame(b, rx)
			orig, data := bt.Frames[0], bt.Bytes(0)
			b.ReportAllocs()
			for b.Loop() {
				bt.Frames[0] = orig
				copy(data[:restoreLen], rx)
				if _, err := tg.Decode(bt, 0); err != nil {
					b.Fatal(err)
				}
			}
			perFrame(b)
		})
	}
}

func BenchmarkEncode(b *testing.B) {
	b.Run("tagger=restore", func(b *testing.B) {
		_, tx, _ := benchFrames("edsa")
		_, bt := oneFrame(b, tx)
		orig, data := bt.Frames[0], bt.Bytes(0)
		b.ReportAllocs()
		for b.Loop() {
			bt.Frames[0] = orig
			copy(data[:restoreLen], tx)
		}
		perFrame(b)
	})
	for _, name := range Names() {
		b.Run("tagger="+name, func(b *testing.B) {
			tg := mustTagger(b, name)
			_, tx, port := benchFrames(name)
			_, bt := oneFrame(b, tx)
			orig, data := bt.Frames[0], bt.Bytes(0)
			d := To(port)
			b.ReportAllocs()
			for b.Loop() {
				bt.Frames[0] = orig
				copy(data[:restoreLen], tx)
				if err := tg.Encode(bt, 0, d); err != nil {
					b.Fatal(err)
				}
			}
			perFrame(b)
		})
	}
}

// BenchmarkParse is the read-only decode: nothing to restore.
func BenchmarkParse(b *testing.B) {
	for _, name := range Names() {
		b.Run("tagger="+name, func(b *testing.B) {
			tg := mustTagger(b, name)
			rx, _, _ := benchFrames(name)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tg.Parse(rx); err != nil {
					b.Fatal(err)
				}
			}
			perFrame(b)
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

// BenchmarkConduitPTP is the 2020 netdev lesson: the optional per-frame PTP work (classifying
// every frame of a port that asked for timestamps) must cost nothing while no port asked.
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
