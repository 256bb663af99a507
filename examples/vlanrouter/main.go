// Command vlanrouter is a VLAN trunk router: one port carries 20 VLAN sub-interfaces (VIDs 101-120,
// subnets 10.0.1.0/24 - 10.0.20.0/24), routed to and from an untagged uplink whose default route
// leads upstream.
//
// With no flags it runs on in-memory ports with synthetic traffic from a built-in generator (hosts
// on every VLAN sending upstream, the upstream sending back to hosts, and a small share of frames the
// router must drop: TTL 1, an unknown VLAN, a bad checksum), prints bwm-ng-style per-interface packet
// rates every second, and exits after -duration with final counters and an accounting check:
// every frame the router received was forwarded or dropped for a counted reason.
//
//	go run ./examples/vlanrouter                 # 5 s in memory
//	go run ./examples/vlanrouter -duration 0     # until Ctrl-C
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"
)

func main() {
	cfg := defaultConfig()
	flag.DurationVar(&cfg.Duration, "duration", cfg.Duration, "how long to run (0: until Ctrl-C)")
	flag.IntVar(&cfg.VLANs, "vlans", cfg.VLANs, "VLAN sub-interfaces on the trunk (1-200)")
	flag.IntVar(&cfg.Batch, "batch", cfg.Batch, "frames per batch")
	flag.IntVar(&cfg.Rate, "rate", cfg.Rate, "generator rate limit in frames/s per direction (0: as fast as the router takes them)")
	flag.Float64Var(&cfg.Bad, "bad", cfg.Bad, "share of generated frames the router must drop (TTL 1, unknown VLAN, bad checksum)")
	flag.DurationVar(&cfg.Interval, "interval", cfg.Interval, "rate display interval")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if cfg.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.Duration)
		defer cancel()
	}
	res, err := run(ctx, cfg, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "vlanrouter:", err)
		os.Exit(1)
	}
	if !res.Balanced() {
		os.Exit(2)
	}
}

func printf(w io.Writer, format string, a ...any) { fmt.Fprintf(w, format, a...) }

var _ = time.Second
