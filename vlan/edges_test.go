package vlan

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/wirespeed/wirespeed/frame"
)

// chooser is what edgeBatches draws from: a seeded *rand.Rand in tests, the fuzzer's bytes in
// FuzzEdges and FuzzClassifyInPlaceBatch.
type chooser interface {
	IntN(n int) int
	Uint64() uint64
}

// fuzzMaxIn is how many bytes of a fuzz input the edge-batch fuzz targets interpret; the rest is cut
// off. The fuzzer's minimisation of an interesting input tries removing every span of it
// (quadratic in its length) at one to three milliseconds a run here, so an input of a few hundred
// bytes would hold the search for the whole minute minimisation may last. Once
// the input is used up, byteChooser goes on with a pseudo-random sequence seeded by the input, so
// a short input still builds full batches and every byte of it shapes them.
const fuzzMaxIn = 64

// byteChooser draws from a fuzz input (its first fuzzMaxIn bytes), then from a pseudo-random
// sequence seeded by those bytes.
type byteChooser struct {
	b    []byte
	rest *rand.Rand
}

func newByteChooser(in []byte) *byteChooser {
	in = in[:min(len(in), fuzzMaxIn)]
	h := uint64(len(in))
	for _, c := range in { // FNV-1a
		h = (h ^ uint64(c)) * 0x100000001b3
	}
	return &byteChooser{b: in, rest: rand.New(rand.NewPCG(h, 0x5eed))}
}

func (c *byteChooser) IntN(n int) int {
	if len(c.b) < 2 {
		return c.rest.IntN(n)
	}
	v := int(binary.LittleEndian.Uint16(c.b))
	c.b = c.b[2:]
	return v % n
}

func (c *byteChooser) Uint64() uint64 {
	if len(c.b) < 8 {
		return c.rest.Uint64()
	}
	v := binary.LittleEndian.Uint64(c.b)
	c.b = c.b[8:]
	return v
}

// edgeArena is the arena size of edgeBatches: frames near 65535 bytes, with as much headroom.
const edgeArena = 2*0x10000 + 4096

// edgeArenas recycles edgeBatches' arenas (recycleEdge): a fuzz run builds dozens of batches, and
// with a fresh arena for each, garbage collection is most of a run's cost.
var edgeArenas = sync.Pool{New: func() any { return new([edgeArena]byte) }}

// edgeBase is the arena's background, the same in every batch; edgeBatches scrambles the windows
// that frames start or end in with its seed.
var edgeBase = sync.OnceValue(func() *[edgeArena]byte {
	m := new([edgeArena]byte)
	seed := uint64(0x0123456789abcdef)
	for i := 0; i+8 <= len(m); i += 8 {
		seed = seed*6364136223846793005 + 1442695040888963407
		binary.LittleEndian.PutUint64(m[i:], seed)
	}
	return m
})

// recycleEdge hands the arenas of batches built by edgeBatches back for reuse; the batches must not
// be used afterwards.
func recycleEdge(bs ...*frame.Batch) {
	for _, b := range bs {
		if b != nil && len(b.Mem) == edgeArena {
			edgeArenas.Put((*[edgeArena]byte)(b.Mem))
			b.Mem = nil
		}
	}
}

// edgeBatches builds three identical batches over private arenas whose frames sit at every
// boundary the fast paths test: lengths around 12, 14, 18, 22 and 64 bytes and near 65535,
// headroom 0-4 and near 65535, untagged, 802.1Q, QinQ, 0x9100 and out-of-band tags, frames at the
// very start of the arena and ending at its very end. Every descriptor is valid (headroom, bytes and
// tailroom inside the arena). Frames overlap in the arena; the batches are worked in the same
// order, so they stay comparable byte for byte.
func edgeBatches(c chooser) (*frame.Batch, *frame.Batch, *frame.Batch) {
	return edgeBatchesMix(c, false)
}

// denseEdgeBatches is edgeBatches with seven frames in eight plain (60-100 bytes, 128 bytes of
// headroom, in the middle of the arena, mostly standard tags): the fast paths' common case, with
// short QinQ frames among the edge frames.
func denseEdgeBatches(c chooser) (*frame.Batch, *frame.Batch, *frame.Batch) {
	return edgeBatchesMix(c, true)
}

func edgeBatchesMix(c chooser, dense bool) (*frame.Batch, *frame.Batch, *frame.Batch) {
	const arena = edgeArena
	lens := []uint16{0, 1, 11, 12, 13, 14, 15, 17, 18, 19, 21, 22, 23, 59, 60, 61, 63, 64, 65, 100, 0xffef, 0xfff0, 0xfff7, 0xfff8, 0xfffb, 0xfffc, 0xffff}
	heads := []uint16{0, 1, 3, 4, 5, 7, 8, 128, 0xfff7, 0xfff8, 0xfffa, 0xfffb, 0xfffc, 0xffff}
	tpids := []uint16{TPID8021Q, TPID8021AD, TPID9100, frame.TypeIPv4, 0x86dd}
	n := 1 + c.IntN(80)
	frs := make([]frame.Frame, n)
	memA := edgeArenas.Get().(*[edgeArena]byte)[:]
	copy(memA, edgeBase()[:])
	seed := c.Uint64()
	// The bytes frames start and end in (and the headroom in front of them) come from the seed:
	// the arena's start, the window at 0x10000 and its end.
	for _, w := range [][2]int{{0, 4096 + 256}, {0x10000 - 256, 0x10000 + 4096 + 256}, {arena - 4096, arena}} {
		for i := w[0]; i+8 <= w[1]; i += 8 {
			seed = seed*6364136223846793005 + 1442695040888963407
			binary.LittleEndian.PutUint64(memA[i:], seed)
		}
	}
	if dense { // mostly standard tags, so that short frames often carry a full QinQ header
		tpids = []uint16{TPID8021Q, TPID8021AD, TPID9100, TPID8021Q, TPID8021AD, TPID8021Q, frame.TypeIPv4}
	}
	for i := range frs {
		f := &frs[i]
		if dense && c.IntN(8) != 0 {
			f.Len, f.Head, f.Tail = uint16(60+c.IntN(41)), 128, uint16(c.IntN(80))
			f.Off = 0x10000 + uint32(c.IntN(4096-200))
			if c.IntN(8) == 0 { // as AF_PACKET reports a tagged frame
				f.Flags |= frame.FlagVLAN
				f.TPID, f.TCI = tpids[c.IntN(3)], uint16(c.Uint64())
			}
			d := memA[f.Off:]
			for j, k := 0, c.IntN(3); j < k; j++ {
				tp := tpids[c.IntN(len(tpids))]
				d[12+4*j], d[13+4*j] = byte(tp>>8), byte(tp)
			}
			continue
		}
		f.Len = lens[c.IntN(len(lens))]
		f.Head = heads[c.IntN(len(heads))]
		f.Tail = uint16(c.IntN(80))
		switch c.IntN(4) {
		case 0: // at the start of the arena: headroom is what lies in front
			f.Off = uint32(c.IntN(8))
		case 1: // ending at the end of the arena
			if f.Len > 100 {
				f.Len = uint16(c.IntN(100))
			}
			f.Tail = 0
			f.Off = arena - uint32(f.Len)
		default:
			f.Off = 0x10000 + uint32(c.IntN(4096-80)) // room for any headroom, length and tailroom
		}
		if uint32(f.Head) > f.Off {
			f.Head = uint16(f.Off)
		}
		if c.IntN(4) == 0 {
			f.Flags |= frame.FlagVLAN
			f.TPID, f.TCI = tpids[c.IntN(3)], uint16(c.Uint64())
			if c.IntN(3) == 0 {
				f.TPID = 0 // older kernels report no TPID: 0x8100
			}
		}
		// Tags at the front of the bytes (where they fit): none, one or two, of any of the TPIDs
		// (dense batches: two in half the edge frames, so that short QinQ frames are common).
		d := memA[f.Off:]
		k := c.IntN(3)
		if dense && c.IntN(2) == 0 {
			k = 2
		}
		for j := 0; j < k && len(d) >= 14+4*j; j++ {
			tp := tpids[c.IntN(len(tpids))]
			d[12+4*j], d[13+4*j] = byte(tp>>8), byte(tp)
		}
	}
	mk := func() *frame.Batch {
		m := edgeArenas.Get().(*[edgeArena]byte)[:]
		copy(m, memA)
		return &frame.Batch{Frames: append([]frame.Frame(nil), frs...), Mem: m}
	}
	a, b, c2 := mk(), mk(), mk()
	edgeArenas.Put((*[edgeArena]byte)(memA))
	return a, b, c2
}

// naiveParse is an independent reference for Parse: byte by byte, tags from a list.
func naiveParse(tpids []uint16, b []byte) (Header, error) {
	var h Header
	isTag := func(t uint16) bool {
		for _, x := range tpids {
			if t == x {
				return true
			}
		}
		return false
	}
	be := func(i int) uint16 { return uint16(b[i])<<8 | uint16(b[i+1]) }
	off := 12
	for n := 0; ; n++ {
		if len(b) < off+2 {
			return Header{}, ErrTruncated
		}
		t := be(off)
		if n == MaxTags || !isTag(t) {
			h.EtherType, h.N, h.Len = t, uint8(n), uint8(off+2)
			return h, nil
		}
		if len(b) < off+4 {
			return Header{}, ErrTruncated
		}
		tg := Tag{t, TCI(be(off + 2))}
		if n == 0 {
			h.Outer = tg
		} else {
			h.Inner = tg
		}
		off += 4
	}
}

// TestEdges: the per-frame functions and their general paths agree frame by frame, byte for byte
// and error for error on edgeBatches and denseEdgeBatches; Parse agrees with a naive reference, and
// SetTCI, Pop and Push with gopacket.
func TestEdges(t *testing.T) {
	for seed := uint64(0); seed < 250; seed++ {
		checkEdges(t, fmt.Sprintf("seed %d", seed), func() chooser { return rand.New(rand.NewPCG(seed, 7)) })
	}
}

// FuzzEdges: TestEdges on batches drawn from the fuzzer's bytes.
func FuzzEdges(f *testing.F) {
	for seed := uint64(0); seed < 4; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		b := make([]byte, 400)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		checkEdges(t, "fuzz", func() chooser { return newByteChooser(in) })
	})
}

// checkEdges builds edgeBatches, then denseEdgeBatches, from fresh choosers (each gives the same
// batches) and compares the ways of running each op (checkEdgesOf, checkFast).
func checkEdges(t *testing.T, what string, src func() chooser) {
	t.Helper()
	checkEdgesOf(t, what, src, edgeBatches)
	checkEdgesOf(t, what+" dense", src, denseEdgeBatches)
	checkFast(t, what, src)
}

func checkEdgesOf(t *testing.T, what string, src func() chooser, edgeBatches func(chooser) (*frame.Batch, *frame.Batch, *frame.Batch)) {
	t.Helper()
	p9100, _ := NewParser(TPID9100)
	same := func(op string, a, c *frame.Batch) {
		t.Helper()
		sameArena(t, what+" "+op, a, c)
	}
	// a goes through the per-frame functions, c through their general paths. Parse's general path
	// is taken by any parser with an extra TPID: general lists 0x8100 again, which NewParser would
	// drop, so that it recognises exactly the standard TPIDs.
	general := Parser{extra: [4]uint16{TPID8021Q}, n: 1}
	for _, p := range []*Parser{&std, &p9100} {
		a, third, c := edgeBatches(src())
		recycleEdge(third)
		for i := range a.Frames {
			var h, hc Header
			gp := p
			if p == &std {
				gp = &general
			}
			erra, errc := p.Parse(a.Bytes(i), &h), gp.Parse(c.Bytes(i), &hc)
			tps := []uint16{TPID8021Q, TPID8021AD}
			if p != &std {
				tps = append(tps, TPID9100)
			}
			if hn, errn := naiveParse(tps, a.Bytes(i)); hn != h || errn != erra {
				t.Fatalf("%s frame %d: Parse %+v %v, reference %+v %v", what, i, h, erra, hn, errn)
			}
			if h != hc || erra != errc {
				t.Fatalf("%s frame %d %+v: Parse %+v %v, general %+v %v", what, i, a.Frames[i], h, erra, hc, errc)
			}
		}

		for i := range a.Frames {
			f0, v0 := a.Frames[i], gpRead(a.Bytes(i))
			erra, errc := p.SetTCI(a, i, 0xabcd), p.setTCI(c, i, 0xabcd)
			if erra != errc {
				t.Fatalf("%s frame %d %+v: SetTCI %v, general %v", what, i, c.Frames[i], erra, errc)
			}
			if p == &std && f0.Flags&frame.FlagVLAN == 0 {
				// gopacket: a tag is rewritten exactly when it sees one, and then reads the new TCI.
				if (erra == nil) != v0.tagged || erra != nil && erra != ErrNotTagged {
					t.Fatalf("%s frame %d %+v: SetTCI %v, gopacket sees a tag: %v", what, i, f0, erra, v0.tagged)
				}
				if v := gpRead(a.Bytes(i)); erra == nil && (v.tci != 0xabcd || v.typ != v0.typ || v.next != v0.next) {
					t.Fatalf("%s frame %d: after SetTCI gopacket reads %+v (before %+v)", what, i, v, v0)
				}
			} else if p == &std && (erra != nil || a.Frames[i].TCI != 0xabcd) {
				t.Fatalf("%s frame %d: SetTCI on an out-of-band tag: %v, TCI %#x", what, i, erra, a.Frames[i].TCI)
			}
		}
		same("settci general", a, c)

		for i := range a.Frames {
			f0 := a.Frames[i]
			d0 := append([]byte(nil), a.Bytes(i)[:min(int(f0.Len), 64)]...)
			ta, erra := p.Pop(a, i)
			tc, errc := p.pop(c, i, true)
			if ta != tc || erra != errc {
				t.Fatalf("%s frame %d: Pop %v %v, general %v %v", what, i, ta, erra, tc, errc)
			}
			if p == &std {
				if tw, errw := gpPopWant(f0, d0); ta != tw || erra != errw {
					t.Fatalf("%s frame %d %+v: Pop %v %v, gopacket %v %v", what, i, f0, ta, erra, tw, errw)
				}
				if erra == nil && !gpPopCheck(f0, a.Frames[i], d0, a.Bytes(i)[:min(int(a.Frames[i].Len), 64)]) {
					t.Fatalf("%s frame %d %+v -> %+v: Pop left % x (before % x)", what, i, f0, a.Frames[i], a.Bytes(i)[:min(int(a.Frames[i].Len), 64)], d0)
				}
			}
		}
		same("pop general", a, c)
		recycleEdge(a, c)
	}
	a, third, c := edgeBatches(src())
	recycleEdge(third)
	for i := range a.Frames {
		f0 := a.Frames[i]
		d0 := append([]byte(nil), a.Bytes(i)[:min(int(f0.Len), 64)]...)
		erra, errc := Push(a, i, Tag{TPID8021AD, 0x1234}), pushGeneral(c, i, Tag{TPID8021AD, 0x1234})
		if erra != errc {
			t.Fatalf("%s frame %d: Push %v, general %v", what, i, erra, errc)
		}
		if erra == nil {
			// gopacket reads the pushed S-tag, then what was the outer EtherType (or the
			// out-of-band tag, put back first), behind the same MAC addresses.
			v, got := gpRead(a.Bytes(i)), a.Bytes(i)
			next := uint16(0)
			if len(d0) >= 14 {
				next = uint16(d0[12])<<8 | uint16(d0[13])
			}
			if f0.Flags&frame.FlagVLAN != 0 {
				next = f0.TPID
				if next == 0 {
					next = TPID8021Q
				}
			}
			tag := v.tagged && v.tci == 0x1234 && v.next == next
			if len(got) < 18 { // gopacket's Dot1Q needs 4 bytes: a 12- or 13-byte frame is short of them
				tag = got[14] == 0x12 && got[15] == 0x34
			}
			if v.typ != TPID8021AD || !tag || string(got[:12]) != string(d0[:12]) || a.Frames[i].Flags&frame.FlagVLAN != 0 {
				t.Fatalf("%s frame %d %+v: after Push gopacket reads %+v, want inner type %#x", what, i, f0, v, next)
			}
		} else if erra != ErrTruncated && erra != ErrNoHeadroom {
			t.Fatalf("%s frame %d: Push %v", what, i, erra)
		}
	}
	same("push general", a, c)
	recycleEdge(a, c)
}
