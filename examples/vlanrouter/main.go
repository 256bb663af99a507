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
// With -backend afpacket or afxdp it forwards between two real interfaces (-trunk, -uplink) with
// -workers workers, until -duration passes or Ctrl-C. See README.md.
//
//	go run ./examples/vlanrouter                 # 5 s in memory
//	go run ./examples/vlanrouter -duration 0     # until Ctrl-C
//	vlanrouter -backend afpacket -trunk vr-trunk -uplink vr-up -workers 2 -duration 0
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/wirespeed/wirespeed/examples/internal/app"
	"syscall"
)

func main() {
	cfg := defaultConfig()
	backend := string(cfg.Backend)
	flag.StringVar(&backend, "backend", backend, "I/O back-end: mem (in-memory ports, built-in generator), afpacket, afxdp")
	flag.StringVar(&cfg.Trunk, "trunk", "", "trunk interface carrying the VLANs (afpacket, afxdp)")
	flag.StringVar(&cfg.Uplink, "uplink", "", "untagged uplink interface (afpacket, afxdp)")
	flag.StringVar(&cfg.Routes, "routes", "", "routes file: `a.b.c.d/len nexthop` lines (fib.Load; next hop 0 = uplink gateway, i = host on VLAN 100+i); default: 10.0.i.0/24 on VLAN 100+i, 0.0.0.0/0 upstream")
	flag.BoolVar(&cfg.IPRoute, "iproute", false, "the -routes file is `ip -4 route show` output (dev uplink|<uplink ifname>|vlanNNN)")
	flag.IntVar(&cfg.Workers, "workers", cfg.Workers, "workers: AF_PACKET sockets per interface in a PACKET_FANOUT group, or AF_XDP queues 0..N-1")
	flag.Var(cfg.Neighbours, "nexthop", "static neighbour MACs: NAME=MAC[,...] with NAME uplink, vlanNNN, or trunk (every VLAN); default uplink=02:67:77:00:00:01, vlan(100+i)=02:68:6f:i:00:02")
	flag.StringVar(&cfg.Pcap, "pcap", "", "write forwarded and dropped frames to this pcapng file (verdict in each packet's comment)")
	flag.IntVar(&cfg.PcapSample, "pcap-sample", cfg.PcapSample, "capture every nth frame")
	flag.DurationVar(&cfg.Duration, "duration", cfg.Duration, "how long to run (0: until Ctrl-C)")
	flag.IntVar(&cfg.VLANs, "vlans", cfg.VLANs, "VLAN sub-interfaces on the trunk (1-200)")
	flag.IntVar(&cfg.Batch, "batch", cfg.Batch, "frames per batch")
	flag.IntVar(&cfg.Rate, "rate", cfg.Rate, "mem: generator rate limit in frames/s per direction (0: as fast as the router takes them)")
	flag.Float64Var(&cfg.Bad, "bad", cfg.Bad, "mem: share of generated frames the router must drop (TTL 1, unknown VLAN, bad checksum)")
	flag.DurationVar(&cfg.Interval, "interval", cfg.Interval, "rate display interval")
	flag.Parse()
	var err error
	if cfg.Backend, err = app.ParseBackend(backend); err != nil {
		fmt.Fprintln(os.Stderr, "vlanrouter:", err)
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if cfg.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.Duration)
		defer cancel()
	}
	balanced := false
	if cfg.Backend == app.Mem {
		var res Result
		res, err = run(ctx, cfg, os.Stdout)
		balanced = res.Balanced()
	} else {
		var t app.Tally
		t, err = runReal(ctx, cfg, os.Stdout)
		balanced = t.Balanced()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "vlanrouter:", err)
		os.Exit(1)
	}
	if !balanced {
		os.Exit(3)
	}
}

func printf(w io.Writer, format string, a ...any) { fmt.Fprintf(w, format, a...) }
