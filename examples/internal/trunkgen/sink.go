package trunkgen

import (
	"encoding/binary"
	"fmt"

	"github.com/wirespeed/wirespeed/examples/internal/app"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/vlan"
)

// SinkCounts is what the far ends received from the router, every frame checked by Check.
type SinkCounts struct {
	Forwarded    uint64 // the generator's UDP, routed
	TimeExceeded uint64 // ICMP time exceeded for a TTL-1 frame, from the router back to its sender
	Unreachable  uint64 // ICMP network unreachable, likewise (with a routes file only: the default table routes everything)
	Bad          uint64 // anything else
}

// Total is every frame the far ends received.
func (s SinkCounts) Total() uint64 { return s.Forwarded + s.TimeExceeded + s.Unreachable + s.Bad }

// Verdicts of Check.
const (
	SinkForwarded = iota
	SinkTimeExceeded
	SinkUnreachable
	SinkBad
)

// Addresses of the plan, as uint32.
const (
	upstreamNet  = 0xc6120000 // 198.18.0.0/15: the upstream's hosts
	upstreamMask = 0xfffe0000
	uplinkAddr   = 0xc0000201 // 192.0.2.1, the router on the uplink
)

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
//     100+i, in the bytes or out of band), from the router's MAC on it (RouterMAC), to its next
//     hop's MAC (Config.Neighbours, else HostMAC(i, 2) or GatewayMAC), TTL decremented to 63, IPv4
//     checksum right, between a VLAN host and the upstream; without Config.OwnRoutes also on the
//     interface the default table routes it to (the uplink for 198.18.0.0/15, VLAN i for
//     10.0.i.0/24);
//   - an ICMP time exceeded (or, with Config.OwnRoutes, network unreachable) for a frame the
//     generator sent: back out the interface its source is on, to the sender's MAC, from the
//     router's address there (192.0.2.1, 10.0.i.1), TTL 64, both checksums right, quoting the
//     generator's header (TTL 1 for time exceeded).
func (g *Generator) Check(f *frame.Frame, d []byte, uplink bool) int {
	if len(d) < frame.EtherLen {
		return SinkBad
	}
	e := frame.Ether(d)
	id, l3 := IfUplink, frame.EtherLen
	tagged, tci := f.Flags&frame.FlagVLAN != 0, f.TCI
	if !tagged && e.Type() == vlan.TPID8021Q {
		if len(d) < vlan.EthLen {
			return SinkBad
		}
		tagged, tci, l3 = true, binary.BigEndian.Uint16(d[14:]), vlan.EthLen
	}
	if tagged == uplink {
		return SinkBad // tagged on the uplink, or untagged on the trunk
	}
	if tagged {
		if id = int(tci&0xfff) - int(VID(0)); id < 1 || id > g.cfg.VLANs {
			return SinkBad
		}
	}
	if e.Src() != RouterMAC(id) || binary.BigEndian.Uint16(d[l3-2:]) != frame.TypeIPv4 {
		return SinkBad
	}
	ip, err := frame.ParseIPv4(d[l3:])
	if err != nil || !ip.ChecksumOK() || ip.HeaderLen() != frame.IPv4MinLen || ip.IsFragment() {
		return SinkBad
	}
	switch ip.Protocol() {
	case frame.ProtoUDP:
		if ip.TTL() != 63 || e.Dst() != g.nhMAC[id] {
			return SinkBad
		}
		up := hostVLAN(ip.Src(), g.cfg.VLANs, 2, 2) != 0 && ip.Dst()&upstreamMask == upstreamNet
		down := ip.Src()&upstreamMask == upstreamNet && hostVLAN(ip.Dst(), g.cfg.VLANs, 2, 251) != 0
		switch {
		case !up && !down:
			return SinkBad
		case g.cfg.OwnRoutes:
		case up && id != IfUplink, down && id != hostVLAN(ip.Dst(), g.cfg.VLANs, 2, 251):
			return SinkBad
		}
		return SinkForwarded
	case frame.ProtoICMP:
		return g.checkICMP(e, ip, id)
	}
	return SinkBad
}

// checkICMP judges an ICMP error the router sent on interface id (see Check).
func (g *Generator) checkICMP(e frame.Ether, ip frame.IPv4, id int) int {
	icmp := ip.Payload()
	if ip.TTL() != 64 || len(icmp) < 8+frame.IPv4MinLen || frame.Checksum(icmp) != 0 || icmp[1] != 0 {
		return SinkBad
	}
	verdict := SinkBad
	switch icmp[0] {
	case 11:
		verdict = SinkTimeExceeded
	case 3:
		if g.cfg.OwnRoutes {
			verdict = SinkUnreachable
		}
	}
	q := frame.IPv4(icmp[8:])
	if verdict == SinkBad || q.Src() != ip.Dst() || q.Protocol() != frame.ProtoUDP || (verdict == SinkTimeExceeded && q.TTL() != 1) {
		return SinkBad
	}
	// Back to the sender: a VLAN host (10.0.i.2, on VLAN i) or the upstream (on the uplink).
	sender, from, mac := 0, uint32(uplinkAddr), GatewayMAC
	if i := hostVLAN(q.Src(), g.cfg.VLANs, 2, 2); i != 0 {
		sender, from, mac = i, 0x0a000001|uint32(i)<<8, HostMAC(i, 2)
	} else if q.Src()&upstreamMask != upstreamNet {
		return SinkBad
	}
	if id != sender || ip.Src() != from || e.Dst() != mac {
		return SinkBad
	}
	return verdict
}

// nextHopMACs are the MACs the router sends to on each interface, as BuildRouter resolves them.
func nextHopMACs(vlans int, nb app.Neighbours) []frame.MAC {
	m := []frame.MAC{nb.Get("uplink", "", GatewayMAC)}
	for i := 1; i <= vlans; i++ {
		m = append(m, nb.Get(fmt.Sprintf("vlan%d", VID(i)), "trunk", HostMAC(i, 2)))
	}
	return m
}
