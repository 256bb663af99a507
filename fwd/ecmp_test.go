package fwd

import (
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/gopacket/gopacket/layers"
	"github.com/wirespeed/wirespeed/fib"
	"github.com/wirespeed/wirespeed/frame"
)

const (
	nhGroup  = 6 // ECMP: nhGW (weight 1) and nhSecond (weight 3)
	nhSecond = 7 // a second router on VLAN 10
)

var macSecond = frame.MAC{2, 6, 6, 6, 6, 6}

// ecmpRig routes 198.19.0.0/16 to a group of the uplink gateway (weight 1) and a router on VLAN 10
// (weight 3).
func ecmpRig(t testing.TB) *rig {
	return newRig(t, func(c *Config) {
		c.Routes.(*Static).Add(netip.MustParsePrefix("198.19.0.0/16"), nhGroup)
		c.NextHops.Set(nhSecond, fib.NextHop{Ifindex: 1, DstMAC: macSecond})
		if err := c.NextHops.Apply([]fib.NextHopChange{{Index: nhGroup, Members: []fib.Member{{NextHop: nhGW, Weight: 1}, {NextHop: nhSecond, Weight: 3}}}}); err != nil {
			t.Fatal(err)
		}
	})
}

// flowPkt is a UDP packet from VLAN 20 to 198.19.0.0/16 whose addresses and ports come from r.
func flowPkt(t testing.TB, r *rand.Rand) []byte {
	d := pkt{vid: 20, dstMAC: macV20, src: [4]byte{10, 0, 20, byte(2 + r.IntN(250))}, dst: [4]byte{198, 19, byte(r.IntN(256)), byte(r.IntN(256))}, ttl: 64, size: 20}.bytes(t)
	binary.BigEndian.PutUint16(d[18+20:], uint16(r.Uint32())) // the UDP source port (the checksum is not checked)
	return d
}

// TestECMPSpread: flows routed to a group spread over its members by weight (1:3, within 2 % of
// the flows), each leaving with its member's L2 header; a single flow always takes one member.
func TestECMPSpread(t *testing.T) {
	g := ecmpRig(t)
	r := rand.New(rand.NewPCG(7, 9))
	var gw, second int
	const flows = 20000
	for n := 0; n < flows; n += 50 {
		var ps [][]byte
		for range 50 {
			ps = append(ps, flowPkt(t, r))
		}
		res := g.process(t, 0, ps...)
		for _, p := range res.egress[1] {
			if eth := p.Layer(layers.LayerTypeEthernet).(*layers.Ethernet); frame.MAC(eth.DstMAC) != macGW {
				t.Fatalf("uplink frame to %v", eth.DstMAC)
			}
			gw++
		}
		for _, p := range res.egress[0] {
			eth := p.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
			q, _ := p.Layer(layers.LayerTypeDot1Q).(*layers.Dot1Q)
			if frame.MAC(eth.DstMAC) != macSecond || q == nil || q.VLANIdentifier != 10 {
				t.Fatalf("VLAN frame %v", p)
			}
			second++
		}
	}
	if gw+second != flows {
		t.Fatalf("%d + %d frames forwarded of %d", gw, second, flows)
	}
	if lo, hi := flows/4-flows/50, flows/4+flows/50; gw < lo || gw > hi {
		t.Fatalf("the weight-1 member carries %d of %d flows, want %d-%d", gw, flows, lo, hi)
	}
	// One flow, many times: always the same member.
	one := flowPkt(t, r)
	ports := map[int]int{}
	for range 20 {
		res := g.process(t, 0, one, one, one)
		ports[0] += len(res.egress[0])
		ports[1] += len(res.egress[1])
	}
	if (ports[0] == 0) == (ports[1] == 0) {
		t.Fatalf("one flow took both members: %v", ports)
	}
	g.checkNoLeak(t)
}

// TestECMPMembers: a group's member that is unresolved holds the frame under the member's index; a
// change of the group's members reaches the worker at the next batch; an empty reference (a member
// that is a group) is a counted drop.
func TestECMPMembers(t *testing.T) {
	g := newRig(t, func(c *Config) {
		c.HoldUnresolved = true
		c.Routes.(*Static).Add(netip.MustParsePrefix("198.19.0.0/16"), nhGroup)
		c.NextHops.Apply([]fib.NextHopChange{{Index: nhGroup, Members: []fib.Member{{NextHop: nhUnresolved}}}})
	})
	p := pkt{vid: 20, dstMAC: macV20, src: [4]byte{10, 0, 20, 5}, dst: [4]byte{198, 19, 1, 1}, ttl: 64, size: 20}.bytes(t)
	res := g.process(t, 0, p)
	if len(res.held) != 1 || res.heldMeta[0] != nhUnresolved {
		t.Fatalf("held %d frames, meta %v", len(res.held), res.heldMeta)
	}
	g.r.NextHops().Apply([]fib.NextHopChange{{Index: nhGroup, Members: []fib.Member{{NextHop: nhV10}}}})
	if res := g.process(t, 0, p); len(res.egress[0]) != 1 {
		t.Fatalf("after the change: %+v", res)
	}
	g.r.NextHops().Apply([]fib.NextHopChange{{Index: 8, Members: []fib.Member{{NextHop: nhV10}}}, {Index: nhGroup, Members: []fib.Member{{NextHop: 8}}}})
	g.process(t, 0, p)
	if c := g.r.Counters(); c.Drops[DropEgress] != 1 || c.Forwarded != 1 || c.Held != 1 {
		t.Fatalf("counters %+v", c)
	}
	g.checkNoLeak(t)
}

// TestECMPZeroAllocs: forwarding through a group allocates nothing, and forwards every frame.
func TestECMPZeroAllocs(t *testing.T) {
	g := ecmpRig(t)
	r := rand.New(rand.NewPCG(1, 2))
	var data [][]byte
	for range 16 {
		data = append(data, flowPkt(t, r))
	}
	b := frame.NewBatch(64)
	runs := 0
	a := testing.AllocsPerRun(50, func() {
		g.pool.Alloc(b, len(data))
		for i := range b.Frames {
			b.Frames[i].Resize(len(data[i]))
			copy(b.Bytes(i), data[i])
		}
		o := g.w.Process(0, b)
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
	if got, want := g.r.Counters().Forwarded, uint64(runs*len(data)); got != want {
		t.Fatalf("forwarded %d, want %d", got, want)
	}
	g.checkNoLeak(t)
}
