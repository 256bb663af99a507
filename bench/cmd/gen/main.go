// Command gen is wirespeed's pure-Go traffic generator: UDP/IPv4 flows (sizes, 802.1Q or QinQ tags,
// destinations spread across a routes file or a CIDR) sent with AF_PACKET sendmmsg batches or as
// XDP live frames (BPF_PROG_RUN with BPF_F_TEST_XDP_LIVE_FRAMES and bpf_redirect), at a rate limit
// or flat out, for a duration or until Ctrl-C. It prints the send rate every second and the totals
// at the end.
//
// It only ever sends inside a network namespace named with -netns (as `ip netns add` makes them):
// it refuses to run without one and refuses the host's (PID 1's) and its own namespace, so it cannot
// flood a real interface by mistake. It needs root (CAP_NET_RAW, CAP_SYS_ADMIN/CAP_BPF).
//
//	ip netns add g; ip link add a netns g type veth peer name b netns g
//	ip -n g link set a up; ip -n g link set b up
//	go run ./cmd/gen -netns g -dev a -engine afpacket -flows 256 -dst 10.0.0.0/16 -duration 5s
//	go run ./cmd/gen -netns g -dev a -engine xdp -sizes 60,1500 -vlan 101 -vlans 20 -rate 1e6
//
// With -engine xdp the peer of a veth must have an XDP program attached (NAPI) or the kernel drops
// the frames; count what arrives at the receiver, not what gen reports (frames offered).
package main

import (
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/wirespeed/wirespeed/bench/internal/gen"
)

func main() {
	var c gen.Config
	var engine, sizes, routes, dst, src, srcMAC, dstMAC string
	var vlan, inner, ttl uint
	var repeat uint64
	var interval time.Duration
	flag.StringVar(&c.Netns, "netns", "", "network namespace to send in (required; never the host's)")
	flag.StringVar(&c.Interface, "dev", "", "interface inside -netns to send on (required)")
	flag.StringVar(&engine, "engine", "afpacket", "afpacket (sendmmsg batches), xdp (XDP live frames) or afxdp (wirespeed's AF_XDP transmit path)")
	flag.IntVar(&c.Flows, "flows", 1, "number of flows (destinations and source ports)")
	flag.StringVar(&sizes, "sizes", "60", "comma-separated frame sizes without FCS, dealt to flows round robin")
	flag.UintVar(&vlan, "vlan", 0, "802.1Q VID (0: untagged); the outer S-tag with -inner")
	flag.IntVar(&c.VLANs, "vlans", 1, "spread flows over VIDs vlan..vlan+vlans-1")
	flag.UintVar(&inner, "inner", 0, "inner 802.1Q VID: QinQ with an 802.1ad outer tag")
	flag.StringVar(&routes, "routes", "", "file of a.b.c.d/len lines: destinations spread across these prefixes")
	flag.StringVar(&dst, "dst", "198.18.0.2/32", "destination CIDR (ignored with -routes)")
	flag.StringVar(&src, "src", "198.18.0.1", "source IPv4 address")
	flag.StringVar(&srcMAC, "src-mac", "02:00:00:00:00:01", "source MAC")
	flag.StringVar(&dstMAC, "dst-mac", "02:00:00:00:00:02", "destination MAC (the next hop's)")
	flag.UintVar(&ttl, "ttl", 64, "IPv4 TTL")
	flag.Float64Var(&c.Rate, "rate", 0, "frames per second (0: as fast as possible)")
	flag.DurationVar(&c.Duration, "duration", 10*time.Second, "how long to send (0: until Ctrl-C)")
	flag.IntVar(&c.Batch, "batch", 64, "afpacket: frames per sendmmsg")
	flag.Uint64Var(&repeat, "repeat", 1<<22, "xdp: frames per BPF_PROG_RUN call")
	flag.IntVar(&c.CPU, "cpu", -1, "CPU to pin the sending thread to (-1: none)")
	flag.IntVar(&c.Nice, "nice", 0, "niceness of the sending thread (-20..19, 0: unchanged)")
	flag.DurationVar(&interval, "interval", time.Second, "progress interval (0: none)")
	flag.Parse()

	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	c.Engine = gen.Engine(engine)
	c.VLAN, c.InnerVLAN, c.TTL, c.Repeat = uint16(vlan), uint16(inner), uint8(ttl), uint32(repeat)
	for _, s := range strings.Split(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			fail(fmt.Errorf("-sizes: %w", err))
		}
		c.Sizes = append(c.Sizes, n)
	}
	var err error
	if routes != "" {
		f, err := os.Open(routes)
		if err != nil {
			fail(err)
		}
		c.Dst, err = gen.ParseRoutes(f)
		f.Close()
		if err != nil {
			fail(err)
		}
	} else {
		p, err := netip.ParsePrefix(dst)
		if err != nil {
			fail(fmt.Errorf("-dst: %w", err))
		}
		c.Dst = []netip.Prefix{p}
	}
	if c.Src, err = netip.ParseAddr(src); err != nil {
		fail(fmt.Errorf("-src: %w", err))
	}
	for _, m := range []struct {
		s string
		d *[6]byte
	}{{srcMAC, &c.SrcMAC}, {dstMAC, &c.DstMAC}} {
		hw, err := net.ParseMAC(m.s)
		if err != nil || len(hw) != 6 {
			fail(fmt.Errorf("MAC %q: %v", m.s, err))
		}
		copy(m.d[:], hw)
	}

	g, err := gen.Open(&c)
	if err != nil {
		fail(err)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	g.Start()
	var tick <-chan time.Time
	if interval > 0 {
		t := time.NewTicker(interval)
		defer t.Stop()
		tick = t.C
	}
	last, lastT := uint64(0), time.Now()
loop:
	for {
		select {
		case <-g.Done():
			break loop
		case <-sig:
			break loop
		case now := <-tick:
			s := g.Sent()
			fmt.Printf("%s %s: %.3f Mpps (%d frames)\n", now.Format("15:04:05"), c.Interface,
				float64(s-last)/now.Sub(lastT).Seconds()/1e6, s)
			last, lastT = s, now
		}
	}
	r := g.Stop()
	fmt.Println(r)
	if r.Sent == 0 {
		if e := g.LastError(); e != nil {
			fail(e)
		}
		os.Exit(1)
	}
}
