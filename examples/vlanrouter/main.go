// Command vlanrouter is a VLAN trunk router: one port carries 20 VLAN sub-interfaces (VIDs 101-120,
// subnets 10.0.1.0/24 - 10.0.20.0/24), routed to and from an untagged uplink whose default route
// leads upstream. It resolves its neighbours by ARP (the gateway, -gateway; the VLAN hosts, with
// tagged requests), or sends to static MACs on the interfaces -nexthop names.
//
// With no flags it runs on in-memory ports with synthetic traffic from a built-in generator (hosts
// on every VLAN sending upstream, the upstream sending back to hosts, and a small share of frames the
// router must drop: TTL 1, an unknown VLAN, a bad checksum), prints bwm-ng-style per-interface packet
// rates every second, and exits after -duration with final counters and an accounting check:
// every frame the router received was forwarded or dropped for a counted reason.
//
// Events an operator must know (the back-end and its mode, links going down and up, port errors,
// neighbours failing to resolve, route table changes) go to stderr through log/slog, as text or,
// with -log json, JSON lines. -metrics 127.0.0.1:9100 serves Prometheus metrics at /metrics and a
// read-only JSON look inside: /ports, /interfaces, /neighbours, /route?addr=A and /trace?n=10 (the
// next 10 frames the workers judge, with their verdicts and egress). The rate table shows packets,
// bits and drops per second, compact (the ports and the -top busiest interfaces) when there are
// many interfaces, in full with -view full, and each worker's share with -per-worker.
//
// With -backend afpacket or afxdp it forwards between two real interfaces (-trunk, -uplink) with
// -workers workers, until -duration passes or Ctrl-C. With -pipeline (on any back-end) the workers
// route and hand each port's frames over rings to -tx-workers transmit workers, each the only
// sender on the ports it owns (app.Pipeline), instead of sending themselves. See README.md.
//
//	go run ./examples/vlanrouter                 # 5 s in memory
//	go run ./examples/vlanrouter -duration 0     # until Ctrl-C
//	vlanrouter -backend afpacket -trunk vr-trunk -uplink vr-up -workers 2 -duration 0
//	go run ./examples/vlanrouter -pipeline       # the same with a transmit worker
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
	app.Main("vlanrouter", cfg.Duration, func(ctx context.Context) (bool, error) {
		if cfg.Backend == app.Mem {
			r, err := run(ctx, cfg, os.Stdout)
			return r.Balanced(), err
		}
		t, err := runReal(ctx, cfg, os.Stdout)
		return t.Balanced(), err
	})
}

func printf(w io.Writer, format string, a ...any) { fmt.Fprintf(w, format, a...) }
