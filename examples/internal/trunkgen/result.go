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
	RouterTx, TxDropped   uint64 // queued by the egress ports / dropped by them
	Sunk                  uint64 // frames the far ends received
	Leaked                int    // pool buffers not returned at the end
}

// Balanced reports whether every frame is accounted for.
func (r Result) Balanced() bool {
	return r.Generated == r.RouterRx && r.RouterRx == r.Drops.Received() &&
		r.Forwarded == r.RouterTx+r.TxDropped && r.Sunk == r.RouterTx && r.Leaked == 0
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
	for _, l := range extra {
		fmt.Fprintf(out, "  %s\n", l)
	}
	fmt.Fprintf(out, "  received by the far ends %s, pool buffers still out %d\n", g(float64(r.Sunk)), r.Leaked)
	if r.Balanced() {
		fmt.Fprintf(out, "accounting: ok (rx = forwarded + local + dropped; sent = egress queued + egress dropped; nothing leaked)\n")
	} else {
		fmt.Fprintf(out, "accounting: MISMATCH\n")
	}
}
