// Package fwd is the IPv4 forwarding stage routers are built on: RFC 1812 receive checks, a batched
// route lookup, TTL and checksum update, the next hop's L2 header, ICMP errors, fragmentation and
// local delivery.
//
// A Worker takes a received batch and sorts every frame into exactly one place:
//
//	Output.Egress[p]     forwarded frames and echo replies for physical port p (the input's arena)
//	Output.Generated[p]  ICMP errors and fragments for port p, in the stage's own pool
//	Output.Local         frames for the router itself: its addresses, ARP and other non-IPv4
//	                     frames sent to it, limited broadcast, 224.0.0.0/24 (the input's arena)
//	Output.Unresolved    frames routed to a next hop flagged fib.NextHopUnresolved, when
//	                     Config.HoldUnresolved is set (Frame.Meta is the next-hop index)
//	a drop               counted under one Reason, the buffer released
//
// The stage never calls Send: the application sends the egress and generated batches, queues them on
// a ring, hands them to a lag.Aggregate or tags them for a DSA switch, and decides what becomes of
// the local frames (Worker.Forward does the plain thing: send everything, discard local frames and
// count them).
//
// # Receive checks (RFC 1812)
//
// Frames are dropped, each under its Reason, when: no logical interface matches (DropVLAN); the
// Ethernet destination is another host's unicast address (DropNotForUs); the IPv4 header is invalid
// (DropMalformed) or its checksum wrong (DropChecksum); the destination is in 0/8, 127/8 or 240/4
// other than 255.255.255.255 (DropMartianDst, §5.3.7); the destination is multicast outside
// 224.0.0.0/24, which this stage does not route (DropMulticast); the source is in 0/8, 127/8,
// 224/4 or 240/4 (DropMartianSrc, §5.3.7; a source of 0.0.0.0 towards the limited broadcast is
// DHCP and goes to Local); the Ethernet destination is broadcast or multicast but the packet would
// be forwarded (DropL2Broadcast, §5.3.4); the destination is the broadcast address of a connected
// subnet other than the ingress one (DropDirectedBroadcast, §5.3.5.2, unless
// Config.DirectedBroadcast, which sends it to the Ethernet broadcast address of that subnet).
//
// The ingress subnet's broadcast address, the router's own addresses (on any interface: the weak
// host model, as Linux), 255.255.255.255 and 224.0.0.0/24 are delivered locally, whatever the TTL.
// ICMP echo requests to the router's own addresses are answered in place (the request's buffer
// becomes the reply) unless Config.NoEcho; requests with IP options, fragmented ones and those whose
// ICMP checksum is wrong go to Local.
//
// IP options are forwarded untouched and not acted on (no source routing, no record route).
// Fragments are forwarded as they come; nothing is reassembled.
//
// # Forwarding
//
// A frame to be forwarded with TTL 1 or 0 is dropped (DropTTL) and answered with ICMP Time Exceeded.
// After the lookup: no route is DropNoRoute and ICMP Destination Unreachable (network); a next hop
// flagged fib.NextHopDrop is DropBlackhole, silently; fib.NextHopLocal delivers locally;
// fib.NextHopUnresolved goes to Output.Unresolved or is DropUnresolved; a next hop flagged
// fib.NextHopGroup (ECMP) sends each flow to one of its members, chosen by lag's layer3+4 hash of the
// packet, weighted (fib.NextHopView.Pick), and the frame goes on as if routed to that member. A packet larger than the
// egress MTU is fragmented (RFC 791) when DF is clear and otherwise dropped (DropTooBig) with ICMP
// Fragmentation Needed carrying the next-hop MTU (RFC 1191).
//
// The egress L2 header has one source of truth: the egress interface's tags (the vlan.Demux) and
// MAC (Iface.MAC), and the neighbour's address (fib.NextHop.DstMAC), built once per next hop into a
// vlan.Rewrite and cached per worker for each version of the next-hop table.
//
// # ICMP errors
//
// ICMP errors are built in fresh buffers of the stage's pool, from the router's first address on
// the ingress interface (or, where it has none, the first address of any interface), sent back out
// the ingress interface to the frame's Ethernet source, tagged as the frame came in. They quote the
// packet as received, up to 576 bytes in all (RFC 1812 §4.3.2.3). None is sent in answer to an ICMP
// error, a fragment other than the first, a broadcast or multicast, or a martian source (§4.3.2.7).
// A token bucket shared by the router's workers limits them (Config.ICMPRate, Config.ICMPBurst; the
// defaults are Linux's icmp_msgs_per_sec and icmp_msgs_burst, 1000/s and 50); the suppressed ones
// are counted, as are those with no buffer.
//
// # Fragmentation
//
// A packet without DF that exceeds the egress MTU is cut into fragments: the first is the packet's
// own buffer, shortened; the others are fresh buffers of the pool. Every fragment carries the
// original header (IP options whose copied flag is clear are replaced by no-operation options after
// the first fragment, as Linux does), offsets and MF follow RFC 791, and each checksum is computed
// whole. A packet whose fragments do not all fit the pool or the generated batch is dropped whole
// (DropFragment).
//
// # Speed
//
// The common frame (untagged or one 802.1Q tag on an interface with an entry, IPv4 without options,
// to the interface's MAC, routed to an ordinary next hop within its MTU) takes two straight lines,
// one before the lookup and one after it, with no call per frame; every other frame leaves them
// for the general path, which applies every check in order. On amd64 the two loops are assembly
// (pass_amd64.s), about two thirds of the Go form's instructions; the build tag purego selects the
// Go form, which other architectures run, and the tests compare the two.
//
// # Concurrency
//
// A Router is configured once by New and shared; each goroutine uses its own Worker. The route table
// and next hops may change at any time (RCU-style: a worker reads each once per batch). Workers
// take no lock and touch no shared atomic per frame; the ICMP limiter is the one shared state, and
// only an ICMP error touches it.
package fwd
