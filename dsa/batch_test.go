package dsa

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"runtime"
	"testing"
	"unsafe"

	"github.com/wirespeed/wirespeed/frame"
)

// The batch codecs have their own fast loops (batch.go), and so do the per-frame Decode and
// Encode (perframe.go; TestFastMatchesGeneral holds those to the general per-frame code).
// TestBatchMatchesPerFrame is the differential test between batch and per-frame: batches of
// 64 random and adversarial frames (valid tags from the oracle, the same with random bits flipped
// in the tag and header bytes, random bytes of every length around the thresholds, little
// headroom or tailroom, out-of-band VLAN tags) go through DecodeBatch/EncodeBatch on one copy and
// Decode/Encode frame by frame on another; outcome, Info, descriptor and frame bytes must agree.
// Two rounds in three run a batch of 1-64 frames (the loops run four frames per iteration after
// the first len % 4 one by one: batch_x4.go); the frames past it, and the Infos and Reasons past it,
// must stay untouched. TestBatchPackedArenas runs the same comparison on frames packed back to
// back with small rooms and guard bytes between them and past the arena's end: nothing may be
// written outside a frame's headroom..tailroom window.

// advFrame returns one adversarial frame for tagger name.
func advFrame(r *rand.Rand, name string) []byte {
	randBytes := func(n int) []byte {
		p := make([]byte, n)
		for i := range p {
			p[i] = byte(r.Uint32())
		}
		return p
	}
	// An inner frame: random length, sometimes a link-local DA or a VLAN EtherType.
	in := randBytes(14 + r.IntN(70))
	switch r.IntN(4) {
	case 0:
		copy(in, hx(llMacs))
		in[5] = byte(r.IntN(32))
	case 1:
		in[12], in[13] = 0x81, 0x00
	case 2:
		in[12], in[13] = 0x88, 0xa8
	}
	switch r.IntN(7) {
	case 5: // a valid tag on a frame 1-3 bytes shorter than the shortest the format accepts
		p := naiveRx(name, in[:14], 0, r.IntN(max(1, rxWidth[name])))
		return p[:len(p)-1-r.IntN(min(3, len(p)))]
	case 0, 1: // a valid tag
		port := r.IntN(max(1, rxWidth[name]))
		sw := 0
		if w := switchWidth[name]; w > 0 {
			sw = r.IntN(w)
		}
		return naiveRx(name, in, sw, port)
	case 2, 3: // a valid tag with bits flipped near the head and the tail
		p := naiveRx(name, in, 0, r.IntN(max(1, rxWidth[name])))
		for range 1 + r.IntN(3) {
			k := r.IntN(min(len(p), 24))
			if r.IntN(2) == 0 {
				k = len(p) - 1 - r.IntN(min(len(p), 10))
			}
			p[k] ^= 1 << r.IntN(8)
		}
		return p
	case 4: // random bytes around the length thresholds
		return randBytes(r.IntN(70))
	}
	return in
}

// rel is f with Off relative to the frame's buffer and no Buf, to compare frames of two batches.
func rel(f, orig frame.Frame) frame.Frame {
	f.Off -= orig.Off
	f.Buf = 0
	return f
}

func TestBatchMatchesPerFrame(t *testing.T) {
	r := rand.New(rand.NewPCG(8, uint64(len(Names()))))
	heads := []uint16{0, 1, 2, 3, 4, 5, 7, 8, 9, 64}
	tails := []uint16{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 300}
	pool, err := frame.NewPool(&frame.PoolConfig{Buffers: 128, BufSize: 512, Headroom: 64})
	if err != nil {
		t.Fatal(err)
	}
	one, many := frame.NewBatch(nframes), frame.NewBatch(nframes)
	if n, _ := pool.Alloc(one, nframes); n != nframes {
		t.Fatal("alloc")
	}
	if n, _ := pool.Alloc(many, nframes); n != nframes {
		t.Fatal("alloc")
	}
	origOne := append([]frame.Frame(nil), one.Frames...)
	origMany := append([]frame.Frame(nil), many.Frames...)
	data := make([][]byte, nframes)
	// load puts frame i's data and descriptor variant into both batches.
	load := func(i int, p []byte, head, tail uint16, vlan bool, tpid, tci uint16) {
		for _, x := range []struct {
			b    *frame.Batch
			orig []frame.Frame
		}{{one, origOne}, {many, origMany}} {
			x.b.Frames[i] = x.orig[i]
			setFrame(x.b, i, p)
			f := &x.b.Frames[i]
			f.Head = min(f.Head, head)
			f.Tail = min(f.Tail, tail)
			if vlan {
				f.Flags |= frame.FlagVLAN
				f.TPID, f.TCI = tpid, tci
			}
		}
	}
	rounds := 60
	if testing.Short() {
		rounds = 10
	}
	for _, name := range Names() {
		tg := mustTagger(t, name)
		spec := tg.Spec()
		ins, rs := make([]Info, nframes), make([]Reason, nframes)
		for round := range rounds {
			type variant struct {
				head, tail uint16
				vlan       bool
				tpid, tci  uint16
			}
			vs := make([]variant, nframes)
			for i := range nframes {
				data[i] = advFrame(r, name)
				v := variant{head: 64, tail: 300}
				if r.IntN(3) == 0 {
					v.head, v.tail = heads[r.IntN(len(heads))], tails[r.IntN(len(tails))]
				}
				if r.IntN(4) == 0 {
					v.vlan, v.tpid, v.tci = true, []uint16{0x8100, 0x88a8, 0x9100}[r.IntN(3)], uint16(r.Uint32())
				}
				vs[i] = v
				load(i, data[i], v.head, v.tail, v.vlan, v.tpid, v.tci)
			}
			m := nframes
			if round%3 != 0 {
				m = 1 + r.IntN(nframes)
			}
			sub := &frame.Batch{Frames: many.Frames[:m], Mem: many.Mem}
			// untouched checks the frames, Infos and Reasons past the first m.
			sentinel := Info{Port: 0xbeef, TagLen: 0x77, Timestamp: 0x12345678}
			for i := m; i < nframes; i++ {
				ins[i], rs[i] = sentinel, 0x77
			}
			untouched := func(what string) {
				t.Helper()
				for i := m; i < nframes; i++ {
					if ins[i] != sentinel || rs[i] != 0x77 || rel(one.Frames[i], origOne[i]) != rel(many.Frames[i], origMany[i]) ||
						!bytes.Equal(one.Bytes(i), many.Bytes(i)) {
						t.Fatalf("%s round %d: %s of %d frames touched frame %d", name, round, what, m, i)
					}
				}
			}
			// Decode.
			n := tg.DecodeBatch(sub, ins[:m], rs[:m])
			untouched("DecodeBatch")
			good := 0
			for i := range m {
				var in Info
				err := tg.Decode(one, i, &in)
				if err == nil {
					good++
				}
				if rs[i].Err() != err || (err == nil && ins[i] != in) || rel(one.Frames[i], origOne[i]) != rel(many.Frames[i], origMany[i]) ||
					!bytes.Equal(one.Bytes(i), many.Bytes(i)) {
					t.Fatalf("%s round %d frame %d (% x, %+v): DecodeBatch %v %+v %+v, Decode %v %+v %+v",
						name, round, i, data[i], vs[i], rs[i], ins[i], many.Frames[i], err, in, one.Frames[i])
				}
			}
			if n != good {
				t.Fatalf("%s round %d: DecodeBatch says %d decoded, Decode %d", name, round, n, good)
			}
			// Encode the same frames toward a random Dest (a valid one most of the time).
			for i := range nframes {
				load(i, data[i], vs[i].head, vs[i].tail, vs[i].vlan, vs[i].tpid, vs[i].tci)
			}
			d := Dest{Ports: Port(r.IntN(max(1, spec.Ports))), Prio: uint8(r.IntN(8))}
			if r.IntN(4) == 0 {
				d = Dest{Ports: PortMask(r.Uint32() & 0x1ff), Switch: uint8(r.IntN(40)), Prio: uint8(r.IntN(256)),
					Bridge: uint8(r.IntN(9)), Flags: DestFlags(r.IntN(int(DestPad) << 1))}
			} else if r.IntN(3) == 0 {
				d.Flags = DestFlags(r.IntN(int(DestPad) << 1))
				d.Switch = uint8(r.IntN(40))
			}
			n = tg.EncodeBatch(sub, d, rs[:m])
			untouched("EncodeBatch")
			good = 0
			for i := range m {
				err := tg.Encode(one, i, d)
				if err == nil {
					good++
				}
				if rs[i].Err() != err || rel(one.Frames[i], origOne[i]) != rel(many.Frames[i], origMany[i]) || !bytes.Equal(one.Bytes(i), many.Bytes(i)) {
					t.Fatalf("%s round %d frame %d (% x, %+v) to %+v: EncodeBatch %v %+v\n% x\nEncode %v %+v\n% x",
						name, round, i, data[i], vs[i], d, rs[i], many.Frames[i], many.Bytes(i), err, one.Frames[i], one.Bytes(i))
				}
			}
			if n != good {
				t.Fatalf("%s round %d: EncodeBatch says %d encoded, Encode %d", name, round, n, good)
			}
		}
	}
}

// packedArena lays n frames out back to back in one arena, each as [guard][headroom][data]
// [tailroom]: guards of 0-8 bytes (0 between two frames now and then, and before the first), a
// headroom of 0-12 and a tailroom of 0-9 bytes holding random bytes, the last frame's tailroom
// ending exactly at len(mem), and 16 guard bytes past len(mem) in its capacity. Every guard byte
// is guardByte. The frames are advFrame's, or random bytes of 56-67 (around the 60 and 64 of
// the padding formats), a quarter of them with an out-of-band VLAN tag.
func packedArena(r *rand.Rand, name string, n int) *frame.Batch {
	type lay struct {
		data       []byte
		guard      int
		head, tail int
	}
	ls := make([]lay, n)
	total := 0
	for i := range ls {
		d := advFrame(r, name)
		if r.IntN(3) == 0 {
			d = make([]byte, 56+r.IntN(12))
			for k := range d {
				d[k] = byte(r.Uint32())
			}
		}
		g := 1 + r.IntN(8)
		if r.IntN(5) == 0 {
			g = 0
		}
		ls[i] = lay{d, g, r.IntN(13), r.IntN(10)}
		total += g + ls[i].head + len(d) + ls[i].tail
	}
	mem := make([]byte, total+16)
	for i := range mem {
		mem[i] = guardByte
	}
	b := &frame.Batch{Mem: mem[:total]}
	o := 0
	for _, l := range ls {
		o += l.guard
		for k := o; k < o+l.head+len(l.data)+l.tail; k++ {
			mem[k] = byte(r.Uint32())
		}
		f := frame.Frame{Off: uint32(o + l.head), Len: uint16(len(l.data)), Head: uint16(l.head), Tail: uint16(l.tail)}
		copy(mem[f.Off:], l.data)
		if r.IntN(4) == 0 {
			f.Flags |= frame.FlagVLAN
			f.TPID, f.TCI = []uint16{0x8100, 0x88a8}[r.IntN(2)], uint16(r.Uint32())
		}
		b.Frames = append(b.Frames, f)
		o += l.head + len(l.data) + l.tail
	}
	return b
}

const guardByte = 0xa5

// cloneArena is a deep copy of b, the capacity of its arena included.
func cloneArena(b *frame.Batch) *frame.Batch {
	m := make([]byte, cap(b.Mem)) // not append: that may round the capacity up
	copy(m, b.Mem[:cap(b.Mem)])
	return &frame.Batch{Mem: m[:len(b.Mem)], Frames: append([]frame.Frame(nil), b.Frames...)}
}

// guarded reports the first byte of b's arena (capacity included) outside every frame's
// headroom..tailroom window in orig that is not guardByte, or -1.
func guarded(b *frame.Batch, orig []frame.Frame) int {
	mem := b.Mem[:cap(b.Mem)]
	in := make([]bool, len(mem))
	for _, f := range orig {
		for k := int(f.Off) - int(f.Head); k < int(f.Off)+int(f.Len)+int(f.Tail); k++ {
			in[k] = true
		}
	}
	for k, c := range mem {
		if !in[k] && c != guardByte {
			return k
		}
	}
	return -1
}

// TestBatchPackedArenas is TestBatchMatchesPerFrame on packed arenas (packedArena): batches of
// 1-13 frames (the x4 loops and every remainder) whose rooms are small and whose last frame ends
// where the arena does. Besides the outcome, Info, descriptor and bytes of each frame, the batch
// and the per-frame codec must write nothing outside the frames' headroom..tailroom windows (the
// guards, and the capacity past len(mem)), and leave the two arenas equal byte for byte.
func TestBatchPackedArenas(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 64))
	rounds := 300
	if testing.Short() {
		rounds = 60
	}
	for _, name := range Names() {
		tg := mustTagger(t, name)
		spec := tg.Spec()
		for round := range rounds {
			n := 1 + r.IntN(13)
			for _, enc := range []bool{false, true} {
				many := packedArena(r, name, n)
				one, orig := cloneArena(many), append([]frame.Frame(nil), many.Frames...)
				ins, rs := make([]Info, n), make([]Reason, n)
				d := Dest{Ports: Port(r.IntN(max(1, spec.Ports))), Prio: uint8(r.IntN(8))}
				if r.IntN(4) == 0 {
					d.Flags, d.Switch = DestFlags(r.IntN(int(DestPad)<<1)), uint8(r.IntN(40))
				}
				what, k, good := "DecodeBatch", 0, 0
				if enc {
					what, k = "EncodeBatch", tg.EncodeBatch(many, d, rs)
				} else {
					k = tg.DecodeBatch(many, ins, rs)
				}
				for i := range n {
					var in Info
					var err error
					if enc {
						err = tg.Encode(one, i, d)
					} else {
						err = tg.Decode(one, i, &in)
					}
					if err == nil {
						good++
					}
					if rs[i].Err() != err || (!enc && err == nil && ins[i] != in) || one.Frames[i] != many.Frames[i] || !bytes.Equal(one.Bytes(i), many.Bytes(i)) {
						t.Fatalf("%s round %d %s frame %d of %d (%+v, Dest %+v): batch %v %+v % x, per-frame %v %+v % x",
							name, round, what, i, n, orig[i], d, rs[i], many.Frames[i], many.Bytes(i), err, one.Frames[i], one.Bytes(i))
					}
				}
				if k != good {
					t.Fatalf("%s round %d: %s says %d, per-frame %d", name, round, what, k, good)
				}
				if g := guarded(many, orig); g >= 0 {
					t.Fatalf("%s round %d: %s of %d frames wrote guard byte %d of %d (frames %+v)", name, round, what, n, g, len(many.Mem), orig)
				}
				if g := guarded(one, orig); g >= 0 {
					t.Fatalf("%s round %d: per-frame %s wrote guard byte %d of %d (frames %+v)", name, round, what[:6], g, len(one.Mem), orig)
				}
				if !bytes.Equal(one.Mem[:cap(one.Mem)], many.Mem[:cap(many.Mem)]) {
					t.Fatalf("%s round %d: after %s of %d frames the arenas differ", name, round, what, n)
				}
			}
		}
	}
}

// TestBatchShortResults: fewer Infos or Reasons than frames is a programming error the batch
// codecs report with a panic, even when the short slices have the capacity (rather than write the
// results past the slices' lengths, unseen by the caller).
func TestBatchShortResults(t *testing.T) {
	tg, err := ByName("edsa")
	if err != nil {
		t.Fatal(err)
	}
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 8})
	b := frame.NewBatch(4)
	pool.Alloc(b, 4)
	defer b.Free()
	ins, rs := make([]Info, 8), make([]Reason, 8)
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"DecodeBatch, ins", func() { tg.DecodeBatch(b, ins[:1], rs) }},
		{"DecodeBatch, rs", func() { tg.DecodeBatch(b, ins, rs[:1]) }},
		{"EncodeBatch, rs", func() { tg.EncodeBatch(b, To(1), rs[:0]) }},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic with a short slice", c.name)
				}
			}()
			c.f()
		}()
	}
}

// TestBatchLenHeadLimits: DecodeBatch against Decode on descriptors at the limits the loops test
// with one compare (lenHead4 in batch.go: Len up to minFrame+4+0x7fff and Head up to 0x7fff-4
// take the loop, larger ones the slow path) and at the 16-bit limits: Len and Head each at and
// around 0x8000 and 0xffff, five frames per batch (four through the unrolled loop, one alone).
// Outcome, Info, descriptor and the whole arena must agree.
func TestBatchLenHeadLimits(t *testing.T) {
	heads := []uint16{64, 0x7ffa, 0x7ffb, 0x7ffc, 0x7ffd, 0x7fff, 0x8000, 0xfffb, 0xfffc, 0xffff}
	lens := []int{64, 0x800f, 0x8010, 0x8011, 0x8012, 0x8013, 0x8016, 0xfffb, 0xffff}
	type desc struct {
		head uint16
		n    int
	}
	var ds []desc
	for _, h := range heads {
		for _, n := range lens {
			ds = append(ds, desc{h, n})
		}
	}
	const stride, nb = 0x20000, 5
	r := rand.New(rand.NewPCG(3, 4))
	for _, name := range Names() {
		tg := mustTagger(t, name)
		for g := 0; g < len(ds); g += nb {
			a := &frame.Batch{Frames: make([]frame.Frame, nb), Mem: make([]byte, nb*stride)}
			for i := range nb {
				d := ds[(g+i)%len(ds)]
				in := make([]byte, 14+r.IntN(40))
				for k := range in {
					in[k] = byte(r.Uint32())
				}
				port := r.IntN(max(1, rxWidth[name]))
				over := len(naiveRx(name, in, 0, port)) - len(in)
				if d.n-over > len(in) {
					in = append(in, make([]byte, d.n-over-len(in))...)
				}
				p := naiveRx(name, in, 0, port)
				if len(p) > 0xffff {
					p = p[:0xffff]
				}
				a.Frames[i] = frame.Frame{Off: uint32(i*stride + 0x10000), Head: d.head, Len: uint16(len(p)), Tail: 0x100}
				copy(a.Mem[a.Frames[i].Off:], p)
			}
			b := &frame.Batch{Frames: append([]frame.Frame(nil), a.Frames...), Mem: append([]byte(nil), a.Mem...)}
			ins, rs := make([]Info, nb), make([]Reason, nb)
			tg.DecodeBatch(a, ins, rs)
			for i := range nb {
				var in Info
				err := tg.Decode(b, i, &in)
				if rs[i].Err() != err || (err == nil && ins[i] != in) || a.Frames[i] != b.Frames[i] {
					t.Fatalf("%s frame %d %+v: DecodeBatch %v %+v %+v, Decode %v %+v %+v",
						name, i, ds[(g+i)%len(ds)], rs[i], ins[i], a.Frames[i], err, in, b.Frames[i])
				}
			}
			if !bytes.Equal(a.Mem, b.Mem) {
				t.Fatalf("%s batch %d: the arenas differ", name, g/nb)
			}
		}
	}
}

// TestNativeLE: nativeLE (a list of GOARCHes) agrees with the machine's byte order, and on a
// little-endian machine q8021Head holds the first 8 bytes of the Info the loop would otherwise
// write field by field.
func TestNativeLE(t *testing.T) {
	if le := binary.NativeEndian.Uint16([]byte{1, 0}) == 1; le != nativeLE {
		t.Fatalf("nativeLE = %v on %s, the machine is little-endian: %v", nativeLE, runtime.GOARCH, le)
	}
	if !nativeLE {
		t.Skip("big-endian: the loops write the Info field by field")
	}
	for i := range q8021Head {
		in := Info{Port: uint16(i & 0xf), Switch: uint8(i>>6) & 7, TagLen: 4}
		if b := (*[16]byte)(unsafe.Pointer(&in)); binary.LittleEndian.Uint64(b[:8]) != q8021Head[i] {
			t.Fatalf("q8021Head[%#x] = %#x, want % x", i, q8021Head[i], b[:8])
		}
	}
}
