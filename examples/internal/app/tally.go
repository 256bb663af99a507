package app

import (
	"fmt"
	"io"

	"github.com/wirespeed/wirespeed/examples/internal/monitor"
	"github.com/wirespeed/wirespeed/fwd"
	"github.com/wirespeed/wirespeed/neigh"
	"github.com/wirespeed/wirespeed/xmit"
)

// Tally is what a run on real interfaces counted, after every worker stopped.
type Tally struct {
	Rx        uint64 // frames the ports handed to the workers
	RxDropped uint64 // frames the kernel dropped before the workers saw them (ring full)
	Forwarded uint64 // frames handed to an egress port's Send (forwarded, fragments, echo replies, ICMP errors)
	Drops     fwd.Counters
	Tx        uint64     // frames the egress ports queued
	TxDropped uint64     // frames the egress ports refused (counted by them)
	Errors    PortErrors // errors the workers' Recv and Send calls returned (Run's results, summed)
	TxLost    uint64     // frames the ports queued that never left (xmit.Stats.TxLost)
	// The interfaces' kernel counters (xmit.Stats's Kernel fields), each interface counted once:
	// what the kernel and the driver dropped below the ports.
	KernelRxDropped, KernelTxDropped uint64

	// With a neighbour table (AddNeigh): held frames routed again once resolved (the stage counts
	// them twice), ARP frames sent, and the table's own counters.
	Resumed, ARPSent uint64
	Neigh            *neigh.Counters

	// With a Pipeline (AddPipeline): its counters; the frames it released (PipelineStats.Released)
	// are part of what was sent and neither queued nor refused by a port.
	Pipeline *PipelineStats
}

// AddPipeline adds a pipeline's counters, for routers that hand frames to transmit workers.
func (t *Tally) AddPipeline(s PipelineStats) { t.Pipeline = &s }

// AddNeigh adds a neighbour table's counters, for routers that resolve with one.
func (t *Tally) AddNeigh(c neigh.Counters) {
	t.Neigh = &c
	t.Resumed = c.Ready
	t.ARPSent = ARPSent(c)
	t.Forwarded += t.ARPSent
}

// ARPSent is the number of ARP frames a neighbour table handed out to be sent.
func ARPSent(c neigh.Counters) uint64 {
	return c.RequestsSent + c.ProbesSent + c.AnnouncesSent + c.RepliesSent
}

// NewTally sums the ports' counters and the router's: ports[p] is interface p's counters, its
// workers' queues summed (Ports.Stats, which counts the Kernel fields once per interface).
func NewTally(ports []xmit.Stats, c fwd.Counters) Tally {
	t := Tally{Forwarded: Sent(c), Drops: c}
	for _, s := range ports {
		t.Rx += s.RxPackets
		t.RxDropped += s.RxDropped
		t.Tx += s.TxPackets
		t.TxDropped += s.TxDropped
		t.TxLost += s.TxLost
		t.KernelRxDropped += s.KernelRxDropped
		t.KernelTxDropped += s.KernelTxDropped
	}
	return t
}

// Dropped is the sum of the router's drops by reason.
func (t Tally) Dropped() uint64 { return t.Drops.Dropped() }

// Sent is the number of frames a router working through fwd.Worker.Forward handed to Send.
func Sent(c fwd.Counters) uint64 { return c.Forwarded + c.Echoed + c.Fragments + c.ICMPErrors }

// ReportStage prints the forwarding stage's counters: verdicts, drops by reason, generated frames.
func ReportStage(out io.Writer, c fwd.Counters) {
	g := monitor.Group
	fmt.Fprintf(out, "  forwarded   %14s", g(float64(c.Forwarded)))
	if c.Fragmented > 0 {
		fmt.Fprintf(out, "  (and %s fragmented into %s)", g(float64(c.Fragmented)), g(float64(c.Fragments)))
	}
	fmt.Fprintln(out)
	fmt.Fprintf(out, "  local       %14s  (echo requests answered %s; discarded, no local stack: %s)\n", g(float64(c.Local+c.Held)), g(float64(c.Echoed)), g(float64(c.Discarded)))
	for i, d := range c.Drops {
		if d > 0 {
			fmt.Fprintf(out, "  dropped %-20s %10s\n", fwd.Reason(i).String()+":", g(float64(d)))
		}
	}
	fmt.Fprintf(out, "  dropped     %14s\n", g(float64(c.Dropped())))
	if c.ICMPErrors+c.ICMPRateLimited+c.ICMPNoBuffer > 0 {
		fmt.Fprintf(out, "  ICMP errors %14s  (rate-limited %s, no buffer %s)\n", g(float64(c.ICMPErrors)), g(float64(c.ICMPRateLimited)), g(float64(c.ICMPNoBuffer)))
	}
}

// Balanced reports whether every frame received was forwarded or dropped for a reason, and every
// frame forwarded was queued or counted as refused by its port (or, with a pipeline, released and
// counted by it, whose own counters must balance too).
func (t Tally) Balanced() bool {
	released := uint64(0)
	if t.Pipeline != nil {
		if !t.Pipeline.Balanced() {
			return false
		}
		released = t.Pipeline.Released()
	}
	return t.Rx+t.Resumed == t.Drops.Received() && t.Forwarded == t.Tx+t.TxDropped+released
}

// Report prints the final counters and the accounting check.
func (t Tally) Report(out io.Writer, pcap *Pcap) {
	g := monitor.Group
	fmt.Fprintf(out, "final counters\n")
	fmt.Fprintf(out, "  router rx   %14s  (dropped by the kernel before the router: %s)\n", g(float64(t.Rx)), g(float64(t.RxDropped)))
	fmt.Fprintf(out, "  sent        %14s  (egress queued %s, egress dropped %s; lost after queueing %s)\n", g(float64(t.Forwarded)), g(float64(t.Tx)), g(float64(t.TxDropped)), g(float64(t.TxLost)))
	if t.KernelRxDropped+t.KernelTxDropped > 0 {
		fmt.Fprintf(out, "  kernel      the interfaces dropped %s received and %s sent frames below the ports\n", g(float64(t.KernelRxDropped)), g(float64(t.KernelTxDropped)))
	}
	ReportStage(out, t.Drops)
	if c := t.Neigh; c != nil {
		fmt.Fprintf(out, "  neighbours: ARP in %s, sent %s (requests %s, probes %s, replies %s, announcements %s); held %s, resumed %s, failed %s, dropped while held %s\n",
			g(float64(c.ARPIn)), g(float64(t.ARPSent)), g(float64(c.RequestsSent)), g(float64(c.ProbesSent)), g(float64(c.RepliesSent)), g(float64(c.AnnouncesSent)),
			g(float64(c.Held)), g(float64(c.Ready)), g(float64(c.Failed)), g(float64(c.QueueOverflow+c.BacklogOverflow+c.HoldNoNeighbour+c.HoldNoHost+c.HoldTooBig+c.HoldNoBuffer)))
	}
	if t.Pipeline != nil {
		fmt.Fprintf(out, "  %v\n", *t.Pipeline)
	}
	fmt.Fprintf(out, "  %v\n", t.Errors)
	if pcap != nil {
		fmt.Fprintln(out, " ", pcap.Summary())
	}
	if t.Balanced() {
		if t.Pipeline != nil {
			fmt.Fprintf(out, "accounting: ok (rx = forwarded + local + dropped; sent = egress queued + egress dropped + released by the pipeline; the pipeline balanced)\n")
		} else {
			fmt.Fprintf(out, "accounting: ok (rx = forwarded + local + dropped; sent = egress queued + egress dropped)\n")
		}
	} else {
		fmt.Fprintf(out, "accounting: MISMATCH\n")
	}
}
