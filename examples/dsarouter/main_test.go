package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/dsa"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/fwd"
)

// The example runs for a moment on several switch families and options, and every frame adds
// up: received on the conduit = dropped by the conduit (per reason) + routed + dropped by fwd
// (per reason); routed = tagged + bridge drops; tagged = sent on the conduit = delivered by the
// switch to the right port; no buffer leaked.
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
			if r.Routing.Local == 0 {
				t.Errorf("no frames for the router itself (ARP): %+v", r.Routing)
			}
			for _, reason := range []fwd.Reason{fwd.DropTTL, fwd.DropChecksum, fwd.DropUnresolved} {
				if r.Routing.Drops[reason] == 0 {
					t.Errorf("no fwd %v drops: %+v", reason, r.Routing.Drops)
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
			want := []string{"lan1", "lan4", "br-lan", "eth0", "accounting: ok", c.tagger}
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
	for _, mod := range []func(*Config){
		func(c *Config) { c.Tagger = "nosuch" },
		func(c *Config) { c.Tagger = "ksz8795" }, // 4 user ports: no room for lan1-4 and wan
		func(c *Config) { c.Tagger = "none" },
		func(c *Config) { c.WANVID = 4095 },
		func(c *Config) { c.PTP = []string{"eth9"} },
		func(c *Config) { c.Batch = 0 },
	} {
		cfg := defaultConfig()
		mod(&cfg)
		if _, err := run(context.Background(), cfg, &bytes.Buffer{}); err == nil {
			t.Errorf("config %+v accepted", cfg)
		}
	}
	if n := len(usableTaggers()); n < 10 {
		t.Fatalf("only %d usable taggers: %v", n, usableTaggers())
	}
}

// rig is a topology, one data plane and the generator, driven by hand.
type rig struct {
	t   *topology
	d   *dataPlane
	g   *generator
	in  *frame.Batch
	out *frame.Batch
	sb  *frame.Batch
}

func newRig(tb testing.TB, cfg Config) *rig {
	tb.Helper()
	top, err := build(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	r := &rig{t: top, d: top.newDataPlane(cfg.Batch), g: newGenerator(top, cfg),
		in: frame.NewBatch(cfg.Batch), out: frame.NewBatch(cfg.Batch + numLANPorts*hostsPerLAN), sb: frame.NewBatch(cfg.Batch)}
	r.g.hello(r.out)
	r.send()
	return r
}

// send puts r.out on the link, forwards everything queued and sinks the result.
func (r *rig) send() {
	r.t.swEnd.Send(r.out)
	for {
		if n, _ := r.t.eth0.Recv(r.in); n == 0 {
			break
		}
		r.d.step(r.in)
	}
	r.g.sink(r.sb)
}

// frameTo builds, in r.out, a frame from the internet to LAN host (lan, h).
func (r *rig) frameTo(tb testing.TB, lan, h int) {
	tb.Helper()
	if n, _ := r.t.pool.Alloc(r.out, 1); n != 1 {
		tb.Fatal("pool empty")
	}
	i := len(r.out.Frames) - 1
	r.out.Frames[i].Resize(60)
	d := r.out.Bytes(i)
	e := frame.Ether(d)
	e.SetDst(wanMAC)
	e.SetSrc(gatewayMAC)
	e.SetType(frame.TypeIPv4)
	udp(d[14:], netInternet|5, hostIP(lan, h), 40000, 64)
	if err := r.g.sw.Encode(r.out, i, dsa.Info{Port: swWAN}); err != nil {
		tb.Fatal(err)
	}
}

// frameFrom builds a frame from LAN host (lan, h) arriving on switch port `port`.
func (r *rig) frameFrom(tb testing.TB, lan, h, port int) {
	tb.Helper()
	if n, _ := r.t.pool.Alloc(r.out, 1); n != 1 {
		tb.Fatal("pool empty")
	}
	i := len(r.out.Frames) - 1
	r.out.Frames[i].Resize(60)
	d := r.out.Bytes(i)
	e := frame.Ether(d)
	e.SetDst(lanMAC)
	e.SetSrc(hostMAC(lan, h))
	e.SetType(frame.TypeIPv4)
	udp(d[14:], hostIP(lan, h), netInternet|5, 443, 64)
	if err := r.g.sw.Encode(r.out, i, dsa.Info{Port: uint16(port)}); err != nil {
		tb.Fatal(err)
	}
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
	r.t.swEnd.Send(r.out)
	n, _ := r.t.eth0.Recv(r.in)
	r.d.step(r.in)
	if n != 1 {
		t.Fatalf("received %d", n)
	}
	k, _ := r.t.swEnd.Recv(r.sb)
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
	if drops, _ := r.t.bridgeDrops(); drops[dropFDBMiss] != 1 {
		t.Fatalf("fdb-miss %d, want 1", drops[dropFDBMiss])
	}
	if r.t.pool.InUse() != 0 {
		t.Fatalf("%d buffers leaked", r.t.pool.InUse())
	}
}

// With a WAN VLAN, frames from the WAN port without the tag are not the WAN interface's.
func TestWANVLAN(t *testing.T) {
	cfg := defaultConfig()
	cfg.WANVID = 7
	r := newRig(t, cfg)
	r.frameTo(t, 0, 1) // untagged
	r.send()
	r.d.flush()
	c := r.t.router.Counters()
	if c.Drops[fwd.DropVLAN] != 1 || c.Forwarded != 0 {
		t.Fatalf("untagged WAN frame: %+v", c)
	}
	// Toward the ISP, routed frames carry the tag.
	r.frameFrom(t, 0, 1, 0)
	r.send()
	d := r.g.delivered[swWAN].Load()
	if d != 1 || r.g.misdelivery.Load() != 0 {
		t.Fatalf("wan delivered %d, wrong %d", d, r.g.misdelivery.Load())
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
	if p, _ := f.lookup(m(3)); p != 4 || f.n != 12 {
		t.Fatalf("moved mac: port %d, %d entries", p, f.n)
	}
	if _, ok := f.lookup(m(99)); ok {
		t.Fatal("unknown mac found")
	}
	f.learn([]byte{0x01, 0, 0x5e, 0, 0, 1}, 2) // group address as source: not learnt
	if _, ok := f.lookup([]byte{0x01, 0, 0x5e, 0, 0, 1}); ok || f.n != 12 {
		t.Fatal("multicast source learnt")
	}
	// A full table learns no more and never loops.
	for i := 0; i < 100; i++ {
		f.learn(m(1000+i), 1)
	}
	if f.n > 16 {
		t.Fatalf("%d entries in 16 slots", f.n)
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

// The steady-state loop allocates nothing: receive, demux, learn, route, bridge, tag, send, and
// the generator's side too — with PTP classification and a WAN VLAN as well.
func TestStepAllocs(t *testing.T) {
	for _, c := range []struct {
		tagger string
		vid    int
		ptp    []string
	}{{"edsa", 0, nil}, {"edsa", 7, []string{"lan1", "lan2", "lan3", "lan4"}}, {"ksz9477", 0, []string{"lan1"}}, {"mtk", 7, nil}} {
		cfg := defaultConfig()
		cfg.Tagger, cfg.WANVID, cfg.PTP, cfg.Bad = c.tagger, c.vid, c.ptp, 0.05
		r := newRig(t, cfg)
		step := func() {
			r.g.fill(r.out)
			r.send()
		}
		step()
		if a := testing.AllocsPerRun(200, step); a != 0 {
			t.Errorf("%+v: %v allocs per batch", c, a)
		}
		if r.g.misdelivery.Load() != 0 || r.t.pool.InUse() != 0 {
			t.Errorf("%+v: wrong %d, in use %d", c, r.g.misdelivery.Load(), r.t.pool.InUse())
		}
	}
}
