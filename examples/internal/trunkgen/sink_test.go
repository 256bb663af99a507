package trunkgen

import (
	"encoding/binary"
	"testing"

	"github.com/wirespeed/wirespeed/examples/internal/app"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/vlan"
	"github.com/wirespeed/wirespeed/xmit"
)

// routed sends one generator-like frame through a router built from plan and returns what came out
// of each far end (trunk, uplink), as copies.
func routed(t *testing.T, plan Plan, upstream bool, src, dst uint32, ttl byte) (trunk, uplink [][]byte) {
	t.Helper()
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 64})
	plan.Pool = pool
	r, _, err := BuildRouter(plan, RouterMAC, nil)
	if err != nil {
		t.Fatal(err)
	}
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
	r.NewWorker(8).Forward(uint16(in), b, ports)
	out := [NumPorts][][]byte{}
	for p, z := range peers {
		for {
			n, _ := z.Recv(b)
			if n == 0 {
				break
			}
			for i := range b.Frames {
				out[p] = append(out[p], append([]byte(nil), b.Bytes(i)...))
			}
			b.Free()
		}
	}
	return out[PortTrunk], out[PortUplink]
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
			{"ICMP type", func(d []byte) { p := ip(d)[20:]; p[0] = 3; fixICMP(p) }, !icmp},
			{"quoted TTL", func(d []byte) { p := ip(d)[20:]; p[8+8] = 2; fixICMP(p) }, !icmp},
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

	// -nexthop MACs: the sink expects them where the router uses them.
	nb := app.Neighbours{"uplink": {2, 0, 0, 0, 0, 9}, "trunk": {2, 0, 0, 0, 0, 8}}
	_, up = routed(t, Plan{VLANs: 20, Neighbours: nb}, true, host3, upHost, 64)
	tr, _ = routed(t, Plan{VLANs: 20, Neighbours: nb}, false, upHost, host5x, 64)
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

// fixICMP recomputes an ICMP message's checksum.
func fixICMP(p []byte) {
	p[2], p[3] = 0, 0
	binary.BigEndian.PutUint16(p[2:], frame.Checksum(p))
}
