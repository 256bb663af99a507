package vlan

import (
	"testing"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/internal/benchutil"
)

// The benchmarks cycle over a batch of 64 distinct frames, one frame per op, so that consecutive
// ops never touch the bytes the previous op just wrote (a real forwarder touches each frame once;
// hammering one frame would measure store-forwarding stalls of the benchmark, not the code).

const nframes = 64

func BenchmarkParse(b *testing.B) {
	for _, c := range []struct {
		name string
		tags []Tag
	}{{"untagged", nil}, {"dot1q", []Tag{C(10)}}, {"qinq", []Tag{S(10), C(20)}}} {
		p := newPool(b)
		pkts := make([][]byte, nframes)
		for i := range pkts {
			pkts[i] = gpFrame(b, c.tags, 30)
		}
		fb := load(b, p, pkts...)
		views := make([][]byte, nframes)
		for i := range views {
			views[i] = fb.Bytes(i)
		}
		b.Run(c.name+"/api=frame", func(b *testing.B) {
			b.ReportAllocs()
			sink := 0
			var h Header
			m := benchutil.Start(b)
			for i := 0; i < b.N; i++ {
				err := Parse(views[i&(nframes-1)], &h)
				if err == nil {
					sink += int(h.Len) + int(h.EtherType)
				}
			}
			m.Report(b, b.N)
			if sink == 0 {
				b.Fatal("nothing parsed")
			}
		})
	}
}

// bigHeadroom returns 64 frames of an untagged packet in 4160-byte buffers (65 cache lines: no
// cache-set aliasing between frames) with 3 KiB of headroom, plus `tags` tags pushed, and a copy of
// the descriptors to restore them.
func bigHeadroom(b *testing.B, tags int) (*frame.Batch, []frame.Frame) {
	p, err := frame.NewPool(&frame.PoolConfig{Buffers: nframes, BufSize: 4160, Headroom: 3072})
	if err != nil {
		b.Fatal(err)
	}
	fb := frame.NewBatch(nframes)
	p.Alloc(fb, nframes)
	pkt := gpFrame(b, nil, 30)
	for i := range fb.Frames {
		fb.Frames[i].Resize(len(pkt))
		copy(fb.Bytes(i), pkt)
		for j := 0; j < tags; j++ {
			Push(fb, i, C(uint16(j+1)))
		}
	}
	return fb, append([]frame.Frame(nil), fb.Frames...)
}

// One op is one frame in every benchmark below (api=frame: the per-frame function). Restoring
// descriptors when headroom (push) or tags (pop) run out happens once per several hundred rounds
// and is included; BenchmarkPop/restore-only measures the pop restore by itself (push restores 64
// descriptors, 2 KiB, once per 768 rounds: negligible).

func BenchmarkPush(b *testing.B) {
	b.Run("api=frame", func(b *testing.B) {
		fb, saved := bigHeadroom(b, 0)
		b.ReportAllocs()
		m := benchutil.Start(b)
		for i := 0; i < b.N; i++ {
			k := i & (nframes - 1)
			if Push(fb, k, C(10)) != nil {
				copy(fb.Frames, saved) // headroom used up: reset descriptors (once per 768 rounds)
				Push(fb, k, C(10))
			}
		}
		m.Report(b, b.N)
	})
}

func BenchmarkPop(b *testing.B) {
	const depth = 600
	// Popping rewrites the bytes (each MAC move lands on the tag just popped), so after all 600 tags
	// the frames are restored whole: descriptors and bytes, once per 600 pops per frame (a copy of
	// about 4 bytes per pop, included in the figure).
	restore := func(fb *frame.Batch, saved []frame.Frame, bytes [][]byte) {
		copy(fb.Frames, saved)
		for i := range fb.Frames {
			copy(fb.Bytes(i), bytes[i])
		}
	}
	setup := func(b *testing.B) (*frame.Batch, []frame.Frame, [][]byte) {
		fb, saved := bigHeadroom(b, depth)
		bytes := make([][]byte, len(fb.Frames))
		for i := range bytes {
			bytes[i] = append([]byte(nil), fb.Bytes(i)...)
		}
		return fb, saved, bytes
	}
	b.Run("api=frame", func(b *testing.B) {
		fb, saved, bytes := setup(b)
		b.ReportAllocs()
		m := benchutil.Start(b)
		for i := 0; i < b.N; i++ {
			k := i & (nframes - 1)
			if k == 0 && fb.Frames[0].Head >= 3072-4 {
				restore(fb, saved, bytes)
			}
			if _, err := Pop(fb, k); err != nil {
				b.Fatal(err)
			}
		}
		m.Report(b, b.N)
	})
	// The restore alone, per frame popped (one restore serves depth pops of each of the 64
	// frames): the share of the two figures above that is the benchmark's own upkeep.
	b.Run("restore-only", func(b *testing.B) {
		fb, saved, bytes := setup(b)
		b.ReportAllocs()
		m := benchutil.Start(b)
		done := 0
		for done < b.N {
			restore(fb, saved, bytes)
			done += depth * len(fb.Frames)
		}
		m.Report(b, done)
	})
}

func BenchmarkRewrite(b *testing.B) {
	b.Run("api=frame", func(b *testing.B) {
		fb, _ := bigHeadroom(b, 1)
		b.ReportAllocs()
		m := benchutil.Start(b)
		for i := 0; i < b.N; i++ {
			SetTCI(fb, i&(nframes-1), TCI(i&0x3ff|1))
		}
		m.Report(b, b.N)
	})
}

// BenchmarkClassify: one op = one frame through Demux Worker.Classify (batches of 64, mixed
// untagged/802.1Q/QinQ) followed by Egress back to its interface.
func BenchmarkClassify(b *testing.B) {
	p := newPool(b)
	d := testDemux(b)
	w := d.NewWorker()
	var pkts [][]byte
	for i := 0; i < 64; i++ {
		switch i % 3 {
		case 0:
			pkts = append(pkts, gpFrame(b, nil, 30))
		case 1:
			pkts = append(pkts, gpFrame(b, []Tag{C(10)}, 30))
		default:
			pkts = append(pkts, gpFrame(b, []Tag{S(100), C(200)}, 30))
		}
	}
	fb := load(b, p, pkts...)
	b.ReportAllocs()
	n := 0
	m := benchutil.Start(b)
	for b.Loop() {
		w.Classify(0, fb)
		for i := range fb.Frames {
			fb.Frames[i].Out = fb.Frames[i].Port
			w.Egress(fb, i)
		}
		n += len(fb.Frames)
	}
	m.Report(b, n)
}

// BenchmarkEncap: one op = one frame's whole L2 header replaced for an egress interface (cycling
// over untagged, 802.1Q and QinQ interfaces), field by field (api=encap, Worker.Encap) or as a
// prebuilt Rewrite (api=apply, Worker.Apply).
func BenchmarkEncap(b *testing.B) {
	d := testDemux(b)
	outs := []uint16{0, 1, 3}
	dst, src := frame.MAC{2, 0xd, 0xd, 0xd, 0xd, 0xd}, frame.MAC{2, 5, 5, 5, 5, 5}
	setup := func(b *testing.B) (*Worker, *frame.Batch) {
		w := d.NewWorker()
		pkts := make([][]byte, nframes)
		for i := range pkts {
			pkts[i] = gpFrame(b, []Tag{C(10)}, 30)
		}
		fb := load(b, newPool(b), pkts...)
		if w.ClassifyInPlace(0, fb) != nframes {
			b.Fatal("classify")
		}
		return w, fb
	}
	b.Run("api=encap", func(b *testing.B) {
		w, fb := setup(b)
		b.ReportAllocs()
		m := benchutil.Start(b)
		for i := 0; i < b.N; i++ {
			j := i & (nframes - 1)
			fb.Frames[j].Out = outs[(i>>6)%len(outs)]
			if _, err := w.Encap(fb, j, dst, src); err != nil {
				b.Fatal(err)
			}
		}
		m.Report(b, b.N)
	})
	b.Run("api=apply", func(b *testing.B) {
		w, fb := setup(b)
		rws := make([]Rewrite, len(outs))
		for k, o := range outs {
			rws[k], _ = d.Rewrite(o, dst, src, frame.TypeIPv4)
		}
		b.ReportAllocs()
		m := benchutil.Start(b)
		for i := 0; i < b.N; i++ {
			if err := w.Apply(fb, i&(nframes-1), &rws[(i>>6)%len(rws)]); err != nil {
				b.Fatal(err)
			}
		}
		m.Report(b, b.N)
	})
}

// BenchmarkClassifyInPlace: one op = one frame through Worker.ClassifyInPlace (batches of 64, all
// kept), untagged, one 802.1Q tag, QinQ, or the three mixed, on a fixed port (port=fixed) or with
// each frame's port in Frame.Port (port=perframe: the benchmark puts the ports back, 64 stores per
// batch, since classification overwrites them with interface IDs).
func BenchmarkClassifyInPlace(b *testing.B) {
	for _, mix := range []string{"untagged", "dot1q", "qinq", "mixed"} {
		for _, perFrame := range []bool{false, true} {
			name := "mix=" + mix + "/port=fixed"
			if perFrame {
				name = "mix=" + mix + "/port=perframe"
			}
			b.Run(name, func(b *testing.B) {
				d := testDemux(b)
				w := d.NewWorker()
				pkts := make([][]byte, nframes)
				for i := range pkts {
					kind := mix
					if mix == "mixed" {
						kind = []string{"untagged", "dot1q", "qinq"}[i%3]
					}
					switch kind {
					case "untagged":
						pkts[i] = gpFrame(b, nil, 30)
					case "dot1q":
						pkts[i] = gpFrame(b, []Tag{C(10)}, 30)
					default:
						pkts[i] = gpFrame(b, []Tag{S(100), C(200)}, 30)
					}
				}
				fb := load(b, newPool(b), pkts...)
				port := uint16(0)
				if perFrame {
					port = PerFramePort
				}
				b.ReportAllocs()
				n := 0
				m := benchutil.Start(b)
				for b.Loop() {
					if perFrame {
						for i := range fb.Frames {
							fb.Frames[i].Port = 0
						}
					}
					n += w.ClassifyInPlace(port, fb)
				}
				m.Report(b, n)
				if n != b.N*nframes {
					b.Fatalf("kept %d of %d", n, b.N*nframes)
				}
			})
		}
	}
}

// BenchmarkFlush: one op = one Flush of a worker with 201 interfaces (an untagged one and 200
// VLANs on one port), none of which changed since the last (an idle worker's loop flushes so).
func BenchmarkFlush(b *testing.B) {
	d := NewDemux(1, Parser{})
	for id := range 201 {
		ifc := Interface{ID: uint16(id)}
		if id > 0 {
			ifc.Outer = C(uint16(id))
		}
		if err := d.Add(ifc); err != nil {
			b.Fatal(err)
		}
	}
	w := d.NewWorker()
	w.local[7].RxPackets = 1
	w.Flush()
	for b.Loop() {
		w.Flush()
	}
	if d.Stats(7).RxPackets != 1 {
		b.Fatal("Flush did not publish")
	}
}
