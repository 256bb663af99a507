// Command router is a plain IPv4 router on untagged ports, the simplest wirespeed forwarder to copy:
// the fwd stage between N interfaces, neighbours resolved by ARP (package neigh), static routes.
//
// With no flags it runs on two in-memory ports (10.0.1.1/24 and 10.0.2.1/24) with a host on each
// that answers ARP, sends UDP to the other, pings the router, sends packets with TTL 1, to
// unroutable addresses and to a host that is not there, and larger than the MTU; it prints packet rates every second and exits
// after -duration with final counters and an accounting check of every frame the hosts received.
//
// Events an operator must know (the back-end and mode chosen, links going down and up, port
// errors, neighbours that fail to resolve) go to stderr through log/slog, as text or, with -log
// json, JSON lines. -metrics 127.0.0.1:9100 serves Prometheus metrics at /metrics and a read-only
// JSON look inside: /ports, /interfaces, /neighbours, /route?addr=10.0.2.2 and /trace?n=10 (the
// next 10 frames with their verdicts and egress).
//
// With -backend afpacket or afxdp it routes between real interfaces:
//
//	router -backend afpacket -port veth0,10.0.1.1/24 -port veth1,10.0.2.1/24,mtu=1400 \
//	    -route 0.0.0.0/0,via=10.0.2.2 -duration 0
//
// Each -port is an interface with the router's address and subnet on it (and an MTU); the router
// answers pings to its addresses, sends ICMP errors (time exceeded, unreachable, fragmentation
// needed) from them and fragments what does not fit. -neigh IP=MAC adds a permanent neighbour.
//
// With -linuxcp the Linux kernel is the control plane (package linuxcp): each port gets a TAP
// (ws0, ws1, ... or -tap-prefix) with its MAC and MTU, the router's addresses live on the TAPs
// (-port's address is put there; the address may be left out: NAME[,mtu=N]), frames for the router
// go up the TAPs and what the kernel sends on them goes out the ports; ARP, pings to the router and
// anything listening on its addresses are the kernel's, and the stage's routes and neighbours
// follow the kernel's (linuxcp.Mirror), so a routing daemon on the TAPs drives it. The physical
// interfaces are isolated from the kernel's stack so that only the router handles their frames:
//
//	router -backend afpacket -linuxcp -port veth0,10.0.1.1/24 -port veth1,10.0.2.1/24 -duration 0
//
// See README.md.
package main

import (
	"context"
	"flag"
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
	app.Main("router", cfg.Duration, func(ctx context.Context) (bool, error) {
		if cfg.Backend == app.Mem {
			r, err := runMem(ctx, cfg, os.Stdout)
			return r.Balanced(), err
		}
		t, err := runReal(ctx, cfg, os.Stdout)
		return t.Balanced(), err
	})
}

// parseFlags parses and checks the command line; on error it has printed the reason and the usage.
func parseFlags(args []string, stderr io.Writer) (Config, error) {
	cfg := defaultConfig()
	fs := flag.NewFlagSet("router", flag.ContinueOnError)
	fs.SetOutput(stderr)
	backend := string(cfg.Backend)
	fs.StringVar(&backend, "backend", backend, "I/O back-end: mem (two in-memory ports, built-in hosts), "+app.BackendHelp)
	fs.Var(portsFlag{&cfg}, "port", "an interface: `NAME,ADDR/LEN[,mtu=N]` (repeat for each; afpacket, afxdp)")
	fs.Var(neighFlag{&cfg}, "neigh", "a permanent neighbour: `IP=MAC` (repeat for each; the others are resolved by ARP)")
	fs.Var(routeFlag{&cfg}, "route", "a route: `PREFIX,via=GATEWAY` (repeat for each; the gateway is resolved by ARP)")
	fs.IntVar(&cfg.Workers, "workers", cfg.Workers, "workers: AF_PACKET sockets per interface in a PACKET_FANOUT group, or AF_XDP queues 0..N-1")
	fs.DurationVar(&cfg.IdleSpin, "idle-spin", cfg.IdleSpin, app.IdleSpinUsage)
	fs.BoolVar(&cfg.Spin, "spin", false, "afpacket, afxdp: workers keep polling idle ports (a core each, the lowest latency) instead of blocking")
	fs.IntVar(&cfg.Batch, "batch", cfg.Batch, "frames per batch (1-1024)")
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "how long to run (0: until Ctrl-C)")
	fs.DurationVar(&cfg.Interval, "interval", cfg.Interval, "rate display interval")
	fs.IntVar(&cfg.Rate, "rate", cfg.Rate, "mem: frames per second from each host (0: as fast as the router takes them)")
	cfg.OperatorFlags.Register(fs) // -metrics, -metrics-any, -log, -view, -top, -per-worker
	fs.BoolVar(&cfg.LinuxCP, "linuxcp", cfg.LinuxCP, "the kernel as the control plane (afpacket, afxdp): a TAP per port, the router's addresses and ARP in the kernel")
	fs.StringVar(&cfg.TapPrefix, "tap-prefix", cfg.TapPrefix, "-linuxcp: the TAPs' names are `PREFIX` and the port's index (ws0, ws1, ...)")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	fail := func(err error) (Config, error) {
		fmt.Fprintln(stderr, "router:", err)
		fs.Usage()
		return cfg, err
	}
	if fs.NArg() > 0 {
		return fail(fmt.Errorf("unexpected arguments %q", fs.Args()))
	}
	var err error
	if cfg.Backend, err = app.ParseBackend(backend); err != nil {
		return fail(err)
	}
	if cfg.Backend == app.Mem && len(cfg.Ports)+len(cfg.Neigh)+len(cfg.Routes) > 0 {
		return fail(fmt.Errorf("-port, -neigh and -route are for -backend afpacket or afxdp; the in-memory network is fixed"))
	}
	if err := cfg.check(); err != nil {
		return fail(err)
	}
	return cfg, nil
}
