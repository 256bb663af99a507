package fwd

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/vlan"
)

// FuzzStraightLines: the straight lines of passes 1 and 3 (rxRun, txRun) change nothing the general
// paths would not: the same frames, mutated, go through a worker that takes them and one that takes
// every frame through vlan's ClassifyInPlace, special and forwardSlow, and the two leave the same
// outputs (descriptors and bytes, batch by batch, in order), the same counters and the same vlan
// counters. The inputs vary the headroom (down to none), the ingress VLAN and whether the batch
// comes as vlan.PerFramePort; the seeds are frames the straight lines take, so that mutations land
// on each of their tests.
func FuzzStraightLines(f *testing.F) {
	for _, p := range []pkt{
		{vid: 10, dstMAC: macV10, dst: far, ttl: 64, size: 30},
		{vid: 10, dstMAC: macV10, dst: far, ttl: 2, size: 6},
		{dstMAC: macUp, dst: hostV10, src: far, ttl: 200, size: 1},
		{dstMAC: macUp, dst: hostV10, src: far, ttl: 9, size: 1200},
		{dstMAC: macUp, dst: [4]byte{10, 0, 10, 200}, src: far, ttl: 9, size: 40},
		{vid: 10, dstMAC: macV10, dst: addrUp, ttl: 64, size: 30},
	} {
		b := p.bytes(f)
		f.Add(b, uint8(0), uint8(255))
		f.Add(b, uint8(1), uint8(20))
		f.Add(b, uint8(2), uint8(255))
		f.Add(b, uint8(3), uint8(20))
		// The checksums that ttlWord leaves to the general path (the ID field sets the checksum).
		for _, c := range []uint16{0xfeff, 0xffff, 0x0000, 0xfeff - 0x100} {
			f.Add(withChecksum(b, c), uint8(0), uint8(255))
		}
	}
	fast, slow := newRig(f), newRig(f)
	slow.w.general = true
	f.Fuzz(func(t *testing.T, data []byte, port, head uint8) {
		if len(data) > 1600 {
			data = data[:1600]
		}
		var outs [2]string
		for k, g := range []*rig{fast, slow} {
			b := frame.NewBatch(8)
			g.pool.Alloc(b, 3)
			for i := range b.Frames {
				fr := &b.Frames[i]
				fr.PushHead(int(fr.Head) - int(head)*int(fr.Head)/255) // headroom head/255 of the pool's
				if !fr.Resize(len(data)) {
					b.Free()
					return
				}
				copy(b.Bytes(i), data)
				fr.Port = uint16(port % 2)
			}
			in := uint16(port % 2)
			if port&2 != 0 { // each frame's own port, as from a DSA conduit
				in = vlan.PerFramePort
			}
			o := g.w.Process(in, b)
			outs[k] = dump(o)
			for p := range o.Egress {
				o.Egress[p].Free()
				o.Generated[p].Free()
			}
			o.Local.Free()
			o.Unresolved.Free()
			g.w.Flush()
			outs[k] += fmt.Sprintf("%+v\n", g.r.Counters())
			for id := range uint16(3) {
				outs[k] += fmt.Sprintf("%d %+v\n", id, g.demux.Stats(id))
			}
		}
		if outs[0] != outs[1] {
			t.Fatalf("straight lines:\n%s\ngeneral paths:\n%s", outs[0], outs[1])
		}
	})
}

// withChecksum returns a copy of the IPv4 frame b (untagged or one tag) whose header checksum is c,
// a correct one: the ID field takes up the difference.
func withChecksum(b []byte, c uint16) []byte {
	b = bytes.Clone(b)
	l3 := 14
	if binary.BigEndian.Uint16(b[12:]) == 0x8100 {
		l3 = 18
	}
	ip := frame.IPv4(b[l3 : l3+20])
	// The words but the ID and the checksum sum to s; a correct header sums to 0xffff (ones'
	// complement), so the ID is ~s + ~c.
	binary.BigEndian.PutUint16(ip[4:], 0)
	binary.BigEndian.PutUint16(ip[10:], 0)
	s := ^frame.Checksum(ip)
	x := uint32(^c) + uint32(^s)
	x = (x >> 16) + (x & 0xffff)
	binary.BigEndian.PutUint16(ip[4:], uint16(x))
	binary.BigEndian.PutUint16(ip[10:], c)
	if !ip.ChecksumOK() {
		panic(fmt.Sprintf("checksum %#04x: header %x", c, ip))
	}
	return b
}

// dump writes every batch of o: descriptors and bytes.
func dump(o *Output) string {
	var s bytes.Buffer
	one := func(name string, b *frame.Batch) {
		for i := range b.Frames {
			fmt.Fprintf(&s, "%s %+v %x\n", name, b.Frames[i], b.Bytes(i))
		}
	}
	for p := range o.Egress {
		one(fmt.Sprint("egress", p), o.Egress[p])
		one(fmt.Sprint("generated", p), o.Generated[p])
	}
	one("local", o.Local)
	one("held", o.Unresolved)
	return s.String()
}

// TestStraightLinesTake: the seeds' common frames do take the straight lines (else
// FuzzStraightLines would compare the general paths with themselves).
func TestStraightLinesTake(t *testing.T) {
	g := newRig(t)
	data := pkt{vid: 10, dstMAC: macV10, dst: far, ttl: 64, size: 30}.bytes(t)
	for round := range 2 { // the first builds the adjacency entry
		b := g.batch(t, data, data, data)
		g.w.setPort(0)
		dst := make([]uint32, len(b.Frames))
		i, k := rxRun(b.Frames, b.Mem, g.w.pt, dst, 0, 0)
		if i != 3 || k != 3 {
			t.Fatalf("rxRun stopped at %d, kept %d", i, k)
		}
		nh := make([]uint32, 3)
		g.r.routes.Load().r.LookupBatch(dst, nh)
		if round == 1 {
			if i := txRun(b.Frames, nh, g.w.rw, b.Mem, 0); i != 3 {
				t.Fatalf("txRun stopped at %d", i)
			}
			for p := range g.w.out.Egress {
				g.w.out.Egress[p].Frames = g.w.out.Egress[p].Frames[:0]
			}
		}
		b.Free()
		b = g.batch(t, data)
		o := g.w.Process(0, b)
		for p := range o.Egress {
			o.Egress[p].Free()
		}
	}
	g.checkNoLeak(t)
}
