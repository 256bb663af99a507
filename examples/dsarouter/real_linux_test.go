package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/dsa"
	"github.com/wirespeed/wirespeed/examples/internal/app"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/internal/nettest"
	"github.com/wirespeed/wirespeed/xmit/afpacket"
)

// The router on a real conduit: a veth end in a namespace of its own, the other end in a second
// namespace where the test plays the switch with a packet socket. It sends tagged frames as the
// switch would (tags written by hand from the kernel's formats, tag_dsa.c and tag_8021q.c, not
// with package dsa): the hosts' ARPs and pings, then traffic both ways, a TTL-1 packet from every
// LAN port and from the WAN, and a frame from a switch port that does not exist. It decodes the
// tags of what comes back by hand as the switch would and checks each frame: the right switch
// port, MACs, WAN VLAN, TTL, checksums, ICMP time exceeded quoting the sender's packet, echo
// replies; and that the router's accounting adds up.
func TestRealAFPacketEDSA(t *testing.T)  { testReal(t, app.AFPacket, "edsa", 7, 2) }
func TestRealAFPacket8021Q(t *testing.T) { testReal(t, app.AFPacket, "ocelot-8021q", 7, 1) }
func TestRealAFXDPEDSA(t *testing.T)     { testReal(t, app.AFXDP, "edsa", 0, 1) }
func TestRealAFXDP8021Q(t *testing.T)    { testReal(t, app.AFXDP, "ocelot-8021q", 35, 1) }

// switchTag writes plain frame p (DA, SA, an optional 802.1Q tag, EtherType, payload) as the
// switch sends it to the CPU from switch port `port`.
func switchTag(tagger string, p []byte, port int) []byte {
	var d []byte
	switch tagger {
	case "edsa":
		// 0xDADA 0x0000, then the DSA tag: cmd FORWARD (3) in bits 7-6 of byte 0, device 0,
		// source port in bits 7-3 of byte 1; an 802.1Q tag is folded in: "tagged" bit 5 of byte
		// 0, the TCI in bytes 2-3 (its CFI bit, 0 here, would move to bit 0 of byte 1).
		tag := []byte{0xda, 0xda, 0, 0, 3 << 6, byte(port << 3), 0, 0}
		rest := p[12:]
		if binary.BigEndian.Uint16(p[12:]) == frame.TypeVLAN {
			tag[4] |= 0x20
			tag[6], tag[7] = p[14]&^0x10, p[15]
			rest = p[16:]
		}
		d = append(append(append(d, p[:12]...), tag...), rest...)
	case "ocelot-8021q":
		// An 802.1Q tag (TPID 0x8100) whose VID is RSV 0b11 in bits 11-10, switch 0 in 8-6,
		// VBID 0, the port in bits 3-0.
		d = append(append(append(d, p[:12]...), 0x81, 0x00, 0x0c, byte(port)), p[12:]...)
	}
	return d
}

// cpuTag reads the tag the CPU put on d for the switch: the destination port and the plain frame,
// or an error where the switch would not accept it.
func cpuTag(tagger string, d []byte) (int, []byte, error) {
	switch tagger {
	case "edsa":
		if len(d) < 22 || d[12] != 0xda || d[13] != 0xda || d[14] != 0 || d[15] != 0 {
			return 0, nil, fmt.Errorf("no EDSA header: % x", d[:min(len(d), 22)])
		}
		b0, b1, b2, b3 := d[16], d[17], d[18], d[19]
		if b0>>6 != 1 || b0&0x1f != 0 || b1&0x06 != 0 {
			return 0, nil, fmt.Errorf("not FROM_CPU to device 0: % x", d[16:20])
		}
		p := append([]byte(nil), d[:12]...)
		if b0&0x20 != 0 {
			p = append(p, 0x81, 0x00, b2&^0x10|(b1&1)<<4, b3)
		} else if b2 != 0 || b3 != 0 {
			return 0, nil, fmt.Errorf("untagged FROM_CPU with VID %d (standalone is 0)", int(b2&0xf)<<8|int(b3))
		}
		return int(b1 >> 3), append(p, d[20:]...), nil
	case "ocelot-8021q":
		if len(d) < 18 || binary.BigEndian.Uint16(d[12:]) != frame.TypeVLAN {
			return 0, nil, fmt.Errorf("no 802.1Q switch tag")
		}
		vid := binary.BigEndian.Uint16(d[14:]) & 0xfff
		if vid&^0xf != 0xc00 {
			return 0, nil, fmt.Errorf("VID %#x is not a tag_8021q port VID of switch 0", vid)
		}
		return int(vid & 0xf), append(append([]byte(nil), d[:12]...), d[16:]...), nil
	}
	return 0, nil, fmt.Errorf("no decoder for %s", tagger)
}

// plainIPv4 builds an untagged (vid 0) or 802.1Q-tagged Ethernet frame around a 46-byte IPv4
// packet written by fill.
func plainIPv4(dst, src frame.MAC, vid int, fill func([]byte)) []byte {
	d := make([]byte, 0, 64)
	d = append(append(d, dst[:]...), src[:]...)
	if vid != 0 {
		d = append(d, 0x81, 0x00, byte(vid>>8), byte(vid))
	}
	d = append(d, 0x08, 0x00)
	ip := make([]byte, 46)
	fill(ip)
	return append(d, ip...)
}

func arpHello(lan int) []byte {
	d := make([]byte, 60)
	e := frame.Ether(d)
	e.SetDst(frame.MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	e.SetSrc(hostMAC(lan, 0))
	e.SetType(frame.TypeARP)
	a := d[14:]
	copy(a, []byte{0, 1, 8, 0, 6, 4, 0, 1})
	m := hostMAC(lan, 0)
	copy(a[8:], m[:])
	binary.BigEndian.PutUint32(a[14:], hostIP(lan, 0))
	binary.BigEndian.PutUint32(a[24:], hostIP(lan, 0))
	return d
}

// What the test's switch got back, by switch port and kind.
type got struct {
	fwd, icmp, echo [numSwPorts]int
}

func testReal(t *testing.T, backend app.Backend, tagger string, wanVID, workers int) {
	nettest.RequirePriv(t)
	rtr, sw := nettest.NewNS(t, "rtr"), nettest.NewNS(t, "sw")
	conduit, peer := nettest.Veth(t, rtr, sw, "cond", "swp")
	for _, ns := range []*nettest.NS{rtr, sw} { // no IPv6 chatter on the conduit
		ns.Exec(t, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
	}
	var routerMAC frame.MAC
	if err := rtr.Do(func() (err error) { routerMAC, err = app.IfaceMAC(conduit); return err }); err != nil {
		t.Fatal(err)
	}
	var swPort *afpacket.Port
	if err := sw.Do(func() (err error) {
		swPort, err = afpacket.Open(peer, &afpacket.Config{ReinsertVLAN: true}) // the switch tag stays in the bytes
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer swPort.Close()

	cfg := defaultConfig()
	cfg.Backend, cfg.Conduit, cfg.Workers, cfg.Tagger, cfg.WANVID, cfg.Interval = backend, conduit, workers, tagger, wanVID, 0
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started, finished := make(chan struct{}), make(chan struct{})
	cfg.ready = func() { close(started) }
	var out bytes.Buffer
	var res Result
	var runErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(finished)
		runErr = rtr.Do(func() (err error) { res, err = run(ctx, cfg, &out); return err })
	}()
	select {
	case <-started:
	case <-finished:
		t.Fatalf("router stopped at once: %v\n%s", runErr, out.String())
	case <-time.After(10 * time.Second):
		t.Fatal("router did not start")
	}

	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 1024})
	send := func(frames [][]byte) {
		t.Helper()
		b := frame.NewBatch(len(frames))
		if n, _ := pool.Alloc(b, len(frames)); n != len(frames) {
			t.Fatal("test pool empty")
		}
		for i, d := range frames {
			b.Frames[i].Resize(len(d))
			copy(b.Bytes(i), d)
		}
		if n, err := swPort.Send(b); n != len(frames) || err != nil {
			t.Fatalf("the switch's socket sent %d of %d: %v", n, len(frames), err)
		}
	}
	var g got
	var wrong []string
	rb := frame.NewBatch(64)
	collect := func(done func() bool) {
		deadline := time.Now().Add(5 * time.Second)
		for !done() && time.Now().Before(deadline) {
			if n, _ := swPort.Recv(rb); n == 0 {
				swPort.Wait(int64(time.Millisecond))
				continue
			}
			for i := range rb.Frames {
				if err := g.judge(tagger, rb.Bytes(i), routerMAC, wanVID); err != nil {
					wrong = append(wrong, err.Error())
				}
			}
			rb.Free()
		}
	}
	wanSide := func(fill func([]byte)) []byte {
		return switchTag(tagger, plainIPv4(routerMAC, gatewayMAC, wanVID, fill), swWAN)
	}
	lanSide := func(lan int, fill func([]byte)) []byte {
		return switchTag(tagger, plainIPv4(routerMAC, hostMAC(lan, 0), 0, fill), swLAN1+lan)
	}

	// The hosts say hello and ping the router (which teaches the bridge their ports, whichever
	// worker sees which frame); the internet pings the WAN address.
	var first [][]byte
	for lan := 0; lan < numLANPorts; lan++ {
		first = append(first, switchTag(tagger, arpHello(lan), swLAN1+lan),
			lanSide(lan, func(ip []byte) { echoRequest(ip, hostIP(lan, 0), lanRouterIP, uint16(lan)) }))
	}
	first = append(first, wanSide(func(ip []byte) { echoRequest(ip, netInternet|77, wanRouterIP, 9) }))
	send(first)
	collect(func() bool { return g.echo == [numSwPorts]int{1, 1, 1, 1, 1} })

	// Traffic both ways, TTL 1 from every side, and a switch port that does not exist.
	const perPort = 25
	var traffic [][]byte
	for k := 0; k < perPort; k++ {
		for lan := 0; lan < numLANPorts; lan++ {
			traffic = append(traffic,
				lanSide(lan, func(ip []byte) { udp(ip, hostIP(lan, 0), netInternet|uint32(k), 443, 64) }),
				wanSide(func(ip []byte) { udp(ip, netInternet|uint32(k), hostIP(lan, 0), 40000, 64) }))
		}
	}
	for lan := 0; lan < numLANPorts; lan++ {
		traffic = append(traffic, lanSide(lan, func(ip []byte) { udp(ip, hostIP(lan, 0), netInternet|1, 443, 1) }))
	}
	traffic = append(traffic, wanSide(func(ip []byte) { udp(ip, netInternet|2, hostIP(3, 0), 40000, 1) }),
		switchTag(tagger, plainIPv4(routerMAC, hostMAC(0, 0), 0, func(ip []byte) { udp(ip, hostIP(0, 0), netInternet, 443, 64) }), swUnknown))
	for len(traffic) > 0 { // in batches the socket's ring takes at once
		n := min(len(traffic), 50)
		send(traffic[:n])
		traffic = traffic[n:]
	}
	want := got{
		fwd:  [numSwPorts]int{perPort, perPort, perPort, perPort, numLANPorts * perPort},
		icmp: [numSwPorts]int{1, 1, 1, 1, 1},
		echo: [numSwPorts]int{1, 1, 1, 1, 1},
	}
	collect(func() bool { return g == want })
	cancel()
	wg.Wait()
	if runErr != nil {
		t.Fatalf("%v\n%s", runErr, out.String())
	}
	t.Logf("router output:\n%s", out.String())
	for _, w := range wrong {
		t.Error(w)
	}
	if g != want {
		t.Errorf("the switch got %+v, want %+v", g, want)
	}
	if !res.Balanced() {
		t.Errorf("accounting mismatch: %+v", res)
	}
	c := res.Routing
	if c.Forwarded != 2*numLANPorts*perPort || c.ICMPErrors != numLANPorts+1 || c.Echoed != numLANPorts+1 ||
		c.Local < numLANPorts || res.LocalReleased != c.Local || c.Dropped() != numLANPorts+1 {
		t.Errorf("router counters: %+v (local released %d)", c, res.LocalReleased)
	}
	if res.DSADrops[dsa.ReasonPort] == 0 { // the frame from switch port 6
		t.Errorf("no frame dropped for its unknown switch port: %v", res.DSADrops)
	}
	// AF_XDP copies the ICMP errors from the router's pool into its UMEM (AF_PACKET's sendmmsg
	// sends from any memory).
	if backend == app.AFXDP && res.TxCopied != numLANPorts+1 {
		t.Errorf("eth0 copied %d frames from the router's pool, want the %d ICMP errors", res.TxCopied, numLANPorts+1)
	}
}

// judge checks one frame the router sent to the switch and counts it.
func (g *got) judge(tagger string, d []byte, routerMAC frame.MAC, wanVID int) error {
	port, p, err := cpuTag(tagger, d)
	if err != nil {
		return err
	}
	if port < 0 || port >= numSwPorts {
		return fmt.Errorf("to switch port %d", port)
	}
	e := frame.Ether(p)
	l3 := 14
	routerIP := uint32(lanRouterIP)
	if port == swWAN {
		if e.Dst() != gatewayMAC {
			return fmt.Errorf("wan: to %v, not the gateway", e.Dst())
		}
		if wanVID != 0 {
			if binary.BigEndian.Uint16(p[12:]) != frame.TypeVLAN || int(binary.BigEndian.Uint16(p[14:])&0xfff) != wanVID {
				return fmt.Errorf("wan: not tagged with VID %d: % x", wanVID, p[12:18])
			}
			l3 = 18
		}
		routerIP = wanRouterIP
	} else if e.Dst() != hostMAC(port-swLAN1, 0) {
		return fmt.Errorf("lan%d: to %v, not its host", port+1, e.Dst())
	}
	if e.Src() != routerMAC || binary.BigEndian.Uint16(p[l3-2:]) != frame.TypeIPv4 {
		return fmt.Errorf("port %d: from %v, EtherType % x", port, e.Src(), p[l3-2:l3])
	}
	ip, err := frame.ParseIPv4(p[l3:])
	if err != nil || !ip.ChecksumOK() {
		return fmt.Errorf("port %d: IPv4 %v, checksum ok %v", port, err, err == nil && ip.ChecksumOK())
	}
	if port != swWAN && ip.Dst() != hostIP(port-swLAN1, 0) || port == swWAN && ip.Dst()&^maskNet != netInternet {
		return fmt.Errorf("port %d: to %v", port, ip.DstAddr())
	}
	switch ip.Protocol() {
	case frame.ProtoUDP:
		fromLAN := ip.Src()&^0xff == lanNet
		if ip.TTL() != 63 || fromLAN != (port == swWAN) || !fromLAN && ip.Src()&^maskNet != netInternet {
			return fmt.Errorf("port %d: forwarded from %v with TTL %d", port, ip.SrcAddr(), ip.TTL())
		}
		g.fwd[port]++
		return nil
	case frame.ProtoICMP:
		m := ip.Payload()
		if ip.Src() != routerIP || ip.TTL() != 64 || len(m) < 8 || frame.Checksum(m) != 0 {
			return fmt.Errorf("port %d: ICMP from %v TTL %d, %d bytes, checksum %#x", port, ip.SrcAddr(), ip.TTL(), len(m), frame.Checksum(m))
		}
		switch m[0] {
		case 0:
			g.echo[port]++
			return nil
		case 11:
			q, err := frame.ParseIPv4(m[8:])
			if m[1] != 0 || err != nil || !q.ChecksumOK() || q.TTL() != 1 || q.Src() != ip.Dst() || q.Protocol() != frame.ProtoUDP {
				return fmt.Errorf("port %d: time exceeded code %d quoting % x", port, m[1], m[8:min(len(m), 28)])
			}
			g.icmp[port]++
			return nil
		}
		return fmt.Errorf("port %d: ICMP type %d", port, m[0])
	}
	return fmt.Errorf("port %d: protocol %d", port, ip.Protocol())
}
