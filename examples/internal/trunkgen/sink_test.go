package trunkgen

import (
	"encoding/binary"
	"testing"

	"github.com/wirespeed/wirespeed/examples/internal/app"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/vlan"
	"github.com/wirespeed/wirespeed/xmit"
)

// routed sends one generator-like frame through a router built from plan and returns what came
// out of each far end (trunk, uplink), as copies, besides the ARP requests a generator answered.
func routed(t *testing.T, plan Plan, upstream bool, src, dst uint32, ttl byte) (trunk, uplink [][]byte) {
	t.Helper()
	out, _ := routedARP(t, plan, upstream, src, dst, ttl)
	return out[PortTrunk], out[PortUplink]
}

// routedARP is routed that also returns the router's ARP requests, which a generator answered,
// by far end.
func routedARP(t *testing.T, plan Plan, upstream bool, src, dst uint32, ttl byte) (out, arp [NumPorts][][]byte) {
	t.Helper()
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 64})
	plan.Pool = pool
	r, err := BuildRouter(plan, RouterMAC, nil)
	if err != nil {
		t.Fatal(err)
	}
	res := app.NewResolver(r.Table, r.Demux, 8)
	g := New(Config{Pool: pool, VLANs: plan.VLANs, Neighbours: plan.Neighbours, Gateway: plan.Gateway, OwnRoutes: plan.Routes != ""})
	var ports []xmit.Port
	var peers []*xmit.MemPort
	for range NumPorts {
		a, z := xmit.Pipe(pool, nil)
		ports, peers = append(ports, a), append(peers, z)
	}
	b := frame.NewBatch(8)
	pool.Alloc(b, 1)
	in := PortUplink
	if upstream {
		in = PortTrunk
		vl := int(src>>8) & 0xff
		b.Frames[0].Resize(64)
		d := b.Bytes(0)
		frame.Ether(d).SetDst(RouterMAC(vl))
		frame.Ether(d).SetSrc(HostMAC(vl, 2))
		binary.BigEndian.PutUint16(d[12:], vlan.TPID8021Q)
		binary.BigEndian.PutUint16(d[14:], VID(vl))
		binary.BigEndian.PutUint16(d[16:], frame.TypeIPv4)
		UDP(d[18:], src, dst, ttl)
	} else {
		b.Frames[0].Resize(60)
		d := b.Bytes(0)
		frame.Ether(d).SetDst(RouterMAC(IfUplink))
		frame.Ether(d).SetSrc(GatewayMAC)
		frame.Ether(d).SetType(frame.TypeIPv4)
		UDP(d[14:], src, dst, ttl)
	}
	w := r.NewWorker(8)
	res.Step(w, uint16(in), b, ports)
	r.FlushRoutes() // as Poll does
	rb := frame.NewBatch(8)
	for moved := true; moved; {
		moved = false
		res.Poll(w, ports)
		for p, z := range peers {
			for n, _ := z.Recv(b); n > 0; n, _ = z.Recv(b) {
				for i := range b.Frames {
					d := b.Bytes(i)
					if v, id, tpa := g.check(&b.Frames[i], d, p == PortUplink); v == SinkARP {
						arp[p] = append(arp[p], append([]byte(nil), d...))
						g.reply(rb, id, tpa)
						continue
					}
					out[p] = append(out[p], append([]byte(nil), d...))
				}
				b.Free()
			}
			if len(rb.Frames) > 0 {
				z.Send(rb)
			}
		}
		for p, port := range ports {
			if n, _ := port.Recv(b); n > 0 {
				res.Step(w, uint16(p), b, ports)
				r.FlushRoutes()
				moved = true
			}
		}
	}
	return out, arp
}

// TestCheck: what the router sends for the generator's traffic passes Check as its kind, tags in the
// bytes or out of band; every single thing wrong with such a frame makes it SinkBad.
func TestCheck(t *testing.T) {
	const (
		host3   = 0x0a000302 // 10.0.3.2, the host on VLAN 3
		host5x  = 0x0a000509 // 10.0.5.9, on VLAN 5
		upHost  = 0xc6120105 // 198.18.1.5
		noRoute = 0x0b000001 // 11.0.0.1: upstream by default, nowhere with the routes below
	)
	plan := Plan{VLANs: 20}
	g := New(Config{VLANs: 20})
	one := func(frames [][]byte) []byte {
		t.Helper()
		if len(frames) != 1 {
			t.Fatalf("%d frames came out, want 1", len(frames))
		}
		return frames[0]
	}
	type sample struct {
		name   string
		d      []byte
		uplink bool
		want   int
	}
	var samples []sample
	tr, up := routed(t, plan, true, host3, upHost, 64)
	if len(tr) != 0 {
		t.Fatalf("upstream frame came back on the trunk")
	}
	samples = append(samples, sample{"upstream forwarded", one(up), true, SinkForwarded})
	tr, _ = routed(t, plan, false, upHost, host5x, 64)
	samples = append(samples, sample{"downstream forwarded", one(tr), false, SinkForwarded})
	tr, _ = routed(t, plan, true, host3, upHost, 1)
	samples = append(samples, sample{"time exceeded to VLAN 3", one(tr), false, SinkTimeExceeded})
	_, up = routed(t, plan, false, upHost, host5x, 1)
	samples = append(samples, sample{"time exceeded upstream", one(up), true, SinkTimeExceeded})
	samples = append(samples, sample{"host unreachable upstream", unreachable(t, upHost, 0x0a0005fc), true, SinkUnreachable})

	for _, s := range samples {
		f := frame.Frame{}
		if got := g.Check(&f, s.d, s.uplink); got != s.want {
			t.Errorf("%s: Check = %d, want %d: %x", s.name, got, s.want, s.d)
		}
		if got := g.Check(&f, s.d, !s.uplink); got != SinkBad {
			t.Errorf("%s, on the other side: Check = %d, want SinkBad", s.name, got)
		}
		l3 := frame.EtherLen
		if !s.uplink {
			l3 = vlan.EthLen
			// The tag out of band, as veth may hand it: the same verdict.
			oob := append(append([]byte(nil), s.d[:12]...), s.d[16:]...)
			f := frame.Frame{Flags: frame.FlagVLAN, TCI: binary.BigEndian.Uint16(s.d[14:])}
			if got := g.Check(&f, oob, false); got != s.want {
				t.Errorf("%s, tag out of band: Check = %d, want %d", s.name, got, s.want)
			}
		}
		ip := func(d []byte) frame.IPv4 { return frame.IPv4(d[l3:]) }
		icmp := s.want != SinkForwarded
		for _, m := range []struct {
			name string
			mod  func(d []byte)
			skip bool
		}{
			{"destination MAC", func(d []byte) { d[5] ^= 1 }, false},
			{"source MAC", func(d []byte) { d[11] ^= 1 }, false},
			{"VID", func(d []byte) { d[15]++ }, s.uplink},
			{"VID out of range", func(d []byte) { binary.BigEndian.PutUint16(d[14:], VID(21)) }, s.uplink},
			{"TTL not decremented", func(d []byte) { ip(d)[8]++; ip(d).SetChecksum() }, false},
			{"IPv4 checksum", func(d []byte) { ip(d)[10] ^= 0xff }, false},
			{"source address", func(d []byte) { ip(d)[15]++; ip(d).SetChecksum() }, !icmp},
			{"destination address", func(d []byte) { ip(d)[17] ^= 0x40; ip(d).SetChecksum() }, false},
			{"ICMP checksum", func(d []byte) { ip(d)[22] ^= 0xff }, !icmp},
			{"ICMP type", func(d []byte) { p := ip(d)[20:]; p[0] ^= 8; fixICMP(p) }, !icmp},
			{"ICMP code", func(d []byte) { p := ip(d)[20:]; p[1] ^= 1; fixICMP(p) }, !icmp},
			{"quoted TTL", func(d []byte) { p := ip(d)[20:]; p[8+8] = 2; fixICMP(p) }, s.want != SinkTimeExceeded},
			{"quoted source", func(d []byte) { p := ip(d)[20:]; p[8+15]++; fixICMP(p) }, !icmp},
			{"a fragment", func(d []byte) { ip(d)[6] |= 0x20; ip(d).SetChecksum() }, false},
			{"not UDP or ICMP", func(d []byte) { ip(d)[9] = frame.ProtoTCP; ip(d).SetChecksum() }, icmp},
			{"truncated", func(d []byte) {}, false},
		} {
			if m.skip {
				continue
			}
			d := append([]byte(nil), s.d...)
			m.mod(d)
			if m.name == "truncated" {
				d = d[:l3+10]
			}
			if got := g.Check(&frame.Frame{}, d, s.uplink); got != SinkBad {
				t.Errorf("%s, %s wrong: Check = %d, want SinkBad", s.name, m.name, got)
			}
		}
	}

	// -nexthop MACs (the uplink's, every VLAN's: no ARP there): the sink expects them where the
	// router uses them, for every host.
	nb := app.Neighbours{"uplink": {2, 0, 0, 0, 0, 9}, "trunk": {2, 0, 0, 0, 0, 8}}
	_, up = routed(t, Plan{VLANs: 20, Neighbours: nb}, true, host3, upHost, 64)
	out, arp := routedARP(t, Plan{VLANs: 20, Neighbours: nb}, false, upHost, host5x, 64)
	tr = out[PortTrunk]
	if len(arp[PortTrunk])+len(arp[PortUplink]) != 0 {
		t.Errorf("ARP on interfaces with -nexthop MACs: %x", arp)
	}
	gn := New(Config{VLANs: 20, Neighbours: nb})
	if gn.Check(&frame.Frame{}, one(up), true) != SinkForwarded || gn.Check(&frame.Frame{}, one(tr), false) != SinkForwarded {
		t.Error("frames to -nexthop MACs not recognised")
	}
	if g.Check(&frame.Frame{}, one(up), true) != SinkBad || g.Check(&frame.Frame{}, one(tr), false) != SinkBad {
		t.Error("frames to -nexthop MACs pass a sink that does not expect them")
	}

	// A routes file: upstream traffic to VLAN 7, 11.0.0.0/8 nowhere (network unreachable).
	own := Plan{VLANs: 20, Routes: writeRoutes(t, "198.18.0.0/15 7\n10.0.0.0/8 5\n")}
	tr, _ = routed(t, own, true, host3, upHost, 64)
	fwdOwn := one(tr)
	tr, _ = routed(t, own, true, host3, noRoute, 64)
	unreach := one(tr)
	go2 := New(Config{VLANs: 20, OwnRoutes: true})
	if got := go2.Check(&frame.Frame{}, fwdOwn, false); got != SinkForwarded {
		t.Errorf("routes file, upstream traffic to VLAN 7: Check = %d", got)
	}
	if got := go2.Check(&frame.Frame{}, unreach, false); got != SinkUnreachable {
		t.Errorf("routes file, network unreachable: Check = %d", got)
	}
	if g.Check(&frame.Frame{}, fwdOwn, false) != SinkBad || g.Check(&frame.Frame{}, unreach, false) != SinkBad {
		t.Error("with the default table, upstream traffic on a VLAN or an unreachable passed")
	}
}

// unreachable is what the router sends for a frame from src on the uplink to dst on a VLAN whose
// neighbour failed to resolve: the frame as the neighbour table holds it, answered by
// fwd.Worker.Unreachable.
func unreachable(t *testing.T, src, dst uint32) []byte {
	t.Helper()
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 16})
	r, err := BuildRouter(Plan{VLANs: 20, Pool: pool}, RouterMAC, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := frame.NewBatch(8)
	pool.Alloc(b, 1)
	b.Frames[0].Resize(60)
	d := b.Bytes(0)
	frame.Ether(d).SetDst(RouterMAC(IfUplink))
	frame.Ether(d).SetSrc(GatewayMAC)
	frame.Ether(d).SetType(frame.TypeIPv4)
	UDP(d[14:], src, dst, 64)
	b.Frames[0].Port, b.Frames[0].L3 = IfUplink, frame.EtherLen // classified, as held
	o := r.NewWorker(8).Unreachable(b)
	g := o.Generated[PortUplink]
	if len(g.Frames) != 1 {
		t.Fatalf("%d host unreachables", len(g.Frames))
	}
	out := append([]byte(nil), g.Bytes(0)...)
	g.Free()
	return out
}

// TestCheckARP: the router's ARP requests as it resolves the gateway (untagged on the uplink) and
// a VLAN host (tagged with the VLAN's VID, in the bytes) pass Check as SinkARP, as its
// announcements do; every single thing wrong with one makes it SinkBad. The generator's answers
// resolve them: the frames held for them come out.
func TestCheckARP(t *testing.T) {
	const upHost, host5x = 0xc6120105, 0x0a000509
	g := New(Config{VLANs: 20})
	_, arpUp := routedARP(t, Plan{VLANs: 20}, true, 0x0a000302, upHost, 64)
	out, arpDown := routedARP(t, Plan{VLANs: 20}, false, upHost, host5x, 64)
	if len(arpUp[PortUplink]) == 0 || len(arpDown[PortTrunk]) == 0 || len(out[PortTrunk]) != 1 {
		t.Fatalf("ARP on the uplink %d, on the trunk %d; %d frames forwarded", len(arpUp[PortUplink]), len(arpDown[PortTrunk]), len(out[PortTrunk]))
	}
	req := arpDown[PortTrunk][0]
	if binary.BigEndian.Uint16(req[12:]) != vlan.TPID8021Q || binary.BigEndian.Uint16(req[14:])&0xfff != VID(5) {
		t.Fatalf("the request for 10.0.5.9 is not tagged with VID %d: %x", VID(5), req)
	}
	// An announcement, built by hand: on VLAN 7, broadcast, for 10.0.7.1.
	ann := append([]byte(nil), req...)
	binary.BigEndian.PutUint16(ann[14:], VID(7))
	m := RouterMAC(7)
	copy(ann[6:], m[:])
	copy(ann[18+8:], m[:])
	copy(ann[18+14:], []byte{10, 0, 7, 1})
	copy(ann[18+24:], []byte{10, 0, 7, 1})
	probe := append([]byte(nil), req...) // a unicast probe to the host's MAC
	h := HostMAC(5, 9)
	copy(probe, h[:])
	for _, c := range []struct {
		name   string
		d      []byte
		uplink bool
	}{{"gateway request", arpUp[PortUplink][0], true}, {"VLAN host request", req, false}, {"announcement", ann, false}, {"probe", probe, false}} {
		if got := g.Check(&frame.Frame{}, c.d, c.uplink); got != SinkARP {
			t.Errorf("%s: Check = %d, want SinkARP: %x", c.name, got, c.d)
		}
		if got := g.Check(&frame.Frame{}, c.d, !c.uplink); got != SinkBad {
			t.Errorf("%s, on the other side: Check = %d", c.name, got)
		}
		l3 := frame.EtherLen
		if !c.uplink {
			l3 = vlan.EthLen
		}
		for _, mut := range []struct {
			name string
			mod  func(d []byte)
			skip bool
		}{
			{"destination MAC", func(d []byte) { d[5] ^= 2 }, false},
			{"source MAC", func(d []byte) { d[11] ^= 1 }, false},
			{"VID", func(d []byte) { d[15] += 30 }, c.uplink},
			{"EtherType", func(d []byte) { d[l3-1] ^= 1 }, false},
			{"hardware type", func(d []byte) { d[l3+1] = 6 }, false},
			{"operation", func(d []byte) { d[l3+7] = 2 }, false},
			{"sender MAC", func(d []byte) { d[l3+13] ^= 1 }, false},
			{"sender address", func(d []byte) { d[l3+17]++ }, false},
			{"target off the subnet", func(d []byte) { d[l3+26]++ }, false},
			{"truncated", func(d []byte) {}, false},
		} {
			if mut.skip {
				continue
			}
			d := append([]byte(nil), c.d...)
			mut.mod(d)
			if mut.name == "truncated" {
				d = d[:l3+27]
			}
			if got := g.Check(&frame.Frame{}, d, c.uplink); got != SinkBad {
				t.Errorf("%s, %s wrong: Check = %d, want SinkBad", c.name, mut.name, got)
			}
		}
	}
}

// fixICMP recomputes an ICMP message's checksum.
func fixICMP(p []byte) {
	p[2], p[3] = 0, 0
	binary.BigEndian.PutUint16(p[2:], frame.Checksum(p))
}
