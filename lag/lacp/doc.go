// Package lacp is the Link Aggregation Control Protocol (IEEE 802.1AX, formerly 802.3ad clause
// 43) for package lag, following Linux's reading of it in drivers/net/bonding/bond_3ad.c.
//
// # PDUs
//
// LACPDUs and marker PDUs are slow-protocols frames: destination 01:80:c2:00:00:02 (a multicast
// address bridges never forward), EtherType 0x8809, never VLAN-tagged, then a 110-byte PDU
// (bond_3ad.h struct lacpdu and struct bond_marker):
//
//	offset  LACPDU (subtype 1)                      marker PDU (subtype 2)
//	0       subtype 1, version 1                    subtype 2, version 1
//	2       actor TLV: type 1, length 20            TLV: type 1 (information) or 2 (response), length 16
//	4         system priority, system (MAC), key,     requester port, requester system (MAC),
//	          port priority, port, state, 3 zeros     transaction id, 2 zeros
//	22      partner TLV: type 2, length 20, same    terminator (0, 0), 90 zeros
//	42      collector TLV: type 3, length 16,
//	          max delay, 12 zeros
//	58      terminator (0, 0), 50 zeros
//
// DecodeFrame reads either from a whole frame; PutLACPFrame and PutMarkerFrame write them. The
// decoders never panic and refuse what they cannot read with ErrTruncated, ErrNotSlow, ErrSubtype
// or ErrTLV.
//
// # Machines
//
// A Controller runs, per member and every 100 ms tick (Tick; Run calls it on a ticker), the
// receive, periodic transmission, selection, mux, transmit and churn detection machines in
// bond_3ad_state_machine_handler's order; received frames go through the receive machine and
// the marker responder as they are processed (Process; Run calls it when HandleSlow or SetLinkUp
// wakes it). Time exists only as ticks, so tests step a Controller like a fake clock.
//
//	receive    INITIALIZE, PORT_DISABLED, LACP_DISABLED, EXPIRED, DEFAULTED, CURRENT; the partner
//	           times out after 3 s (Config.Fast: the actor asks for the short timeout) or 90 s
//	periodic   NO_PERIODIC, FAST_PERIODIC (1 s), SLOW_PERIODIC (30 s), PERIODIC_TX, at the rate
//	           the partner's Timeout bit asks for; none when both ends are passive
//	selection  one aggregator per member, as Linux; ports with the same actor key, partner
//	           system, partner system priority and partner key share one; the active aggregator
//	           by Config.Select (stable, bandwidth, count; ad_agg_selection_logic)
//	mux        DETACHED, WAITING (Aggregate_Wait_Time, 2 s), ATTACHED, COLLECTING_DISTRIBUTING
//	           (coupled control)
//	transmit   an LACPDU when one is needed, at most 3 in any second
//	churn      actor and partner churn after 60 s out of sync
//	marker     Marker Information answered with a Marker Response, at most 5 a second
//
// A member carries traffic (it is set usable in every attached lag.Aggregate) while its link
// is up and it is COLLECTING_DISTRIBUTING in the active aggregator, and the aggregate has at
// least max(MinLinks, 1) such members; only those, so the aggregate's hash chooses among them.
//
// Where this differs from bond_3ad.c (each said at its place in the code): a partner's
// Aggregation bit makes its port individual (Linux looks only at the actor key's duplex bit);
// PORT_DISABLED forgets the partner's synchronization, as 802.1AX says; a port leaves
// COLLECTING_DISTRIBUTING when its aggregator stops being the active one; an unselected port
// goes through DETACHED before it joins another aggregator; nothing is sent in NO_PERIODIC; the
// three-a-second limit is a sliding window (Linux's 300 ms spacing lets four through some
// seconds); a looped-back LACPDU is dropped before the receive machine; min_links counts the
// members that carry traffic (Linux counts the active aggregator's ports whose link is up); an
// active aggregator without a partner does not carry traffic (Linux enables its ports anyway);
// keys are configured (Config.Key, PortConfig.Speed, PortConfig.Key), not read from ethtool.
//
// # Wiring
//
// The Controller sits beside the data path: the aggregates' Recv hand it the slow-protocols
// frames, it sends its PDUs through ports of its own, and it sets the aggregates' members usable.
//
//	s0, _ := lacp.OpenSender("eth0") // send-only AF_PACKET sockets (Linux)
//	s1, _ := lacp.OpenSender("eth1")
//	ctl, _ := lacp.New(&lacp.Config{Fast: true, Ports: []lacp.PortConfig{{Tx: s0}, {Tx: s1}}})
//	for _, w := range workers { // each worker's aggregate over its own sockets of eth0, eth1
//		w.agg, _ = lag.New(w.members, &lag.Config{Mode: lag.XOR, Policy: lag.Layer34, SlowProtocols: ctl})
//		ctl.Attach(w.agg)
//	}
//	go ctl.Run(ctx)
//
// The members' own ports must receive frames for 01:80:c2:00:00:02: a Sender joins that
// multicast group on its interface; a promiscuous port receives it anyway.
//
// The data path need not see the PDUs at all: open the members' AF_PACKET sockets with
// afpacket.Config.Filter = NoSlowFilter (the kernel keeps EtherType 0x8809 out of them), or their
// AF_XDP ports with afxdp.Config.PassEtherType = EtherType (the XDP program passes those frames to
// the kernel instead of the socket), set
// lag.Config.SlowFiltered (Recv no longer scans the batches: one test per batch, for a member
// that is not usable) and run a Sender's Receive per member, which reads the PDUs from a socket
// bound to EtherType 0x8809 and hands them to the controller:
//
//	s0.Listen() // in the interfaces' network namespace
//	go s0.Receive(ctx, ctl, 0)
//
// # Events
//
// Config.Events receives, in order, from the goroutine running Tick and Process: link up/down
// (EventLink), LACP state changes (EventState: actor or partner state, a machine's state, the
// aggregator), members starting or stopping to carry traffic (EventMember) and the aggregate
// coming up or going down (EventAggregate). Status returns the same state on demand.
package lacp
