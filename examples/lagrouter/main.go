// Command lagrouter is vlanrouter over a link aggregate: a 2-member aggregate (lag.Aggregate,
// balance-rr or balance-xor with a bonding hash policy) carries 20 VLAN sub-interfaces (VIDs 101-120,
// subnets 10.0.1.0/24 - 10.0.20.0/24), routed to and from an untagged uplink whose default route
// leads upstream, as a Linux router on a team of two links would.
//
// With no flags it runs on in-memory ports (two Pipe members and an uplink) with synthetic traffic
// from a built-in generator, prints bwm-ng-style per-interface packet rates every second (the
// aggregate and each member), and exits after -duration with final counters and an accounting
// check. -fail-at takes member 1's link down (and -fail-for brings it back) to show failover in the
// counters: the aggregate's carrier poller takes the member out and every frame leaves on member 0.
//
// With -backend afpacket or afxdp it forwards between real interfaces (-members IF1,IF2, -uplink)
// with -workers workers, until -duration passes or Ctrl-C. See README.md.
//
//	go run ./examples/lagrouter                                  # 5 s in memory, round robin
//	go run ./examples/lagrouter -lag xor -hash layer3+4 -fail-at 2s -fail-for 1s
//	lagrouter -backend afpacket -members lr-m0,lr-m1 -uplink lr-up -duration 0
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/wirespeed/wirespeed/examples/internal/app"
	"syscall"
)

func main() {
	cfg := defaultConfig()
	backend := string(cfg.Backend)
	flag.StringVar(&backend, "backend", backend, "I/O back-end: mem (in-memory ports, built-in generator), afpacket, afxdp")
	var members string
	flag.StringVar(&members, "members", "", "the aggregate's two member interfaces, IF1,IF2 (afpacket, afxdp)")
	flag.StringVar(&cfg.LAG, "lag", cfg.LAG, "aggregate mode: rr (balance-rr) or xor (balance-xor)")
	flag.StringVar(&cfg.Hash, "hash", cfg.Hash, "xor hash policy: layer2, layer2+3, layer3+4, encap2+3, encap3+4, vlan+srcmac")
	flag.DurationVar(&cfg.Miimon, "miimon", cfg.Miimon, "carrier polling interval of the aggregate")
	flag.DurationVar(&cfg.FailAt, "fail-at", 0, "mem: take member 1's link down after this long (0: never)")
	flag.DurationVar(&cfg.FailFor, "fail-for", 0, "mem: bring member 1 back after this long down (0: never)")
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
	if members != "" {
		cfg.Members = strings.Split(members, ",")
	}
	var err error
	if cfg.Backend, err = app.ParseBackend(backend); err != nil {
		fmt.Fprintln(os.Stderr, "lagrouter:", err)
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
		fmt.Fprintln(os.Stderr, "lagrouter:", err)
		os.Exit(1)
	}
	if !balanced {
		os.Exit(3)
	}
}

func printf(w io.Writer, format string, a ...any) { fmt.Fprintf(w, format, a...) }
