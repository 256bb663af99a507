package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/dsa"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/fwd"
)

// The example runs for a moment on several switch families and options, and every frame adds
// up (Result.Balanced): received on the conduit = dropped by the conduit (per reason) + fwd's
// verdicts; what fwd sent (routed, echo replies, ICMP errors) = tagged + bridge drops; local
// frames released; tagged = sent on the conduit = delivered by the switch to the right port,
// each checked; no buffer leaked.
func TestRunAccounts(t *testing.T) {
	cases := []struct {
		tagger string
		vid    int
		ptp    []string
		tagBad dsa.Reason // how the generator's bad tags are counted for this format
	}{
		{"edsa", 0, nil, dsa.ReasonBadTag},
		{"mtk", 7, []string{"lan1"}, dsa.ReasonTruncated},
		{"ksz9477", 0, []string{"lan1", "wan"}, dsa.ReasonTruncated},
		{"ocelot-8021q", 7, nil, dsa.ReasonNotTagged},
		{"brcm-prepend", 0, nil, dsa.ReasonBadTag},
		{"rtl8_4t", 35, []string{"lan3"}, dsa.ReasonBadTag},
	}
	for _, c := range cases {
		t.Run(c.tagger, func(t *testing.T) {
			cfg := defaultConfig()
			cfg.Tagger, cfg.WANVID, cfg.PTP = c.tagger, c.vid, c.ptp
			if !ptpBuilt && c.ptp != nil {
				// The classifier is compiled out (-tags dsa_noptp): asking for it is an error,
				// and the run goes on without it.
				ctx, cancel := context.WithTimeout(context.Background(), 250*time.Millisecond)
				_, err := run(ctx, cfg, &bytes.Buffer{})
				cancel()
				if !errors.Is(err, errors.ErrUnsupported) {
					t.Fatalf("-ptp %v without the classifier: %v, want errors.ErrUnsupported", c.ptp, err)
				}
				c.ptp, cfg.PTP = nil, nil
			}
			cfg.Interval = 100 * time.Millisecond
			cfg.Bad = 0.05
			cfg.minDelivered = 2000 // however loaded the machine, every kind of frame is seen
			ctx, cancel := context.WithTimeout(context.Background(), 250*time.Millisecond)
			defer cancel()
			var out bytes.Buffer
			r, err := run(ctx, cfg, &out)
			if err != nil {
				t.Fatal(err)
			}
			if !r.Balanced() {
				t.Fatalf("accounting mismatch: %+v\n%s", r, out.String())
			}
			if r.Generated == 0 || r.Routing.Forwarded == 0 || r.Delivered[swWAN] == 0 || r.Delivered[swLAN1+3] == 0 {
				t.Fatalf("nothing moved: %+v", r)
			}
			// Each kind of bad frame shows up under its reason.
			for _, reason := range []dsa.Reason{c.tagBad, dsa.ReasonPort} {
				if r.DSADrops[reason] == 0 {
					t.Errorf("no dsa %v drops: %v", reason, r.DSADrops)
				}
			}
			if n := r.Neigh; r.Routing.Local < numLANPorts*hostsPerLAN || n.ARPIn != r.Routing.Local || r.LocalReleased != 0 {
				t.Errorf("local frames (the hosts' ARPs): %d, to the neighbour table %d, released %d", r.Routing.Local, n.ARPIn, r.LocalReleased)
			}
			// The router resolved the hosts and the gateway by ARP (its requests flooded on the
			// LAN), and held the frames for the address nobody answers.
			if n := r.Neigh; n.Hosts < numLANPorts*hostsPerLAN || r.ARPReplies < numLANPorts*hostsPerLAN+1 || r.Flooded == 0 ||
				n.Ready == 0 || n.HoldIn == 0 || r.ARPSunk == 0 {
				t.Errorf("neighbours: %+v; ARP delivered %d, answered %d, flood copies %d", n, r.ARPSunk, r.ARPReplies, r.Flooded)
			}
			for _, reason := range []fwd.Reason{fwd.DropTTL, fwd.DropChecksum} {
				if r.Routing.Drops[reason] == 0 {
					t.Errorf("no fwd %v drops: %+v", reason, r.Routing.Drops)
				}
			}
			// The TTL-1 senders on both sides got their ICMP errors, the pingers their replies.
			for side, name := range []string{"LAN hosts", "gateway"} {
				if r.ICMPSunk[side] == 0 || r.EchoSunk[side] == 0 {
					t.Errorf("%s received %d ICMP errors and %d echo replies", name, r.ICMPSunk[side], r.EchoSunk[side])
				}
			}
			if r.Learnt != numLANPorts*hostsPerLAN {
				t.Errorf("bridge learnt %d MACs, want %d", r.Learnt, numLANPorts*hostsPerLAN)
			}
			// PTP classification runs on the ports asked for, only there.
			for u, name := range swNames {
				on := false
				for _, p := range c.ptp {
					on = on || p == name
				}
				if on != (r.PTP[u] > 0) && u != swWAN { // the WAN carries no PTP traffic
					t.Errorf("port %s: ptp on %v, classified %d", name, on, r.PTP[u])
				}
			}
			want := []string{"lan1", "lan4", "br-lan", "eth0", "accounting: ok", c.tagger, "ICMP errors sent", "echo requests answered", "released"}
			if c.vid != 0 {
				want = append(want, "wan.")
			}
			for _, w := range want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
}

func TestBadConfig(t *testing.T) {
	for _, c := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.Tagger = "nosuch" }, "-tagger"},
		{func(c *Config) { c.Tagger = "ksz8795" }, "-tagger"}, // 4 user ports: no room for lan1-4 and wan
		{func(c *Config) { c.Tagger = "none" }, "-tagger"},
		{func(c *Config) { c.WANVID = 4095 }, "-wan-vid"},
		{func(c *Config) { c.PTP = []string{"eth9"} }, "-ptp"},
		{func(c *Config) { c.Batch = 0 }, "-batch"},
		{func(c *Config) { c.Batch = 100000 }, "-batch"},
		{func(c *Config) { c.Duration = -time.Second }, "-duration"},
		{func(c *Config) { c.Interval = -time.Second }, "-interval"},
		{func(c *Config) { c.Rate = -1 }, "-rate"},
		{func(c *Config) { c.Bad = 1.5 }, "-bad"},
		{func(c *Config) { c.Workers = 0 }, "-workers"},
		{func(c *Config) { c.Workers = 2 }, "-workers"}, // mem has one queue
		{func(c *Config) { c.Conduit = "eth0" }, "-conduit"},
		{func(c *Config) { c.Backend = "afpacket" }, "-conduit"},
		{func(c *Config) { c.Backend = "dpdk" }, "-backend"},
	} {
		cfg := defaultConfig()
		c.mod(&cfg)
		_, err := run(context.Background(), cfg, &bytes.Buffer{})
		if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("config %+v: %v, want a usage error about %s", cfg, err, c.want)
		}
	}
	if n := len(usableTaggers()); n < 10 {
		t.Fatalf("only %d usable taggers: %v", n, usableTaggers())
	}
}

// Every bad command line exits with status 2 and says what is wrong, without running.
func TestCommandLine(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string // in stderr
	}{
		{[]string{"-duration", "-1s"}, "-duration -1s is negative"},
		{[]string{"-interval", "-1s"}, "-interval -1s is negative"},
		{[]string{"-workers", "0"}, "-workers 0"},
		{[]string{"-workers", "4"}, "in-memory conduit has one queue"},
		{[]string{"-batch", "0"}, "-batch 0 out of range"},
		{[]string{"-batch", "100000"}, "-batch 100000 out of range"},
		{[]string{"-tagger", "nosuch"}, `unknown tag protocol "nosuch"`},
		{[]string{"-tagger", "ksz8795"}, "ksz8795 cannot carry switch port"},
		{[]string{"-wan-vid", "5000"}, "-wan-vid 5000 out of range"},
		{[]string{"-ptp", "lan1,eth7"}, `no switch port "eth7"`},
		{[]string{"-bad", "NaN"}, "-bad NaN out of range"},
		{[]string{"-bad", "-0.1"}, "-bad -0.1 out of range"},
		{[]string{"-rate", "-5"}, "-rate -5 is negative"},
		{[]string{"-backend", "dpdk"}, `unknown backend "dpdk"`},
		{[]string{"-backend", "afxdp"}, "needs -conduit"},
		{[]string{"-conduit", "eth0"}, "-conduit eth0 needs -backend"},
		{[]string{"-duration", "1s", "stray"}, `unexpected argument "stray"`},
		{[]string{"-batch", "many"}, `invalid value "many" for flag -batch`},
		{[]string{"-nosuchflag"}, "flag provided but not defined: -nosuchflag"},
	} {
		var stdout, stderr bytes.Buffer
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // a command line that is accepted would run: not for long
		if code := mainExit(c.args, &stdout, &stderr, ctx); code != exitUsage || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", c.args, code, stderr.String(), exitUsage, c.want)
		}
		if stdout.Len() != 0 {
			t.Errorf("%q: ran: %s", c.args, stdout.String())
		}
	}
	var stderr bytes.Buffer
	if code := mainExit([]string{"-h"}, &bytes.Buffer{}, &stderr, context.Background()); code != exitOK || !strings.Contains(stderr.String(), "-conduit") {
		t.Errorf("-h: exit %d, %s", code, stderr.String())
	}
}

// -interval 0 prints no rate table, only the final counters; the run is as good as any.
func TestNoInterval(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := mainExit([]string{"-interval", "0", "-duration", "100ms"}, &stdout, &stderr, context.Background())
	if code != exitOK || strings.Contains(stdout.String(), "packets per second") || !strings.Contains(stdout.String(), "accounting: ok") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
}

// rig is a topology, one data plane and the generator, driven by hand.
type rig struct {
	t   *topology
	l   *memLink
	d   *dataPlane
	g   *generator
	in  *frame.Batch
	out *frame.Batch
	sb  *frame.Batch
}

// newRig is a rig whose neighbours (the 16 hosts, the gateway) are permanent entries of the
// neighbour table: no ARP, nothing held, so that what a test sends comes out at once.
func newRig(tb testing.TB, cfg Config) *rig { return buildRig(tb, cfg, true) }

// newARPRig is a rig whose router resolves its neighbours by ARP, which the generator's hosts and
// gateway answer.
func newARPRig(tb testing.TB, cfg Config) *rig { return buildRig(tb, cfg, false) }

func buildRig(tb testing.TB, cfg Config, static bool) *rig {
	tb.Helper()
	top, l, err := buildMem(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	d, err := top.newDataPlane(cfg.Batch, l.eth0)
	if err != nil {
		tb.Fatal(err)
	}
	for lan := 0; static && lan < numLANPorts; lan++ {
		for h := 0; h < hostsPerLAN; h++ {
			if err := top.table.AddStatic(ifLAN, addr(hostIP(lan, h)), hostMAC(lan, h)); err != nil {
				tb.Fatal(err)
			}
		}
	}
	if static {
		if err := top.table.AddStatic(ifWAN, gatewayIP, gatewayMAC); err != nil {
			tb.Fatal(err)
		}
	}
	r := &rig{t: top, l: l, d: d, g: newGenerator(top, l, cfg),
		in: frame.NewBatch(cfg.Batch), out: frame.NewBatch(cfg.Batch + numLANPorts*hostsPerLAN), sb: frame.NewBatch(cfg.Batch)}
	r.g.hello(r.out)
	r.send()
	return r
}

// send puts r.out on the link, forwards everything queued and sinks the result, again while the
// hosts answer ARP.
func (r *rig) send() {
	r.l.swEnd.Send(r.out)
	for round := 0; round < 8; round++ {
		for {
			if n, _ := r.l.eth0.Recv(r.in); n == 0 {
				break
			}
			r.d.step(r.in)
		}
		answered := r.g.arpReplies.Load()
		r.g.sink(r.sb)
		if r.g.arpReplies.Load() == answered {
			return
		}
	}
}

// result is what the rig counted so far.
func (r *rig) result() Result {
	r.d.flush()
	return memResult(r.t, r.l, r.g)
}

// alloc appends a 60-byte frame (l3+46 bytes with a WAN VLAN tag) to r.out and returns its bytes.
func (r *rig) alloc(tb testing.TB, n int) []byte {
	tb.Helper()
	if k, _ := r.l.pool.Alloc(r.out, 1); k != 1 {
		tb.Fatal("pool empty")
	}
	i := len(r.out.Frames) - 1
	r.out.Frames[i].Resize(n)
	return r.out.Bytes(i)
}

func (r *rig) encode(tb testing.TB, port int) {
	tb.Helper()
	if err := r.g.sw.Encode(r.out, len(r.out.Frames)-1, dsa.Info{Port: uint16(port)}); err != nil {
		tb.Fatal(err)
	}
}

// fromWAN builds, in r.out, an IPv4 frame from the gateway with the WAN VLAN tag if there is one,
// and returns its IPv4 bytes for the caller to fill (46 of them).
func (r *rig) fromWAN(tb testing.TB) []byte {
	tb.Helper()
	l3 := 14
	if r.g.cfg.WANVID != 0 {
		l3 = 18
	}
	d := r.alloc(tb, l3+46)
	e := frame.Ether(d)
	e.SetDst(wanMAC)
	e.SetSrc(gatewayMAC)
	if r.g.cfg.WANVID != 0 {
		e.SetType(frame.TypeVLAN)
		binary.BigEndian.PutUint16(d[14:], uint16(r.g.cfg.WANVID))
	}
	binary.BigEndian.PutUint16(d[l3-2:], frame.TypeIPv4)
	return d[l3:]
}

// fromLAN builds an IPv4 frame from LAN host (lan, h); the caller fills the 46 IPv4 bytes.
func (r *rig) fromLAN(tb testing.TB, lan, h int) []byte {
	tb.Helper()
	d := r.alloc(tb, 60)
	e := frame.Ether(d)
	e.SetDst(lanMAC)
	e.SetSrc(hostMAC(lan, h))
	e.SetType(frame.TypeIPv4)
	return d[14:]
}

// frameTo builds, in r.out, a frame from the internet to LAN host (lan, h).
func (r *rig) frameTo(tb testing.TB, lan, h int) {
	tb.Helper()
	udp(r.fromWAN(tb), netInternet|5, hostIP(lan, h), 40000, 64)
	r.encode(tb, swWAN)
}

// frameFrom builds a frame from LAN host (lan, h) arriving on switch port `port`.
func (r *rig) frameFrom(tb testing.TB, lan, h, port int) {
	tb.Helper()
	udp(r.fromLAN(tb, lan, h), hostIP(lan, h), netInternet|5, 443, 64)
	r.encode(tb, port)
}

// The LAN bridge sends a host's frames out of the port it last heard the host on, and drops (and
// counts) frames for a host it never heard.
func TestBridgeLearning(t *testing.T) {
	cfg := defaultConfig()
	r := newRig(t, cfg)
	// Host (1, 2) lives on lan2: the hello taught the bridge so.
	r.frameTo(t, 1, 2)
	r.send()
	if got := r.g.delivered[1].Load(); got != 1 || r.g.misdelivery.Load() != 0 {
		t.Fatalf("lan2 delivered %d, wrong %d", got, r.g.misdelivery.Load())
	}
	// It moves to lan4 and says something: the bridge follows. The generator's check expects the
	// host's own port, so the next delivery on lan4 counts as "wrong" there: count it directly.
	r.frameFrom(t, 1, 2, 3)
	r.send()
	r.frameTo(t, 1, 2)
	r.l.swEnd.Send(r.out)
	n, _ := r.l.eth0.Recv(r.in)
	r.d.step(r.in)
	if n != 1 {
		t.Fatalf("received %d", n)
	}
	k, _ := r.l.swEnd.Recv(r.sb)
	d, err := r.g.sw.Decode(r.sb, 0)
	if k != 1 || err != nil || d.Ports.First() != 3 || frame.Ether(r.sb.Bytes(0)).Dst() != hostMAC(1, 2) {
		t.Fatalf("after the move: %d frames, dest %+v %v", k, d, err)
	}
	r.sb.Free()
	// A host the bridge never heard (the test's own: no hello) is a counted fdb-miss.
	r.d.fdb = newFDB(16)
	r.frameTo(t, 0, 0)
	r.send()
	r.d.flush()
	if drops := r.t.planeCounts().drops; drops[dropFDBMiss] != 1 {
		t.Fatalf("fdb-miss %d, want 1", drops[dropFDBMiss])
	}
	if r.l.pool.InUse() != 0 {
		t.Fatalf("%d buffers leaked", r.l.pool.InUse())
	}
}

// With a WAN VLAN, frames from the WAN port without the tag are not the WAN interface's.
func TestWANVLAN(t *testing.T) {
	cfg := defaultConfig()
	cfg.WANVID = 7
	r := newRig(t, cfg)
	// An untagged frame on the WAN port.
	d := r.alloc(t, 60)
	e := frame.Ether(d)
	e.SetDst(wanMAC)
	e.SetSrc(gatewayMAC)
	e.SetType(frame.TypeIPv4)
	udp(d[14:], netInternet|5, hostIP(0, 1), 40000, 64)
	r.encode(t, swWAN)
	r.send()
	r.d.flush()
	c := r.t.router.Counters()
	if c.Drops[fwd.DropVLAN] != 1 || c.Forwarded != 0 {
		t.Fatalf("untagged WAN frame: %+v", c)
	}
	// Toward the ISP, routed frames carry the tag.
	r.frameFrom(t, 0, 1, 0)
	r.send()
	if d := r.g.delivered[swWAN].Load(); d != 1 || r.g.misdelivery.Load() != 0 {
		t.Fatalf("wan delivered %d, wrong %d", d, r.g.misdelivery.Load())
	}
}

// A TTL-1 packet from either side comes back to its sender as ICMP time exceeded from the
// router's address on that side, out of the sender's switch port; a ping to either address is
// answered; an ARP is released and counted; the accounting adds up with each of them and fails
// when any is off by one. The router's pool is its own, so its ICMP errors cross arenas on the way
// out (copied by eth0, as on a real back-end).
func TestICMPErrorsEchoAndLocal(t *testing.T) {
	for _, vid := range []int{0, 7} {
		cfg := defaultConfig()
		cfg.WANVID, cfg.ownPool = vid, true
		r := newRig(t, cfg)
		udp(r.fromLAN(t, 2, 3), hostIP(2, 3), netInternet|9, 443, 1)
		r.encode(t, swLAN1+2)
		udp(r.fromWAN(t), netInternet|9, hostIP(1, 0), 40000, 1)
		r.encode(t, swWAN)
		echoRequest(r.fromLAN(t, 0, 1), hostIP(0, 1), lanRouterIP, 1)
		r.encode(t, swLAN1)
		echoRequest(r.fromWAN(t), netInternet|7, wanRouterIP, 2)
		r.encode(t, swWAN)
		r.send()
		res := r.result()
		if res.ICMPSunk != [2]uint64{1, 1} || res.EchoSunk != [2]uint64{1, 1} || res.Misdelivered != 0 {
			t.Fatalf("vid %d: ICMP errors %v, echo replies %v, wrong %d", vid, res.ICMPSunk, res.EchoSunk, res.Misdelivered)
		}
		if res.Delivered[swLAN1+2] != 1 || res.Delivered[swWAN] != 2 || res.Delivered[swLAN1] != 1 {
			t.Fatalf("vid %d: delivered %v", vid, res.Delivered)
		}
		if res.Routing.ICMPErrors != 2 || res.Routing.Echoed != 2 || res.TxCopied != 2 {
			t.Fatalf("vid %d: %+v, eth0 copied %d", vid, res.Routing, res.TxCopied)
		}
		if res.Routing.Local != numLANPorts*hostsPerLAN || res.Neigh.ARPIn != res.Routing.Local || res.LocalReleased != 0 {
			t.Fatalf("vid %d: local %d, to the neighbour table %d, released %d", vid, res.Routing.Local, res.Neigh.ARPIn, res.LocalReleased)
		}
		if !res.Balanced() {
			t.Fatalf("vid %d: not balanced: %+v", vid, res)
		}
		// Each changes the counters as the fault would, consistently but for the one clause of
		// Balanced that catches it.
		received := func(r *Result) { r.Generated++; r.ConduitRx++; r.Demuxed++ }
		sent := func(r *Result, port int) { r.Tagged++; r.ConduitTx++; r.Delivered[port]++ }
		for name, mod := range map[string]func(*Result){
			"a local frame not released": func(r *Result) { received(r); r.Routing.Local++ },
			"a held frame lost":          func(r *Result) { received(r); r.Routing.Held++; r.Neigh.HoldIn++; r.Neigh.Held++ },
			"a held frame resumed twice": func(r *Result) { r.Neigh.Ready++ },
			"an ARP frame not tagged":    func(r *Result) { r.Neigh.RequestsSent++ },
			"a flood copy not tagged":    func(r *Result) { r.Flooded++ },
			"an ARP frame undelivered":   func(r *Result) { r.Neigh.RequestsSent++; sent(r, swLAN1) },
			"an ICMP error not tagged":   func(r *Result) { r.Routing.ICMPErrors++ },
			"an echo reply lost": func(r *Result) {
				received(r)
				r.Routing.Echoed++
				sent(r, swLAN1) // delivered as something else
			},
			"an ICMP error lost": func(r *Result) { r.Routing.ICMPErrors++; sent(r, swWAN) },
			"an ICMP error wrong": func(r *Result) {
				r.ICMPSunk[0]--
				r.Delivered[swLAN1+2]--
				r.Misdelivered++
			},
			"an ICMP error invented": func(r *Result) {
				received(r)
				r.Routing.Forwarded++
				sent(r, swWAN)
				r.ICMPSunk[1]++
			},
			"a buffer leaked": func(r *Result) { r.Leaked++ },
		} {
			m := res
			mod(&m)
			if m.Balanced() {
				t.Errorf("vid %d: balanced with %s", vid, name)
			}
		}
	}
}

// The switch's check takes only a proper ICMP time exceeded as one: from the router's address on
// that side, fresh TTL, valid checksums, quoting the sender's packet with TTL 1.
func TestCheckICMP(t *testing.T) {
	cfg := defaultConfig()
	g := &generator{cfg: cfg}
	build := func(mod func(ip, m, q []byte)) []byte {
		d := make([]byte, 14+20+8+46)
		e := frame.Ether(d)
		e.SetDst(hostMAC(2, 3))
		e.SetSrc(lanMAC)
		e.SetType(frame.TypeIPv4)
		ip := frame.IPv4(d[14:34])
		ip[0], ip[8], ip[9] = 0x45, 64, frame.ProtoICMP
		binary.BigEndian.PutUint16(ip[2:], 74)
		binary.BigEndian.PutUint32(ip[12:], lanRouterIP)
		binary.BigEndian.PutUint32(ip[16:], hostIP(2, 3))
		m := d[34:]
		m[0] = 11
		q := m[8:]
		udp(q, hostIP(2, 3), netInternet|9, 443, 1)
		mod(ip, m, q)
		frame.IPv4(q[:20]).SetChecksum()
		binary.BigEndian.PutUint16(m[2:], 0)
		binary.BigEndian.PutUint16(m[2:], frame.Checksum(m))
		ip.SetChecksum()
		return d
	}
	if k := g.check(build(func(ip, m, q []byte) {}), swLAN1+2); k != sentICMP {
		t.Fatalf("a good time exceeded: %d", k)
	}
	for name, mod := range map[string]func(ip, m, q []byte){
		"type 3":              func(ip, m, q []byte) { m[0] = 3 },
		"code 1":              func(ip, m, q []byte) { m[1] = 1 },
		"TTL 63":              func(ip, m, q []byte) { ip[8] = 63 },
		"from a host":         func(ip, m, q []byte) { binary.BigEndian.PutUint32(ip[12:], hostIP(0, 0)) },
		"from the WAN":        func(ip, m, q []byte) { binary.BigEndian.PutUint32(ip[12:], wanRouterIP) },
		"quoted TTL 2":        func(ip, m, q []byte) { q[8] = 2 },
		"quoting another":     func(ip, m, q []byte) { binary.BigEndian.PutUint32(q[12:], hostIP(2, 2)) },
		"quoting a LAN dst":   func(ip, m, q []byte) { binary.BigEndian.PutUint32(q[16:], hostIP(0, 0)) },
		"quoting TCP":         func(ip, m, q []byte) { q[9] = 6 },
		"quoted sport":        func(ip, m, q []byte) { q[20] = 1 },
		"to another host":     func(ip, m, q []byte) { binary.BigEndian.PutUint32(ip[16:], hostIP(2, 2)) },
		"quote cut":           func(ip, m, q []byte) { binary.BigEndian.PutUint16(q[2:], 40) },
		"bad ICMP checksum":   func(ip, m, q []byte) {}, // broken after build, below
		"bad quoted checksum": func(ip, m, q []byte) {}, // likewise
	} {
		d := build(mod)
		switch name {
		case "bad ICMP checksum":
			d[14+20+2] ^= 1
		case "bad quoted checksum":
			d[14+20+8+10] ^= 1
			binary.BigEndian.PutUint16(d[14+20+2:], 0)
			binary.BigEndian.PutUint16(d[14+20+2:], frame.Checksum(d[14+20:]))
		}
		if k := g.check(d, swLAN1+2); k != sentBad {
			t.Errorf("%s: taken as %d", name, k)
		}
	}
}

func TestFDB(t *testing.T) {
	f := newFDB(16)
	m := func(i int) []byte { x := hostMAC(i>>8, i&0xff); return x[:] }
	for i := 0; i < 12; i++ {
		f.learn(m(i), uint16(i%5))
	}
	for i := 0; i < 12; i++ {
		if p, ok := f.lookup(m(i)); !ok || p != uint16(i%5) {
			t.Fatalf("mac %d: %d %v", i, p, ok)
		}
	}
	f.learn(m(3), 4) // moved
	if p, _ := f.lookup(m(3)); p != 4 || f.len() != 12 {
		t.Fatalf("moved mac: port %d, %d entries", p, f.len())
	}
	if _, ok := f.lookup(m(99)); ok {
		t.Fatal("unknown mac found")
	}
	f.learn([]byte{0x01, 0, 0x5e, 0, 0, 1}, 2) // group address as source: not learnt
	if _, ok := f.lookup([]byte{0x01, 0, 0x5e, 0, 0, 1}); ok || f.len() != 12 {
		t.Fatal("multicast source learnt")
	}
	// A full table learns no more and never loops.
	for i := 0; i < 100; i++ {
		f.learn(m(1000+i), 1)
	}
	if f.len() > 16 {
		t.Fatalf("%d entries in 16 slots", f.len())
	}
	for i := 0; i < 12; i++ {
		if i == 3 {
			continue
		}
		if p, ok := f.lookup(m(i)); !ok || p != uint16(i%5) {
			t.Fatalf("mac %d lost after the table filled", i)
		}
	}
}

// Workers share the FDB: concurrent learning of the same addresses makes one entry each, and
// lookups meanwhile see either nothing or a port some worker learnt (run with -race).
func TestFDBShared(t *testing.T) {
	f := newFDB(256)
	m := func(i int) []byte { x := hostMAC(i/4, i%4); return x[:] }
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := 0; round < 200; round++ {
				for i := 0; i < 16; i++ {
					f.learn(m(i), uint16(i%4))
					if p, ok := f.lookup(m((i + 5) % 16)); ok && p != uint16((i+5)%16%4) {
						t.Errorf("mac %d on port %d", (i+5)%16, p)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	if f.len() != 16 {
		t.Fatalf("%d entries for 16 addresses", f.len())
	}
}

// The steady-state loop allocates nothing: receive, demux, learn, route, answer pings, ICMP
// errors, hold the frames of a neighbour that does not answer (neigh.Table.Hold, Poll), bridge,
// tag, send, and the generator's side too — with PTP classification and a WAN VLAN as well — and
// frames do move meanwhile.
func TestStepAllocs(t *testing.T) {
	for _, c := range []struct {
		tagger string
		vid    int
		ptp    []string
	}{{"edsa", 0, nil}, {"edsa", 7, []string{"lan1", "lan2", "lan3", "lan4"}}, {"ksz9477", 0, []string{"lan1"}}, {"mtk", 7, nil}} {
		if !ptpBuilt {
			c.ptp = nil // the classifier is compiled out: asking for it is an error
		}
		cfg := defaultConfig()
		cfg.Tagger, cfg.WANVID, cfg.PTP, cfg.Bad = c.tagger, c.vid, c.ptp, 0.05
		frozen := time.Now()
		cfg.now = func() time.Time { return frozen } // no neighbour timer runs out meanwhile
		r := newRig(t, cfg)
		step := func() {
			r.g.fill(r.out)
			r.send()
		}
		step()
		before := r.result()
		const runs = 200
		if a := testing.AllocsPerRun(runs, step); a != 0 {
			t.Errorf("%+v: %v allocs per batch", c, a)
		}
		after := r.result()
		moved := sum(after.Delivered[:]) - sum(before.Delivered[:])
		echoed := after.EchoSunk[0] + after.EchoSunk[1] - before.EchoSunk[0] - before.EchoSunk[1]
		icmp := after.ICMPSunk[0] + after.ICMPSunk[1] - before.ICMPSunk[0] - before.ICMPSunk[1]
		held := after.Neigh.HoldIn - before.Neigh.HoldIn // the frames for the address nobody answers
		if moved < (runs+1)*uint64(cfg.Batch)*3/4 || echoed == 0 || icmp == 0 || held == 0 {
			t.Errorf("%+v: %d frames delivered (%d echo replies, %d ICMP errors), %d held, in %d batches of %d", c, moved, echoed, icmp, held, runs+1, cfg.Batch)
		}
		if !after.Balanced() || r.l.pool.InUse() != int(after.HeldLeft) {
			t.Errorf("%+v: %+v, in use %d", c, after, r.l.pool.InUse())
		}
	}
}

// The router resolves its neighbours by ARP through the bridge: its request for a LAN host is
// flooded to lan1-lan4 (the frame and three copies, each tagged for its port), the host behind its
// own port answers, and the frame held meanwhile comes out of that port; the gateway is resolved on
// the WAN port (tagged with the WAN VID), and LAN traffic then reaches it; the address nobody
// answers gets three flooded requests a second apart and then its frame back as ICMP host
// unreachable to the sender; a reachable host is re-confirmed later with a unicast probe out of
// its port only. The accounting adds up all along.
func TestARP(t *testing.T) {
	for _, vid := range []int{0, 7} {
		cfg := defaultConfig()
		cfg.WANVID = vid
		now := time.Now()
		cfg.now = func() time.Time { return now }
		r := newARPRig(t, cfg)
		check := func(what string, want Result) {
			t.Helper()
			res := r.result()
			if !res.Balanced() || res.Misdelivered != 0 || res.Delivered != want.Delivered || res.ARPSunk != want.ARPSunk ||
				res.ARPReplies != want.ARPReplies || res.Flooded != want.Flooded || res.ICMPSunk != want.ICMPSunk {
				t.Fatalf("vid %d, %s: delivered %v, ARP %d answered %d, flood copies %d, ICMP errors %v; want %v, %d, %d, %d, %v\n%+v",
					vid, what, res.Delivered, res.ARPSunk, res.ARPReplies, res.Flooded, res.ICMPSunk,
					want.Delivered, want.ARPSunk, want.ARPReplies, want.Flooded, want.ICMPSunk, res)
			}
		}
		// The hellos woke the table: its request for the gateway went out of the WAN port.
		check("start", Result{Delivered: [numSwPorts]uint64{0, 0, 0, 0, 1}, ARPSunk: 1, ARPReplies: 1})
		// The internet to host (2, 1) behind lan3: a flooded request, its answer, the frame.
		r.frameTo(t, 2, 1)
		r.send()
		check("to a LAN host", Result{Delivered: [numSwPorts]uint64{1, 1, 2, 1, 1}, ARPSunk: 5, ARPReplies: 2, Flooded: 3})
		// Host (0, 3) to the internet: the gateway is resolved.
		r.frameFrom(t, 0, 3, swLAN1)
		r.send()
		check("to the internet", Result{Delivered: [numSwPorts]uint64{1, 1, 2, 1, 2}, ARPSunk: 5, ARPReplies: 2, Flooded: 3})
		// The address nobody answers: three requests, then host unreachable to the internet.
		udp(r.fromWAN(t), netInternet|5, lanNet|unansweredHost, 40000, 64)
		r.encode(t, swWAN)
		r.send()
		for range 3 {
			now = now.Add(time.Second)
			r.d.poll()
			r.g.sink(r.sb)
		}
		check("to nobody", Result{Delivered: [numSwPorts]uint64{4, 4, 5, 4, 3}, ARPSunk: 17, ARPReplies: 2, Flooded: 12, ICMPSunk: [2]uint64{0, 1}})
		// Past the reachable time host (2, 1) is probed: one request, unicast, out of lan3; its
		// answer keeps it reachable. (The gateway is probed likewise on the WAN port.)
		now = now.Add(time.Minute)
		r.d.poll()
		now = now.Add(6 * time.Second)
		r.d.poll()
		r.send()
		check("probed", Result{Delivered: [numSwPorts]uint64{4, 4, 6, 4, 4}, ARPSunk: 19, ARPReplies: 4, Flooded: 12, ICMPSunk: [2]uint64{0, 1}})
		if n := r.t.table.Counters(); n.ProbesSent != 2 || n.Failures != 1 || n.Hosts != 2 || n.HostsRemoved != 1 {
			t.Fatalf("vid %d: %+v", vid, n)
		}
	}
}

// The switch's check takes an ARP frame from the router only as one it may send: a request
// (broadcast, or a probe to the host's MAC out of the host's port) for an address of that side's
// subnet, an announcement of its own address, a reply to the host that asked; from its MAC and
// address on that side, with the WAN VID on the WAN port.
func TestCheckARP(t *testing.T) {
	cfg := defaultConfig()
	cfg.WANVID = 7
	g := &generator{cfg: cfg}
	build := func(wan bool, op uint16, dst frame.MAC, tpa uint32, tha frame.MAC) []byte {
		d := make([]byte, 64)
		l3 := 14
		e := frame.Ether(d)
		e.SetDst(dst)
		mac, own := lanMAC, uint32(lanRouterIP)
		if wan {
			mac, own, l3 = wanMAC, wanRouterIP, 18
			binary.BigEndian.PutUint16(d[12:], frame.TypeVLAN)
			binary.BigEndian.PutUint16(d[14:], 7)
		}
		e.SetSrc(mac)
		binary.BigEndian.PutUint16(d[l3-2:], frame.TypeARP)
		a := d[l3:]
		binary.BigEndian.PutUint64(a, 0x0001080006040000|uint64(op))
		copy(a[8:], mac[:])
		binary.BigEndian.PutUint32(a[14:], own)
		copy(a[18:], tha[:])
		binary.BigEndian.PutUint32(a[24:], tpa)
		return d[:l3+46]
	}
	h := hostMAC(2, 1)
	good := []struct {
		name string
		d    []byte
		port int
	}{
		{"request", build(false, 1, broadcast, hostIP(2, 1), frame.MAC{}), swLAN1},
		{"request for nobody", build(false, 1, broadcast, lanNet|unansweredHost, frame.MAC{}), swLAN1 + 3},
		{"probe", build(false, 1, h, hostIP(2, 1), h), swLAN1 + 2},
		{"announcement", build(false, 1, broadcast, lanRouterIP, frame.MAC{}), swLAN1 + 1},
		{"reply", build(false, 2, h, hostIP(2, 1), h), swLAN1 + 2},
		{"gateway request", build(true, 1, broadcast, binary.BigEndian.Uint32(gatewayIP.AsSlice()), frame.MAC{}), swWAN},
		{"WAN announcement", build(true, 1, broadcast, wanRouterIP, frame.MAC{}), swWAN},
	}
	for _, c := range good {
		if k := g.check(c.d, c.port); k != sentARP {
			t.Errorf("%s: taken as %d", c.name, k)
		}
	}
	for _, c := range []struct {
		name string
		d    []byte
		port int
	}{
		{"a probe out of another port", build(false, 1, h, hostIP(2, 1), h), swLAN1},
		{"a probe to another MAC", build(false, 1, hostMAC(2, 2), hostIP(2, 1), h), swLAN1 + 2},
		{"a probe for nobody", build(false, 1, h, lanNet|unansweredHost, h), swLAN1 + 2},
		{"an announcement unicast", build(false, 1, h, lanRouterIP, frame.MAC{}), swLAN1 + 2},
		{"a request off the subnet", build(false, 1, broadcast, wanNet|1, frame.MAC{}), swLAN1},
		{"a request for the subnet's broadcast", build(false, 1, broadcast, lanNet|0xff, frame.MAC{}), swLAN1},
		{"a reply to another host", build(false, 2, hostMAC(2, 2), hostIP(2, 1), h), swLAN1 + 2},
		{"a reply broadcast", build(false, 2, broadcast, hostIP(2, 1), h), swLAN1 + 2},
		{"operation 3", build(false, 3, broadcast, hostIP(2, 1), frame.MAC{}), swLAN1},
		{"a LAN request on the WAN port", build(false, 1, broadcast, hostIP(2, 1), frame.MAC{}), swWAN},
		{"a WAN request on a LAN port", build(true, 1, broadcast, binary.BigEndian.Uint32(gatewayIP.AsSlice()), frame.MAC{}), swLAN1},
	} {
		if k := g.check(c.d, c.port); k != sentBad {
			t.Errorf("%s: taken as %d", c.name, k)
		}
	}
	for name, mod := range map[string]func(d []byte){
		"source MAC":     func(d []byte) { d[11] ^= 1 },
		"sender MAC":     func(d []byte) { d[14+13] ^= 1 },
		"sender address": func(d []byte) { d[14+17]++ },
		"hardware type":  func(d []byte) { d[14+1] = 6 },
		"truncated":      nil,
	} {
		d := append([]byte(nil), good[0].d...)
		if mod != nil {
			mod(d)
		} else {
			d = d[:14+27]
		}
		if k := g.check(d, good[0].port); k != sentBad {
			t.Errorf("request with %s wrong: taken as %d", name, k)
		}
	}
	d := append([]byte(nil), good[5].d...)
	d[15] = 8 // another VID
	if k := g.check(d, swWAN); k != sentBad {
		t.Errorf("a gateway request with VID 8: taken as %d", k)
	}
}
