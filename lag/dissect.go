package lag

import "encoding/binary"

// maxDissectHdrs is MAX_FLOW_DISSECT_HDRS (net/core/flow_dissector.c).
const maxDissectHdrs = 15

// Results of one dissector step (enum flow_dissect_ret).
const (
	retContinue = iota
	retOutGood
	retOutBad
	retProtoAgain
	retIPProtoAgain
)

// dissect is the part of __skb_flow_dissect that the encap2+3 and encap3+4 policies see, with
// bonding's key set (flow_keys_bonding) and no flags: VLAN and QinQ tags, IPv4 (fragments end the
// walk with addresses only), IPv6 with hop-by-hop, routing, destination-options and fragment
// headers, IP-in-IP, IPv6-in-IP, GRE (version 0 with checksum, key, sequence and transparent
// Ethernet bridging; version 1 PPTP), MPLS in IP, then the ports and the ICMP key. ARP, RARP, MPLS
// and FCoE end the walk as good with no address (bonding then folds zeros). Anything else is bad:
// the caller falls back to layer2. p is the network header and what follows; proto is
// skb->protocol; tagged says whether the accelerated tag is present.
func dissect(fk *flowKeys, p []byte, proto uint16, tagged bool) bool {
	l2proto := proto
	nh := 0
	numHdrs := 0
	vlanDepth := 0 // dissector_vlan: 0 = KEY_MAX, 1 = KEY_VLAN, 2 = KEY_CVLAN
	ipProto := uint8(0)
	fragment := false

protoAgain:
	fdret := retContinue
	switch proto {
	case ethIPv4:
		if nh+20 > len(p) || p[nh]&15 < 5 {
			return false
		}
		ip := p[nh : nh+20]
		ipProto = ip[9]
		fk.src = binary.LittleEndian.Uint32(ip[12:16])
		fk.dst = binary.LittleEndian.Uint32(ip[16:20])
		nh += int(ip[0]&15) * 4
		if ip[6]&0x3f|ip[7] != 0 {
			// Later fragment, or first fragment without FLOW_DISSECTOR_F_PARSE_1ST_FRAG.
			return true
		}
	case ethIPv6:
		if nh+40 > len(p) {
			return false
		}
		ip := p[nh : nh+40]
		ipProto = ip[6]
		fk.src = v6hash(ip[8:24])
		fk.dst = v6hash(ip[24:40])
		nh += 40
	case ethVLAN, ethQinQ:
		if vlanDepth == 0 && tagged {
			proto = l2proto // the accelerated tag: proto = skb->protocol, nothing consumed
		} else {
			if nh+4 > len(p) {
				return false
			}
			proto = binary.BigEndian.Uint16(p[nh+2:])
			nh += 4
		}
		if vlanDepth < 2 {
			vlanDepth++
		}
		fdret = retProtoAgain
	case ethARP, ethRARP, ethMPLSUC, ethMPLSMC:
		// Bonding does not use the ARP or MPLS keys: the dissector stops here, good, no address.
		return true
	case ethFCoE:
		return len(p)-nh >= 38 // FCOE_HEADER_LEN
	default:
		return false
	}
	if fdret == retProtoAgain {
		numHdrs++
		if numHdrs <= maxDissectHdrs {
			goto protoAgain
		}
		return true
	}

ipProtoAgain:
	fdret = retContinue
	switch ipProto {
	case protoGRE:
		fdret = dissectGRE(p, &proto, &nh)
	case protoHop, protoRouting, protoDest:
		if proto != ethIPv6 {
			break
		}
		if nh+2 > len(p) {
			return false
		}
		ipProto = p[nh]
		nh += (int(p[nh+1]) + 1) << 3
		fdret = retIPProtoAgain
	case protoFrag:
		if proto != ethIPv6 {
			break
		}
		if nh+8 > len(p) {
			return false
		}
		fragment = true
		ipProto = p[nh]
		nh += 8
		fdret = retOutGood
	case protoIPIP:
		proto = ethIPv4
		fdret = retProtoAgain
	case protoIPv6:
		proto = ethIPv6
		fdret = retProtoAgain
	case protoMPLS:
		proto = ethMPLSUC
		fdret = retProtoAgain
	case protoICMP, protoICMPv6:
		fk.icmp = icmpKey(p, nh)
	}
	if !fragment {
		fk.ports = portsAt(p, nh, ipProto)
	}
	switch fdret {
	case retProtoAgain:
		numHdrs++
		if numHdrs <= maxDissectHdrs {
			goto protoAgain
		}
	case retIPProtoAgain:
		numHdrs++
		if numHdrs <= maxDissectHdrs {
			goto ipProtoAgain
		}
	case retOutBad:
		return false
	}
	return true
}

// GRE header bits (struct gre_base_hdr flags, network order).
const (
	greCsum    = 0x8000
	greRouting = 0x4000
	greKey     = 0x2000
	greSeq     = 0x1000
	greAck     = 0x0080
	greVersion = 0x0007
	greProtoPP = 0x880b // GRE_PROTO_PPP
)

// dissectGRE is __skb_flow_dissect_gre without FLOW_DISSECTOR_F_STOP_AT_ENCAP.
func dissectGRE(p []byte, proto *uint16, nh *int) int {
	o := *nh
	if o+4 > len(p) {
		return retOutBad
	}
	flags := binary.BigEndian.Uint16(p[o:])
	if flags&greRouting != 0 {
		return retOutGood
	}
	ver := flags & greVersion
	if ver > 1 {
		return retOutGood
	}
	*proto = binary.BigEndian.Uint16(p[o+2:])
	if ver == 1 && !(*proto == greProtoPP && flags&greKey != 0) {
		return retOutGood
	}
	off := 4
	if flags&greCsum != 0 {
		off += 4
	}
	if flags&greKey != 0 {
		if o+off+4 > len(p) {
			return retOutBad
		}
		off += 4
	}
	if flags&greSeq != 0 {
		off += 4
	}
	if ver == 0 {
		if *proto == ethTEB {
			if o+off+14 > len(p) {
				return retOutBad
			}
			*proto = binary.BigEndian.Uint16(p[o+off+12:])
			off += 14
		}
	} else {
		if flags&greAck != 0 {
			off += 4
		}
		if o+off+4 > len(p) {
			return retOutBad
		}
		switch binary.BigEndian.Uint16(p[o+off+2:]) { // PPP_PROTOCOL
		case 0x21: // PPP_IP
			*proto = ethIPv4
		case 0x57: // PPP_IPV6
			*proto = ethIPv6
		}
		off += 4 // PPP_HDRLEN
	}
	*nh = o + off
	return retProtoAgain
}
