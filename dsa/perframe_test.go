package dsa

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/wirespeed/wirespeed/frame"
)

// The per-frame Decode and Encode of the built-in taggers are fast paths (perframe.go) in front
// of the general per-frame code (decodeOne, encode). TestFastMatchesGeneral is the differential
// test between the two: the adversarial frames of TestBatchMatchesPerFrame (valid tags, flipped
// bits, random bytes around the length thresholds, link-local and VLAN DAs/EtherTypes, little
// headroom or tailroom, out-of-band VLAN tags) plus descriptors at the 16-bit limits (headroom,
// tailroom and length near 0xffff), each decoded and encoded (toward random valid and invalid
// Dests) once through the Tagger and once through the general code on an identical copy: outcome,
// Info, descriptor and frame bytes must agree.

// general is the general per-frame code behind tg's fast paths.
func general(tg Tagger) *codec { return tg.(builtin).base() }

// twin is a frame in two batches with equal layouts, a for the fast path and g for the general
// code; sh is how far g's frame i lies after a's in the arena.
type twin struct {
	a, g *frame.Batch
	sh   []uint32
}

// check loads data with descriptor fd (g's moved by sh) into frame i of both batches, decodes both
// and compares; then loads them again, encodes toward d and compares.
func (w twin) check(t *testing.T, tg Tagger, i int, data []byte, fd frame.Frame, d Dest, what string) {
	t.Helper()
	fg := fd
	fg.Off += w.sh[i]
	// The 32 bytes (fewer at an arena's end) on each side of the frame's room (headroom, data,
	// tailroom) hold a canary, so that same also catches a write outside the room.
	bands := func() [][]byte {
		var bs [][]byte
		for _, x := range []struct {
			mem []byte
			f   frame.Frame
		}{{w.a.Mem, fd}, {w.g.Mem, fg}} {
			start, end := int(x.f.Off)-int(x.f.Head), int(x.f.Off)+int(x.f.Len)+int(x.f.Tail)
			bs = append(bs, x.mem[max(0, start-32):max(0, start)], x.mem[min(len(x.mem), end):min(len(x.mem), end+32)])
		}
		return bs
	}
	load := func() {
		w.a.Frames[i], w.g.Frames[i] = fd, fg
		copy(fd.Data(w.a.Mem), data)
		copy(fg.Data(w.g.Mem), data)
		for _, b := range bands() {
			for k := range b {
				b[k] = 0x5c
			}
		}
	}
	same := func() bool {
		for _, b := range bands() {
			for _, c := range b {
				if c != 0x5c {
					return false
				}
			}
		}
		return rel(w.a.Frames[i], fd) == rel(w.g.Frames[i], fg) && bytes.Equal(w.a.Bytes(i), w.g.Bytes(i))
	}
	load()
	gen := general(tg)
	var ina, ing Info
	ea := tg.Decode(w.a, i, &ina)
	eg := gen.decodeOne(w.g.Mem, &w.g.Frames[i], &ing).Err()
	if ea != eg || (ea == nil && ina != ing) || !same() {
		t.Fatalf("%s %s (% x, %+v): Decode %v %+v %+v, general %v %+v %+v",
			tg.Name(), what, data, fd, ea, ina, w.a.Frames[i], eg, ing, w.g.Frames[i])
	}
	load()
	ea = tg.Encode(w.a, i, d)
	eg = gen.encode(w.g.Mem, &w.g.Frames[i], d).Err()
	if ea != eg || !same() {
		t.Fatalf("%s %s (% x, %+v) to %+v: Encode %v %+v\n% x\ngeneral %v %+v\n% x",
			tg.Name(), what, data, fd, d, ea, w.a.Frames[i], w.a.Bytes(i), eg, w.g.Frames[i], w.g.Bytes(i))
	}
}

// randDest is a Dest for tagger tg: a valid one most of the time, any bits otherwise.
func randDest(r *rand.Rand, spec Spec) Dest {
	d := Dest{Ports: Port(r.IntN(max(1, spec.Ports))), Prio: uint8(r.IntN(8))}
	switch r.IntN(6) {
	case 0:
		d = Dest{Ports: PortMask(r.Uint32() & 0x1ff), Switch: uint8(r.IntN(40)), Prio: uint8(r.IntN(256)),
			Bridge: uint8(r.IntN(9)), Flags: DestFlags(r.IntN(int(DestPad) << 1))}
	case 1:
		d.Flags = DestFlags(r.IntN(int(DestPad) << 1))
		d.Switch = uint8(r.IntN(40))
	case 2:
		d.Ports = PortMask(r.Uint32()) >> r.IntN(32)
	case 3:
		d.Ports = Port(r.IntN(max(1, spec.Ports))) | Port(r.IntN(max(1, spec.Ports)))
		d.Switch = uint8(r.IntN(9))
	}
	return d
}

func TestFastMatchesGeneral(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 5))
	heads := []uint16{0, 1, 2, 3, 4, 5, 7, 8, 9, 64}
	tails := []uint16{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 300}
	pool, err := frame.NewPool(&frame.PoolConfig{Buffers: 2 * nframes, BufSize: 512, Headroom: 64})
	if err != nil {
		t.Fatal(err)
	}
	w := twin{a: frame.NewBatch(nframes), g: frame.NewBatch(nframes), sh: make([]uint32, nframes)}
	pool.Alloc(w.a, nframes)
	pool.Alloc(w.g, nframes)
	base := append([]frame.Frame(nil), w.a.Frames...)
	for i := range nframes {
		w.sh[i] = w.g.Frames[i].Off - w.a.Frames[i].Off
	}
	// A second arena for descriptors at the 16-bit limits: one frame, Off past 0xffff.
	big := twin{&frame.Batch{Frames: make([]frame.Frame, 1), Mem: make([]byte, 0x30000)},
		&frame.Batch{Frames: make([]frame.Frame, 1), Mem: make([]byte, 0x30000)}, []uint32{0}}
	rounds := 40
	if testing.Short() {
		rounds = 8
	}
	for _, name := range Names() {
		tg := mustTagger(t, name)
		spec := tg.Spec()
		// Limits: Head, Tail and Len at and near 0xffff, each k from 0 to 15 below.
		for k := range 16 {
			for c := range 3 {
				data := advFrame(r, name)
				fd := frame.Frame{Off: 0x10000, Head: 64, Len: uint16(len(data)), Tail: 300}
				switch c {
				case 0:
					fd.Head = 0xffff - uint16(k)
				case 1:
					fd.Tail = 0xffff - uint16(k)
				case 2:
					data = append(data, make([]byte, 0xffff-k-len(data))...)
					fd.Len = uint16(len(data))
				}
				big.check(t, tg, 0, data, fd, randDest(r, spec), fmt.Sprint("limits ", c, k))
			}
		}
		for round := range rounds {
			for i := range nframes {
				data := advFrame(r, name)
				fd := base[i]
				fd.Len = uint16(len(data))
				fd.Head, fd.Tail = 64, 300
				if r.IntN(3) == 0 {
					fd.Head, fd.Tail = heads[r.IntN(len(heads))], tails[r.IntN(len(tails))]
					fd.Off = fd.Off - 64 + uint32(fd.Head) // headroom really that small: the arena before it is another frame's
				}
				if r.IntN(4) == 0 {
					fd.Flags = frame.FlagVLAN
					fd.TPID, fd.TCI = []uint16{0x8100, 0x88a8, 0x9100}[r.IntN(3)], uint16(r.Uint32())
				}
				w.check(t, tg, i, data, fd, randDest(r, spec), fmt.Sprint("round ", round))
			}
		}
	}
}
