package fwd

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/vlan"
)

// The loops of the straight lines against their Go forms: rxLoop and txLoop (assembly on amd64)
// must leave exactly what rxLoopGo and txLoopGo leave, on frames built to reach each of their tests
// and then mutated byte by byte: the same stop, descriptors, destinations, counters, cursors and
// arena bytes. (FuzzStraightLines compares the whole path with the general one; this compares the
// two forms where they differ, with inputs the worker's other checks never let through: lengths,
// headroom and offsets at the edges of txLoop's tests.)

// loopSrc reads a fuzz input byte by byte, then zeros.
type loopSrc struct {
	b []byte
	i int
}

func (s *loopSrc) u8() uint8 {
	if s.i >= len(s.b) {
		return 0
	}
	s.i++
	return s.b[s.i-1]
}

func (s *loopSrc) u16() uint16 { return uint16(s.u8())<<8 | uint16(s.u8()) }

// loopBases are the frames the rx cases start from: each reaches a different exit of rxLoop.
func loopBases(t testing.TB) [][]byte {
	var bs [][]byte
	for _, p := range []pkt{
		{dstMAC: macUp, dst: hostV10, src: far, ttl: 64, size: 18},
		{vid: 10, dstMAC: macV10, dst: far, ttl: 64, size: 30},
		{vid: 20, dstMAC: macV20, dst: far, ttl: 2, size: 6},
		{vid: 10, dstMAC: macV10, dst: addrUp, ttl: 64, size: 30}, // the router's address: the filter
		{vid: 30, dstMAC: macV10, dst: far, ttl: 64, size: 30},    // no interface
		{dstMAC: macUp, dst: hostV10, src: far, ttl: 1, size: 18},
	} {
		bs = append(bs, p.bytes(t))
	}
	return bs
}

const loopSlot = 256 // arena bytes per frame in these cases

// rxLoopCase runs both forms of rxLoop on one case from s over g's port tables and returns what
// each left, and how many frames the Go form kept.
func rxLoopCase(g *rig, bases [][]byte, s *loopSrc) (out [2]string, kept int) {
	n := 1 + int(s.u8()%40)
	mem := make([]byte, n*loopSlot+rxSlack)
	fr := make([]frame.Frame, n)
	clean := s.u8() < 64 // a batch of the bases that pass, unchanged
	for i := range fr {
		j := int(s.u8()) % (len(bases) + 3)
		if j >= len(bases) || clean {
			j %= 3
		}
		b := bases[j]
		off := i*loopSlot + 40
		d := mem[off : off+loopSlot-40]
		copy(d, b)
		l3 := func() int { // where the network header is after the changes so far
			if d[12] == 0x81 && d[13] == 0 {
				return vlan.EthLen
			}
			return frame.EtherLen
		}
		mode := s.u8() % 16
		if clean {
			mode = 15
		}
		fix := true // the header checksum made right again, so that the tests after it see the change
		switch mode {
		case 0, 1: // any byte of the first 48
			d[s.u8()%48] = s.u8()
			fix = mode == 1
		case 2: // a checksum at ttlWord's edge, right
			copy(d, withChecksum(b, []uint16{0xfeff, 0xffff, 0x0000, 0xfdff, 0xfefe, 0xff00}[s.u8()%6]))
			fix = false
		case 3: // the total length at the edges
			h := d[l3():]
			tl := []int{19, 20, 21, len(b) - l3() - 1, len(b) - l3(), len(b) - l3() + 1}[s.u8()%6]
			h[2], h[3] = byte(tl>>8), byte(tl)
		case 4: // the fields no test reads, whose sum can carry out of 64 bits
			h := d[l3():]
			for _, k := range []int{1, 4, 5, 6, 7, 9, 13, 14, 15, 17, 18, 19} {
				h[k] = s.u8()
			}
		case 5: // an address's first byte: the martian classes
			d[l3()+12+4*int(s.u8()&1)] = []byte{0, 10, 127, 198, 224, 239, 240, 255}[s.u8()%8]
		case 6: // the destination MAC: id's edge (0xffff), another interface's, a broadcast
			copy(d, [][]byte{{1, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 0}, macV20[:], macUp[:], macBC[:], {2, 0, 0, 0, 0, 0}}[s.u8()%6])
		case 7: // the TCI: VIDs with and without entries, PCP and DEI bits
			if l3() == vlan.EthLen {
				v := []uint16{10, 20, 10 | 0x800, 20 | 0x800, 10 | 0x1000, 10 | 0xe000, 0, 4095}[s.u8()%8]
				d[14], d[15] = byte(v>>8), byte(v)
			}
		case 8: // the TTL at the edges
			d[l3()+8] = []byte{0, 1, 2, 255}[s.u8()%4]
		case 9: // EtherType, version and IHL
			e := [][3]byte{{8, 0, 0x45}, {0x86, 0xdd, 0x60}, {8, 0, 0x46}, {8, 0, 0x55}, {8, 6, 0x45}, {0x81, 0, 0x45}}[s.u8()%6]
			copy(d[l3()-2:], e[:])
		case 10: // the top halves of the header's first two words sum to all ones: the sum's last carry
			h := d[l3():]
			r := uint32(s.u8())<<24 | uint32(s.u16())<<8 | 57 // the ID's high byte 57: the source's first 198
			binary.LittleEndian.PutUint32(h[4:], r)
			binary.LittleEndian.PutUint32(h[12:], ^r)
			h[17], h[18], h[19] = s.u8(), s.u8(), s.u8()
		default:
			fix = false
		}
		if fix {
			frame.IPv4(d[l3():]).SetChecksum()
		}
		ln := len(b)
		if c := s.u8(); c&0xe0 == 0xe0 && !clean {
			ln = max(0, ln-int(c&0x1f))
		} else if c&0x40 != 0 {
			ln += int(c & 0x3f)
		}
		fr[i] = frame.Frame{Off: uint32(off), Len: uint16(ln), Head: 40, Port: uint16(s.u8()), L3: uint16(s.u8()), Meta: 7}
		if c := s.u8(); c >= 0xf8 && !clean {
			fr[i].Flags = frame.FlagVLAN | frame.Flags(c)<<8
		} else if c >= 0xf0 { // other flags
			fr[i].Flags = frame.Flags(s.u16()) &^ frame.FlagVLAN
		}
	}
	if c := s.u8(); c < 64 { // the arena ends at most rxSlack after the last frame: rxLoop's bound
		end := int(fr[n-1].Off) + int(fr[n-1].Len) + rxSlack - int(c%8)
		mem = mem[:max(end, rxSlack)]
	}
	i := int(s.u8()) % n
	k := i - int(s.u8())%(i+1)
	port := int(s.u8()) % len(g.w.ports)
	for form, loop := range []func(unsafe.Pointer, int, int, *portTab) (int, int){rxLoopGo, rxLoop} {
		m, f := bytes.Clone(mem), append([]frame.Frame(nil), fr...)
		dst := make([]uint32, n)
		for j := range dst {
			dst[j] = 0xdead0000 + uint32(j)
		}
		t := new(portTab)
		*t = g.w.ports[port]
		l := n - 1
		t.mp, t.memLim, t.de = unsafe.Pointer(unsafe.SliceData(m)), uint64(len(m))-rxSlack, unsafe.Pointer(&dst[l])
		p, q := loop(unsafe.Pointer(&f[l]), -int(frameSize)*(l-i), -int(frameSize)*(l-k), t)
		out[form] = fmt.Sprintf("p %d q %d\nframes %+v\ndst %x\n", p, q, f, dst)
		for j := range t.rxPackets {
			if t.rxPackets[j] != 0 || t.rxBytes[j] != 0 {
				out[form] += fmt.Sprintf("slot %d: %d frames, %d bytes\n", j, t.rxPackets[j], t.rxBytes[j])
			}
		}
		if !bytes.Equal(m, mem) {
			out[form] += "the arena changed\n"
		}
		if form == 0 {
			kept = (q + int(frameSize)*(l-k)) / int(frameSize)
		}
	}
	return out, kept
}

// txLoopCase runs both forms of txLoop on one case from s and returns what each left, and how many
// frames the Go form forwarded.
func txLoopCase(s *loopSrc) (out [2]string, forwarded int) {
	n := 1 + int(s.u8()%40)
	i := int(s.u8()) % n // the first frame judged
	mem := make([]byte, n*loopSlot)
	fr := make([]frame.Frame, n)
	nh := make([]uint32, n)
	type adjIn struct {
		blk   [3]uint64
		port  int
		outL3 uint32
		lim   uint16
		n     uint16
	}
	adjs := make([]adjIn, 1+int(s.u8()%4))
	for j := range adjs {
		a := &adjs[j]
		for w := range a.blk {
			a.blk[w] = uint64(s.u16())<<48 | uint64(s.u16())<<16 | 0xa5a5
		}
		a.port, a.outL3 = int(s.u8()%2), uint32(s.u16())<<16|uint32(s.u8())
		a.lim = []uint16{0, 60, 1000, 1500, 0xffff}[s.u8()%5]
		a.n = []uint16{14, 18, 22, 24, uint16(s.u8() % 25)}[s.u8()%5]
	}
	for j := range fr {
		nh[j] = uint32(s.u8()) % uint32(len(adjs)+2)
		l3 := uint16(frame.EtherLen)
		if s.u8()&1 != 0 {
			l3 = vlan.EthLen
		}
		off := uint32(j*loopSlot) + 30 + uint32(s.u8()%16)
		head := uint16(off)
		if c := s.u8(); c < 32 {
			head = 0xffff - uint16(c) // headroom at txLoop's limit
		} else if c < 64 {
			head = uint16(c % 24)
		}
		if j == i && s.u8() < 64 { // the network header at offset 23, 24 or 25
			off = uint32(vlan.RewriteMax-1+s.u8()%3) - uint32(l3)
			head = uint16(s.u8()%64) + 10
		}
		ln := l3 + 20 + uint16(s.u8())
		if c := s.u8(); c < 32 {
			ln = l3 + 20 + uint16(c) // short: below 60 bytes after the rewrite
		} else if c < 48 {
			ln = 0xffff - uint16(c%16) // 65536 bytes or more after the rewrite
		}
		fr[j] = frame.Frame{Off: off, Buf: uint32(j), Len: ln, Head: head, Tail: 9, Port: uint16(s.u8()), Out: 5, L3: l3, Meta: uint32(s.u8())}
		tl := ln - l3
		if c := s.u8(); c < 64 {
			tl = uint16(c) << 4
		} else if c < 128 && int(nh[j]) < len(adjs) {
			tl = adjs[nh[j]].lim - 1 + uint16(c%3) // at the MTU
		}
		h := mem[off+uint32(l3):]
		h[0], h[2], h[3], h[8], h[9], h[10], h[11] = 0x45, byte(tl>>8), byte(tl), s.u8(), 17, s.u8(), s.u8()
	}
	type port struct {
		egress []frame.Frame
		cur    txCursor
		c      vlan.Counters
	}
	for form, loop := range []func(unsafe.Pointer, unsafe.Pointer, int, unsafe.Pointer, uint64, unsafe.Pointer) int{txLoopGo, txLoop} {
		m, f := bytes.Clone(mem), append([]frame.Frame(nil), fr...)
		ports := make([]port, 2)
		for p := range ports {
			ports[p].egress = make([]frame.Frame, n+1)
			ports[p].egress[0].Meta = 99 // a frame already there
			ports[p].cur = txCursor{unsafe.Pointer(&ports[p].egress[0]), frameSize}
		}
		rw := make([]adj, len(adjs))
		for j, a := range adjs {
			rw[j].blk, rw[j].outL3, rw[j].lim, rw[j].n = a.blk, a.outL3, a.lim, a.n
			rw[j].txc, rw[j].cur = &ports[a.port].c, &ports[a.port].cur
		}
		l := n - 1
		p := loop(unsafe.Pointer(&f[l]), unsafe.Pointer(&nh[l]), -int(frameSize)*(l-i), unsafe.Pointer(&rw[0]), uint64(len(rw)), unsafe.Pointer(&m[0]))
		out[form] = fmt.Sprintf("p %d\nframes %+v\n", p, f)
		for j, pt := range ports {
			out[form] += fmt.Sprintf("port %d: %d frames %+v, %+v\n", j, pt.cur.off/frameSize, pt.egress[:pt.cur.off/frameSize], pt.c)
		}
		out[form] += fmt.Sprintf("arena %x\n", m)
		if form == 0 {
			forwarded = (p + int(frameSize)*(l-i)) / int(frameSize)
		}
	}
	return out, forwarded
}

// FuzzLoopForms: see the top of this file.
func FuzzLoopForms(f *testing.F) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 16 {
		b := make([]byte, 600)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		f.Add(b)
	}
	g := newRig(f)
	bases := loopBases(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		s := &loopSrc{b: data}
		if out, _ := rxLoopCase(g, bases, s); out[0] != out[1] {
			t.Fatalf("rxLoopGo:\n%s\nrxLoop:\n%s", out[0], out[1])
		}
		if out, _ := txLoopCase(s); out[0] != out[1] {
			t.Fatalf("txLoopGo:\n%s\ntxLoop:\n%s", out[0], out[1])
		}
	})
}

// TestLoopForms runs FuzzLoopForms's comparison on cases from a PRNG, and checks that they reach
// both ends of each loop: frames kept and forwarded, and stops before the end of the batch.
func TestLoopForms(t *testing.T) {
	g := newRig(t)
	bases := loopBases(t)
	r := rand.New(rand.NewPCG(3, 4))
	var kept, rxStops, fwd, txStops int
	b := make([]byte, 700)
	for range 3000 {
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		s := &loopSrc{b: b}
		out, k := rxLoopCase(g, bases, s)
		if out[0] != out[1] {
			t.Fatalf("rxLoopGo:\n%s\nrxLoop:\n%s", out[0], out[1])
		}
		kept += k
		if !strings.HasPrefix(out[0], "p 32 ") {
			rxStops++
		}
		out, n := txLoopCase(s)
		if out[0] != out[1] {
			t.Fatalf("txLoopGo:\n%s\ntxLoop:\n%s", out[0], out[1])
		}
		fwd += n
		if !strings.HasPrefix(out[0], "p 32\n") {
			txStops++
		}
	}
	t.Logf("rx: %d frames kept, %d stops; tx: %d frames forwarded, %d stops", kept, rxStops, fwd, txStops)
	if kept < 500 || rxStops < 500 || fwd < 500 || txStops < 500 {
		t.Fatalf("the cases miss a side of a loop: rx %d kept, %d stops; tx %d forwarded, %d stops", kept, rxStops, fwd, txStops)
	}
}

// TestPrefetchFrames: prefetchFrames reads only the descriptors: offsets outside any arena, a nil
// arena and an empty batch do not fault.
func TestPrefetchFrames(t *testing.T) {
	fr := []frame.Frame{{Off: 0}, {Off: 1 << 31}, {Off: ^uint32(0)}}
	prefetchFrames(nil, fr)
	prefetchFrames(nil, nil)
	mem := make([]byte, 64)
	prefetchFrames(unsafe.Pointer(&mem[0]), fr)
}
