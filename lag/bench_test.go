package lag

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/internal/benchutil"
	"github.com/wirespeed/wirespeed/xmit"
)

// benchBatch is 64 frames of distinct TCP/UDP flows over IPv4 (a few IPv6, a few tagged), the mix
// a forwarder's TX batch carries.
func benchBatch(tb testing.TB, pool *frame.Pool) *frame.Batch {
	r := rand.New(rand.NewPCG(13, 14))
	frames := make([]synthFrame, 64)
	for i := range frames {
		var b []byte
		switch {
		case i%16 == 15:
			b = cat(macDst, macSrc, be16(0x86dd), ipv6(v6a, v6b, 6), ports(uint16(r.IntN(65536)), 443))
		case i%8 == 7:
			b = cat(macDst, macSrc, be16(0x8100), be16(100), be16(0x0800), ipv4(ipA, []byte{10, 1, byte(i), 7}, 17, 0), ports(uint16(r.IntN(65536)), 53))
		default:
			b = cat(macDst, []byte{2, 0, 0, 0, 1, byte(i)}, be16(0x0800), ipv4([]byte{10, 0, byte(i), 1}, ipB, 6, 0), ports(uint16(r.IntN(65536)), 443))
		}
		for len(b) < 64 {
			b = append(b, 0)
		}
		frames[i] = synthFrame{b: b}
	}
	return fillBatch(tb, pool, frames)
}

type benchCase struct {
	name string
	cfg  Config
}

func benchCases() []benchCase {
	cs := []benchCase{
		{"mode=rr", Config{Mode: RoundRobin}},
		{"mode=rr/pps=4", Config{Mode: RoundRobin, PacketsPerMember: 4}},
		{"mode=rr/random", Config{Mode: RoundRobin, PacketsPerMember: -1}},
		{"mode=active-backup", Config{Mode: ActiveBackup}},
	}
	for p := Layer2; p <= VLANSrcMAC; p++ {
		cs = append(cs, benchCase{"mode=xor/policy=" + p.String(), Config{Mode: XOR, Policy: p}})
	}
	cs = append(cs, benchCase{"mode=xor/policy=layer3+4/table", Config{Mode: XOR, Policy: Layer34, Table: true}})
	return cs
}

// BenchmarkSelect chooses members for a batch of 64 frames over 3 members (a count that is not a
// power of two, so the modulo is the general one).
func BenchmarkSelect(b *testing.B) {
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 128})
	batch := benchBatch(b, pool)
	out := make([]uint8, 64)
	// The peer: the least any hash policy must do, one load of two header bytes per frame (the
	// memory cost of touching 64 frames 2 KiB apart in a pool, as in an mmap ring).
	b.Run("peer=touch", func(b *testing.B) {
		b.ReportAllocs()
		m := benchutil.Start(b)
		for i := 0; i < b.N; i++ {
			mem := batch.Mem
			for j := range batch.Frames {
				f := &batch.Frames[j]
				out[j] = mem[f.Off+5] ^ mem[f.Off+11]
			}
		}
		m.Report(b, b.N*64)
	})
	for _, c := range benchCases() {
		b.Run(c.name, func(b *testing.B) {
			near, _ := memMembers(b, pool, 3)
			a, err := New(near, &c.cfg)
			if err != nil {
				b.Fatal(err)
			}
			s := a.NewSelector()
			b.ReportAllocs()
			b.ResetTimer()
			m := benchutil.Start(b)
			for i := 0; i < b.N; i++ {
				s.Select(batch, out)
			}
			m.Report(b, b.N*64)
		})
	}
}

// BenchmarkHash is the hash alone, per frame, for every policy (the peer of Select's XOR cases).
func BenchmarkHash(b *testing.B) {
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 128})
	batch := benchBatch(b, pool)
	for p := Layer2; p <= VLANSrcMAC; p++ {
		b.Run("policy="+p.String(), func(b *testing.B) {
			b.ReportAllocs()
			var sink uint32
			m := benchutil.Start(b)
			for i := 0; i < b.N; i++ {
				for j := range batch.Frames {
					sink += Hash(p, batch, j)
				}
			}
			m.Report(b, b.N*64)
			_ = fmt.Sprint(sink)
		})
	}
}

// TestSelectAllocs: Select allocates nothing, in every mode and policy.
func TestSelectAllocs(t *testing.T) {
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 128})
	batch := benchBatch(t, pool)
	out := make([]uint8, 64)
	for _, c := range benchCases() {
		near, _ := memMembers(t, pool, 3)
		a, _ := New(near, &c.cfg)
		s := a.NewSelector()
		if n := testing.AllocsPerRun(100, func() { s.Select(batch, out) }); n != 0 {
			t.Errorf("%s: %v allocs per Select", c.name, n)
		}
	}
}

// TestSendAllocs: the aggregate's Send allocates nothing once its per-member batches exist.
func TestSendAllocs(t *testing.T) {
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 4096})
	near, far := memMembers(t, pool, 3)
	for _, c := range []Config{{Mode: RoundRobin}, {Mode: XOR, Policy: Layer34}, {Mode: XOR, Policy: Encap34, Table: true}, {Mode: Broadcast, ClonePool: pool}} {
		a, _ := New(near, &c)
		b := frame.NewBatch(64)
		rb := frame.NewBatch(1024)
		run := func() {
			pool.Alloc(b, 64)
			for i := range b.Frames {
				udpFlow(b, i, i, 0)
			}
			a.Send(b)
			for _, f := range far {
				for {
					if n, _ := f.Recv(rb); n == 0 {
						break
					}
					rb.Free()
				}
			}
		}
		run()
		if n := testing.AllocsPerRun(50, run); n != 0 {
			t.Errorf("%v: %v allocs per Send", c.Mode, n)
		}
	}
}

// replayPort delivers the same frames on every Recv (their owner does nothing on Release), so
// BenchmarkRecv measures the aggregate's receive path alone.
type replayPort struct {
	src *frame.Batch
}

type nopOwner struct{}

func (nopOwner) Release([]frame.Frame) {}

func (p *replayPort) Name() string                     { return "replay" }
func (p *replayPort) Send(b *frame.Batch) (int, error) { b.Free(); return 0, nil }
func (p *replayPort) Stats() xmit.Stats                { return xmit.Stats{} }
func (p *replayPort) Close() error                     { return nil }
func (p *replayPort) Recv(b *frame.Batch) (int, error) {
	b.Mem, b.Owner = p.src.Mem, nopOwner{}
	b.Frames = append(b.Frames[:0], p.src.Frames...)
	return len(b.Frames), nil
}

// BenchmarkRecv is the aggregate's Recv of a batch of 64 frames (benchBatch's mix): without a
// slow-protocols handler, with one and no slow frame in the batch (the scan and its one test),
// and with one LACPDU among the 64 (the slow path: the frame handed over, the rest compacted);
// and with the handler and SlowFiltered (the members' sockets filter the slow frames out: no scan).
func BenchmarkRecv(b *testing.B) {
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 256})
	plain := benchBatch(b, pool)
	withPDU := benchBatch(b, pool)
	pdu := withPDU.Bytes(10)
	copy(pdu, []byte{1, 0x80, 0xc2, 0, 0, 2})
	pdu[12], pdu[13] = 0x88, 0x09
	for _, c := range []struct {
		name string
		src  *frame.Batch
		slow SlowHandler
	}{
		{"slow=none", plain, nil},
		{"slow=handler/pdus=0", plain, &countSlow{}},
		{"slow=handler/pdus=1", withPDU, &countSlow{}},
		{"slow=filtered", plain, &countSlow{}},
	} {
		b.Run(c.name, func(b *testing.B) {
			a, err := New([]xmit.Port{&replayPort{src: c.src}}, &Config{Mode: XOR, SlowProtocols: c.slow, SlowFiltered: c.name == "slow=filtered"})
			if err != nil {
				b.Fatal(err)
			}
			rb := frame.NewBatch(64)
			b.ReportAllocs()
			b.ResetTimer()
			m := benchutil.Start(b)
			for i := 0; i < b.N; i++ {
				a.RecvFrom(rb)
				rb.Frames = rb.Frames[:0]
			}
			m.Report(b, b.N*64)
		})
	}
}
