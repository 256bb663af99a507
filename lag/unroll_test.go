package lag

import (
	"bytes"
	"math/bits"
	"math/rand/v2"
	"os"
	"testing"
	"unsafe"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/internal/unroll"
)

// TestUnrolled: xor_unrolled.go is what internal/unroll makes of xor.go (go generate ./lag rewrites
// it).
func TestUnrolled(t *testing.T) {
	want, err := unroll.Lag.Generate(".")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(unroll.Lag.Out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("xor_unrolled.go is stale: run go generate ./lag")
	}
}

// TestLoopsEqualUnrolled: every batch loop of xor.go (the source of xor_unrolled.go, which only the
// generator reads) chooses the same members and leaves the same frames as its unrolled form, on
// batches of every length up to 64 (the most a loop takes: the rare set has 64 bits; every
// remainder the generated functions run by the body once included), three batches of each, some
// frames at the arena's end and with the adversarial templates' shapes.
func TestLoopsEqualUnrolled(t *testing.T) {
	st, stT := testSnapshot(53, false), testSnapshot(MaxMembers, true)
	loops := []struct {
		name string
		src  func(mem []byte, fr []frame.Frame, out []uint8) uint64
		x4   xorLoop
		st   *snapshot
	}{
		{"xorL2", func(m []byte, f []frame.Frame, o []uint8) uint64 { return xorL2(st.mp, st.ds, &st.members, m, f, o) }, xorL2x4, st},
		{"xorL2Table", func(m []byte, f []frame.Frame, o []uint8) uint64 { return xorL2Table(stT.table, m, f, o) }, xorL2Tablex4, stT},
		{"xorSrcMAC", func(m []byte, f []frame.Frame, o []uint8) uint64 {
			return xorSrcMAC(st.mp>>8, st.ds>>8, &st.members, m, f, o)
		}, xorSrcMACx4, st},
		{"xorSrcMACTable", func(m []byte, f []frame.Frame, o []uint8) uint64 { return xorSrcMACTable(stT.table, m, f, o) }, xorSrcMACTablex4, stT},
		{"xorL34", func(m []byte, f []frame.Frame, o []uint8) uint64 { return xorL34(st.mp>>1, st.ds, &st.half, m, f, o) }, xorL34x4, st},
		{"xorL34Table", func(m []byte, f []frame.Frame, o []uint8) uint64 { return xorL34Table(stT.table, m, f, o) }, xorL34Tablex4, stT},
		{"xorL23", func(m []byte, f []frame.Frame, o []uint8) uint64 { return xorL23(st.mp, st.ds, &st.members, m, f, o) }, xorL23x4, st},
		{"xorL23Table", func(m []byte, f []frame.Frame, o []uint8) uint64 { return xorL23Table(stT.table, m, f, o) }, xorL23Tablex4, stT},
		{"xorE23", func(m []byte, f []frame.Frame, o []uint8) uint64 { return xorE23(st.mp, st.ds, &st.members, m, f, o) }, xorE23x4, st},
		{"xorE23Table", func(m []byte, f []frame.Frame, o []uint8) uint64 { return xorE23Table(stT.table, m, f, o) }, xorE23Tablex4, stT},
	}
	srcs, err := unroll.Lag.Sources(".")
	if err != nil {
		t.Fatal(err)
	}
	_, names, err := unroll.Lag.Loops(srcs...)
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, l := range loops {
		have[l.name] = true
	}
	for _, n := range names {
		if !have[n] {
			t.Errorf("loop %s not tested here", n)
		}
	}
	if len(loops) != len(names) {
		t.Fatalf("%d loops here, %d generated", len(loops), len(names))
	}
	r := rand.New(rand.NewPCG(41, 42))
	tpl := adversarialTemplates()
	const slot = 256
	chosen, left := make([]int, len(loops)), make([]int, len(loops))
	for k := range 3 * 65 {
		n := k % 65
		b := &frame.Batch{Mem: make([]byte, n*slot+64), Frames: make([]frame.Frame, n)}
		for i := range b.Frames {
			sf := genFrame(r)
			if r.IntN(2) == 0 {
				sf = tpl[r.IntN(len(tpl))]
				sf.b = sf.b[:r.IntN(len(sf.b)+1)]
			}
			sf.b = sf.b[:min(len(sf.b), slot-64)]
			off := i*slot + 64
			if r.IntN(8) == 0 {
				off = len(b.Mem) - r.IntN(min(len(sf.b), 70)+1) // the window runs past the arena
				sf.b = sf.b[:min(len(sf.b), len(b.Mem)-off)]
			}
			copy(b.Mem[off:], sf.b)
			b.Frames[i] = frame.Frame{Off: uint32(off), Len: uint16(len(sf.b)), TCI: sf.tci}
			if sf.oob {
				b.Frames[i].Flags |= frame.FlagVLAN
			}
		}
		for j, l := range loops {
			want, got := make([]uint8, n+1), make([]uint8, n+1)
			for i := range want {
				want[i], got[i] = 0xee, 0xee
			}
			wr := l.src(b.Mem, b.Frames, want[:n])
			gr := l.x4(l.st, b.Mem, b.Frames, unsafe.SliceData(got))
			if wr != gr || !bytes.Equal(want, got) {
				t.Fatalf("%s, %d frames: rare %#x out % x, unrolled rare %#x out % x", l.name, n, wr, want, gr, got)
			}
			left[j] += bits.OnesCount64(wr)
			chosen[j] += n - bits.OnesCount64(wr)
		}
	}
	for j, l := range loops {
		if chosen[j] == 0 || left[j] == 0 {
			t.Errorf("%s: %d frames chosen in the loop, %d left to the general path: want both", l.name, chosen[j], left[j])
		}
	}
}

// TestWideFastPathsTaken: the frames layer2+3's and encap2+3's loops take without the port
// policies' checks stay on their straight paths (the loops leave none of them to the general path)
// and get the kernel's member: for layer2+3, IPv4 TCP/UDP whatever the fragment state, IHL or
// version (bond_flow_ip reads only the addresses); for encap2+3, 0x45 TCP/UDP fragments (the flow
// dissector stops at a fragment with the addresses kept). Putting back a check these loops were
// freed of fails here, where the differential tests only see the general path agree.
func TestWideFastPathsTaken(t *testing.T) {
	src, dst := []byte{192, 0, 2, 1}, []byte{198, 51, 100, 7}
	l4 := cat(be16(40000), be16(443), make([]byte, 20))
	hdr := func(first byte, proto uint8, frag uint16) []byte {
		h := ipv4(src, dst, proto, frag)
		h[0] = first
		return h
	}
	type shape struct {
		name string
		ip   []byte
	}
	frag := []shape{
		{"MF", hdr(0x45, protoTCP, 0x2000)},
		{"offset", hdr(0x45, protoUDP, 0x0003)},
		{"MF and offset", hdr(0x45, protoTCP, 0x2001)},
	}
	odd := []shape{
		{"IHL 6", hdr(0x46, protoTCP, 0)},
		{"IHL 4", hdr(0x44, protoUDP, 0)},
		{"version 6", hdr(0x65, protoTCP, 0)},
		{"IHL 15, fragment", hdr(0x4f, protoUDP, 0x2000)},
	}
	st := testSnapshot(3, false)
	for _, c := range []struct {
		pol    Policy
		loop   xorLoop
		shapes []shape
	}{
		{Layer23, xorL23x4, append(append([]shape{}, frag...), odd...)},
		{Encap23, xorE23x4, frag},
	} {
		for _, s := range c.shapes {
			for _, pre := range [][]byte{nil, cat(be16(0x8100), be16(100))} {
				// 5 frames: one group of four and the remainder.
				const n, slot = 5, 128
				b := &frame.Batch{Mem: make([]byte, n*slot), Frames: make([]frame.Frame, n)}
				var fb [n][]byte
				for i := range n {
					mac := []byte{2, 0, 0, 0, 0, byte(i), 2, 0, 0, 0, 1, byte(7 * i)}
					fb[i] = cat(mac, pre, be16(0x0800), s.ip, l4)
					copy(b.Mem[i*slot:], fb[i])
					b.Frames[i] = frame.Frame{Off: uint32(i * slot), Len: uint16(len(fb[i]))}
				}
				out := make([]uint8, n)
				if rare := c.loop(st, b.Mem, b.Frames, unsafe.SliceData(out)); rare != 0 {
					t.Errorf("%v, %s, %d tag bytes: rare %#x, want every frame on the straight path", c.pol, s.name, len(pre), rare)
					continue
				}
				for i := range n {
					if want := uint8(oracleHash(c.pol, fb[i], false, 0) % 3); out[i] != want {
						t.Errorf("%v, %s, %d tag bytes, frame %d: member %d, the kernel's %d", c.pol, s.name, len(pre), i, out[i], want)
					}
				}
			}
		}
	}
}
