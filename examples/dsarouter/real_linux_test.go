package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/dsa"
	"github.com/wirespeed/wirespeed/examples/internal/app"
	"github.com/wirespeed/wirespeed/examples/internal/optest"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/internal/nettest"
	"github.com/wirespeed/wirespeed/xmit/afpacket"
)

// The router on a real conduit: a veth end in a namespace of its own, the other end in a second
// namespace where the test plays the switch, its hosts and the ISP's gateway with a packet socket.
// It sends tagged frames as the switch would (tags written by hand from the kernel's formats,
// tag_dsa.c and tag_8021q.c, not with package dsa): the hosts' ARPs (lan1's and lan2's ask for the
// router's address, lan3's and lan4's only announce themselves) and pings, a frame each way for
// every host, then traffic both ways, a TTL-1 packet from every LAN port and from the WAN, and a
// frame from a switch port that does not exist. It decodes the tags of what comes back by hand as
// the switch would, answers the router's ARP requests for the hosts and the gateway from their
// ports, and checks each frame: the right switch port, MACs, WAN VLAN, TTL, checksums, ICMP time
// exceeded quoting the sender's packet, echo replies, ARP (the router's replies out of the asking
// host's port, its requests for lan3's and lan4's hosts flooded to all four LAN ports, for the
// gateway out of the WAN port); that the router's neighbour table has the hosts and the gateway;
// and that its accounting adds up.
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

// arpFrame builds an ARP packet (operation op; sender sha/spa, target tha/tpa) in an untagged
// (vid 0) or 802.1Q-tagged Ethernet frame from src to dst.
func arpFrame(dst, src frame.MAC, vid int, op uint16, sha frame.MAC, spa uint32, tha frame.MAC, tpa uint32) []byte {
	d := make([]byte, 0, 64)
	d = append(append(d, dst[:]...), src[:]...)
	if vid != 0 {
		d = append(d, 0x81, 0x00, byte(vid>>8), byte(vid))
	}
	a := make([]byte, 2+46)
	binary.BigEndian.PutUint16(a, frame.TypeARP)
	binary.BigEndian.PutUint64(a[2:], 0x0001080006040000|uint64(op))
	copy(a[2+8:], sha[:])
	binary.BigEndian.PutUint32(a[2+14:], spa)
	copy(a[2+18:], tha[:])
	binary.BigEndian.PutUint32(a[2+24:], tpa)
	return append(d, a...)
}

// arpHello is what LAN host (lan, 0) sends when its link comes up: a request for the router's
// address (ask), or else a gratuitous ARP announcing its own.
func arpHello(lan int, ask bool) []byte {
	tpa := hostIP(lan, 0)
	if ask {
		tpa = lanRouterIP
	}
	return arpFrame(broadcast, hostMAC(lan, 0), 0, 1, hostMAC(lan, 0), hostIP(lan, 0), frame.MAC{}, tpa)
}

// What the test's switch got back, by switch port and kind; ARP requests by switch port and the
// address asked for, the router's ARP replies by switch port; answers to send back.
type got struct {
	fwd, icmp, echo [numSwPorts]int
	requests        map[[2]uint32]int
	replies         [numSwPorts]int
	answers         [][]byte
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
	rt := optest.Start(t, rtr, func(ctx context.Context, ready func(), out io.Writer) (Result, error) {
		cfg.ready = ready
		return run(ctx, cfg, out)
	})

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
	g := got{requests: map[[2]uint32]int{}}
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
			if len(g.answers) > 0 {
				send(g.answers)
				g.answers = g.answers[:0]
			}
		}
	}
	wanSide := func(fill func([]byte)) []byte {
		return switchTag(tagger, plainIPv4(routerMAC, gatewayMAC, wanVID, fill), swWAN)
	}
	lanSide := func(lan int, fill func([]byte)) []byte {
		return switchTag(tagger, plainIPv4(routerMAC, hostMAC(lan, 0), 0, fill), swLAN1+lan)
	}

	// The hosts say hello (lan1's and lan2's ask for the router's address, which teaches the router
	// theirs) and ping the router (which teaches the bridge their ports, whichever worker sees which
	// frame); the internet pings the WAN address.
	var first [][]byte
	for lan := 0; lan < numLANPorts; lan++ {
		first = append(first, switchTag(tagger, arpHello(lan, lan < 2), swLAN1+lan),
			lanSide(lan, func(ip []byte) { echoRequest(ip, hostIP(lan, 0), lanRouterIP, uint16(lan)) }))
	}
	first = append(first, wanSide(func(ip []byte) { echoRequest(ip, netInternet|77, wanRouterIP, 9) }))
	send(first)
	collect(func() bool {
		return g.echo == [numSwPorts]int{1, 1, 1, 1, 1} && g.replies == [numSwPorts]int{1, 1, 0, 0, 0}
	})
	// A frame each way for every host: the router resolves lan3's and lan4's hosts and the gateway
	// (the switch answers), holding the frames meanwhile. The frames for the internet follow lan1's
	// once the gateway is resolved: four held for it at once would overflow its hold queue (three
	// frames), as they do whenever they reach the router before the switch's answer.
	var resolve [][]byte
	for lan := 0; lan < numLANPorts; lan++ {
		resolve = append(resolve, wanSide(func(ip []byte) { udp(ip, netInternet|200, hostIP(lan, 0), 40000, 64) }))
	}
	toInternet := func(lan int) []byte {
		return lanSide(lan, func(ip []byte) { udp(ip, hostIP(lan, 0), netInternet|200, 443, 64) })
	}
	send(append(resolve, toInternet(0)))
	collect(func() bool { return g.fwd == [numSwPorts]int{1, 1, 1, 1, 1} })
	send([][]byte{toInternet(1), toInternet(2), toInternet(3)})
	collect(func() bool { return g.fwd == [numSwPorts]int{1, 1, 1, 1, numLANPorts} })

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
		fwd:  [numSwPorts]int{perPort + 1, perPort + 1, perPort + 1, perPort + 1, numLANPorts * (perPort + 1)},
		icmp: [numSwPorts]int{1, 1, 1, 1, 1},
		echo: [numSwPorts]int{1, 1, 1, 1, 1},
	}
	same := func() bool { return g.fwd == want.fwd && g.icmp == want.icmp && g.echo == want.echo }
	collect(same)
	res, out := rt.Stop()
	if rt.Err() != nil {
		t.FailNow()
	}
	t.Logf("router output:\n%s", out)
	for _, w := range wrong {
		t.Error(w)
	}
	if !same() || g.replies != [numSwPorts]int{1, 1, 0, 0, 0} {
		t.Errorf("the switch got %+v, want %+v (and the router's ARP replies on lan1 and lan2)", g, want)
	}
	// The router asked for lan3's and lan4's hosts on every LAN port (flooded), and for the
	// gateway on the WAN port; it knew lan1's and lan2's hosts from their requests.
	for _, lan := range []int{2, 3} {
		for u := swLAN1; u < swLAN1+numLANPorts; u++ {
			if g.requests[[2]uint32{uint32(u), hostIP(lan, 0)}] == 0 {
				t.Errorf("no request for %v out of lan%d: %v", addr(hostIP(lan, 0)), u+1, g.requests)
			}
		}
	}
	gw := binary.BigEndian.Uint32(gatewayIP.AsSlice())
	if g.requests[[2]uint32{swWAN, gw}] == 0 || g.requests[[2]uint32{swLAN1, hostIP(0, 0)}] != 0 {
		t.Errorf("ARP requests by port and address: %v", g.requests)
	}
	for lan := 0; lan < numLANPorts; lan++ {
		if w := fmt.Sprintf("%v dev br-lan lladdr %v ", addr(hostIP(lan, 0)), hostMAC(lan, 0)); !strings.Contains(out, w) {
			t.Errorf("the router's neighbour table lacks %q", w)
		}
	}
	if w := fmt.Sprintf("%v dev %s lladdr %v ", gatewayIP, wanIfName(cfg), gatewayMAC); !strings.Contains(out, w) {
		t.Errorf("the router's neighbour table lacks %q", w)
	}
	if !res.Balanced() {
		t.Errorf("accounting mismatch: %+v", res)
	}
	c, n := res.Routing, res.Neigh
	if c.Forwarded != 2*numLANPorts*(perPort+1) || c.ICMPErrors != numLANPorts+1 || c.Echoed != numLANPorts+1 ||
		c.Local < numLANPorts || n.ARPIn != c.Local || res.LocalReleased != 0 || c.Dropped() != numLANPorts+1 ||
		n.Failed != 0 || n.RepliesSent != 2 || n.Learned != 2 {
		t.Errorf("router counters: %+v, neighbours %+v (local released %d)", c, n, res.LocalReleased)
	}
	if res.DSADrops[dsa.ReasonPort] == 0 { // the frame from switch port 6
		t.Errorf("no frame dropped for its unknown switch port: %v", res.DSADrops)
	}
	// AF_XDP copies the frames of the router's pool into its UMEM (AF_PACKET's sendmmsg sends from
	// any memory): the ICMP errors, the ARP frames and their flood copies, the held frames resumed.
	if fromPool := c.ICMPErrors + app.ARPSent(n) + res.Flooded + n.Ready; backend == app.AFXDP && res.TxCopied != fromPool {
		t.Errorf("eth0 copied %d frames from the router's pool, want the %d ICMP errors, ARP frames and held frames", res.TxCopied, fromPool)
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
	if port == swWAN && wanVID != 0 {
		if binary.BigEndian.Uint16(p[12:]) != frame.TypeVLAN || int(binary.BigEndian.Uint16(p[14:])&0xfff) != wanVID {
			return fmt.Errorf("wan: not tagged with VID %d: % x", wanVID, p[12:18])
		}
		l3 = 18
	}
	if e.Src() == routerMAC && binary.BigEndian.Uint16(p[l3-2:]) == frame.TypeARP {
		return g.arp(tagger, p, l3, port, routerMAC, wanVID)
	}
	if port == swWAN {
		if e.Dst() != gatewayMAC {
			return fmt.Errorf("wan: to %v, not the gateway", e.Dst())
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

// arp checks an ARP frame the router sent out of switch port port (p, its plain frame; the ARP
// packet at l3), counts it, and queues the answer of the host or gateway a request is for when it
// is behind that port.
func (g *got) arp(tagger string, p []byte, l3, port int, routerMAC frame.MAC, wanVID int) error {
	a := p[l3:]
	if len(a) < 28 || binary.BigEndian.Uint64(a) & ^uint64(0xffff) != 0x0001080006040000 || frame.MAC(a[8:14]) != routerMAC {
		return fmt.Errorf("port %d: ARP % x", port, a[:min(len(a), 28)])
	}
	own := uint32(lanRouterIP)
	if port == swWAN {
		own = wanRouterIP
	}
	spa, tpa := binary.BigEndian.Uint32(a[14:]), binary.BigEndian.Uint32(a[24:])
	dst := frame.Ether(p).Dst()
	switch op := binary.BigEndian.Uint16(a[6:]); {
	case spa != own:
		return fmt.Errorf("port %d: ARP from %v", port, addr(spa))
	case op == 2: // the router's answer to a host that asked for its address
		if port == swWAN || dst != hostMAC(port-swLAN1, 0) || binary.BigEndian.Uint32(a[24:]) != hostIP(port-swLAN1, 0) {
			return fmt.Errorf("port %d: ARP reply to %v (%v)", port, dst, addr(tpa))
		}
		g.replies[port]++
		return nil
	case op != 1 || dst != broadcast && tpa == own:
		return fmt.Errorf("port %d: ARP operation %d to %v", port, op, dst)
	}
	g.requests[[2]uint32{uint32(port), tpa}]++
	// The host or gateway asked for answers, if it is behind this port.
	m, vid := frame.MAC{}, 0
	switch {
	case port == swWAN && tpa == binary.BigEndian.Uint32(gatewayIP.AsSlice()):
		m, vid = gatewayMAC, wanVID
	case port != swWAN && tpa == hostIP(port-swLAN1, 0):
		m = hostMAC(port-swLAN1, 0)
	default:
		return nil // an announcement, or a request for a host behind another port
	}
	g.answers = append(g.answers, switchTag(tagger, arpFrame(routerMAC, m, vid, 2, m, tpa, routerMAC, own), port))
	return nil
}
