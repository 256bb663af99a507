package trunkgen

import (
	"fmt"
	"io"

	"github.com/wirespeed/wirespeed/examples/internal/app"
	"github.com/wirespeed/wirespeed/examples/internal/monitor"
	"github.com/wirespeed/wirespeed/fwd"
	"github.com/wirespeed/wirespeed/neigh"
)

// Result is what an in-memory run of a VLAN-trunk router counted, end to end.
type Result struct {
	Generated, GenDropped uint64 // frames the generator queued (its traffic and its hosts' ARP replies) / could not queue
	RouterRx              uint64 // frames the router's ports received
	Forwarded             uint64 // frames the router handed to the egress ports (forwarded, fragments, echo replies, ICMP errors, ARP)
	Drops                 fwd.Counters
	Neigh                 neigh.Counters // the neighbour table's
	HeldLeft              uint64         // frames the neighbour table still held at the end
	Discarded             uint64         // local frames other than ARP, released (app.Resolver.Discarded)
	ARPDrops              uint64         // ARP frames the resolver could not give their interface's header
	RouterTx, TxDropped   uint64         // queued by the egress ports / dropped by them
	Sink                  SinkCounts     // what the far ends received, every frame checked
	Leaked                int            // pool buffers not returned at the end, besides the held frames
	Errors                app.PortErrors // errors the router's Recv and Send calls returned
}

// Settled reports whether a run of r has shown what the examples' in-memory tests check, given
// the far ends' counts s so far: frames forwarded, the router's ARP answered, the gateway and a
// VLAN host resolved and, with bad frames (bad), time exceeded sent back and the VLAN, TTL and
// checksum drops counted. It reads the neighbour table's counters and those the stage's workers
// have published.
func (r *Router) Settled(s SinkCounts, bad bool) bool {
	n := r.Table.Counters()
	if s.Forwarded == 0 || s.ARP == 0 || s.ARPReplies == 0 || n.Hosts == 0 || n.Resolved < 2 || n.Ready == 0 {
		return false
	}
	if !bad {
		return true
	}
	c := r.Counters()
	return s.TimeExceeded != 0 && c.Drops[fwd.DropVLAN] != 0 && c.Drops[fwd.DropTTL] != 0 && c.Drops[fwd.DropChecksum] != 0
}

// Until is Config.Until from Settled when on (nil when off).
func Until(r *Router, on, bad bool) func(SinkCounts) bool {
	if !on {
		return nil
	}
	return func(s SinkCounts) bool { return r.Settled(s, bad) }
}

// AddRouter fills in the router's side of r from its counters, its neighbour table's and its
// resolver's, after the worker stopped; inUse is the pool's buffers still out (the held frames'
// among them).
func (r *Result) AddRouter(rt *Router, res *app.Resolver, inUse int) {
	r.Drops, r.Neigh = rt.Counters(), rt.Table.Counters()
	r.Discarded, r.ARPDrops = res.Discarded, res.ARPDrops
	r.HeldLeft = 0
	for _, e := range rt.Table.Entries() {
		r.HeldLeft += uint64(e.Held)
	}
	r.Forwarded = app.Sent(r.Drops) + app.ARPSent(r.Neigh) - r.ARPDrops
	r.Leaked = inUse - int(r.HeldLeft)
}

// Balanced reports whether every frame is accounted for: the router received what the generator
// sent and judged every frame (a held frame that resolved is judged twice: when held and when
// resumed); its local frames are ARP the neighbour table took or discarded ones; every frame held
// was resumed, failed (answered with host unreachable), pushed out of its queue or is still held;
// what the router sent (the stage's frames and the table's ARP) its ports queued or dropped; the far
// ends received what the ports queued, every frame checked and none wrong, each kind as many as the
// router says it made (when no port dropped any: otherwise at most as many); every TTL-1, unroutable
// or failed frame got an ICMP error or was counted as not answered; no buffer leaked.
func (r Result) Balanced() bool {
	c, n, s := &r.Drops, &r.Neigh, r.Sink
	icmp := s.TimeExceeded + s.Unreachable
	arp := app.ARPSent(*n) - r.ARPDrops
	kinds := s.Forwarded == c.Forwarded && icmp == c.ICMPErrors && s.ARP == arp
	if r.TxDropped > 0 {
		kinds = s.Forwarded <= c.Forwarded && icmp <= c.ICMPErrors && s.ARP <= arp
	}
	holdDrops := n.HoldNoNeighbour + n.HoldNoHost + n.HoldTooBig + n.HoldNoBuffer
	return r.Generated == r.RouterRx && r.RouterRx+n.Ready == c.Received() &&
		c.Local == n.ARPIn+r.Discarded && c.Held == n.HoldIn && n.HoldIn == n.Held+holdDrops &&
		n.Held == n.Ready+n.Failed+n.QueueOverflow+n.BacklogOverflow+r.HeldLeft &&
		r.Forwarded == r.RouterTx+r.TxDropped && s.Total() == r.RouterTx && s.Bad == 0 && kinds &&
		c.Drops[fwd.DropTTL]+c.Drops[fwd.DropNoRoute]+n.Failed == c.ICMPErrors+c.ICMPRateLimited+c.ICMPNoBuffer+c.ICMPNoAddress &&
		r.Leaked == 0
}

// Report prints the final counters and the accounting verdict; extra lines (an example's own
// counters) come after the drops.
func (r Result) Report(out io.Writer, extra ...string) {
	g := monitor.Group
	fmt.Fprintf(out, "final counters\n")
	fmt.Fprintf(out, "  generated   %14s  (could not queue: %s)\n", g(float64(r.Generated)), g(float64(r.GenDropped)))
	fmt.Fprintf(out, "  router rx   %14s\n", g(float64(r.RouterRx)))
	fmt.Fprintf(out, "  sent        %14s  (egress queued %s, egress dropped %s)\n", g(float64(r.Forwarded)), g(float64(r.RouterTx)), g(float64(r.TxDropped)))
	app.ReportStage(out, r.Drops)
	fmt.Fprintf(out, "  %v\n", r.Errors)
	n := r.Neigh
	fmt.Fprintf(out, "  neighbours: ARP in %s, sent %s (requests %s, probes %s, replies %s, announcements %s); held %s, resumed %s, failed %s (ICMP host unreachable), dropped while held %s, still held %s; hosts resolved %s\n",
		g(float64(n.ARPIn)), g(float64(app.ARPSent(n)-r.ARPDrops)), g(float64(n.RequestsSent)), g(float64(n.ProbesSent)), g(float64(n.RepliesSent)), g(float64(n.AnnouncesSent)),
		g(float64(n.Held)), g(float64(n.Ready)), g(float64(n.Failed)), g(float64(n.QueueOverflow+n.BacklogOverflow+n.HoldNoNeighbour+n.HoldNoHost+n.HoldTooBig+n.HoldNoBuffer)),
		g(float64(r.HeldLeft)), g(float64(n.Hosts)))
	for _, l := range extra {
		fmt.Fprintf(out, "  %s\n", l)
	}
	s := r.Sink
	fmt.Fprintf(out, "  received by the far ends %s: forwarded %s, time exceeded %s, unreachable %s, ARP %s, wrong %s; they answered ARP %s times\n",
		g(float64(s.Total())), g(float64(s.Forwarded)), g(float64(s.TimeExceeded)), g(float64(s.Unreachable)), g(float64(s.ARP)), g(float64(s.Bad)), g(float64(s.ARPReplies)))
	fmt.Fprintf(out, "  pool buffers still out %d\n", r.Leaked)
	if r.Balanced() {
		fmt.Fprintf(out, "accounting: ok (rx + resumed = forwarded + local + held + dropped; held = resumed + failed + pushed out + still held; sent (ARP included) = egress queued + egress dropped = what the far ends received, frame by frame; nothing leaked)\n")
	} else {
		fmt.Fprintf(out, "accounting: MISMATCH\n")
	}
}
