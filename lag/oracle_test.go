package lag

// A deliberately naive transcription of Linux bonding's transmit hash (drivers/net/bonding/
// bond_main.c: bond_xmit_hash, __bond_xmit_hash, bond_eth_hash, bond_vlan_srcmac_hash,
// bond_flow_dissect, bond_flow_ip, bond_ip_hash) and of the part of __skb_flow_dissect
// (net/core/flow_dissector.c) the encap policies reach, written against a model sk_buff, byte by
// byte, with the kernel's names and control flow. It shares no code with the package: it is the
// oracle the fast path is compared with.

// skbModel is the sk_buff the bond sees: data starts at the MAC header (the outermost VLAN tag
// already moved out, as skb_vlan_untag and vlan_dev_hard_start_xmit leave it), protocol is
// skb->protocol (the EtherType after the MAC addresses), the network header is at offset 14.
type skbModel struct {
	data        []byte
	protocol    uint16
	vlanPresent bool
	vlanTCI     uint16
}

// oracleSkb builds the model of a frame as wirespeed holds it.
func oracleSkb(frameBytes []byte, oob bool, tci uint16) *skbModel {
	s := &skbModel{}
	if oob {
		s.data = append([]byte(nil), frameBytes...)
		s.vlanPresent = true
		s.vlanTCI = tci
	} else if len(frameBytes) >= 18 && (int(frameBytes[12])<<8|int(frameBytes[13]) == 0x8100 || int(frameBytes[12])<<8|int(frameBytes[13]) == 0x88a8) {
		// skb_vlan_untag: take the tag out, move the 12 MAC bytes.
		s.vlanPresent = true
		s.vlanTCI = uint16(frameBytes[14])<<8 | uint16(frameBytes[15])
		s.data = append(append([]byte(nil), frameBytes[:12]...), frameBytes[16:]...)
	} else {
		s.data = append([]byte(nil), frameBytes...)
	}
	if len(s.data) >= 14 {
		s.protocol = uint16(s.data[12])<<8 | uint16(s.data[13])
	}
	return s
}

// headerPointer is __skb_header_pointer on a linear skb: nil past the end.
func (s *skbModel) headerPointer(off, n int) []byte {
	if off < 0 || off+n > len(s.data) {
		return nil
	}
	return s.data[off : off+n]
}

// loadHostU32 reads four bytes the way a little-endian CPU loads a __be32 into a u32.
func loadHostU32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

func ntohs(b []byte) uint16 { return uint16(b[0])<<8 | uint16(b[1]) }

// struct flow_keys, the fields bonding reads.
type oracleFlowKeys struct {
	addrType  int // 0, 4 (FLOW_DISSECTOR_KEY_IPV4_ADDRS), 6 (IPV6_ADDRS)
	v4src     [4]byte
	v4dst     [4]byte
	v6src     [16]byte
	v6dst     [16]byte
	ports     [4]byte
	icmpType  uint8
	icmpCode  uint8
	icmpID    uint16
	isFrag    bool
	firstFrag bool
}

func ipv6AddrHash(a [16]byte) uint32 {
	return loadHostU32(a[0:4]) ^ loadHostU32(a[4:8]) ^ loadHostU32(a[8:12]) ^ loadHostU32(a[12:16])
}

func flowGetU32Src(fk *oracleFlowKeys) uint32 {
	switch fk.addrType {
	case 4:
		return loadHostU32(fk.v4src[:])
	case 6:
		return ipv6AddrHash(fk.v6src)
	}
	return 0
}

func flowGetU32Dst(fk *oracleFlowKeys) uint32 {
	switch fk.addrType {
	case 4:
		return loadHostU32(fk.v4dst[:])
	case 6:
		return ipv6AddrHash(fk.v6dst)
	}
	return 0
}

func oracleBondEthHash(s *skbModel) uint32 {
	ep := s.headerPointer(0, 14)
	if ep == nil {
		return 0
	}
	return uint32(ep[5]) ^ uint32(ep[11]) ^ uint32(ntohs(ep[12:14]))
}

func oracleVlanSrcmacHash(s *skbModel) uint32 {
	mac := s.headerPointer(0, 14)
	if mac == nil {
		return 0
	}
	var vendor, dev uint32
	for i := 0; i < 3; i++ {
		vendor = vendor<<8 | uint32(mac[6+i])
	}
	for i := 3; i < 6; i++ {
		dev = dev<<8 | uint32(mac[6+i])
	}
	var vlan uint32
	if s.vlanPresent {
		vlan = uint32(s.vlanTCI)
	}
	return vlan ^ vendor ^ dev
}

func oracleProtoPortsOffset(proto int) int {
	switch proto {
	case 6, 17, 33, 50, 132, 136: // TCP UDP DCCP ESP SCTP UDPLITE
		return 0
	case 51: // AH
		return 4
	}
	return -1
}

func oracleGetPorts(s *skbModel, thoff int, proto int) [4]byte {
	var r [4]byte
	poff := oracleProtoPortsOffset(proto)
	if poff >= 0 {
		if p := s.headerPointer(thoff+poff, 4); p != nil {
			copy(r[:], p)
		}
	}
	return r
}

func oracleIcmpHasID(t uint8) bool {
	return t == 8 || t == 0 || t == 13 || t == 14 || t == 128 || t == 129
}

func oracleGetIcmpTci(s *skbModel, fk *oracleFlowKeys, thoff int) {
	ih := s.headerPointer(thoff, 8)
	if ih == nil {
		return
	}
	fk.icmpType = ih[0]
	fk.icmpCode = ih[1]
	if oracleIcmpHasID(ih[0]) {
		id := ntohs(ih[4:6])
		if id == 0 {
			id = 1
		}
		fk.icmpID = id
	} else {
		fk.icmpID = 0
	}
}

func oracleBondFlowIP(s *skbModel, fk *oracleFlowKeys, l2proto uint16, nhoff *int, ipProto *int, l34 bool) bool {
	if l2proto == 0x0800 {
		iph := s.headerPointer(*nhoff, 20)
		if iph == nil {
			return false
		}
		copy(fk.v4src[:], iph[12:16])
		copy(fk.v4dst[:], iph[16:20])
		fk.addrType = 4
		*nhoff += int(iph[0]&0x0f) << 2
		fragOff := ntohs(iph[6:8])
		if fragOff&(0x2000|0x1fff) == 0 { // !ip_is_fragment
			*ipProto = int(iph[9])
		}
	} else if l2proto == 0x86dd {
		iph6 := s.headerPointer(*nhoff, 40)
		if iph6 == nil {
			return false
		}
		copy(fk.v6src[:], iph6[8:24])
		copy(fk.v6dst[:], iph6[24:40])
		fk.addrType = 6
		*nhoff += 40
		*ipProto = int(iph6[6])
	} else {
		return false
	}
	if l34 && *ipProto >= 0 {
		fk.ports = oracleGetPorts(s, *nhoff, *ipProto)
	}
	return true
}

func oracleBondFlowDissect(s *skbModel, policy Policy, fk *oracleFlowKeys) bool {
	l34 := policy == Layer34
	ipProto := -1
	nhoff := 14
	if policy == Encap23 || policy == Encap34 {
		*fk = oracleFlowKeys{}
		return oracleSkbFlowDissect(s, fk, s.protocol, 14)
	}
	fk.ports = [4]byte{}
	fk.icmpType, fk.icmpCode, fk.icmpID = 0, 0, 0
	if !oracleBondFlowIP(s, fk, s.protocol, &nhoff, &ipProto, l34) {
		return false
	}
	if ipProto == 1 || ipProto == 58 {
		oracleGetIcmpTci(s, fk, nhoff)
		if ipProto == 1 {
			switch fk.icmpType {
			case 3, 4, 5, 11, 12: // icmp_is_err
			default:
				return true
			}
			nhoff += 8
		} else {
			switch fk.icmpType {
			case 1, 2, 3, 4: // icmpv6_is_err
			default:
				return true
			}
			nhoff += 8
		}
		return oracleBondFlowIP(s, fk, s.protocol, &nhoff, &ipProto, l34)
	}
	return true
}

// oracleSkbFlowDissect follows __skb_flow_dissect with bonding's keys and flags 0. The states of
// its gotos are spelled out as a small machine.
func oracleSkbFlowDissect(s *skbModel, fk *oracleFlowKeys, proto uint16, nhoff int) bool {
	const (
		cont = iota
		outGood
		outBad
		protoAgain
		ipprotoAgain
	)
	numHdrs := 0
	dissectorVlan := "MAX"
	ipProto := 0
	allowed := func() bool { numHdrs++; return numHdrs <= 15 }

	stage := "proto"
	for {
		if stage == "proto" {
			fdret := cont
			switch proto {
			case 0x0800:
				iph := s.headerPointer(nhoff, 20)
				if iph == nil || iph[0]&0x0f < 5 {
					fdret = outBad
					break
				}
				nhoff += int(iph[0]&0x0f) * 4
				ipProto = int(iph[9])
				copy(fk.v4src[:], iph[12:16])
				copy(fk.v4dst[:], iph[16:20])
				fk.addrType = 4
				fragOff := ntohs(iph[6:8])
				if fragOff&0x3fff != 0 {
					fk.isFrag = true
					if fragOff&0x1fff != 0 {
						fdret = outGood
						break
					}
					fk.firstFrag = true
					fdret = outGood // no FLOW_DISSECTOR_F_PARSE_1ST_FRAG
					break
				}
			case 0x86dd:
				iph := s.headerPointer(nhoff, 40)
				if iph == nil {
					fdret = outBad
					break
				}
				ipProto = int(iph[6])
				nhoff += 40
				copy(fk.v6src[:], iph[8:24])
				copy(fk.v6dst[:], iph[24:40])
				fk.addrType = 6
			case 0x8100, 0x88a8:
				if dissectorVlan == "MAX" && s.vlanPresent {
					proto = s.protocol
				} else {
					vlan := s.headerPointer(nhoff, 4)
					if vlan == nil {
						fdret = outBad
						break
					}
					proto = ntohs(vlan[2:4])
					nhoff += 4
				}
				if dissectorVlan == "MAX" {
					dissectorVlan = "VLAN"
				} else if dissectorVlan == "VLAN" {
					dissectorVlan = "CVLAN"
				} else {
					fdret = protoAgain
					break
				}
				fdret = protoAgain
			case 0x0806, 0x8035: // ARP, RARP without the ARP key
				fdret = outGood
			case 0x8847, 0x8848: // MPLS without the MPLS keys
				fdret = outGood
			case 0x8906: // FCoE
				if len(s.data)-nhoff < 38 {
					fdret = outBad
					break
				}
				nhoff += 38
				fdret = outGood
			default:
				fdret = outBad
			}
			switch fdret {
			case outGood:
				return true
			case protoAgain:
				if allowed() {
					continue
				}
				return true
			case cont, ipprotoAgain:
			default:
				return false
			}
			stage = "ipproto"
		}
		// ip_proto_again:
		fdret := cont
		switch ipProto {
		case 47: // GRE
			fdret = oracleDissectGre(s, &proto, &nhoff)
		case 0, 43, 60: // NEXTHDR_HOP, ROUTING, DEST
			if proto != 0x86dd {
				break
			}
			opthdr := s.headerPointer(nhoff, 2)
			if opthdr == nil {
				fdret = outBad
				break
			}
			ipProto = int(opthdr[0])
			nhoff += (int(opthdr[1]) + 1) << 3
			fdret = ipprotoAgain
		case 44: // NEXTHDR_FRAGMENT
			if proto != 0x86dd {
				break
			}
			fh := s.headerPointer(nhoff, 8)
			if fh == nil {
				fdret = outBad
				break
			}
			fk.isFrag = true
			nhoff += 8
			ipProto = int(fh[0])
			if ntohs(fh[2:4])&0xfff8 == 0 {
				fk.firstFrag = true
			}
			fdret = outGood
		case 4: // IPPROTO_IPIP
			proto = 0x0800
			fdret = protoAgain
		case 41: // IPPROTO_IPV6
			proto = 0x86dd
			fdret = protoAgain
		case 137: // IPPROTO_MPLS
			proto = 0x8847
			fdret = protoAgain
		case 1, 58:
			oracleGetIcmpTci(s, fk, nhoff)
		}
		if !fk.isFrag {
			fk.ports = oracleGetPorts(s, nhoff, ipProto)
		}
		switch fdret {
		case protoAgain:
			if allowed() {
				stage = "proto"
				continue
			}
		case ipprotoAgain:
			if allowed() {
				continue
			}
		case outGood, cont:
		default:
			return false
		}
		return true
	}
}

func oracleDissectGre(s *skbModel, proto *uint16, nhoff *int) int {
	const (
		outGood     = 1
		outBad      = 2
		protoAgainR = 3
	)
	hdr := s.headerPointer(*nhoff, 4)
	if hdr == nil {
		return outBad
	}
	flags := ntohs(hdr[0:2])
	if flags&0x4000 != 0 { // GRE_ROUTING
		return outGood
	}
	greVer := flags & 0x0007
	if greVer > 1 {
		return outGood
	}
	*proto = ntohs(hdr[2:4])
	if greVer != 0 {
		if !(*proto == 0x880b && flags&0x2000 != 0) {
			return outGood
		}
	}
	offset := 4
	if flags&0x8000 != 0 { // GRE_CSUM: csum + reserved1
		offset += 4
	}
	if flags&0x2000 != 0 { // GRE_KEY
		if s.headerPointer(*nhoff+offset, 4) == nil {
			return outBad
		}
		offset += 4
	}
	if flags&0x1000 != 0 { // GRE_SEQ
		offset += 4
	}
	if greVer == 0 {
		if *proto == 0x6558 { // ETH_P_TEB
			eth := s.headerPointer(*nhoff+offset, 14)
			if eth == nil {
				return outBad
			}
			*proto = ntohs(eth[12:14])
			offset += 14
		}
	} else {
		if flags&0x0080 != 0 { // GRE_ACK
			offset += 4
		}
		ppp := s.headerPointer(*nhoff+offset, 4)
		if ppp == nil {
			return outBad
		}
		switch int(ppp[2])<<8 + int(ppp[3]) {
		case 0x21:
			*proto = 0x0800
		case 0x57:
			*proto = 0x86dd
		}
		offset += 4
	}
	*nhoff += offset
	return protoAgainR
}

func oracleBondIPHash(hash uint32, fk *oracleFlowKeys, policy Policy) uint32 {
	hash ^= flowGetU32Dst(fk) ^ flowGetU32Src(fk)
	hash ^= hash >> 16
	hash ^= hash >> 8
	if policy == Layer34 || policy == Encap34 {
		return hash >> 1
	}
	return hash
}

// oracleHash is __bond_xmit_hash (bond_xmit_hash without skb->l4_hash).
func oracleHash(policy Policy, frameBytes []byte, oob bool, tci uint16) uint32 {
	s := oracleSkb(frameBytes, oob, tci)
	var flow oracleFlowKeys
	if policy == VLANSrcMAC {
		return oracleVlanSrcmacHash(s)
	}
	if policy == Layer2 || !oracleBondFlowDissect(s, policy, &flow) {
		return oracleBondEthHash(s)
	}
	var hash uint32
	if policy == Layer23 || policy == Encap23 {
		hash = oracleBondEthHash(s)
	} else if flow.icmpID != 0 {
		// memcpy(&hash, &flow.icmp, 4): struct { u8 type; u8 code; u16 id; } on little endian.
		hash = uint32(flow.icmpType) | uint32(flow.icmpCode)<<8 | uint32(flow.icmpID)<<16
	} else {
		hash = loadHostU32(flow.ports[:])
	}
	return oracleBondIPHash(hash, &flow, policy)
}
