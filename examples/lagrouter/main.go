// Command lagrouter is vlanrouter over a link aggregate: a 2-member aggregate (lag.Aggregate,
// balance-rr or balance-xor with a bonding hash policy) carries 20 VLAN sub-interfaces (VIDs 101-120,
// subnets 10.0.1.0/24 - 10.0.20.0/24), routed to and from an untagged uplink whose default route
// leads upstream, as a Linux router on a team of two links would. Like vlanrouter it resolves its
// neighbours by ARP (tagged requests on the VLANs, through the aggregate).
//
// With no flags it runs on in-memory ports (two Pipe members and an uplink) with synthetic traffic
// from a built-in generator, prints bwm-ng-style per-interface packet rates every second (the
// aggregate and each member), and exits after -duration with final counters and an accounting
// check. -fail-at takes member 1's link down (and -fail-for brings it back) to show failover in the
// counters: the aggregate's carrier poller takes the member out and every frame leaves on member 0.
//
// With -lag 802.3ad (alias lacp) the aggregate runs LACP (package lag/lacp): members carry traffic
// only while collecting and distributing; in memory the generator's switch is the LACP partner.
// Member, LACP and aggregate events go to stderr through log/slog (-log text|json).
//
// With -backend afpacket or afxdp it forwards between real interfaces (-members IF1,IF2, -uplink)
// with -workers workers, until -duration passes or Ctrl-C. See README.md.
//
//	go run ./examples/lagrouter                                  # 5 s in memory, round robin
//	go run ./examples/lagrouter -lag xor -hash layer3+4 -fail-at 2s -fail-for 1s
//	go run ./examples/lagrouter -lag 802.3ad -fail-at 3s -fail-for 1s
//	lagrouter -backend afpacket -members lr-m0,lr-m1 -uplink lr-up -duration 0
package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/wirespeed/wirespeed/examples/internal/app"
)

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if err != nil {
		os.Exit(app.ExitUsage)
	}
	app.Main("lagrouter", cfg.Duration, func(ctx context.Context) (bool, error) {
		if cfg.Backend == app.Mem {
			r, err := run(ctx, cfg, os.Stdout)
			return r.Balanced(), err
		}
		t, err := runReal(ctx, cfg, os.Stdout)
		return t.Balanced(), err
	})
}

func printf(w io.Writer, format string, a ...any) { fmt.Fprintf(w, format, a...) }
