package app

import (
	"fmt"
	"io"

	"github.com/wirespeed/wirespeed/examples/internal/monitor"
	"github.com/wirespeed/wirespeed/fwd"
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
}

// NewTally sums the ports' counters and the router's.
func NewTally(ports []xmit.Stats, c fwd.Counters) Tally {
	t := Tally{Forwarded: Sent(c), Drops: c}
	for _, s := range ports {
		t.Rx += s.RxPackets
		t.RxDropped += s.RxDropped
		t.Tx += s.TxPackets
		t.TxDropped += s.TxDropped
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
// frame forwarded was queued or counted as refused by its port.
func (t Tally) Balanced() bool {
	return t.Rx == t.Drops.Received() && t.Forwarded == t.Tx+t.TxDropped
}

// Report prints the final counters and the accounting check.
func (t Tally) Report(out io.Writer, pcap *Pcap) {
	g := monitor.Group
	fmt.Fprintf(out, "final counters\n")
	fmt.Fprintf(out, "  router rx   %14s  (dropped by the kernel before the router: %s)\n", g(float64(t.Rx)), g(float64(t.RxDropped)))
	fmt.Fprintf(out, "  sent        %14s  (egress queued %s, egress dropped %s)\n", g(float64(t.Forwarded)), g(float64(t.Tx)), g(float64(t.TxDropped)))
	ReportStage(out, t.Drops)
	fmt.Fprintf(out, "  %v\n", t.Errors)
	if pcap != nil {
		fmt.Fprintln(out, " ", pcap.Summary())
	}
	if t.Balanced() {
		fmt.Fprintf(out, "accounting: ok (rx = forwarded + local + dropped; sent = egress queued + egress dropped)\n")
	} else {
		fmt.Fprintf(out, "accounting: MISMATCH\n")
	}
}
