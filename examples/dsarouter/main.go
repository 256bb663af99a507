// Command dsarouter is a home router's data plane on a DSA conduit: eth0 is the CPU's link to an
// Ethernet switch chip whose ports lan1-lan4 form the LAN bridge br-lan (192.168.1.0/24, one
// subnet, the switch port of each host learnt from its MAC address) and whose port wan leads to
// the ISP (default route; optionally 802.1Q-tagged, -wan-vid 7 as some ISPs want). Every frame on
// eth0 carries the switch's tag (Marvell EDSA by default, -tagger for the others): package dsa
// strips it on the way in and writes it on the way out, package fwd routes through the fib.
//
// With no flags it runs on an in-memory link with a built-in generator that plays the switch and
// the hosts behind it (hosts on the LAN ports sending to the internet, the internet answering, a
// share of frames the router must drop: bad tag, unknown switch port, TTL 1, bad checksum, no
// ARP answer), prints bwm-ng-style rates per port and interface every second, and exits after
// -duration with final counters and an accounting check: every frame received on the conduit was
// forwarded or dropped for a named reason, every frame sent left through the right switch port,
// and no buffer leaked.
//
//	go run ./examples/dsarouter                          # 5 s in memory, EDSA tags
//	go run ./examples/dsarouter -tagger mtk -wan-vid 7   # MediaTek switch, VLAN 7 on the WAN
//	go run ./examples/dsarouter -ptp lan1 -duration 0    # PTP timestamping on lan1, until Ctrl-C
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
)

func main() {
	cfg := defaultConfig()
	var ptp string
	flag.DurationVar(&cfg.Duration, "duration", cfg.Duration, "how long to run (0: until Ctrl-C)")
	flag.StringVar(&cfg.Tagger, "tagger", cfg.Tagger, "the switch's DSA tag protocol: "+strings.Join(usableTaggers(), ", "))
	flag.IntVar(&cfg.WANVID, "wan-vid", cfg.WANVID, "802.1Q VID on the WAN port (0: untagged)")
	flag.StringVar(&ptp, "ptp", "", "switch ports with PTP receive timestamping (comma-separated: lan1,wan)")
	flag.IntVar(&cfg.Batch, "batch", cfg.Batch, "frames per batch (1-256)")
	flag.IntVar(&cfg.Rate, "rate", cfg.Rate, "generator rate limit in frames/s (0: as fast as the router takes them)")
	flag.Float64Var(&cfg.Bad, "bad", cfg.Bad, "share of generated frames the router must drop")
	flag.DurationVar(&cfg.Interval, "interval", cfg.Interval, "rate display interval")
	flag.Parse()
	if ptp != "" {
		cfg.PTP = strings.Split(ptp, ",")
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if cfg.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.Duration)
		defer cancel()
	}
	res, err := run(ctx, cfg, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "dsarouter:", err)
		os.Exit(1)
	}
	if !res.Balanced() {
		os.Exit(2)
	}
}
