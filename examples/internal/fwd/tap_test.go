package fwd

import (
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/wirespeed/wirespeed/frame"
)

// countTap counts verdicts and decodes what it is shown (outside the zero-alloc test).
type countTap struct {
	seen   [NumReasons + 1]int
	decode bool
	t      *testing.T
	ttl    []uint8
}

func (c *countTap) Capture(d []byte, v Reason) {
	c.seen[v]++
	if !c.decode {
		return
	}
	p := gopacket.NewPacket(d, layers.LayerTypeEthernet, gopacket.Default)
	if v == Forwarded {
		ip, _ := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
		if ip == nil {
			c.t.Errorf("forwarded frame without IPv4: %x", d)
			return
		}
		c.ttl = append(c.ttl, ip.TTL)
	}
}

func TestTapSeesVerdicts(t *testing.T) {
	g := newRig(t)
	tap := &countTap{decode: true, t: t}
	g.w.SetTap(tap, 1)
	frames := [][]byte{
		pkt{vid: 10, dstMAC: macV10, dst: [4]byte{198, 18, 0, 1}, ttl: 64, size: 30}.bytes(t), // forwarded
		pkt{vid: 10, dstMAC: macV10, dst: [4]byte{198, 18, 0, 1}, ttl: 1, size: 30}.bytes(t),  // ttl
		pkt{vid: 10, dstMAC: macV10, dst: [4]byte{192, 0, 2, 1}, ttl: 9, size: 30}.bytes(t),   // blackhole: no-route
		pkt{vid: 10, dstMAC: macV10, dst: [4]byte{198, 18, 0, 1}, ttl: 9, badSum: true, size: 30}.bytes(t),
	}
	b := frame.NewBatch(64)
	g.pool.Alloc(b, len(frames))
	for i, p := range frames {
		b.Frames[i].Resize(len(p))
		copy(b.Bytes(i), p)
	}
	g.w.Forward(0, b, g.ports)
	want := map[Reason]int{Forwarded: 1, DropTTL: 1, DropNoRoute: 1, DropChecksum: 1}
	for v := Reason(0); v <= NumReasons; v++ {
		if tap.seen[v] != want[v] {
			t.Errorf("%v: tap saw %d, want %d", v, tap.seen[v], want[v])
		}
	}
	if len(tap.ttl) != 1 || tap.ttl[0] != 63 {
		t.Errorf("forwarded TTLs seen %v, want [63] (the tap sees the rewritten frame)", tap.ttl)
	}
	sink := frame.NewBatch(64)
	for _, z := range g.peers {
		z.Recv(sink)
		sink.Free()
	}
	if g.pool.InUse() != 0 {
		t.Fatalf("%d buffers leaked", g.pool.InUse())
	}
}

func TestTapSamplingAndZeroAllocs(t *testing.T) {
	g := newRig(t)
	tap := &countTap{}
	g.w.SetTap(tap, 4)
	p1 := pkt{vid: 10, dstMAC: macV10, dst: [4]byte{198, 18, 0, 1}, ttl: 255, size: 30}.bytes(t)
	b := frame.NewBatch(64)
	sink := frame.NewBatch(64)
	const runs = 50
	a := testing.AllocsPerRun(runs, func() {
		g.pool.Alloc(b, 32)
		for i := range b.Frames {
			b.Frames[i].Resize(len(p1))
			copy(b.Bytes(i), p1)
		}
		g.w.Forward(0, b, g.ports)
		g.peers[1].Recv(sink)
		sink.Free()
	})
	if a != 0 {
		t.Fatalf("Forward with a tap: %v allocs per run", a)
	}
	// AllocsPerRun runs the function once more as a warm-up.
	if got, want := tap.seen[Forwarded], (runs+1)*32/4; got != want {
		t.Fatalf("tap saw %d of %d frames, want every 4th: %d", got, (runs+1)*32, want)
	}
	if Forwarded.String() != "forwarded" || DropTTL.String() != "ttl" || Reason(99).String() != "?" {
		t.Fatal("Reason.String")
	}
}
