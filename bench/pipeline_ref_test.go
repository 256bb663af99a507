package bench

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/wirespeed/wirespeed/dsa"
	"github.com/wirespeed/wirespeed/fib"
	"github.com/wirespeed/wirespeed/frame"
)

// The pipeline benchmark's forwarder checked against a naive reference on a small table: every frame
// leaves by the port, member and switch port the reference predicts, with exactly the bytes it
// predicts (MACs, egress tag, TTL - 1, a header checksum recomputed from scratch, payload untouched),
// and every other frame is dropped. The benchmarks run the same code over the real table.

// smallRoutes overlap on purpose so that the longest match matters; the next hops are the
// benchmark's 0..15 (0: the uplink, k: VLAN k).
var smallRoutes = []struct {
	p  string
	nh uint32
}{
	{"0.0.0.0/0", 0},
	{"10.0.0.0/8", 3},
	{"10.0.5.0/24", 5},
	{"10.0.5.128/25", 7},
	{"10.0.5.200/32", 9},
	{"172.16.0.0/12", 12},
	{"172.16.9.0/24", 15},
	{"192.0.2.0/24", 1},
	{"198.18.0.0/15", 0},
	{"198.18.4.0/22", 14},
}

// naiveLPM is a linear scan for the longest matching prefix.
func naiveLPM(a uint32) (uint32, bool) {
	best, nh, ok := -1, uint32(0), false
	for _, r := range smallRoutes {
		p := netip.MustParsePrefix(r.p)
		if p.Contains(netip.AddrFrom4([4]byte{byte(a >> 24), byte(a >> 16), byte(a >> 8), byte(a)})) && p.Bits() > best {
			best, nh, ok = p.Bits(), r.nh, true
		}
	}
	return nh, ok
}

// naiveChecksum is RFC 791's header checksum, summed the slow way.
func naiveChecksum(h []byte) uint16 {
	var s uint32
	for i := 0; i < len(h); i += 2 {
		if i == 10 {
			continue
		}
		s += uint32(h[i])<<8 | uint32(h[i+1])
	}
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}

func smallFIB(tb testing.TB) *fib.Table {
	t := fib.New()
	for _, r := range smallRoutes {
		if err := t.Insert(netip.MustParsePrefix(r.p), r.nh); err != nil {
			tb.Fatal(err)
		}
	}
	return t
}

// testProbes are destinations for every route of smallRoutes, and around them.
func testProbes(n int) []uint32 {
	rng := rand.New(rand.NewPCG(3, 4))
	bases := []uint32{0x0a000500, 0x0a0005c8, 0x0a000580, 0x0a000000, 0xac100900, 0xac100000, 0xc0000200, 0xc6120000, 0xc6120400, 0x08080808}
	ps := make([]uint32, n)
	for i := range ps {
		ps[i] = bases[rng.IntN(len(bases))] + uint32(rng.IntN(4))*uint32(1+rng.IntN(200))
	}
	return ps
}

// expectation is where and how one frame should leave, or that it must be dropped.
type expectation struct {
	drop   bool
	sink   int    // index into pipeline.sinks
	member int    // LAG member (rr) or -1
	swPort int    // DSA: switch port the conduit must address, or -1
	bytes  []byte // the frame as it leaves (DSA: once the switch has stripped the tag)
}

func TestPipelineForwardsLikeReference(t *testing.T) {
	for _, c := range []struct {
		name, lag, tagger string
	}{
		{"lag=none", "", ""},
		{"lag=rr", "rr", ""},
		{"lag=xor-layer3+4", "layer3+4", ""},
		{"dsa=edsa", "", "edsa"},
		{"dsa=brcm-prepend", "", "brcm-prepend"},
		{"dsa=ocelot-8021q", "", "ocelot-8021q"},
	} {
		t.Run(c.name, func(t *testing.T) { testPipelineReference(t, c.lag, c.tagger) })
	}
}

func testPipelineReference(t *testing.T, lagMode, tagger string) {
	const batches = 4
	p := newPipeline(t, pipeConfig{routes: smallFIB(t), probes: testProbes(4096), upto: stageEnqueue, lag: lagMode, tagger: tagger})
	// Frames: mostly good, some the router must drop (TTL 1, bad checksum, unknown VLAN, a MAC that
	// is not the router's).
	rng := rand.New(rand.NewPCG(5, 6))
	want := map[uint16]expectation{}
	seq := 0 // frames past the drops, in order: the round-robin position
	in := frame.NewBatch(pipeBatch)
	for j := 0; j < batches; j++ {
		p.pool.Alloc(p.fb, pipeBatch)
		for i := range p.fb.Frames {
			p.fb.Frames[i].Resize(frameLen)
			d := p.fb.Bytes(i)
			vl := 1 + rng.IntN(pipeVLANs)
			dst := p.cfg.probes[rng.IntN(len(p.cfg.probes))]
			ttl := byte(2 + rng.IntN(250))
			id := uint16(j*pipeBatch + i)
			kind := rng.IntN(20)
			if kind == 0 {
				ttl = 1
			}
			writeFrame(d, vl, dst, ttl, id, uint16(rng.Uint32()), uint16(rng.Uint32()))
			switch kind {
			case 1:
				d[18+10] ^= 0x5a // checksum
			case 2:
				binary.BigEndian.PutUint16(d[14:], 3000) // no such VLAN
			case 3:
				d[5] ^= 0x10 // unicast to another MAC
			}
			orig := append([]byte(nil), d...)
			nh, ok := naiveLPM(dst)
			if kind <= 3 || !ok {
				want[id] = expectation{drop: true}
			} else {
				want[id] = reference(orig, nh, p, &seq, lagMode, tagger)
			}
			if p.swside != nil {
				if err := p.swside.Encode(p.fb, i, dsa.Info{Port: portTrunk}); err != nil {
					t.Fatal(err)
				}
			}
		}
		p.feed.Send(p.fb)
		if n, err := p.rx.Recv(in); n != pipeBatch || err != nil {
			t.Fatalf("recv %d, %v", n, err)
		}
		p.forward(in)
		if in.Len() != 0 {
			t.Fatalf("forward left %d frames", in.Len())
		}
	}

	// Collect what left, by sink.
	got := map[uint16]bool{}
	flows := map[string]int{} // xor: a flow keeps its member
	for s, sink := range p.sinks {
		for {
			if n, _ := sink.Recv(p.fb); n == 0 {
				break
			}
			for i := range p.fb.Frames {
				swPort := -1
				if p.swside != nil {
					dest, err := p.swside.Decode(p.fb, i)
					if err != nil {
						t.Fatalf("switch cannot decode what the conduit sent: %v", err)
					}
					swPort = dest.Ports.First()
				}
				d := p.fb.Bytes(i)
				l3 := 14
				if binary.BigEndian.Uint16(d[12:]) == 0x8100 {
					l3 = 18
				}
				id := binary.BigEndian.Uint16(d[l3+4:])
				w, ok := want[id]
				switch {
				case !ok || got[id]:
					t.Fatalf("frame id %d unexpected or seen twice", id)
				case w.drop:
					t.Errorf("frame id %d should have been dropped, left by sink %d: % x", id, s, d)
				case w.sink != s && !(w.sink == -2 && s < 2):
					t.Errorf("frame id %d left by sink %d, want %d", id, s, w.sink)
				case w.swPort != swPort:
					t.Errorf("frame id %d addressed to switch port %d, want %d", id, swPort, w.swPort)
				case !equalPadded(d, w.bytes, p.swside != nil):
					t.Errorf("frame id %d (sink %d, len %d, batch len %d):\n got % x\nwant % x", id, s, p.fb.Frames[i].Len, len(p.fb.Frames), d, w.bytes)
				}
				if lagMode != "" && lagMode != "rr" && w.sink < 2 {
					flow := fmt.Sprintf("%x", d[l3+12:l3+24]) // addresses and ports
					if m, seen := flows[flow]; seen && m != s {
						t.Errorf("flow %s split over members %d and %d", flow, m, s)
					}
					flows[flow] = s
				}
				got[id] = true
			}
			p.fb.Free()
		}
	}
	nDrop := 0
	for id, w := range want {
		if w.drop {
			nDrop++
		} else if !got[id] {
			t.Errorf("frame id %d was not forwarded", id)
		}
	}
	vd := p.vw.Drops() // unknown VLANs: dropped by the demux
	if p.drops+vd.UnknownVLAN+vd.Malformed != uint64(nDrop) || p.fwd != uint64(len(want)-nDrop) {
		t.Errorf("pipeline counted %d+%d dropped, %d forwarded; reference %d, %d", p.drops, vd.UnknownVLAN+vd.Malformed, p.fwd, nDrop, len(want)-nDrop)
	}
	if nDrop == 0 || nDrop == len(want) {
		t.Fatalf("degenerate test: %d of %d dropped", nDrop, len(want))
	}
	p.drain()
	if n := p.pool.InUse(); n != 0 {
		t.Errorf("%d buffers not returned", n)
	}
}

// reference builds, from scratch, the frame the router must send for orig (an ingress frame as
// writeFrame made it) routed to next hop nh, and where it must go.
func reference(orig []byte, nh uint32, p *pipeline, seq *int, lagMode, tagger string) expectation {
	hop := nextHop(nh)
	ip := append([]byte(nil), orig[18:64]...)
	ip[8]--
	binary.BigEndian.PutUint16(ip[10:], naiveChecksum(ip[:20]))
	var out []byte
	out = append(out, hop.DstMAC[:]...)
	src := routerMAC(int(hop.Ifindex))
	out = append(out, src[:]...)
	e := expectation{member: -1, swPort: -1}
	if hop.Ifindex != ifUplink {
		out = binary.BigEndian.AppendUint16(out, 0x8100)
		out = binary.BigEndian.AppendUint16(out, pipeVID(int(hop.Ifindex)))
	}
	out = binary.BigEndian.AppendUint16(out, 0x0800)
	out = append(out, ip...)
	e.bytes = out
	// sinks: DSA [conduit]; no LAG [trunk, uplink]; LAG [member 0, member 1, uplink].
	trunk := hop.Ifindex != ifUplink
	switch {
	case tagger != "":
		e.sink = 0
		e.swPort = portTrunk
		if !trunk {
			e.swPort = portUplink
		}
	case lagMode == "":
		e.sink = 0
		if !trunk {
			e.sink = 1
		}
	case lagMode == "rr":
		e.sink = 2
		if trunk {
			e.sink = *seq % 2
		}
	default:
		e.sink = -2 // hash: checked below as "one of the members"
		if !trunk {
			e.sink = 2
		}
	}
	*seq++
	return e
}

// TestPipelineZeroAllocs: the pipeline's forwarding step (every stage, with each LAG mode and with
// DSA) allocates nothing.
func TestPipelineZeroAllocs(t *testing.T) {
	for _, c := range []pipeConfig{{lag: "rr"}, {lag: "layer3+4"}, {lag: "rr", aggregate: true}, {tagger: "edsa"}} {
		c.routes, c.probes, c.upto = smallFIB(t), testProbes(1024), stageEnqueue
		p := newPipeline(t, c)
		in := frame.NewBatch(pipeBatch)
		step := func() {
			p.refill(t, 1)
			p.rx.Recv(in)
			p.forward(in)
		}
		step()
		if a := testing.AllocsPerRun(50, step); a != 0 {
			t.Errorf("%v: %v allocs per batch", c, a)
		}
		p.drain()
	}
}

// equalPadded reports whether got is want, or (padded true: a DSA switch that had the frame padded
// before its tag, as brcm's does to 64 bytes, has stripped the tag) want followed by zeros up to 64
// bytes.
func equalPadded(got, want []byte, padded bool) bool {
	if !padded || len(got) <= len(want) {
		return bytes.Equal(got, want)
	}
	if len(got) > 64 || !bytes.Equal(got[:len(want)], want) {
		return false
	}
	for _, c := range got[len(want):] {
		if c != 0 {
			return false
		}
	}
	return true
}
