package trunkgen

import (
	"encoding/binary"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/vlan"
)

// SinkCounts is what the far ends received from the router, every frame checked by Check, and the
// ARP replies they sent.
type SinkCounts struct {
	Forwarded    uint64 // the generator's UDP, routed
	TimeExceeded uint64 // ICMP time exceeded for a TTL-1 frame, from the router back to its sender
	Unreachable  uint64 // ICMP host unreachable (a neighbour that did not answer ARP) or, with a routes file, network unreachable
	ARP          uint64 // the router's ARP: requests (broadcast, or unicast probes), announcements
	Bad          uint64 // anything else

	ARPReplies uint64 // the hosts' answers to the router's requests (sent, not received)
}

// Total is every frame the far ends received.
func (s SinkCounts) Total() uint64 {
	return s.Forwarded + s.TimeExceeded + s.Unreachable + s.ARP + s.Bad
}

// Verdicts of Check.
const (
	SinkForwarded = iota
	SinkTimeExceeded
	SinkUnreachable
	SinkARP
	SinkBad
)

// Addresses of the plan, as uint32.
const (
	upstreamNet  = 0xc6120000 // 198.18.0.0/15: the upstream's hosts
	upstreamMask = 0xfffe0000
	uplinkAddr   = 0xc0000201 // 192.0.2.1, the router on the uplink
	uplinkNet    = 0xc0000200 // 192.0.2.0/24
)

// The hosts the generator plays on VLAN i (it answers ARP for them): 10.0.i.firstHost to
// 10.0.i.lastHost. Its downstream traffic goes to the first downstreamHosts of them.
const (
	firstHost = 2
	lastHost  = 251
)

var broadcastMAC = frame.MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// hostVLAN returns i if a is 10.0.i.h with i in 1..vlans and h in lo..hi, else 0.
func hostVLAN(a uint32, vlans int, lo, hi uint32) int {
	i := int(a>>8) & 0xff
	if a>>16 != 0x0a00 || i < 1 || i > vlans || a&0xff < lo || a&0xff > hi {
		return 0
	}
	return i
}

// Check judges one frame a far end received: f (bytes d) came out of the trunk (or of an
// aggregate member) or, if uplink, out of the uplink. It returns SinkBad unless the frame is one the
// router must send for the generator's traffic:
//
//   - a forwarded UDP packet: on the egress interface (the uplink untagged, VLAN i tagged with VID
//     100+i, in the bytes or out of band), from the router's MAC on it (RouterMAC), to its
//     neighbour's MAC (the gateway's, GatewayMAC, on the uplink; on VLAN i the destination host's,
//     HostMAC(i, h) for 10.0.i.h; the static MAC of Config.Neighbours' interfaces), TTL 63, IPv4
//     checksum right, between a VLAN host and the upstream; without Config.OwnRoutes also on the
//     interface the default table routes it to (the uplink for 198.18.0.0/15, VLAN i for
//     10.0.i.0/24); with Config.OwnRoutes, to any host the generator plays on the egress VLAN;
//   - an ICMP time exceeded, or host unreachable (or, with Config.OwnRoutes, network unreachable)
//     for a frame the generator sent: back out the interface its source is on, to the sender's MAC,
//     from the router's address there (192.0.2.1, 10.0.i.1), TTL 64, both checksums right, quoting
//     the generator's header (TTL 1 for time exceeded);
//   - an ARP request from the router's address and MAC on the interface (see checkARP).
func (g *Generator) Check(f *frame.Frame, d []byte, uplink bool) int {
	v, _, _ := g.check(f, d, uplink)
	return v
}

// check is Check; for an ARP request it also returns the interface and the target address.
func (g *Generator) check(f *frame.Frame, d []byte, uplink bool) (verdict, id int, target uint32) {
	if len(d) < frame.EtherLen {
		return SinkBad, 0, 0
	}
	e := frame.Ether(d)
	id, l3 := IfUplink, frame.EtherLen
	tagged, tci := f.Flags&frame.FlagVLAN != 0, f.TCI
	if !tagged && e.Type() == vlan.TPID8021Q {
		if len(d) < vlan.EthLen {
			return SinkBad, 0, 0
		}
		tagged, tci, l3 = true, binary.BigEndian.Uint16(d[14:]), vlan.EthLen
	}
	if tagged == uplink {
		return SinkBad, 0, 0 // tagged on the uplink, or untagged on the trunk
	}
	if tagged {
		if id = int(tci&0xfff) - int(VID(0)); id < 1 || id > g.cfg.VLANs {
			return SinkBad, 0, 0
		}
	}
	if e.Src() != RouterMAC(id) {
		return SinkBad, 0, 0
	}
	switch binary.BigEndian.Uint16(d[l3-2:]) {
	case frame.TypeARP:
		v, tpa := g.checkARP(e, d[l3:], id)
		return v, id, tpa
	case frame.TypeIPv4:
	default:
		return SinkBad, 0, 0
	}
	ip, err := frame.ParseIPv4(d[l3:])
	if err != nil || !ip.ChecksumOK() || ip.HeaderLen() != frame.IPv4MinLen || ip.IsFragment() {
		return SinkBad, 0, 0
	}
	switch ip.Protocol() {
	case frame.ProtoUDP:
		if ip.TTL() != 63 {
			return SinkBad, 0, 0
		}
		up := hostVLAN(ip.Src(), g.cfg.VLANs, firstHost, firstHost) != 0 && ip.Dst()&upstreamMask == upstreamNet
		last := uint32(firstHost + g.dsts - 1)
		down := ip.Src()&upstreamMask == upstreamNet && hostVLAN(ip.Dst(), g.cfg.VLANs, firstHost, last) != 0
		switch {
		case !up && !down:
			return SinkBad, 0, 0
		case g.cfg.OwnRoutes:
			if id == IfUplink && e.Dst() != g.gwMAC || id != IfUplink && !g.playsMAC(id, e.Dst()) {
				return SinkBad, 0, 0
			}
		case up && id != IfUplink, down && id != hostVLAN(ip.Dst(), g.cfg.VLANs, firstHost, last):
			return SinkBad, 0, 0
		case up && e.Dst() != g.gwMAC, down && e.Dst() != g.hostMAC(id, int(ip.Dst()&0xff)):
			return SinkBad, 0, 0
		}
		return SinkForwarded, id, 0
	case frame.ProtoICMP:
		return g.checkICMP(e, ip, id), id, 0
	}
	return SinkBad, 0, 0
}

// hostMAC is the MAC the router sends to for host h of VLAN i: HostMAC(i, h), as the host
// answered ARP, or the VLAN's -nexthop MAC.
func (g *Generator) hostMAC(i, h int) frame.MAC {
	if m := g.static[i]; m != (frame.MAC{}) {
		return m
	}
	return HostMAC(i, h)
}

// playsMAC reports whether m is the MAC the router knows for one of the hosts the generator plays
// on VLAN i.
func (g *Generator) playsMAC(i int, m frame.MAC) bool {
	if s := g.static[i]; s != (frame.MAC{}) {
		return m == s
	}
	h := int(m[5])
	return h >= firstHost && h <= lastHost && m == HostMAC(i, h)
}

// checkARP judges an ARP frame (a, the bytes after the L2 header e) the router sent on interface
// id: a request (operation 1) from the router's MAC and address on id, either an announcement
// (broadcast, the target the router's own address) or a request for a host address of id's subnet,
// broadcast or, as a probe, unicast to the MAC of the host the generator plays there. It returns
// SinkARP and the target address, or SinkBad.
func (g *Generator) checkARP(e frame.Ether, a []byte, id int) (int, uint32) {
	if len(a) < 28 || binary.BigEndian.Uint64(a[0:8]) != 0x0001080006040001 || frame.MAC(a[8:14]) != RouterMAC(id) {
		return SinkBad, 0
	}
	spa, tpa := binary.BigEndian.Uint32(a[14:]), binary.BigEndian.Uint32(a[24:])
	own, net := uint32(uplinkAddr), uint32(uplinkNet)
	if id != IfUplink {
		own, net = 0x0a000001|uint32(id)<<8, 0x0a000000|uint32(id)<<8
	}
	switch {
	case spa != own:
		return SinkBad, 0
	case tpa == own: // an announcement
		if e.Dst() != broadcastMAC {
			return SinkBad, 0
		}
		return SinkARP, 0
	case tpa&^0xff != net || tpa&0xff == 0 || tpa&0xff == 0xff:
		return SinkBad, 0
	}
	if m, ok := g.answers(id, tpa); e.Dst() != broadcastMAC && (!ok || e.Dst() != m) {
		return SinkBad, 0
	}
	return SinkARP, tpa
}

// answers returns the MAC of the host the generator plays at address a on interface id: the
// gateway (GatewayMAC) on the uplink, 10.0.i.h (HostMAC(i, h)) on VLAN i.
func (g *Generator) answers(id int, a uint32) (frame.MAC, bool) {
	if id == IfUplink {
		return GatewayMAC, a == g.gw
	}
	h := int(a & 0xff)
	return HostMAC(id, h), h >= firstHost && h <= lastHost
}

// reply appends to b (a batch of the generator's pool) the answer the host at tpa on interface id
// gives the router's request: to the router's MAC, tagged with the VLAN's VID on the trunk.
func (g *Generator) reply(b *frame.Batch, id int, tpa uint32) bool {
	m, ok := g.answers(id, tpa)
	if !ok {
		return false
	}
	if n, _ := g.cfg.Pool.Alloc(b, 1); n == 0 {
		return false
	}
	i := len(b.Frames) - 1
	l3 := frame.EtherLen
	if id != IfUplink {
		l3 = vlan.EthLen
	}
	b.Frames[i].Resize(l3 + 46)
	d := b.Bytes(i)
	clear(d)
	e := frame.Ether(d)
	e.SetDst(RouterMAC(id))
	e.SetSrc(m)
	if id != IfUplink {
		binary.BigEndian.PutUint16(d[12:], vlan.TPID8021Q)
		binary.BigEndian.PutUint16(d[14:], VID(id))
	}
	binary.BigEndian.PutUint16(d[l3-2:], frame.TypeARP)
	a := d[l3:]
	binary.BigEndian.PutUint64(a[0:], 0x0001080006040002)
	copy(a[8:], m[:])
	binary.BigEndian.PutUint32(a[14:], tpa)
	r := RouterMAC(id)
	copy(a[18:], r[:])
	own := uint32(uplinkAddr)
	if id != IfUplink {
		own = 0x0a000001 | uint32(id)<<8
	}
	binary.BigEndian.PutUint32(a[24:], own)
	return true
}

// checkICMP judges an ICMP error the router sent on interface id (see Check).
func (g *Generator) checkICMP(e frame.Ether, ip frame.IPv4, id int) int {
	icmp := ip.Payload()
	if ip.TTL() != 64 || len(icmp) < 8+frame.IPv4MinLen || frame.Checksum(icmp) != 0 {
		return SinkBad
	}
	verdict := SinkBad
	switch {
	case icmp[0] == 11 && icmp[1] == 0:
		verdict = SinkTimeExceeded
	case icmp[0] == 3 && icmp[1] == 1: // host unreachable: a neighbour that did not answer
		verdict = SinkUnreachable
	case icmp[0] == 3 && icmp[1] == 0 && g.cfg.OwnRoutes: // network unreachable: no route
		verdict = SinkUnreachable
	}
	q := frame.IPv4(icmp[8:])
	if verdict == SinkBad || q.Src() != ip.Dst() || q.Protocol() != frame.ProtoUDP || (verdict == SinkTimeExceeded && q.TTL() != 1) {
		return SinkBad
	}
	// Back to the sender: a VLAN host (10.0.i.2, on VLAN i) or the upstream (on the uplink).
	sender, from, mac := 0, uint32(uplinkAddr), GatewayMAC
	if i := hostVLAN(q.Src(), g.cfg.VLANs, firstHost, firstHost); i != 0 {
		sender, from, mac = i, 0x0a000001|uint32(i)<<8, HostMAC(i, 2)
	} else if q.Src()&upstreamMask != upstreamNet {
		return SinkBad
	}
	if id != sender || ip.Src() != from || e.Dst() != mac {
		return SinkBad
	}
	return verdict
}

// Answer plays the hosts for one frame a far end received (f, bytes d; from the uplink if uplink):
// if it is an ARP request of the router's for a host the generator plays (the gateway on the
// uplink, 10.0.i.h with h 2-251 on VLAN i), it appends the host's reply to out (a batch of
// Config.Pool) and reports true. Tests that route single frames answer the router's requests with
// it.
func (g *Generator) Answer(f *frame.Frame, d []byte, uplink bool, out *frame.Batch) bool {
	v, id, tpa := g.check(f, d, uplink)
	return v == SinkARP && g.reply(out, id, tpa)
}
