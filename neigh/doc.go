// Package neigh is ARP (RFC 826) neighbour resolution for the data plane: a neighbour table with
// Linux's NUD states, which answers and learns from the ARP frames the forwarding stage delivers
// locally, holds the frames of unresolved next hops, and publishes each neighbour's MAC into the
// fib.NextHops entries the workers read.
//
// # Wiring
//
// A Table plugs into package fwd's outputs, once per batch:
//
//	Output.Local       → Table.Input(local, out)   ARP frames taken out, answered, learned from
//	Output.Unresolved  → Table.Hold(unres, out)    (fwd.Config.HoldUnresolved) copied and held
//	idle loop          → Table.Poll(out, ready, failed)
//
// out receives the ARP frames the table generates (replies, requests, probes, announcements with
// Announce): plain Ethernet frames of 60 bytes (a 14-byte header, zero padding), Frame.Out the
// egress interface ID and Frame.L3 = 14. The caller gives each its egress L2 header, VLAN tags
// included, with the interface's vlan.Rewrite (destination and source MAC as the frame has them,
// EtherType 0x0806) and sends it. ready receives held frames whose neighbour resolved, exactly as
// fwd handed them over (Frame.Port the ingress interface, Frame.L3, Frame.Meta the next hop), to
// be forwarded again; failed receives the held frames of neighbours that failed, for the caller to
// answer with ICMP host unreachable. All three are batches of the table's pool.
//
// The frames of ready were classified already: Frame.Port is the logical interface, not the
// physical port, and an out-of-band VLAN tag was consumed (its VID is in no byte any more). They
// go back through a stage entry that takes classified frames as they are; Process on their
// physical port classifies them again correctly only when their tags are in the bytes.
//
// The workers learn of resolution through fib.NextHops: AddNextHop(idx, iface, addr) makes next
// hop idx follow the neighbour, and the table writes the entry whole, fib.NextHopUnresolved while
// the neighbour has no valid MAC and its DstMAC once it has one, MAC changes included. Workers take
// a view per batch, so they see it within one batch.
//
// Hosts of a connected subnet need no next hop each in advance: AddSubnet(idx, iface) makes the
// subnet route's next hop idx one the table resolves by each frame's destination. Hold gives a
// destination seen there a next hop of its own from Config.HostNextHops and a /32 route to it
// (Config.Hosts; FIBHosts for a fib.Table), which the table removes again when the host stops
// answering. Like any other next hop, a host's is re-confirmed each reachable time while it lives.
//
// # States
//
// The states and their transitions are Linux's (net/core/neighbour.c), with its default timers:
//
//	INCOMPLETE  a broadcast request at once, then one per Retrans; no reply after McastProbes of
//	            them: FAILED. Frames for it are held.
//	REACHABLE   a reply addressed to us confirmed the MAC; after the reachable time (BaseReachable
//	            randomised to 0.5-1.5x, drawn at each confirmation): STALE.
//	STALE       the MAC is known, unconfirmed, and usable; collected after GCStale unless used.
//	DELAY       used while STALE; DelayFirstProbe later: PROBE.
//	PROBE       a unicast request to the known MAC at once and one per Retrans; no reply after
//	            UcastProbes of them: FAILED.
//	FAILED      no MAC: held frames go to Poll's failed batch; traffic (Hold) starts INCOMPLETE
//	            again.
//	PERMANENT   static (AddStatic): never changes.
//
// Timers run in Poll (and, for the neighbour a frame is held for, in Hold). A timer found late
// runs then, and the next one counts from then: a late Poll sends one request, not a burst.
//
// REACHABLE, STALE, DELAY, PROBE and PERMANENT are valid: their next hops carry the MAC. A reply
// addressed to us moves any non-permanent entry to REACHABLE; other news of a neighbour (see
// Learning) moves it to STALE, or keeps its state when its MAC is unchanged.
//
// Use of a STALE entry. The workers forward to a valid neighbour without telling anyone, so the
// table cannot see Linux's trigger for STALE → DELAY, a packet sent. It takes a next hop as
// standing traffic instead: an entry that AddNextHop made a next hop follow never rests in STALE,
// it goes on to DELAY at once (so, at each reachable-time expiry, the DELAY-PROBE cycle re-confirms
// it with unicast probes while its next hops stay usable, as Linux does for a neighbour in steady
// use, at a cost of one to UcastProbes requests per reachable time). Only entries that no next hop
// follows (learned from requests) rest in STALE, and they are collected GCStale later (one that a
// subnet's traffic makes a host moves on to DELAY with its first held frame). A FAILED entry that
// next hops follow tries again (INCOMPLETE) on the next Hold for it, or GCStale after it failed
// when no traffic is held (fwd without HoldUnresolved), so that a gateway that went away is found
// again when it returns.
//
// # Learning
//
// The table follows Linux's arp_process with arp_accept=0 and arp_ignore=0:
//
//   - A request for one of the router's addresses (on any interface: the weak host model, as fwd's)
//     is answered from the receiving interface, and its sender is learned (STALE; a new entry only
//     when the sender is on one of the receiving interface's subnets and the table has room).
//   - Any other ARP from a sender the table has an entry for updates that entry: a reply addressed
//     to the interface's MAC confirms it REACHABLE, anything else (broadcast replies, requests for
//     other hosts, gratuitous ARP) makes it STALE with the sender's MAC (the same MAC keeps the
//     state).
//   - ARP from senders the table has no entry for creates none: unsolicited replies and gratuitous
//     ARP are ignored (arp_accept=0). The latest answer wins: there is no lock time.
//   - A request from 0.0.0.0 (an RFC 5227 probe) for one of our addresses is answered to the
//     prober, as Linux does, and teaches nothing.
//
// Dropped and counted: truncated ARP, hardware type not Ethernet, protocol type not IPv4, address
// lengths not 6 and 4, operations other than request and reply (Malformed); a broadcast, multicast
// or zero sender MAC, a sender address in 0/8 (other than a probe's 0.0.0.0), 127/8, 224/4 or
// 240/4 (BadSender); the receiving interface's own MAC as sender (Looped); one of our addresses as
// sender from another MAC (Conflicts).
//
// # Limits
//
// MaxEntries bounds the table. When it is full, senders of requests are not learned (their
// requests are still answered) and counted as Refused; AddNextHop and AddStatic make room by
// removing the oldest entry that no next hop follows, so a flood of requests never keeps a next
// hop from resolving. Each hold queue keeps at most QueueFrames frames and QueueBytes bytes, the
// oldest pushed out first; held frames occupy pool buffers until they leave in ready or failed.
//
// # Allocation and concurrency
//
// Input, Hold and Poll allocate nothing per frame: entries, hold queues and backlogs are arrays
// sized by New, generated frames and copies are taken from the pool once per call, and the
// next-hop table is written once per call that changed a neighbour's validity or MAC (which copies
// it: fib.NextHops is RCU-style), as is the route table when a subnet's host gets or loses its
// route. Every method takes the table's mutex; they are called once per
// batch with the local and unresolved batches, never per forwarded frame, and from an idle loop.
package neigh
