// Package lag is link aggregation in user space: it chooses the member port of an aggregate for
// every frame, in batches, the way Linux bonding (drivers/net/bonding) and team
// (drivers/net/team) do, so a wirespeed box and a Linux box split the same flows the same way.
//
// # Modes
//
//	mode           bonding name    choice per frame
//	RoundRobin     balance-rr      members in turn, PacketsPerMember frames each (packets_per_slave);
//	                               a down member's turn goes to the next usable one
//	                               (bond_get_slave_by_id); negative PacketsPerMember: random member
//	ActiveBackup   active-backup   the active member; Primary when usable, else the current one while
//	                               usable, else the first usable
//	XOR            balance-xor     usable[hash % count] (bond_xmit_3ad_xor_slave_get); with Table,
//	                               table[Bucket(hash)], team's 256-bucket hash_to_port_mapping
//	Broadcast      broadcast       every usable member: copies from ClonePool, the original to the last
//
// # Hash policies (bond_xmit_hash, bond_main.c)
//
// Addresses and ports enter the hash as the kernel loads them on a little-endian CPU: the
// network-order bytes read as a host u32 (LE(10.0.0.1) = 0x0100000a). fold(h) is
// h ^= dst ^ src; h ^= h >> 16; h ^= h >> 8 (bond_ip_hash).
//
//	policy        hash
//	layer2        dst[5] ^ src[5] ^ EtherType (host order)                      bond_eth_hash
//	layer2+3      fold(layer2) over the IPv4/IPv6 addresses; not IP: layer2
//	layer3+4      fold(ports word) >> 1; ICMP/ICMPv6 with an identifier: the    49aefd131739 (>>1)
//	              icmp key type | code<<8 | id<<16 replaces the ports word;
//	              fragments: no ports, no ICMP; not IP: layer2
//	encap2+3      as layer2+3 on the innermost addresses the flow dissector finds
//	encap3+4      as layer3+4 on the innermost headers the flow dissector finds
//	vlan+srcmac   TCI ^ src[0..2] ^ src[3..5] (24-bit halves); TCI 0 when untagged
//
// IPv6 addresses enter as ipv6_addr_hash, the XOR of their four words. Ports are the 4 bytes at the
// transport header for TCP, UDP, UDP-Lite, SCTP, DCCP and ESP, at +4 for AH (proto_ports_offset),
// 0 when the frame is too short. In layer2+3 and layer3+4 an ICMP error (types 3, 4, 5, 11, 12:
// icmp_is_err) or ICMPv6 error (types 1-4: icmpv6_is_err; not 0 or 5-127, though RFC 4443 counts
// every type below 128 as an error) is hashed on the packet it quotes: bond_flow_dissect re-reads
// the embedded header, replacing the addresses (and, for layer3+4, the ports). An ICMP or ICMPv6
// header shorter than 8 bytes leaves the icmp key zero (skb_flow_get_icmp_tci reads nothing), so
// it counts as type 0, no error: the outer header is hashed. The identifier is taken for types 0,
// 8, 13, 14, 128 and 129 (icmp_has_id) whether the protocol is ICMP or ICMPv6. The two encap policies
// run the kernel's flow dissector instead: through every VLAN/QinQ tag, IPv6 extension headers,
// IP-in-IP, IPv6-in-IP, GRE (version 0 with checksum, key, sequence and transparent Ethernet
// bridging; version 1 PPTP) and MPLS-in-IP; ARP, RARP, MPLS and FCoE end the walk "good" with no
// address, so encap2+3 folds the layer2 value with zeros (0x080d, not layer2's 0x0805, for an ARP
// between the same MACs) and encap3+4 gives 0.
//
// Details that a reading of the bonding documentation alone gets wrong: the ICMP case of
// layer3+4 copies the whole icmp key (type, code and identifier: memcpy(&hash, &flow.icmp,
// sizeof(hash)) in __bond_xmit_hash), not the identifier alone, and only when the identifier is
// non-zero (an echo with identifier 0 counts as 1: skb_flow_get_icmp_tci); "non-IP → layer2" holds
// for layer2+3 and layer3+4 but not for the encap policies, where ARP/MPLS/FCoE are folded as
// above; layer2+3 also descends into ICMP errors (bond_flow_dissect runs for it too).
//
// # Tags
//
// The outermost VLAN tag is taken as the kernel's accelerated tag (skb_vlan_tag_present), whether
// it is out of band (frame.FlagVLAN) or in the bytes: on Linux that is where the outermost tag of a
// frame reaching a bond lives (the receive path untags every frame; a VLAN device on a bond passes
// the tag out of band). So layer2 sees the EtherType behind it, layer2+3 and layer3+4 hash the IP
// header behind a single tag, and for QinQ (an inner tag in the bytes) they fall back to layer2
// with EtherType 0x8100, exactly as the kernel; the encap policies walk through every tag;
// vlan+srcmac uses the outermost TCI, PCP and DEI included (skb_vlan_tag_get). A frame too short
// for the tag it announces is hashed as untagged.
//
// Not reproduced: encap3+4's reuse of skb->hash when skb->l4_hash is set (a socket's or NIC's
// hash wirespeed does not have; the kernel computes the formula for frames without one, e.g. from
// veth); TIPC and PPPoE in the encap dissector (wirespeed falls back to layer2 where the kernel
// would hash the TIPC node or the PPP payload); balance-rr's sending of IGMP on the active slave;
// the per-CPU counter's u32 wrap.
//
// # Member state
//
// A member is usable when its debounced carrier is up (Config.Miimon, UpDelay, DownDelay; the
// poller asks xmit.LinkStater or reads /sys/class/net/<if>/carrier) and the last SetMemberUp said
// up. Every change rebuilds the usable-member array, the round-robin skip map, the active member
// and the effective bucket table, and publishes them whole through one atomic pointer; workers read
// it once per batch, never take a lock, never touch a shared atomic per frame. In the
// bonding-compatible XOR mode a change of the usable count re-modulos every hash (bonding's
// behaviour: with 4 → 3 members about three flows in four move); with Config.Table only the failed
// member's buckets move, dealt evenly over the survivors, and they return when it recovers.
//
// # Slow protocols (LACP)
//
// With Config.SlowProtocols set (package lag/lacp's Controller), Recv takes every frame of
// EtherType 0x8809 out of what the members deliver and hands it to the handler, and drops the
// frames of members that are not usable, as bonding's 802.3ad mode drops what inactive slaves
// receive; the controller sets members usable (SetMemberUp) only while they are collecting and
// distributing. The check costs a two-byte read per frame, folded without a branch (slowScan),
// and one test per batch; only a batch holding such a frame, or received on a member that is not
// usable, takes the slow path. The transmit choice is untouched: LACP changes the usable set
// through the same snapshot as a carrier change.
//
// # Ports and workers
//
// An Aggregate is an xmit.Port: Send splits a batch per member and calls each member's Send once,
// Recv reads the members in turn, Stats sums the members and adds the aggregate's own drops (frames
// with no usable member, broadcast copies the pool could not give). Like any Port it has one
// sending and one receiving goroutine. Multi-worker forwarders give each worker a Selector
// (NewSelector) and their own per-member TX queues: selectors share nothing but the published
// snapshot.
package lag
