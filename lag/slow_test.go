package lag

import (
	"encoding/binary"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/xmit"
)

// naiveSlow is slowScan's specification, frame by frame.
func naiveSlow(mem []byte, fr []frame.Frame) bool {
	for i := range fr {
		d := fr[i].Data(mem)
		if len(d) >= 14 && binary.BigEndian.Uint16(d[12:]) == SlowEtherType {
			return true
		}
	}
	return false
}

// TestSlowScan compares slowScan with naiveSlow on random batches: frames of every length
// near 14 bytes, at the end of the arena, with 0x8809 just past a runt's end, tiny arenas.
func TestSlowScan(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for iter := 0; iter < 20000; iter++ {
		mem := make([]byte, r.IntN(200))
		for i := range mem {
			mem[i] = byte(r.Uint32())
			if r.IntN(8) == 0 && i+1 < len(mem) {
				mem[i], mem[i+1] = 0x88, 0x09
			}
		}
		fr := make([]frame.Frame, r.IntN(10))
		for i := range fr {
			if len(mem) == 0 {
				break
			}
			off := r.IntN(len(mem))
			l := r.IntN(len(mem) - off + 1)
			if r.IntN(3) == 0 {
				l = min(l, 10+r.IntN(8))
			}
			fr[i] = frame.Frame{Off: uint32(off), Len: uint16(l)}
		}
		if got, want := slowScan(mem, fr) != 0, naiveSlow(mem, fr); got != want {
			t.Fatalf("slowScan %v, naive %v: mem %x frames %+v", got, want, mem, fr)
		}
	}
}

// recorder is a SlowHandler keeping what it got.
type recorder struct {
	mu     sync.Mutex
	frames [][]byte
	member []int
}

func (r *recorder) HandleSlow(member int, f []byte) {
	r.mu.Lock()
	r.frames = append(r.frames, append([]byte(nil), f...))
	r.member = append(r.member, member)
	r.mu.Unlock()
}

type slowRig struct {
	pool  *frame.Pool
	agg   *Aggregate
	far   []*xmit.MemPort
	rec   *recorder
	batch *frame.Batch
	out   *frame.Batch
}

func newSlowRig(t *testing.T, slow bool) *slowRig {
	pool, err := frame.NewPool(&frame.PoolConfig{Buffers: 1024})
	if err != nil {
		t.Fatal(err)
	}
	g := &slowRig{pool: pool, rec: &recorder{}, batch: frame.NewBatch(64), out: frame.NewBatch(64)}
	var mem []xmit.Port
	for i := 0; i < 2; i++ {
		a, b := xmit.Pipe(pool, nil)
		mem = append(mem, a)
		g.far = append(g.far, b)
	}
	cfg := &Config{Mode: XOR}
	if slow {
		cfg.SlowProtocols = g.rec
	}
	if g.agg, err = New(mem, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.agg.Close() })
	return g
}

// send puts frames of the given EtherTypes (tagged: with an out-of-band VLAN tag) into member m's
// link; frame k carries k in byte 20.
func (g *slowRig) send(t *testing.T, m int, types []uint16, tagged map[int]bool) {
	b := g.out
	g.pool.Alloc(b, len(types))
	for k, et := range types {
		b.Frames[k].Resize(124)
		d := b.Bytes(k)
		copy(d, []byte{1, 0x80, 0xc2, 0, 0, 2, 2, 0, 0, 0, 0, byte(m)})
		binary.BigEndian.PutUint16(d[12:], et)
		d[20] = byte(k)
		if tagged[k] {
			b.Frames[k].Flags |= frame.FlagVLAN
			b.Frames[k].TCI = 5
		}
	}
	if n, err := g.far[m].Send(b); n != len(types) || err != nil {
		t.Fatalf("send: %d %v", n, err)
	}
}

func (g *slowRig) recv(t *testing.T) (member int, seq []byte) {
	t.Helper()
	m, n, err := g.agg.RecvFrom(g.batch)
	if err != nil {
		t.Fatal(err)
	}
	for k := 0; k < n; k++ {
		seq = append(seq, g.batch.Bytes(k)[20])
	}
	g.batch.Free()
	return m, seq
}

func TestRecvSlowProtocols(t *testing.T) {
	g := newSlowRig(t, true)
	const ip, slow = 0x0800, SlowEtherType
	// Frame 5 leaves the far end with its tag in the bytes (MemPort.Send): 802.1Q, not a slow
	// frame, delivered (its byte 20 is then what was byte 16).
	g.send(t, 0, []uint16{ip, slow, ip, ip, slow, slow, 0x88cc, slow}, map[int]bool{5: true})
	m, seq := g.recv(t)
	if m != 0 || string(seq) != string([]byte{0, 2, 3, 0, 6}) {
		t.Fatalf("member %d frames %v", m, seq)
	}
	if len(g.rec.frames) != 3 || g.rec.frames[0][20] != 1 || g.rec.frames[1][20] != 4 || g.rec.frames[2][20] != 7 {
		t.Fatalf("handler got %d frames", len(g.rec.frames))
	}
	for _, mm := range g.rec.member {
		if mm != 0 {
			t.Fatalf("handler members %v", g.rec.member)
		}
	}
	if g.agg.SlowFrames() != 3 || g.agg.RxInactive() != 0 {
		t.Fatalf("slow %d, dropped %d", g.agg.SlowFrames(), g.agg.RxInactive())
	}
	s := g.agg.Stats()
	if s.RxPackets != 5 || s.RxBytes != 4*124+128 || s.RxDropped != 0 {
		t.Fatalf("stats %+v", s)
	}
	// A batch of slow frames only: nothing returned from member 1, the reader moves on.
	g.send(t, 1, []uint16{slow, slow}, nil)
	g.send(t, 0, []uint16{ip}, nil)
	if m, seq := g.recv(t); m != 0 || len(seq) != 1 {
		t.Fatalf("member %d frames %v", m, seq)
	}
	if len(g.rec.member) != 5 || g.rec.member[3] != 1 {
		t.Fatalf("members %v", g.rec.member)
	}
	if g.pool.InUse() != 0 {
		t.Fatalf("%d buffers not released", g.pool.InUse())
	}
}

// TestRecvInactive: with SlowProtocols, a member that is not usable delivers its slow frames to
// the handler and nothing else.
func TestRecvInactive(t *testing.T) {
	g := newSlowRig(t, true)
	g.agg.SetMemberUp(1, false)
	g.send(t, 1, []uint16{0x0800, SlowEtherType, 0x86dd}, nil)
	if m, seq := g.recv(t); len(seq) != 0 || m != -1 {
		t.Fatalf("member %d delivered %v", m, seq)
	}
	if len(g.rec.frames) != 1 || g.agg.RxInactive() != 2 || g.agg.Stats().RxDropped != 2 || g.agg.Stats().RxPackets != 0 {
		t.Fatalf("handler %d, inactive %d, stats %+v", len(g.rec.frames), g.agg.RxInactive(), g.agg.Stats())
	}
	g.agg.SetMemberUp(1, true)
	g.send(t, 1, []uint16{0x0800}, nil)
	if m, seq := g.recv(t); m != 1 || len(seq) != 1 {
		t.Fatalf("member %d delivered %v", m, seq)
	}
	if g.pool.InUse() != 0 {
		t.Fatalf("%d buffers not released", g.pool.InUse())
	}
}

// TestRecvWithoutSlowProtocols: without a handler, slow frames are delivered like any other, and
// members that are not usable still deliver.
func TestRecvWithoutSlowProtocols(t *testing.T) {
	g := newSlowRig(t, false)
	g.agg.SetMemberUp(0, false)
	g.send(t, 0, []uint16{SlowEtherType, 0x0800}, nil)
	if _, seq := g.recv(t); len(seq) != 2 {
		t.Fatalf("frames %v", seq)
	}
}

type countSlow struct{ n int }

func (c *countSlow) HandleSlow(int, []byte) { c.n++ }

func TestRecvSlowAllocs(t *testing.T) {
	g := newSlowRig(t, true)
	g.agg.slow = &countSlow{} // the recorder copies
	for _, types := range [][]uint16{{0x0800}, {0x0800, SlowEtherType}} {
		if n := testing.AllocsPerRun(200, func() {
			g.send(t, 0, types, nil)
			if _, n, _ := g.agg.RecvFrom(g.batch); n != 1 {
				t.Fatalf("%d frames", n)
			}
			g.batch.Free()
		}); n != 0 {
			// The send side (xmit.Pipe) allocates nothing either.
			t.Fatalf("%v: %v allocations per batch", types, n)
		}
	}
}

// oobPort delivers one batch of frames with out-of-band VLAN tags (as AF_PACKET does), then
// nothing.
type oobPort struct {
	pool *frame.Pool
	n    int
}

func (p *oobPort) Name() string                     { return "oob" }
func (p *oobPort) Send(b *frame.Batch) (int, error) { b.Free(); return 0, nil }
func (p *oobPort) Stats() xmit.Stats                { return xmit.Stats{RxPackets: uint64(p.n)} }
func (p *oobPort) Close() error                     { return nil }
func (p *oobPort) Recv(b *frame.Batch) (int, error) {
	if p.n > 0 {
		return 0, nil
	}
	p.pool.Alloc(b, 3)
	for k := range b.Frames {
		b.Frames[k].Resize(124)
		d := b.Bytes(k)
		binary.BigEndian.PutUint16(d[12:], SlowEtherType)
		b.Frames[k].Flags, b.Frames[k].TCI = frame.FlagVLAN, 7
	}
	binary.BigEndian.PutUint16(b.Bytes(2)[12:], 0x0800)
	b.Frames[0].Flags = 0
	p.n = len(b.Frames)
	return p.n, nil
}

// TestRecvTaggedSlow: a slow-protocols frame with an out-of-band VLAN tag is dropped, not handed
// over (slow protocols are untagged); an out-of-band tagged IPv4 frame is delivered.
func TestRecvTaggedSlow(t *testing.T) {
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 16})
	rec := &recorder{}
	agg, err := New([]xmit.Port{&oobPort{pool: pool}}, &Config{SlowProtocols: rec})
	if err != nil {
		t.Fatal(err)
	}
	b := frame.NewBatch(8)
	n, _ := agg.Recv(b)
	if n != 1 || b.Frames[0].Flags != frame.FlagVLAN || len(rec.frames) != 1 || agg.RxInactive() != 1 || agg.SlowFrames() != 1 {
		t.Fatalf("n %d, handler %d, dropped %d", n, len(rec.frames), agg.RxInactive())
	}
	b.Free()
	if s := agg.Stats(); s.RxPackets != 1 || s.RxDropped != 1 {
		t.Fatalf("stats %+v", s)
	}
	if pool.InUse() != 0 {
		t.Fatalf("%d buffers not released", pool.InUse())
	}
}

// TestRecvSlowFiltered: with SlowFiltered (the members' sockets filter slow-protocols frames
// out) nothing is scanned: a usable member delivers every frame, a slow one included (as data),
// and a member that is not usable delivers nothing, its frames counted in RxInactive; no
// allocation either way.
func TestRecvSlowFiltered(t *testing.T) {
	g := newSlowRig(t, true)
	g.agg.noScan = true
	g.send(t, 0, []uint16{0x0800, SlowEtherType, 0x86dd}, nil)
	if m, seq := g.recv(t); m != 0 || len(seq) != 3 {
		t.Fatalf("member %d delivered %v", m, seq)
	}
	g.agg.SetMemberUp(1, false)
	g.send(t, 1, []uint16{0x0800, 0x0800}, nil)
	if m, seq := g.recv(t); len(seq) != 0 || m != -1 {
		t.Fatalf("member %d delivered %v", m, seq)
	}
	if len(g.rec.frames) != 0 || g.agg.RxInactive() != 2 || g.agg.SlowFrames() != 0 {
		t.Fatalf("handler %d, inactive %d, slow %d", len(g.rec.frames), g.agg.RxInactive(), g.agg.SlowFrames())
	}
	if s := g.agg.Stats(); s.RxPackets != 3 || s.RxDropped != 2 {
		t.Fatalf("stats %+v", s)
	}
	for _, m := range []int{0, 1} {
		if n := testing.AllocsPerRun(200, func() {
			g.send(t, m, []uint16{0x0800}, nil)
			_, n, _ := g.agg.RecvFrom(g.batch)
			if n != 1-m {
				t.Fatalf("member %d: %d frames", m, n)
			}
			g.batch.Free()
		}); n != 0 {
			t.Fatalf("member %d: %v allocations per batch", m, n)
		}
	}
	if g.pool.InUse() != 0 {
		t.Fatalf("%d buffers not released", g.pool.InUse())
	}
}
