package vlan

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/internal/race"
)

// The batch forms start with a loop specialised to the first frame's shape (parseNoneRun4,
// parseOneRun4, parseTwoRun4, popTagRun4) and hand over to the general four-frame loops at the first
// frame of another shape, which may stop again at a rare frame and resume. The tests below build
// batches that are runs of one shape broken at every position (a run of A then B; A everywhere but
// one B) and random runs, and compare every batch form with the per-frame functions on the same
// frames: headers (over stale ones, in a slice not 8-byte aligned), descriptors, whole arenas,
// counts, and nothing written past the batch. Random mixes change shape almost every frame and
// never reach a lead loop's second group; these do.

// hoShape is one frame shape: its tags, length, whether it ends at the arena's end, out-of-band tag.
type hoShape struct {
	tags  []uint16
	ln    uint16
	atEnd bool
	oob   bool
}

var hoShapes = []hoShape{
	{nil, 80, false, false},                                       // 0 untagged
	{[]uint16{TPID8021Q}, 80, false, false},                       // 1 802.1Q
	{[]uint16{TPID8021AD}, 80, false, false},                      // 2 802.1ad alone
	{[]uint16{TPID8021AD, TPID8021Q}, 80, false, false},           // 3 QinQ
	{[]uint16{TPID8021Q, TPID8021Q}, 80, false, false},            // 4 double 802.1Q
	{[]uint16{TPID8021AD, TPID8021AD}, 80, false, false},          // 5
	{[]uint16{TPID8021Q, TPID8021AD}, 80, false, false},           // 6
	{[]uint16{TPID9100}, 80, false, false},                        // 7 0x9100 (a tag only to p9100)
	{[]uint16{TPID8021Q, TPID8021Q, TPID8021Q}, 80, false, false}, // 8 three tags
	{[]uint16{TPID8021Q}, 20, false, false},                       // 9 802.1Q, truncated header
	{nil, 16, false, false},                                       // 10 untagged, short
	{[]uint16{TPID8021AD, TPID8021Q}, 22, true, false},            // 11 QinQ ending at the arena's end
	{[]uint16{TPID8021Q}, 18, true, false},                        // 12 802.1Q ending at the arena's end
	{[]uint16{TPID8021Q}, 80, false, true},                        // 13 out-of-band tag too
	{[]uint16{TPID8021Q}, 62, false, false},                       // 14 a runt once popped
	{nil, 0, false, false},                                        // 15 empty
}

// hoLead are the shapes a lead loop is specialised to (untagged, one tag, two tags).
var hoLead = []int{0, 1, 2, 3}

func hoBatch(shapes []int) *frame.Batch {
	mem := make([]byte, len(shapes)*256+256)
	for i := range mem {
		mem[i] = byte(i*7 + 3)
	}
	frs := make([]frame.Frame, len(shapes), len(shapes)+2)
	for i, s := range shapes {
		sh := hoShapes[s]
		f := &frs[i]
		f.Len, f.Head, f.Tail = sh.ln, 128, 64
		f.Off = uint32(i*256 + 128)
		if sh.atEnd {
			f.Off, f.Tail = uint32(len(mem))-uint32(sh.ln), 0
		}
		if sh.oob {
			f.Flags |= frame.FlagVLAN
			f.TPID, f.TCI = TPID8021Q, 0x777
		}
		d := mem[f.Off:]
		for j, tp := range sh.tags {
			d[12+4*j], d[13+4*j] = byte(tp>>8), byte(tp)
			d[14+4*j], d[15+4*j] = byte(i), byte(j+0x40)
		}
		off := 12 + 4*len(sh.tags)
		d[off], d[off+1] = 0x08, byte(i)
	}
	frs = append(frs, frame.Frame{Off: 0xdeadbeef, Len: 0x5555}, frame.Frame{Off: 1, Len: 3})
	return &frame.Batch{Frames: frs[:len(shapes)], Mem: mem}
}

// hoHeaders puts the headers 4 bytes into a struct, so that they are not 8-byte aligned.
type hoHeaders struct {
	pad uint32
	h   [70]Header
}

var hoStale = Header{Outer: Tag{0x1111, 0x2222}, Inner: Tag{0x3333, 0x4444}, EtherType: 0xdead, N: 0xee, Len: 0xdd}

func hoCheck(t *testing.T, p *Parser, hb *hoHeaders, shapes []int) {
	t.Helper()
	n := len(shapes)
	a, b := hoBatch(shapes), hoBatch(shapes)
	for i := range hb.h {
		hb.h[i] = hoStale
	}
	hs := hb.h[:n]
	okb, oka := p.ParseBatch(b, hs), 0
	for i := range a.Frames {
		h := hoStale
		if p.Parse(a.Bytes(i), &h) == nil {
			oka++
		}
		if h != hs[i] {
			t.Fatalf("%v: frame %d: Parse %+v, ParseBatch %+v", shapes, i, h, hs[i])
		}
	}
	for i := n; i < len(hb.h); i++ {
		if hb.h[i] != hoStale {
			t.Fatalf("%v: header %d past the batch written", shapes, i)
		}
	}
	if oka != okb {
		t.Fatalf("%v: Parse took %d frames, ParseBatch %d", shapes, oka, okb)
	}
	name := fmt.Sprint(shapes)
	same := func(op string) {
		t.Helper()
		sameArena(t, name+" "+op, a, b)
		if ext := b.Frames[n : n+2]; ext[0] != (frame.Frame{Off: 0xdeadbeef, Len: 0x5555}) || ext[1] != (frame.Frame{Off: 1, Len: 3}) {
			t.Fatalf("%v %s: descriptor past the batch written", shapes, op)
		}
	}
	na := 0
	for i := range a.Frames {
		if p.SetTCI(a, i, 0xabc) == nil {
			na++
		}
	}
	if nb := p.SetTCIBatch(b, 0xabc); na != nb {
		t.Fatalf("%v: SetTCI %d, SetTCIBatch %d", shapes, na, nb)
	}
	same("SetTCI")
	for round := range 2 { // the second pop sees the shapes the first left
		na = 0
		for i := range a.Frames {
			if _, err := p.Pop(a, i); err == nil {
				na++
			}
		}
		if nb := p.PopBatch(b); na != nb {
			t.Fatalf("%v: pop %d: Pop %d, PopBatch %d", shapes, round, na, nb)
		}
		same("Pop")
	}
	// PushBatch removes the frames it cannot tag and keeps the others' order.
	kept := a.Frames[:0]
	for i := range a.Frames {
		if Push(a, i, C(5)) == nil {
			kept = append(kept, a.Frames[i])
		}
	}
	if nb := PushBatch(b, C(5)); len(a.Frames)-len(kept) != nb || len(b.Frames) != len(kept) {
		t.Fatalf("%v: Push failed on %d, PushBatch dropped %d and kept %d", shapes, len(a.Frames)-len(kept), nb, len(b.Frames))
	}
	for i := range kept {
		if kept[i] != b.Frames[i] {
			t.Fatalf("%v Push: kept frame %d %+v, PushBatch %+v", shapes, i, kept[i], b.Frames[i])
		}
	}
	if !bytes.Equal(a.Mem, b.Mem) {
		t.Fatalf("%v Push: arenas differ", shapes)
	}
}

func TestBatchHandover(t *testing.T) {
	lengths := []int{1, 2, 3, 4, 5, 7, 8, 9, 12, 13, 17, 33, 63, 64, 67}
	// Under the race detector (single-goroutine code: it adds nothing but time) and -short, fewer
	// lengths, and in long batches breaks only near either end.
	quick := race.Enabled || testing.Short()
	if quick {
		lengths = []int{1, 5, 9, 65}
	}
	p9100, _ := NewParser(TPID9100)
	hb := new(hoHeaders)
	shapes := make([]int, 0, 70)
	for _, n := range lengths {
		for _, a := range hoLead {
			for b := range hoShapes {
				if a == b {
					continue
				}
				for pos := 0; pos <= n; pos++ {
					if quick && pos > 5 && pos < n-5 {
						continue
					}
					shapes = shapes[:0]
					for i := range n { // a run of a, then b from pos on
						shapes = append(shapes, a)
						if i >= pos {
							shapes[i] = b
						}
					}
					hoCheck(t, &std, hb, shapes)
					if pos < n { // a everywhere but b at pos
						for i := range shapes {
							shapes[i] = a
						}
						shapes[pos] = b
						hoCheck(t, &std, hb, shapes)
						if n%4 == 1 {
							hoCheck(t, &p9100, hb, shapes)
						}
					}
				}
			}
		}
	}
}

func TestBatchRandomRuns(t *testing.T) {
	r := rand.New(rand.NewPCG(61, 62))
	rounds := 20000
	if race.Enabled || testing.Short() {
		rounds = 2000
	}
	hb := new(hoHeaders)
	for range rounds {
		n := 1 + r.IntN(67)
		shapes := make([]int, 0, n)
		for len(shapes) < n {
			s := r.IntN(len(hoShapes))
			if r.IntN(2) == 0 {
				s = r.IntN(7)
			}
			for j := 1 + r.IntN(9); j > 0 && len(shapes) < n; j-- {
				shapes = append(shapes, s)
			}
		}
		hoCheck(t, &std, hb, shapes)
	}
}
