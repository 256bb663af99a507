package trunkgen

import (
	"fmt"
	"io"

	"github.com/wirespeed/wirespeed/examples/internal/app"
	"github.com/wirespeed/wirespeed/examples/internal/monitor"
	"github.com/wirespeed/wirespeed/fwd"
)

// Result is what an in-memory run of a VLAN-trunk router counted, end to end.
type Result struct {
	Generated, GenDropped uint64 // frames the generator queued / could not queue
	RouterRx              uint64 // frames the router's ports received
	Forwarded             uint64 // frames the router handed to the egress ports (forwarded, fragments, echo replies, ICMP errors)
	Drops                 fwd.Counters
	RouterTx, TxDropped   uint64         // queued by the egress ports / dropped by them
	Sink                  SinkCounts     // what the far ends received, every frame checked
	Leaked                int            // pool buffers not returned at the end
	Errors                app.PortErrors // errors the router's Recv and Send calls returned
}

// Balanced reports whether every frame is accounted for: the router received what the generator
// sent and judged every frame; what it sent its ports queued or dropped; the far ends received what
// the ports queued, every frame checked and none wrong, each kind as many as the router says it
// made (when no port dropped any: otherwise at most as many); every TTL-1 or unroutable frame got
// an ICMP error or was counted as not answered; no buffer leaked.
func (r Result) Balanced() bool {
	c, s := &r.Drops, r.Sink
	icmp := s.TimeExceeded + s.Unreachable
	kinds := s.Forwarded == c.Forwarded && icmp == c.ICMPErrors
	if r.TxDropped > 0 {
		kinds = s.Forwarded <= c.Forwarded && icmp <= c.ICMPErrors
	}
	return r.Generated == r.RouterRx && r.RouterRx == c.Received() &&
		r.Forwarded == r.RouterTx+r.TxDropped && s.Total() == r.RouterTx && s.Bad == 0 && kinds &&
		c.Drops[fwd.DropTTL]+c.Drops[fwd.DropNoRoute] == c.ICMPErrors+c.ICMPRateLimited+c.ICMPNoBuffer+c.ICMPNoAddress &&
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
	for _, l := range extra {
		fmt.Fprintf(out, "  %s\n", l)
	}
	s := r.Sink
	fmt.Fprintf(out, "  received by the far ends %s: forwarded %s, time exceeded %s, unreachable %s, wrong %s\n",
		g(float64(s.Total())), g(float64(s.Forwarded)), g(float64(s.TimeExceeded)), g(float64(s.Unreachable)), g(float64(s.Bad)))
	fmt.Fprintf(out, "  pool buffers still out %d\n", r.Leaked)
	if r.Balanced() {
		fmt.Fprintf(out, "accounting: ok (rx = forwarded + local + dropped; sent = egress queued + egress dropped = what the far ends received, frame by frame; nothing leaked)\n")
	} else {
		fmt.Fprintf(out, "accounting: MISMATCH\n")
	}
}
