package main

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wirespeed/wirespeed/examples/internal/app"
	"github.com/wirespeed/wirespeed/examples/internal/trunkgen"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/vlan"
	"github.com/wirespeed/wirespeed/xmit"
)

// routeVia forwards one frame from src (untagged on the uplink if vl == 0, else tagged on the
// trunk) to dst through a router built from cfg and reports the egress port and VID (0: untagged),
// or -1 if nothing left.
func routeVia(t *testing.T, cfg Config, vl int, dst uint32) (port int, vid uint16) {
	port, vid, _ = routeProto(t, cfg, vl, dst)
	return port, vid
}

// routeProto is routeVia that also reports the IP protocol of what left. The router resolves its
// next hop by ARP, which the in-memory hosts (trunkgen.Generator.Answer) answer.
func routeProto(t *testing.T, cfg Config, vl int, dst uint32) (port int, vid uint16, proto uint8) {
	t.Helper()
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 64})
	r, err := buildRouter(cfg, routerMAC, map[string]uint32{"eth9": 0}, pool)
	if err != nil {
		t.Fatal(err)
	}
	res := app.NewResolver(r.Table, r.Demux, 8)
	g := trunkgen.New(trunkgen.Config{Pool: pool, VLANs: cfg.VLANs, Neighbours: cfg.Neighbours, Gateway: cfg.Gateway})
	var ports []xmit.Port
	var peers []*xmit.MemPort
	for i := 0; i < numPorts; i++ {
		a, z := xmit.Pipe(pool, nil)
		ports, peers = append(ports, a), append(peers, z)
	}
	b, answers := frame.NewBatch(8), frame.NewBatch(8)
	pool.Alloc(b, 1)
	b.Frames[0].Resize(64)
	d := b.Bytes(0)
	in := portUplink
	if vl == 0 {
		frame.Ether(d).SetDst(routerMAC(ifUplink))
		frame.Ether(d).SetType(frame.TypeIPv4)
		udp(d[14:], 0xc6120001, dst, 64)
	} else {
		in = portTrunk
		frame.Ether(d).SetDst(routerMAC(vl))
		binary.BigEndian.PutUint16(d[12:], vlan.TPID8021Q)
		binary.BigEndian.PutUint16(d[14:], vidOf(vl))
		binary.BigEndian.PutUint16(d[16:], frame.TypeIPv4)
		udp(d[18:], 0x0a000002|uint32(vl)<<8, dst, 64)
	}
	w := r.NewWorker(8)
	res.Step(w, uint16(in), b, ports)
	r.FlushRoutes() // as trunkgen.Poll does
	for round := 0; round < 10; round++ {
		res.Poll(w, ports)
		port = -1
		for p, z := range peers {
			for n, _ := z.Recv(b); n > 0; n, _ = z.Recv(b) {
				for i := range b.Frames {
					f, d := &b.Frames[i], b.Bytes(i)
					if g.Answer(f, d, p == portUplink, answers) {
						continue
					}
					l3, v := 14, uint16(0)
					if f.Flags&frame.FlagVLAN != 0 {
						v = f.TCI & 0xfff
					} else if binary.BigEndian.Uint16(d[12:]) == vlan.TPID8021Q {
						v, l3 = binary.BigEndian.Uint16(d[14:])&0xfff, 18
					}
					if binary.BigEndian.Uint16(d[l3-2:]) == frame.TypeIPv4 {
						port, vid, proto = p, v, d[l3+9]
					}
				}
				b.Free()
			}
			z.Send(answers)
		}
		if port >= 0 {
			return port, vid, proto
		}
		for p, pt := range ports {
			if n, _ := pt.Recv(b); n > 0 {
				res.Step(w, uint16(p), b, ports)
				r.FlushRoutes()
			}
		}
	}
	return -1, 0, 0
}

func TestRoutesFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cfg := defaultConfig()
	// Default table: 10.0.5.0/24 on vlan105, the rest upstream.
	if p, vid := routeVia(t, cfg, 0, 0x0a000509); p != portTrunk || vid != 105 {
		t.Errorf("default table: 10.0.5.9 left on port %d VID %d, want trunk VID 105", p, vid)
	}
	// fib.Load format: 198.18.0.0/15 to the host on VLAN 3 (vlan103), 10.0.0.0/8 upstream.
	cfg.Routes = write("plain", "198.18.0.0/15 3\n10.0.0.0/8 0 # upstream\n")
	if p, vid := routeVia(t, cfg, 1, 0xc6120001); p != portTrunk || vid != 103 {
		t.Errorf("plain file: 198.18.0.1 left on port %d VID %d, want trunk VID 103", p, vid)
	}
	if p, vid := routeVia(t, cfg, 0, 0x0a000509); p != portUplink || vid != 0 {
		t.Errorf("plain file: 10.0.5.9 left on port %d VID %d, want the uplink", p, vid)
	}
	if p, vid, proto := routeProto(t, cfg, 1, 0x08080808); p != portTrunk || vid != 101 || proto != frame.ProtoICMP {
		t.Errorf("plain file: 8.8.8.8 (no route): port %d VID %d protocol %d left, want ICMP back on the trunk, VID 101", p, vid, proto)
	}
	// ip route format, by interface name (vlanNNN, uplink, or the uplink's real name).
	cfg.Routes = write("iproute", "default via 192.0.2.2 dev eth9\n10.0.7.0/24 dev vlan107 proto kernel scope link src 10.0.7.1\n198.18.0.0/15 via 10.0.2.9 dev vlan102\n")
	cfg.IPRoute = true
	if p, vid := routeVia(t, cfg, 1, 0xc6120001); p != portTrunk || vid != 102 {
		t.Errorf("ip route file: 198.18.0.1 left on port %d VID %d, want trunk VID 102", p, vid)
	}
	if p, vid := routeVia(t, cfg, 0, 0x0a000709); p != portTrunk || vid != 107 {
		t.Errorf("ip route file: 10.0.7.9 left on port %d VID %d, want trunk VID 107", p, vid)
	}
	if p, vid := routeVia(t, cfg, 1, 0x08080808); p != portUplink || vid != 0 {
		t.Errorf("ip route file: 8.8.8.8 left on port %d VID %d, want the uplink", p, vid)
	}
	// Errors: unknown device, bad syntax, missing file.
	for _, c := range []struct {
		iproute bool
		text    string
	}{{true, "10.1.0.0/16 dev wlan0\n"}, {false, "10.1.0.0/99 1\n"}} {
		cfg.IPRoute, cfg.Routes = c.iproute, write("bad", c.text)
		if _, err := buildRouter(cfg, routerMAC, nil, nil); err == nil || !strings.Contains(err.Error(), "-routes") {
			t.Errorf("%q accepted (%v)", c.text, err)
		}
	}
	cfg.Routes = filepath.Join(dir, "none")
	if _, err := buildRouter(cfg, routerMAC, nil, nil); err == nil {
		t.Error("missing routes file accepted")
	}
}
