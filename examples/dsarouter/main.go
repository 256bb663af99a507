// Command dsarouter is a home router's data plane on a DSA conduit: eth0 is the CPU's link to an
// Ethernet switch chip whose ports lan1-lan4 form the LAN bridge br-lan (192.168.1.1/24, one
// subnet, the switch port of each host learnt from its MAC address) and whose port wan leads to
// the ISP (203.0.113.2/24, default route; optionally 802.1Q-tagged, -wan-vid 7 as some ISPs
// want). Every frame on eth0 carries the switch's tag (Marvell EDSA by default, -tagger for the
// others): package dsa strips it on the way in and writes it on the way out, package fwd routes
// through the fib, answers pings to the router's addresses and sends ICMP errors, and package neigh
// beside it resolves the LAN hosts and the ISP's gateway by ARP (requests into the LAN flooded to
// lan1-lan4).
//
// With no flags it runs on an in-memory link with a built-in generator that plays the switch and
// the hosts behind it (hosts on the LAN ports sending to the internet and pinging the router, the
// internet answering, a share of frames the router must drop or hold: bad tag, unknown switch
// port, TTL 1, bad checksum, no ARP answer; the hosts and the gateway answer the router's ARP),
// prints bwm-ng-style rates per port and interface every -interval, and exits after -duration
// with final counters and an accounting check: every frame received on the conduit was
// forwarded, answered, delivered locally, held for a neighbour or dropped for a named reason,
// every frame sent left through the right switch port and is right in every field the generator
// checks, and no buffer leaked.
//
// Events an operator must know (the back-end and its mode, links going down and up, port errors,
// neighbours failing to resolve, route table changes) go to stderr through log/slog, as text or,
// with -log json, JSON lines. -metrics 127.0.0.1:9100 serves Prometheus metrics at /metrics and a
// read-only JSON look inside: /ports, /interfaces, /neighbours, /route?addr=A and /trace?n=10 (the
// next 10 frames the workers judge, with their verdicts and egress). The rate table shows packets,
// bits and drops per second, compact (the ports and the -top busiest interfaces) when there are
// many interfaces, in full with -view full, and each worker's share with -per-worker.
//
// With -backend afpacket or afxdp it runs on a real conduit interface (-conduit), with -workers
// sockets or queues. See README.md.
//
//	go run ./examples/dsarouter                          # 5 s in memory, EDSA tags
//	go run ./examples/dsarouter -tagger mtk -wan-vid 7   # MediaTek switch, VLAN 7 on the WAN
//	go run ./examples/dsarouter -ptp lan1 -duration 0    # PTP timestamping on lan1, until Ctrl-C
//	dsarouter -backend afpacket -conduit eth0 -duration 0
//
// Exit status: 0 when the accounting adds up, 1 when the router cannot start or fails, 2 for a
// bad command line, 3 when the accounting does not add up.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/wirespeed/wirespeed/examples/internal/app"
)

// Exit statuses.
const (
	exitOK       = 0
	exitFailed   = 1
	exitUsage    = 2
	exitMismatch = 3
)

func main() {
	os.Exit(mainExit(os.Args[1:], os.Stdout, os.Stderr, nil))
}

// parseFlags reads the command line into a Config; a usage error wraps ErrUsage (or is
// flag.ErrHelp).
func parseFlags(args []string, stderr io.Writer) (Config, error) {
	cfg := defaultConfig()
	fs := flag.NewFlagSet("dsarouter", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var ptp string
	backend := string(cfg.Backend)
	fs.StringVar(&backend, "backend", backend, "I/O back-end: mem (in-memory conduit, built-in switch and hosts), "+app.BackendHelp)
	fs.StringVar(&cfg.Conduit, "conduit", "", "afpacket, afxdp: the conduit interface (the CPU's link to the switch)")
	fs.IntVar(&cfg.Workers, "workers", cfg.Workers, "afpacket: sockets in a PACKET_FANOUT group; afxdp: queues 0..N-1 (mem: 1)")
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "how long to run (0: until Ctrl-C)")
	fs.StringVar(&cfg.Tagger, "tagger", cfg.Tagger, "the switch's DSA tag protocol: "+strings.Join(usableTaggers(), ", "))
	fs.IntVar(&cfg.WANVID, "wan-vid", cfg.WANVID, "802.1Q VID on the WAN port (0: untagged)")
	fs.StringVar(&ptp, "ptp", "", "switch ports with PTP receive timestamping (comma-separated: lan1,wan)")
	fs.IntVar(&cfg.Batch, "batch", cfg.Batch, fmt.Sprintf("frames per batch (1-%d)", maxBatch))
	fs.IntVar(&cfg.Rate, "rate", cfg.Rate, "mem: generator rate limit in frames/s (0: as fast as the router takes them)")
	fs.Float64Var(&cfg.Bad, "bad", cfg.Bad, "mem: share of generated frames the router must drop (0-1)")
	fs.DurationVar(&cfg.Interval, "interval", cfg.Interval, "rate display interval (0: no rates, only the final counters)")
	cfg.OperatorFlags.Register(fs) // -metrics, -metrics-any, -log, -view, -top, -per-worker
	if err := fs.Parse(args); err != nil {
		return cfg, err // the flag package printed it with the usage
	}
	if fs.NArg() > 0 {
		return cfg, usage("unexpected argument %q (every setting is a flag; -h lists them)", fs.Arg(0))
	}
	if ptp != "" {
		cfg.PTP = strings.Split(ptp, ",")
	}
	cfg.Backend = app.Backend(backend)
	if _, err := cfg.check(); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// mainExit runs the command with args and returns its exit status. ctx, if not nil, is the
// context to run under instead of one ended by Ctrl-C or SIGTERM.
func mainExit(args []string, stdout, stderr io.Writer, ctx context.Context) int {
	cfg, err := parseFlags(args, stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.Is(err, ErrUsage):
		fmt.Fprintln(stderr, "dsarouter:", err)
		return exitUsage
	case err != nil: // the flag package's own: already printed
		return exitUsage
	}
	if ctx == nil {
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
	}
	if cfg.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.Duration)
		defer cancel()
	}
	res, err := run(ctx, cfg, stdout)
	if err != nil {
		fmt.Fprintln(stderr, "dsarouter:", err)
		return exitFailed
	}
	if !res.Balanced() {
		return exitMismatch
	}
	return exitOK
}
