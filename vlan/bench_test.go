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
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			sink := 0
			var h Header
			m := benchutil.Start(b)
			for i := 0; i < b.N; i++ {
				err := Parse(views[i&(nframes-1)], &h)
				if err == nil {
					sink += h.Len + int(h.EtherType)
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
// cache-set aliasing between frames) with 3 KiB of headroom:
// room for 768 pushes per frame before the descriptors must be reset.
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

func BenchmarkPush(b *testing.B) {
	fb, saved := bigHeadroom(b, 0)
	b.ReportAllocs()
	m := benchutil.Start(b)
	i := 0
	for b.Loop() {
		k := i & (nframes - 1)
		if Push(fb, k, C(10)) != nil {
			copy(fb.Frames, saved) // headroom used up: reset descriptors (once per 768 rounds)
			Push(fb, k, C(10))
		}
		i++
	}
	m.Report(b, b.N)
}

func BenchmarkPop(b *testing.B) {
	const depth = 600
	fb, saved := bigHeadroom(b, depth)
	b.ReportAllocs()
	m := benchutil.Start(b)
	i := 0
	for b.Loop() {
		k := i & (nframes - 1)
		if fb.Frames[k].Head >= 3072-4 {
			// All tags popped: restore the descriptors; the bytes behind them are still tagged
			// except the MAC moves, which only ever rewrite the same 12 bytes.
			copy(fb.Frames, saved)
		}
		Pop(fb, k)
		i++
	}
	m.Report(b, b.N)
}

func BenchmarkRewrite(b *testing.B) {
	fb, _ := bigHeadroom(b, 1)
	b.ReportAllocs()
	m := benchutil.Start(b)
	i := 0
	for b.Loop() {
		SetTCI(fb, i&(nframes-1), TCI(i&0x3ff|1))
		i++
	}
	m.Report(b, b.N)
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
