package lag

import (
	"encoding/binary"
	"fmt"

	"github.com/wirespeed/wirespeed/frame"
)

// Policy is a transmit hash policy of Linux bonding (xmit_hash_policy). The values are the kernel's
// (BOND_XMIT_POLICY_*), so a policy number read from sysfs or netlink converts directly.
type Policy uint8

// Hash policies, numbered as in include/net/bonding.h.
const (
	Layer2     Policy = 0 // "layer2": dst[5] ^ src[5] ^ EtherType
	Layer34    Policy = 1 // "layer3+4": L4 ports (or ICMP type/code/id) folded with the IP addresses, then >> 1
	Layer23    Policy = 2 // "layer2+3": layer2 folded with the IP addresses
	Encap23    Policy = 3 // "encap2+3": layer2+3 on the innermost addresses the flow dissector finds
	Encap34    Policy = 4 // "encap3+4": layer3+4 on the innermost headers the flow dissector finds
	VLANSrcMAC Policy = 5 // "vlan+srcmac": VLAN TCI ^ source MAC vendor half ^ device half
)

var policyNames = [...]string{"layer2", "layer3+4", "layer2+3", "encap2+3", "encap3+4", "vlan+srcmac"}

// String returns the kernel's name of the policy.
func (p Policy) String() string {
	if int(p) < len(policyNames) {
		return policyNames[p]
	}
	return fmt.Sprintf("policy(%d)", uint8(p))
}

// ParsePolicy converts the kernel's name ("layer3+4") or number ("1") of a hash policy.
func ParsePolicy(s string) (Policy, error) {
	for i, n := range policyNames {
		if s == n || s == fmt.Sprint(i) {
			return Policy(i), nil
		}
	}
	return 0, fmt.Errorf("lag: unknown hash policy %q", s)
}

func (p Policy) valid() bool { return int(p) < len(policyNames) }

// EtherTypes and IP protocols the hash looks at.
const (
	ethIPv4   = 0x0800
	ethARP    = 0x0806
	ethRARP   = 0x8035
	ethIPv6   = 0x86dd
	ethVLAN   = 0x8100
	ethQinQ   = 0x88a8
	ethMPLSUC = 0x8847
	ethMPLSMC = 0x8848
	ethFCoE   = 0x8906
	ethTEB    = 0x6558 // transparent Ethernet bridging inside GRE

	protoHop     = 0
	protoICMP    = 1
	protoIPIP    = 4
	protoTCP     = 6
	protoUDP     = 17
	protoDCCP    = 33
	protoIPv6    = 41
	protoRouting = 43
	protoFrag    = 44
	protoGRE     = 47
	protoESP     = 50
	protoAH      = 51
	protoICMPv6  = 58
	protoDest    = 60
	protoSCTP    = 132
	protoUDPLite = 136
	protoMPLS    = 137
)

// Hash returns Linux bonding's transmit hash (bond_xmit_hash) of frame i of b under policy p; the
// member bonding picks is usable[Hash % count].
//
// The outermost VLAN tag is taken as the kernel's accelerated tag (skb_vlan_tag_present), wherever
// it is: out of band (frame.FlagVLAN) or in the bytes. On Linux that is where the outermost tag of a
// frame reaching a bond lives (the receive path untags every frame, and a VLAN device stacked on a
// bond hands it the tag out of band), so a frame hashes the same whichever way wirespeed carries it.
// See the package documentation for the formulas and where they differ from the kernel.
func Hash(p Policy, b *frame.Batch, i int) uint32 {
	f := &b.Frames[i]
	return hashBytes(p, f.Data(b.Mem), f.Flags&frame.FlagVLAN != 0, f.TCI)
}

// HashBytes is Hash for a frame given as bytes; oob and tci describe an out-of-band outermost tag
// (oob false: none, or in the bytes).
func HashBytes(p Policy, d []byte, oob bool, tci uint16) uint32 { return hashBytes(p, d, oob, tci) }

// hashBytes splits the frame into the kernel's view: the 12 MAC bytes, then rest (EtherType and
// network header), with the outermost tag taken out as the accelerated tag.
func hashBytes(p Policy, d []byte, tagged bool, tci uint16) uint32 {
	if len(d) < frame.EtherLen {
		return 0 // bond_pull_data fails: bond_eth_hash and bond_vlan_srcmac_hash return 0
	}
	rest := d[12:]
	if !tagged {
		if t := binary.BigEndian.Uint16(rest); (t == ethVLAN || t == ethQinQ) && len(d) >= 18 {
			tci = binary.BigEndian.Uint16(d[14:16])
			rest = d[16:]
			tagged = true
		}
	}
	if len(rest) < 2 {
		return 0
	}
	l2 := uint32(d[5]^d[11]) ^ uint32(binary.BigEndian.Uint16(rest))
	switch p {
	case Layer2:
		return l2
	case VLANSrcMAC:
		if !tagged {
			tci = 0
		}
		vendor := uint32(d[6])<<16 | uint32(d[7])<<8 | uint32(d[8])
		dev := uint32(d[9])<<16 | uint32(d[10])<<8 | uint32(d[11])
		return uint32(tci) ^ vendor ^ dev
	case Layer23, Layer34:
		return hashL3(p, l2, rest)
	case Encap23, Encap34:
		var fk flowKeys
		if !dissect(&fk, rest[2:], binary.BigEndian.Uint16(rest), tagged) {
			return l2
		}
		return fold(p, l2, &fk)
	}
	return l2
}

// flowKeys is the part of the kernel's struct flow_keys bonding hashes: the addresses (IPv6 already
// reduced to ipv6_addr_hash), the ports word and the ICMP key, each as the kernel's little-endian
// u32 view of network-order bytes.
type flowKeys struct {
	src, dst uint32
	ports    uint32
	icmp     uint32 // type | code<<8 | id<<16 (struct flow_dissector_key_icmp read as a u32)
}

// fold is bond_ip_hash after __bond_xmit_hash chose the start value.
func fold(p Policy, l2 uint32, fk *flowKeys) uint32 {
	var h uint32
	if p == Layer23 || p == Encap23 {
		h = l2
	} else if fk.icmp>>16 != 0 {
		h = fk.icmp
	} else {
		h = fk.ports
	}
	h ^= fk.dst ^ fk.src
	h ^= h >> 16
	h ^= h >> 8
	if p == Layer34 || p == Encap34 {
		h >>= 1 // commit 49aefd131739
	}
	return h
}

// hashL3 is layer2+3 and layer3+4: bond_flow_dissect without the flow dissector (bond_flow_ip),
// including the ICMP error descent, with the IPv4 TCP/UDP case first.
func hashL3(p Policy, l2 uint32, rest []byte) uint32 {
	proto := binary.BigEndian.Uint16(rest)
	nh := rest[2:]
	if proto == ethIPv4 && len(nh) >= 20 {
		ihl := int(nh[0]&15) << 2
		_ = nh[19]
		src := binary.LittleEndian.Uint32(nh[12:16])
		dst := binary.LittleEndian.Uint32(nh[16:20])
		ip := nh[9]
		if nh[6]&0x3f|nh[7] == 0 && (ip == protoTCP || ip == protoUDP) {
			// The common case, inline: no fragment, ports at ihl.
			var h uint32
			if p == Layer23 {
				h = l2
			} else if ihl+4 <= len(nh) {
				h = binary.LittleEndian.Uint32(nh[ihl:])
			}
			h ^= dst ^ src
			h ^= h >> 16
			h ^= h >> 8
			if p == Layer34 {
				h >>= 1
			}
			return h
		}
	}
	var fk flowKeys
	if !flowDissect(&fk, nh, proto, p == Layer34) {
		return l2
	}
	return fold(p, l2, &fk)
}

// flowDissect is bond_flow_dissect for layer2+3 and layer3+4: bond_flow_ip, then for an ICMP or
// ICMPv6 error bond_flow_ip again on the embedded header.
func flowDissect(fk *flowKeys, nh []byte, proto uint16, l34 bool) bool {
	ipProto := -1
	off := 0
	if !flowIP(fk, nh, proto, &off, &ipProto, l34) {
		return false
	}
	if ipProto != protoICMP && ipProto != protoICMPv6 {
		return true
	}
	fk.icmp = icmpKey(nh, off) // type 0 when the header is short: no error for either
	typ := uint8(fk.icmp)
	if ipProto == protoICMP {
		if !icmpIsErr(typ) {
			return true
		}
	} else if !icmpv6IsErr(typ) {
		return true
	}
	off += 8 // sizeof(struct icmphdr) == sizeof(struct icmp6hdr)
	return flowIP(fk, nh, proto, &off, &ipProto, l34)
}

// flowIP is bond_flow_ip: the addresses of the IPv4 or IPv6 header at nh[*off:], the protocol
// (IPv4: only when not a fragment) and, for layer3+4, the ports word. No version or IHL check, as
// in the kernel.
func flowIP(fk *flowKeys, nh []byte, proto uint16, off *int, ipProto *int, l34 bool) bool {
	o := *off
	switch proto {
	case ethIPv4:
		if o+20 > len(nh) {
			return false
		}
		ip := nh[o : o+20]
		fk.src = binary.LittleEndian.Uint32(ip[12:16])
		fk.dst = binary.LittleEndian.Uint32(ip[16:20])
		o += int(ip[0]&15) << 2
		if ip[6]&0x3f|ip[7] == 0 {
			*ipProto = int(ip[9])
		}
	case ethIPv6:
		if o+40 > len(nh) {
			return false
		}
		ip := nh[o : o+40]
		fk.src = v6hash(ip[8:24])
		fk.dst = v6hash(ip[24:40])
		o += 40
		*ipProto = int(ip[6])
	default:
		return false
	}
	*off = o
	if l34 && *ipProto >= 0 {
		fk.ports = portsAt(nh, o, uint8(*ipProto))
	}
	return true
}

// v6hash is ipv6_addr_hash: the XOR of the address's four 32-bit words.
func v6hash(a []byte) uint32 {
	_ = a[15]
	x := binary.LittleEndian.Uint64(a[0:8]) ^ binary.LittleEndian.Uint64(a[8:16])
	return uint32(x) ^ uint32(x>>32)
}

// portsAt is __skb_flow_get_ports: the 4 bytes at the protocol's port offset (proto_ports_offset),
// or 0.
func portsAt(b []byte, off int, proto uint8) uint32 {
	switch proto {
	case protoTCP, protoUDP, protoDCCP, protoESP, protoSCTP, protoUDPLite:
	case protoAH:
		off += 4
	default:
		return 0
	}
	if off < 0 || off+4 > len(b) {
		return 0
	}
	return binary.LittleEndian.Uint32(b[off:])
}

// icmpKey is skb_flow_get_icmp_tci: type, code and (for the types that carry one) the identifier in
// host order, 1 standing for an identifier of 0; 0 when the header is short.
func icmpKey(b []byte, off int) uint32 {
	if off < 0 || off+8 > len(b) {
		return 0
	}
	t, c := b[off], b[off+1]
	var id uint32
	switch t {
	case 0, 8, 13, 14, 128, 129: // icmp_has_id: echo, timestamp, ICMPv6 echo (shared by both)
		id = uint32(binary.BigEndian.Uint16(b[off+4:]))
		if id == 0 {
			id = 1
		}
	}
	return uint32(t) | uint32(c)<<8 | id<<16
}

// icmpIsErr is icmp_is_err (include/linux/icmp.h): destination unreachable, source quench,
// redirect, time exceeded, parameter problem.
func icmpIsErr(t uint8) bool {
	switch t {
	case 3, 4, 5, 11, 12:
		return true
	}
	return false
}

// icmpv6IsErr is icmpv6_is_err (include/linux/icmpv6.h): destination unreachable, packet too big,
// time exceeded, parameter problem. The other types below 128 (0, 5-127: unassigned, private
// experimentation, reserved) are not errors for it, although RFC 4443 files them under errors.
func icmpv6IsErr(t uint8) bool {
	return t >= 1 && t <= 4
}
