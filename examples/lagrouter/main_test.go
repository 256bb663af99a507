package main

import (
	"bytes"
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/fwd"
	"github.com/wirespeed/wirespeed/lag/lacp"
	"github.com/wirespeed/wirespeed/xmit"
)

func runFor(t *testing.T, cfg Config, d time.Duration) (Result, string) {
	t.Helper()
	return runForAfter(t, cfg, nil, d)
}

// runForAfter runs the router for d after setup and then wait (nil: none) and checks what every
// run must show.
func runForAfter(t *testing.T, cfg Config, wait func(), d time.Duration) (Result, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// However slow the machine, the generator runs until the checks below have something to see.
	cfg.settle = true
	cfg.ready = func() { // setup time not counted
		go func() {
			if wait != nil {
				wait()
			}
			time.AfterFunc(d, cancel)
		}()
	}
	var out bytes.Buffer
	r, err := run(ctx, cfg, &out)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Balanced() {
		t.Fatalf("accounting mismatch: %+v\n%s", r, out.String())
	}
	if r.Generated == 0 || r.Forwarded == 0 {
		t.Fatalf("nothing moved: %+v", r)
	}
	// The far ends checked every frame: forwarded ones and time exceeded for the TTL-1 ones.
	if r.Errors.Recv+r.Errors.Send != 0 {
		t.Errorf("%v", r.Errors)
	}
	if s := r.Sink; s.Forwarded == 0 || (cfg.Bad > 0 && s.TimeExceeded == 0) || s.Bad != 0 {
		t.Errorf("far ends: %+v", s)
	}
	// The router resolved the gateway and the VLAN hosts by ARP (tagged requests through the
	// aggregate, checked by the far ends) and the hosts answered: the gateway and at least one host
	// (how many depends on how fast the machine is).
	if s, n := r.Sink, r.Neigh; s.ARP == 0 || s.ARPReplies == 0 || n.Hosts == 0 || n.Resolved < 2 || n.Ready == 0 {
		t.Errorf("neighbours: %+v, far ends %+v", n, s)
	}
	return r, out.String()
}

func TestRunAccounts(t *testing.T) {
	for _, mode := range []struct{ lag, hash string }{{"rr", ""}, {"xor", "layer3+4"}, {"xor", "layer2"}} {
		t.Run(mode.lag+"/"+mode.hash, func(t *testing.T) {
			cfg := defaultConfig()
			cfg.Interval = 100 * time.Millisecond
			cfg.Bad = 0.05
			cfg.LAG = mode.lag
			if mode.hash != "" {
				cfg.Hash = mode.hash
			}
			r, out := runFor(t, cfg, 300*time.Millisecond)
			for _, reason := range []fwd.Reason{fwd.DropVLAN, fwd.DropTTL, fwd.DropChecksum} {
				if r.Drops.Drops[reason] == 0 {
					t.Errorf("no %v drops counted: %+v", reason, r.Drops)
				}
			}
			// Both members carry traffic, except layer2, whose hash of this traffic (one router MAC
			// pair per VLAN) may put everything on one member: there only the sum is checked.
			if mode.hash != "layer2" && (r.MemberTx[0] == 0 || r.MemberTx[1] == 0) {
				t.Errorf("a member sent nothing: %v", r.MemberTx)
			}
			if r.MemberTx[0]+r.MemberTx[1] == 0 {
				t.Errorf("the aggregate sent nothing")
			}
			for _, want := range []string{"lag0", "lag0-m0", "lag0-m1", "vlan101", "uplink", "accounting: ok"} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

// TestFailover takes member 1 down for good early in the run: the counters still add up, and
// member 1 stops sending while member 0 carries on (member 1's traffic moves over).
func TestFailover(t *testing.T) {
	cfg := defaultConfig()
	cfg.Interval = time.Hour
	cfg.FailAt = 100 * time.Millisecond
	cfg.Miimon = 5 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg.ready = func() { time.AfterFunc(500*time.Millisecond, cancel) }
	var out bytes.Buffer
	r, err := run(ctx, cfg, &out)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Balanced() {
		t.Fatalf("accounting mismatch: %+v\n%s", r, out.String())
	}
	if !strings.Contains(out.String(), "lag0-m1 link down") {
		t.Fatalf("no failover happened:\n%s", out.String())
	}
	// Member 1 carried at most the first 100 ms (plus a poll interval), member 0 the rest: member 0
	// must have sent clearly more.
	if r.MemberTx[0] <= r.MemberTx[1] {
		t.Errorf("member 0 sent %d, member 1 %d: no failover in the counters", r.MemberTx[0], r.MemberTx[1])
	}
}

func TestBadConfig(t *testing.T) {
	for _, mod := range []func(*Config){
		func(c *Config) { c.VLANs = 0 },
		func(c *Config) { c.LAG = "ab" },
		func(c *Config) { c.LAG, c.Hash = "xor", "layer9" },
	} {
		cfg := defaultConfig()
		mod(&cfg)
		if _, err := run(context.Background(), cfg, &bytes.Buffer{}); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
}

// lacpRunAggregated runs the in-memory network under LACP for d from when the router's controller
// has both members usable (at most 20 s after setup; the checks then fail), the event log in logs,
// so that how long negotiation takes on a loaded machine does not matter.
func lacpRunAggregated(t *testing.T, cfg Config, d time.Duration) (Result, string, string) {
	t.Helper()
	var logs bytes.Buffer
	cfg.logw = &logs
	cfg.Interval = time.Hour
	var ctl atomic.Pointer[lacp.Controller]
	cfg.onLACP = func(c *lacp.Controller) { ctl.Store(c) }
	r, out := runForAfter(t, cfg, func() {
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if c := ctl.Load(); c != nil && c.Usable(0) && c.Usable(1) {
				return
			}
		}
	}, d)
	return r, out, logs.String()
}

// TestLACP runs -lag 802.3ad in memory against the generator's switch, which runs a controller of
// its own: within the run both members are collecting and distributing on both sides, both carry
// the router's traffic, LACPDUs went both ways on both members and none of them reached the far
// ends' checks (nor the router's forwarding: the accounting adds up with the PDUs taken out); the
// event log has the aggregate coming up and both members starting to distribute; the final report
// has the per-member line with the LACPDU counters. Passive: a passive router aggregates with an
// active partner as well.
func TestLACP(t *testing.T) {
	for _, c := range []struct {
		name   string
		active bool
		log    string
	}{{"active", true, "text"}, {"passive", false, "json"}} {
		t.Run(c.name, func(t *testing.T) {
			cfg := defaultConfig()
			cfg.LAG, cfg.LACPActive, cfg.Log = "802.3ad", c.active, c.log
			r, out, logs := lacpRunAggregated(t, cfg, 2*time.Second) // ARP for the hosts starts over once the members carry traffic
			if r.LACP == nil || !r.LACP.Up || r.Partner == nil || !r.Partner.Up {
				t.Fatalf("aggregate not up: ours %+v, partner %+v\n%s%s", r.LACP, r.Partner, out, logs)
			}
			for m := 0; m < numMembers; m++ {
				p, q := r.LACP.Ports[m], r.Partner.Ports[m]
				if !p.Usable || !q.Usable || p.Stats.LACPDURx == 0 || p.Stats.LACPDUTx == 0 || p.Stats.Illegal != 0 || q.Stats.Illegal != 0 {
					t.Errorf("member %d: ours %+v, partner %+v", m, p, q)
				}
				if p.Partner.System != partnerSystem || q.Partner.System != routerSystem {
					t.Errorf("member %d: partner systems %v, %v", m, p.Partner.System, q.Partner.System)
				}
			}
			if r.MemberTx[0] == 0 || r.MemberTx[1] == 0 {
				t.Errorf("a member sent nothing: %v", r.MemberTx)
			}
			if r.SlowFrames == 0 {
				t.Errorf("the aggregate took no LACPDU out of the receive path")
			}
			for _, want := range []string{"lag up", "lag member distributing", "lacp state"} {
				if !strings.Contains(logs, want) {
					t.Errorf("event log lacks %q:\n%s", want, logs)
				}
			}
			if c.log == "json" && !strings.Contains(logs, `"msg":"lag up"`) {
				t.Errorf("-log json: not JSON:\n%s", logs)
			}
			for _, want := range []string{"lag0-m0 rx ", "LACPDUs in ", "collecting_distributing", "lag0 LACP: aggregate up", "accounting: ok"} {
				if !strings.Contains(out, want) {
					t.Errorf("report lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

// TestLACPFailover takes member 1's link down once both members distribute, and brings it back
// 300 ms after the router stopped using it: the router stops distributing on it (logged, with the
// link event), member 0 carries on, the counters add up with the frames sent to member 1 in between
// counted as its drops, and member 1 rejoins (logged again). Each step waits for the controller's
// state (at most 20 s), not for a fixed time, so that a loaded machine does not fail it.
func TestLACPFailover(t *testing.T) {
	cfg := defaultConfig()
	cfg.LAG = "lacp"
	var logs bytes.Buffer
	cfg.logw = &logs
	cfg.Interval = time.Hour
	var ctl atomic.Pointer[lacp.Controller]
	var m1 atomic.Pointer[xmit.MemPort]
	cfg.onLACP = func(c *lacp.Controller) { ctl.Store(c) }
	cfg.onMems = func(m []*xmit.MemPort) { m1.Store(m[1]) }
	var stuck atomic.Pointer[string] // the first step that did not happen in time
	until := func(what string, ok func(c *lacp.Controller) bool) bool {
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if c := ctl.Load(); c != nil && ok(c) {
				return true
			}
		}
		stuck.Store(&what)
		return false
	}
	both := func(c *lacp.Controller) bool { return c.Usable(0) && c.Usable(1) }
	r, out := runForAfter(t, cfg, func() {
		if !until("both members usable", both) {
			return
		}
		m1.Load().SetLinkUp(false)
		if !until("member 1 out of use after its link went down", func(c *lacp.Controller) bool { return !c.Usable(1) }) {
			return
		}
		time.Sleep(300 * time.Millisecond)
		m1.Load().SetLinkUp(true)
		until("both members usable again", both)
	}, 500*time.Millisecond)
	if s := stuck.Load(); s != nil {
		t.Fatalf("not within 20 s: %s\n%s%s", *s, out, logs.String())
	}
	for _, want := range []string{`msg="lag member link down" lag=lag0 member=lag0-m1`, `msg="lag member stopped distributing" lag=lag0 member=lag0-m1`, `msg="lag member link up" lag=lag0 member=lag0-m1`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("event log lacks %q:\n%s", want, logs.String())
		}
	}
	if n := strings.Count(logs.String(), `msg="lag member distributing" lag=lag0 member=lag0-m1`); n < 2 {
		t.Errorf("member 1 started distributing %d times, want 2 (before and after):\n%s", n, logs.String())
	}
	if !r.LACP.Ports[1].Usable || !r.LACP.Ports[0].Usable {
		t.Errorf("not both back: %+v", r.LACP)
	}
	if r.MemberTx[0] == 0 || r.MemberTx[1] == 0 {
		t.Errorf("member tx %v", r.MemberTx)
	}
	if !strings.Contains(out, "accounting: ok") {
		t.Errorf("%s", out)
	}
}
