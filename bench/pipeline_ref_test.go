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
	"github.com/wirespeed/wirespeed/fwd"
)

// The pipeline checked against a naive reference on a small table: every frame the public stage
// (fwd.Worker.Process) and the stages after it send leaves by the port, member and switch port the
// reference predicts, with exactly the bytes it predicts (forwarded: MACs, egress tag, TTL - 1, a
// header checksum recomputed from scratch, payload untouched; echo replies and ICMP errors built
// from scratch), and every other frame is dropped or delivered locally under the reason the
// reference gives, by RFC 1812's receive rules as fwd's documentation states them. The benchmarks
// run the same code over the real table.

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
		if p.Contains(u32Addr(a)) && p.Bits() > best {
			best, nh, ok = p.Bits(), r.nh, true
		}
	}
	return nh, ok
}

func u32Addr(a uint32) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(a >> 24), byte(a >> 16), byte(a >> 8), byte(a)})
}

// naiveSum is the Internet checksum of b with the 16-bit field at offset skip taken as zero (skip
// < 0: none), summed the slow way.
func naiveSum(b []byte, skip int) uint16 {
	var s uint32
	for i := 0; i < len(b); i += 2 {
		if i == skip {
			continue
		}
		w := uint32(b[i]) << 8
		if i+1 < len(b) {
			w |= uint32(b[i+1])
		}
		s += w
	}
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}

// naiveChecksum is RFC 791's header checksum.
func naiveChecksum(h []byte) uint16 { return naiveSum(h, 10) }

func smallFIB(tb testing.TB) *fib.Table {
	t := fib.New()
	for _, r := range smallRoutes {
		if err := t.Insert(netip.MustParsePrefix(r.p), r.nh); err != nil {
			tb.Fatal(err)
		}
	}
	return t
}

// testProbes are destinations for every route of smallRoutes, and around them (the router's own
// addresses and subnet broadcasts included, by chance).
func testProbes(n int) []uint32 {
	rng := rand.New(rand.NewPCG(3, 4))
	bases := []uint32{0x0a000500, 0x0a0005c8, 0x0a000580, 0x0a000000, 0xac100900, 0xac100000, 0xc0000200, 0xc6120000, 0xc6120400, 0x08080808}
	ps := make([]uint32, n)
	for i := range ps {
		ps[i] = bases[rng.IntN(len(bases))] + uint32(rng.IntN(4))*uint32(1+rng.IntN(200))
	}
	return ps
}

// expectation is what must become of one ingress frame.
type expectation struct {
	verdict fwd.Reason // fwd.Forwarded, fwd.Local, fwd.Echoed, or why it is dropped
	icmp    bool       // an ICMP error must leave (the frame itself is dropped)
	uplink  bool       // what leaves goes out the uplink, else the trunk
	bytes   []byte     // the frame that leaves (DSA: once the switch has stripped the tag), or nil
}

// Kinds of test frames, by what their bytes are made to be.
const (
	kindTTL1         = iota // TTL 1: time exceeded
	kindBadSum              // header checksum wrong
	kindBadVLAN             // a VLAN the router has no interface on
	kindOtherMAC            // unicast to another host
	kindMartianSrc          // from 127.0.0.1
	kindToRouter            // UDP to the router's address on the ingress VLAN
	kindEcho                // echo request to that address
	kindEchoOther           // echo request to the router's address on another interface
	kindEchoTTL1            // echo request to the router with TTL 1: answered all the same
	kindBcast               // to a connected subnet's broadcast address
	kindL2Bcast             // routable, but to the Ethernet broadcast address
	kindMulticast           // to 239.1.2.3
	kindMartianDst          // to 127.0.0.1 or 240.0.0.1
	kindLimitedBcast        // to 255.255.255.255
	kindARP                 // not IPv4
	numKinds
)

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
	const batches = 6
	p := newPipeline(t, pipeConfig{routes: smallFIB(t), probes: testProbes(4096), upto: stageEnqueue, lag: lagMode, tagger: tagger, icmpBurst: 1 << 20})
	// Half the frames are ordinary ones to route; the others are of every kind above.
	rng := rand.New(rand.NewPCG(5, 6))
	want := map[uint16]expectation{}
	var icmpID uint16 // the stage numbers its ICMP errors 1, 2, ... in the order of the frames
	in := frame.NewBatch(pipeBatch)
	for j := 0; j < batches; j++ {
		p.pool.Alloc(p.fb, pipeBatch)
		for i := range p.fb.Frames {
			p.fb.Frames[i].Resize(frameLen)
			d := p.fb.Bytes(i)
			id := uint16(j*pipeBatch + i)
			writeTestFrame(d, rng, p.cfg.probes, id, rng.IntN(2*numKinds))
			want[id] = reference(d, &icmpID)
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

	// Collect what left, by sink: DSA [conduit]; no LAG [trunk, uplink]; LAG [member 0, member 1, uplink].
	got := map[uint16]bool{}
	flows := map[string]int{} // xor: a flow keeps its member
	var members [2]int
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
				if d[l3+9] == frame.ProtoICMP && d[l3+20] == 11 { // an ICMP error: the quoted header's ID
					id = binary.BigEndian.Uint16(d[l3+28+4:])
				}
				w, ok := want[id]
				wantSink, wantPort := sinkOf(w.uplink, lagMode, tagger)
				switch {
				case !ok || got[id]:
					t.Fatalf("frame id %d unexpected or seen twice", id)
				case w.bytes == nil:
					t.Errorf("frame id %d should not have left (%v), left by sink %d: % x", id, w.verdict, s, d)
				case wantSink != s && !(wantSink == -2 && s < 2):
					t.Errorf("frame id %d (%v) left by sink %d, want %d", id, w.verdict, s, wantSink)
				case wantPort != swPort:
					t.Errorf("frame id %d (%v) addressed to switch port %d, want %d", id, w.verdict, swPort, wantPort)
				case !equalPadded(d, w.bytes, p.swside != nil):
					t.Errorf("frame id %d (%v, sink %d, len %d):\n got % x\nwant % x", id, w.verdict, s, p.fb.Frames[i].Len, d, w.bytes)
				}
				if lagMode != "" && s < 2 {
					members[s]++
					if lagMode != "rr" {
						flow := fmt.Sprintf("%x", d[l3+12:l3+24]) // addresses and ports
						if m, seen := flows[flow]; seen && m != s {
							t.Errorf("flow %s split over members %d and %d", flow, m, s)
						}
						flows[flow] = s
					}
				}
				got[id] = true
			}
			p.fb.Free()
		}
	}
	var tally [fwd.NumVerdicts]uint64
	var icmpErrors, leave uint64
	for id, w := range want {
		tally[w.verdict]++
		if w.icmp {
			icmpErrors++
		}
		if w.bytes != nil {
			leave++
			if !got[id] {
				t.Errorf("frame id %d (%v) did not leave", id, w.verdict)
			}
		}
	}
	if lagMode == "rr" && (members[0]-members[1] > 1 || members[1]-members[0] > 1) {
		t.Errorf("round-robin sent %d and %d frames to the two members", members[0], members[1])
	}
	if lagMode != "" && (members[0] == 0 || members[1] == 0) {
		t.Errorf("the members sent %d and %d frames", members[0], members[1])
	}

	// The stage's counters and the pipeline's own tallies agree with the reference.
	p.w.Flush()
	c := p.router.Counters()
	gotTally := c.Drops[:]
	for r := fwd.Reason(0); r < fwd.NumReasons; r++ {
		if gotTally[r] != tally[r] {
			t.Errorf("dropped as %v: %d, reference %d", r, gotTally[r], tally[r])
		}
	}
	if c.Forwarded != tally[fwd.Forwarded] || c.Local != tally[fwd.Local] || c.Echoed != tally[fwd.Echoed] || c.ICMPErrors != icmpErrors {
		t.Errorf("forwarded %d, local %d, echoed %d, ICMP errors %d; reference %d, %d, %d, %d", c.Forwarded, c.Local, c.Echoed, c.ICMPErrors,
			tally[fwd.Forwarded], tally[fwd.Local], tally[fwd.Echoed], icmpErrors)
	}
	if p.fwd != tally[fwd.Forwarded]+tally[fwd.Echoed] || p.gen != icmpErrors || p.local != tally[fwd.Local] ||
		p.drops != uint64(len(want))-p.fwd-p.local || p.fwd+p.gen != leave {
		t.Errorf("pipeline: forwarded %d, generated %d, local %d, dropped %d of %d", p.fwd, p.gen, p.local, p.drops, len(want))
	}
	for _, r := range []fwd.Reason{fwd.Forwarded, fwd.Local, fwd.Echoed, fwd.DropVLAN, fwd.DropNotForUs, fwd.DropChecksum,
		fwd.DropMartianDst, fwd.DropMartianSrc, fwd.DropMulticast, fwd.DropL2Broadcast, fwd.DropDirectedBroadcast, fwd.DropTTL} {
		if tally[r] == 0 {
			t.Errorf("degenerate test: no frame judged %v", r)
		}
	}
	p.drain()
	if n := p.pool.InUse(); n != 0 {
		t.Errorf("%d buffers not returned", n)
	}
}

// sinkOf is the index in pipeline.sinks a frame leaves by (-2: either LAG member) and the switch
// port the conduit addresses (-1: no DSA).
func sinkOf(uplink bool, lagMode, tagger string) (sink, swPort int) {
	switch {
	case tagger != "":
		if uplink {
			return 0, portUplink
		}
		return 0, portTrunk
	case lagMode == "":
		if uplink {
			return 1, -1
		}
		return 0, -1
	case uplink:
		return 2, -1
	}
	return -2, -1
}

// writeTestFrame writes a 64-byte frame from host .2 of a random VLAN: an ordinary one to a probe
// for kind >= numKinds, else one of the given kind.
func writeTestFrame(d []byte, rng *rand.Rand, probes []uint32, id uint16, kind int) {
	vl := 1 + rng.IntN(pipeVLANs)
	dst := probes[rng.IntN(len(probes))]
	writeFrame(d, vl, dst, byte(2+rng.IntN(250)), id, uint16(rng.Uint32()), uint16(rng.Uint32()))
	ip := frame.IPv4(d[18:64])
	setDst := func(a netip.Addr) { copy(ip[16:20], a.AsSlice()) }
	echo := func() {
		ip[9] = frame.ProtoICMP
		m := ip[20:]
		m[0], m[1], m[2], m[3] = 8, 0, 0, 0
		binary.BigEndian.PutUint32(m[4:], rng.Uint32()) // identifier and sequence number
		for k := 8; k < len(m); k++ {
			m[k] = byte(rng.Uint32())
		}
		binary.BigEndian.PutUint16(m[2:], naiveSum(m, 2))
	}
	own := func(id int) netip.Addr { return routerAddr(id).Addr() }
	switch kind {
	case kindTTL1:
		ip[8] = 1
	case kindBadSum:
		ip[10] ^= 0x5a
		return
	case kindBadVLAN:
		binary.BigEndian.PutUint16(d[14:], 3000)
	case kindOtherMAC:
		d[5] ^= 0x10
	case kindMartianSrc:
		copy(ip[12:16], []byte{127, 0, 0, 1})
	case kindToRouter:
		setDst(own(vl))
	case kindEcho:
		setDst(own(vl))
		echo()
	case kindEchoOther:
		setDst(own(rng.IntN(pipeVLANs + 1)))
		echo()
	case kindEchoTTL1:
		setDst(own(vl))
		ip[8] = 1
		echo()
	case kindBcast:
		pfx := routerAddr(rng.IntN(pipeVLANs + 1)).Masked()
		a := pfx.Addr().As4()
		a[3] = 255
		setDst(netip.AddrFrom4(a))
	case kindL2Bcast:
		frame.Ether(d).SetDst(frame.MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	case kindMulticast:
		setDst(netip.MustParseAddr("239.1.2.3"))
	case kindMartianDst:
		setDst(netip.MustParseAddr([]string{"127.0.0.1", "240.0.0.1", "0.1.2.3"}[rng.IntN(3)]))
	case kindLimitedBcast:
		setDst(netip.MustParseAddr("255.255.255.255"))
		frame.Ether(d).SetDst(frame.MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	case kindARP:
		binary.BigEndian.PutUint16(d[16:], frame.TypeARP)
	}
	binary.BigEndian.PutUint16(ip[10:], naiveChecksum(ip[:20]))
}

// martian reports whether a is in 0/8, 127/8 or 240/4, or (src) also 224/4: RFC 1812 §5.3.7.
func martian(a netip.Addr, src bool) bool {
	for _, p := range []string{"0.0.0.0/8", "127.0.0.0/8", "240.0.0.0/4"} {
		if netip.MustParsePrefix(p).Contains(a) {
			return true
		}
	}
	return src && netip.MustParsePrefix("224.0.0.0/4").Contains(a)
}

// reference judges orig, an ingress frame as writeTestFrame made it, by the rules of fwd's
// documentation checked one after the other, and builds from scratch the frame that must leave.
// icmpID counts the ICMP errors so far.
func reference(orig []byte, icmpID *uint16) expectation {
	orig = append([]byte(nil), orig...)
	vl := int(binary.BigEndian.Uint16(orig[14:])&0xfff) - 100
	if vl < 1 || vl > pipeVLANs {
		return expectation{verdict: fwd.DropVLAN}
	}
	l2multi := orig[0]&1 != 0
	if !l2multi && frame.MAC(orig[0:6]) != routerMAC(vl) {
		return expectation{verdict: fwd.DropNotForUs}
	}
	if binary.BigEndian.Uint16(orig[16:]) != frame.TypeIPv4 {
		return expectation{verdict: fwd.Local}
	}
	ip := orig[18:64]
	if binary.BigEndian.Uint16(ip[10:]) != naiveChecksum(ip[:20]) {
		return expectation{verdict: fwd.DropChecksum}
	}
	src, dst := netip.AddrFrom4([4]byte(ip[12:16])), netip.AddrFrom4([4]byte(ip[16:20]))
	switch {
	case dst == netip.MustParseAddr("255.255.255.255") || netip.MustParsePrefix("224.0.0.0/24").Contains(dst):
		if martian(src, true) && !src.IsUnspecified() {
			return expectation{verdict: fwd.DropMartianSrc}
		}
		return expectation{verdict: fwd.Local}
	case netip.MustParsePrefix("224.0.0.0/4").Contains(dst):
		return expectation{verdict: fwd.DropMulticast}
	case martian(dst, false):
		return expectation{verdict: fwd.DropMartianDst}
	case martian(src, true):
		return expectation{verdict: fwd.DropMartianSrc}
	}
	for id := 0; id <= pipeVLANs; id++ {
		pfx := routerAddr(id)
		if dst == pfx.Addr() {
			m := ip[20:]
			if l2multi || ip[9] != frame.ProtoICMP || m[0] != 8 || m[1] != 0 || naiveSum(m, -1) != 0 {
				return expectation{verdict: fwd.Local}
			}
			// The echo reply, out the ingress interface to the frame's source.
			rip := append([]byte(nil), ip...)
			copy(rip[12:16], ip[16:20])
			copy(rip[16:20], ip[12:16])
			rip[8] = 64
			rip[20] = 0
			binary.BigEndian.PutUint16(rip[22:], naiveSum(rip[20:], 2))
			binary.BigEndian.PutUint16(rip[10:], naiveChecksum(rip[:20]))
			return expectation{verdict: fwd.Echoed, bytes: l2(frame.MAC(orig[6:12]), vl, rip)}
		}
		b4 := pfx.Masked().Addr().As4()
		b4[3] = 255
		if dst == netip.AddrFrom4(b4) {
			if id == vl {
				return expectation{verdict: fwd.Local}
			}
			return expectation{verdict: fwd.DropDirectedBroadcast}
		}
	}
	if l2multi {
		return expectation{verdict: fwd.DropL2Broadcast}
	}
	if ip[8] <= 1 {
		// Time exceeded, from the router's address on the ingress interface, quoting the packet.
		*icmpID++
		e := []byte{0x45, 0xc0, 0, 20 + 8 + 46, byte(*icmpID >> 8), byte(*icmpID), 0, 0, 64, frame.ProtoICMP, 0, 0}
		e = append(e, routerAddr(vl).Addr().AsSlice()...)
		e = append(e, ip[12:16]...)
		binary.BigEndian.PutUint16(e[10:], naiveChecksum(e))
		m := append([]byte{11, 0, 0, 0, 0, 0, 0, 0}, ip...)
		binary.BigEndian.PutUint16(m[2:], naiveSum(m, 2))
		return expectation{verdict: fwd.DropTTL, icmp: true, bytes: l2(frame.MAC(orig[6:12]), vl, append(e, m...))}
	}
	nh, ok := naiveLPM(binary.BigEndian.Uint32(ip[16:]))
	if !ok {
		panic("smallRoutes has a default route")
	}
	hop := nextHop(nh)
	fip := append([]byte(nil), ip...)
	fip[8]--
	binary.BigEndian.PutUint16(fip[10:], naiveChecksum(fip[:20]))
	return expectation{verdict: fwd.Forwarded, uplink: hop.Ifindex == ifUplink, bytes: l2(hop.DstMAC, int(hop.Ifindex), fip)}
}

// l2 is the frame carrying ip to dst out of interface id: the router's MAC there, VLAN 100+id on
// the trunk or untagged on the uplink.
func l2(dst frame.MAC, id int, ip []byte) []byte {
	src := routerMAC(id)
	out := append(append([]byte(nil), dst[:]...), src[:]...)
	if id != ifUplink {
		out = binary.BigEndian.AppendUint16(out, 0x8100)
		out = binary.BigEndian.AppendUint16(out, pipeVID(id))
	}
	out = binary.BigEndian.AppendUint16(out, 0x0800)
	return append(out, ip...)
}

// TestPipelineZeroAllocs: the pipeline's forwarding step (every stage, with each LAG mode and with
// DSA) allocates nothing, and forwards every frame.
func TestPipelineZeroAllocs(t *testing.T) {
	for _, c := range []pipeConfig{{lag: "rr"}, {lag: "layer3+4"}, {lag: "rr", aggregate: true}, {tagger: "edsa"}, {lag: ""}} {
		c.routes, c.probes, c.upto = smallFIB(t), zeroAllocProbes(), stageEnqueue
		p := newPipeline(t, c)
		in := frame.NewBatch(pipeBatch)
		steps := 0
		step := func() {
			p.refill(t, 1)
			p.rx.Recv(in)
			p.forward(in)
			steps++
		}
		step()
		if a := testing.AllocsPerRun(50, step); a != 0 {
			t.Errorf("%v: %v allocs per batch", c, a)
		}
		p.checkForwarded(t, uint64(steps*pipeBatch))
		if s := p.txq.Stats(); s.Sent != uint64(steps*pipeBatch) {
			t.Errorf("%v: the tx queue sent %d of %d frames", c, s.Sent, steps*pipeBatch)
		}
		p.drain()
	}
}

// zeroAllocProbes are testProbes without the router's own and broadcast addresses: destinations
// every one of which is forwarded.
func zeroAllocProbes() []uint32 {
	var ps []uint32
	for _, a := range testProbes(1024) {
		if o := a & 0xff; o != 1 && o != 255 {
			ps = append(ps, a)
		}
	}
	return ps
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
