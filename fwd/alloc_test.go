package fwd

import (
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/wirespeed/wirespeed/frame"
)

// TestZeroAllocs: the forwarding path, ICMP errors, echo replies and fragmentation allocate nothing
// per batch, and each really did its work.
func TestZeroAllocs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		p     pkt
		port  uint16
		count func(c Counters) uint64
		per   uint64 // counted per frame
	}{
		{"forward", pkt{vid: 10, dstMAC: macV10, dst: far, ttl: 255, size: 30}, 0, func(c Counters) uint64 { return c.Forwarded }, 1},
		{"forward-untagged", pkt{dstMAC: macUp, dst: [4]byte{10, 0, 10, 7}, src: far, ttl: 255, size: 30}, 1, func(c Counters) uint64 { return c.Forwarded }, 1},
		{"icmp-time-exceeded", pkt{vid: 10, dstMAC: macV10, dst: far, ttl: 1, size: 30}, 0, func(c Counters) uint64 { return c.ICMPErrors }, 1},
		{"icmp-frag-needed", pkt{vid: 10, dstMAC: macV10, dst: far, ttl: 9, size: 1400, df: true}, 0, func(c Counters) uint64 { return c.ICMPErrors }, 1},
		{"echo", pkt{vid: 10, dstMAC: macV10, dst: addrV10, ttl: 9, proto: layers.IPProtocolICMPv4, icmpType: 8, size: 56}, 0, func(c Counters) uint64 { return c.Echoed }, 1},
		{"fragment", pkt{vid: 10, dstMAC: macV10, dst: far, ttl: 9, size: 1900}, 0, func(c Counters) uint64 { return c.Fragments }, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newRig(t)
			data := tc.p.bytes(t)
			b := frame.NewBatch(64)
			const n = 16
			runs := 0
			a := testing.AllocsPerRun(50, func() {
				g.pool.Alloc(b, n)
				for i := range b.Frames {
					b.Frames[i].Resize(len(data))
					copy(b.Bytes(i), data)
				}
				o := g.w.Process(tc.port, b)
				for p := range o.Egress {
					o.Egress[p].Free()
					o.Generated[p].Free()
				}
				o.Local.Free()
				runs++
			})
			if a != 0 {
				t.Fatalf("%v allocs per batch", a)
			}
			g.w.Flush()
			if got, want := tc.count(g.r.Counters()), uint64(runs*n)*tc.per; got != want {
				t.Fatalf("did the work %d times, want %d (%+v)", got, want, g.r.Counters())
			}
			g.checkNoLeak(t)
		})
	}
}

// countTap counts verdicts and decodes what it is shown (outside the zero-alloc test).
type countTap struct {
	seen   [NumVerdicts]int
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
	g.process(t, 0,
		pkt{vid: 10, dstMAC: macV10, dst: far, ttl: 64, size: 30}.bytes(t),                  // forwarded
		pkt{vid: 10, dstMAC: macV10, dst: far, ttl: 1, size: 30}.bytes(t),                   // ttl
		pkt{vid: 10, dstMAC: macV10, dst: [4]byte{192, 0, 2, 1}, ttl: 9, size: 30}.bytes(t), // blackhole
		pkt{vid: 10, dstMAC: macV10, dst: far, ttl: 9, badSum: true, size: 30}.bytes(t),
		pkt{vid: 10, dstMAC: macV10, dst: addrV10, ttl: 9, size: 30}.bytes(t), // local
	)
	want := map[Reason]int{Forwarded: 1, DropTTL: 1, DropBlackhole: 1, DropChecksum: 1, Local: 1}
	for v := Reason(0); v < NumVerdicts; v++ {
		if tap.seen[v] != want[v] {
			t.Errorf("%v: tap saw %d, want %d", v, tap.seen[v], want[v])
		}
	}
	if len(tap.ttl) != 1 || tap.ttl[0] != 63 {
		t.Errorf("forwarded TTLs seen %v, want [63] (the tap sees the rewritten frame)", tap.ttl)
	}
	g.checkNoLeak(t)
}

func TestTapSamplingAndZeroAllocs(t *testing.T) {
	g := newRig(t)
	tap := &countTap{}
	g.w.SetTap(tap, 4)
	p1 := pkt{vid: 10, dstMAC: macV10, dst: far, ttl: 255, size: 30}.bytes(t)
	b := frame.NewBatch(64)
	const runs = 50
	a := testing.AllocsPerRun(runs, func() {
		g.pool.Alloc(b, 32)
		for i := range b.Frames {
			b.Frames[i].Resize(len(p1))
			copy(b.Bytes(i), p1)
		}
		g.w.Process(0, b).Egress[1].Free()
	})
	if a != 0 {
		t.Fatalf("Process with a tap: %v allocs per run", a)
	}
	// AllocsPerRun runs the function once more as a warm-up.
	if got, want := tap.seen[Forwarded], (runs+1)*32/4; got != want {
		t.Fatalf("tap saw %d of %d frames, want every 4th: %d", got, (runs+1)*32, want)
	}
}

// TestEgressReplaced: an Output.Egress batch the caller replaced between two batches receives the
// next batch's forwarded frames (the adjacency cache points to the egress batches and notices).
func TestEgressReplaced(t *testing.T) {
	g := newRig(t)
	data := pkt{vid: 10, dstMAC: macV10, dst: far, ttl: 64, size: 30}.bytes(t)
	run := func() (*Output, int) {
		b := g.batch(t, data, data, data)
		o := g.w.Process(0, b)
		for p := range o.Egress {
			if len(o.Egress[p].Frames) == 3 {
				return o, p
			}
		}
		t.Fatalf("no egress batch holds the 3 frames")
		return nil, 0
	}
	o, p := run()
	old := o.Egress[p]
	repl := frame.NewBatch(64)
	o.Egress[p] = repl
	old.Free()
	o, q := run()
	if q != p || o.Egress[p] != repl || len(repl.Frames) != 3 || len(old.Frames) != 0 {
		t.Fatalf("port %d (want %d): replaced batch holds %d frames, old %d", q, p, len(repl.Frames), len(old.Frames))
	}
	repl.Free()
	g.checkNoLeak(t)
}
