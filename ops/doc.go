// Package ops is the operator's view of a running wirespeed router: live metrics for Prometheus,
// log events for what an operator must know, and a read-only look inside.
//
// A Source names what to show: the ports (xmit.Stats, carrier state, the errors their calls
// return), the forwarding stage (fwd.Counters, the interfaces' vlan.Counters), the neighbour table
// (entries by NUD state, neigh.Counters), the route table (its size, lookups) and a packet trace.
// Four views read it:
//
//   - Collector is a prometheus.Collector: every scrape reads the counters the library already
//     keeps, so forwarding does no work per frame for it and allocates nothing. Metric names
//     start with wirespeed_, counters end in _total, sizes are in bytes; labels are port,
//     interface, verdict, reason, state, result, type and call.
//   - NewHandler serves JSON: /ports, /interfaces, /neighbours and /route?addr=A (the route, the
//     next hop, the egress interface, the MAC and the neighbour behind it), and with a Trace
//     /trace?n=N.
//   - Trace is VPP's `trace add`: a request arms it for the next N frames, the workers (through
//     their TraceHook and fwd.Worker.SetTap) copy each frame they judge into a fixed ring with
//     its verdict, and the request returns them decoded, with the egress the route table gives.
//     Nothing is done per frame while no request is armed.
//   - Watcher logs events with log/slog: links going down and up, port errors with the last
//     error's text, neighbours failing to resolve, address conflicts.
//
// Metrics exported (each a counter unless marked gauge):
//
//	wirespeed_port_{receive,transmit}_{packets,bytes,drops}_total{port}
//	wirespeed_port_transmit_{copies,lost}_total{port}, wirespeed_port_errors_total{port}
//	wirespeed_port_kernel_{receive,transmit}_{drops,errors}_total{port}
//	wirespeed_port_call_errors_total{port,call=recv|send}
//	wirespeed_port_up{port} (gauge)
//	wirespeed_fwd_frames_total{verdict=forwarded|fragmented|local|echoed|held|dropped}
//	wirespeed_fwd_drops_total{reason} (fwd.Reason names: ttl, no-route, checksum, ...)
//	wirespeed_fwd_fragments_total, wirespeed_fwd_icmp_errors_total, wirespeed_fwd_discarded_total
//	wirespeed_fwd_icmp_errors_suppressed_total{reason=rate-limit|no-buffer|no-address}
//	wirespeed_interface_{receive,transmit}_{packets,bytes}_total{interface}
//	wirespeed_interface_mtu_bytes{interface} (gauge)
//	wirespeed_neigh_entries{interface,state} (gauge), wirespeed_neigh_held_frames{interface} (gauge)
//	wirespeed_neigh_arp_received_total{result}, wirespeed_neigh_arp_sent_total{type}
//	wirespeed_neigh_hold_total{result}, wirespeed_neigh_held_released_total{result}
//	wirespeed_neigh_{learned,refused,not_on_link,mac_changes,probe_replies}_total
//	wirespeed_neigh_{entries_created,resolutions,resolution_failures,evictions,collected}_total
//	wirespeed_neigh_{hosts_added,hosts_removed,nexthop_updates,arp_not_sent}_total
//	wirespeed_fib_routes (gauge)
//
// The package sits beside the data path: nothing in fwd, neigh, fib or xmit imports it, and
// a router that does not want Prometheus does not link it.
package ops
