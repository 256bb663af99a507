package lacp

import (
	"context"
	"errors"
	"sync"
	"testing"
)

// Convergence, per the machines: the first LACPDU unselects the defaulted port (one tick to
// DETACHED, one to WAITING), Aggregate_Wait_Time (2 s) in WAITING, then ATTACHED and, once the
// partner says it is in sync, COLLECTING_DISTRIBUTING: under 5 s after the link came up.
const convergeTicks = 5 * TicksPerSecond

// intervals returns the gaps between the ticks of ts after the first skip.
func intervals(ts []int64, skip int) []int64 {
	var d []int64
	for i := skip + 1; i < len(ts); i++ {
		d = append(d, ts[i]-ts[i-1])
	}
	return d
}

func TestActiveActiveFast(t *testing.T) {
	a, b := newSide(t, 0xa, 2, nil), newSide(t, 0xb, 2, nil)
	w := newWire(a, b)
	n := w.until(convergeTicks, func() bool { return all(a.usable()) && all(b.usable()) })
	if n < 0 {
		t.Fatalf("not aggregated after %d ticks: %+v", convergeTicks, a.c.Status())
	}
	if n < aggregateWaitTicks {
		t.Fatalf("aggregated after %d ticks, before Aggregate_Wait_Time", n)
	}
	w.run(20 * TicksPerSecond)
	for _, s := range []*side{a, b} {
		st := s.c.Status()
		if !st.Up || st.Aggregator == 0 {
			t.Fatalf("status %+v", st)
		}
		for _, p := range st.Ports {
			if p.Aggregator != st.Aggregator || p.Mux != MuxCollectingDistributing || p.Rx != RxCurrent ||
				p.Actor.State != StateActivity|StateTimeout|StateAggregation|StateSync|StateCollecting|StateDistributing {
				t.Fatalf("port %+v", p)
			}
		}
		// Steady state: one LACPDU a second (the partner asked for the short timeout).
		for i := range s.sent {
			for _, d := range intervals(s.sent[i], len(s.sent[i])-15) {
				if d != fastPeriodicTicks {
					t.Fatalf("member %d: LACPDUs at %v", i, s.sent[i])
				}
			}
		}
		s.checkRate()
	}
	// Both sides name each other right.
	pa := a.c.Status().Ports[1]
	if pa.Partner.System != mac(0xb, 0) || pa.Partner.Port != 2 || pa.Partner.Key != 6<<1|1 || pa.Actor.Key != 6<<1|1 {
		t.Fatalf("partner %+v actor %+v", pa.Partner, pa.Actor)
	}
}

func TestActivePassive(t *testing.T) {
	a := newSide(t, 0xa, 2, nil)
	b := newSide(t, 0xb, 2, func(c *Config) { c.Passive = true })
	w := newWire(a, b)
	if w.until(convergeTicks, func() bool { return all(a.usable()) && all(b.usable()) }) < 0 {
		t.Fatalf("active and passive did not aggregate: %+v", b.c.Status())
	}
	// The passive side answered: it sent only after it had heard the active one.
	if b.sent[0][0] <= a.sent[0][0] {
		t.Fatalf("passive side sent at %v, the active one at %v", b.sent[0], a.sent[0])
	}
	if s := b.c.Status().Ports[0]; s.Actor.State&StateActivity != 0 || s.Partner.State&StateActivity == 0 {
		t.Fatalf("passive actor %v, partner %v", s.Actor.State, s.Partner.State)
	}
}

func TestPassivePassive(t *testing.T) {
	a := newSide(t, 0xa, 2, func(c *Config) { c.Passive = true })
	b := newSide(t, 0xb, 2, func(c *Config) { c.Passive = true })
	w := newWire(a, b)
	w.run(60 * TicksPerSecond)
	for _, s := range []*side{a, b} {
		for i := range s.sent {
			if len(s.sent[i]) != 0 {
				t.Fatalf("a passive side sent LACPDUs at %v", s.sent[i])
			}
		}
		if s.c.Up() || countTrue(s.usable()) != 0 {
			t.Fatal("two passive sides aggregated")
		}
		for _, p := range s.c.Status().Ports {
			if p.Periodic != NoPeriodic || p.Rx != RxDefaulted {
				t.Fatalf("port %+v", p)
			}
		}
	}
}

// TestSlowFast: each side sends at the rate the other asks for.
func TestSlowFast(t *testing.T) {
	a := newSide(t, 0xa, 2, func(c *Config) { c.Fast = true })
	b := newSide(t, 0xb, 2, func(c *Config) { c.Fast = false })
	w := newWire(a, b)
	if w.until(convergeTicks, func() bool { return all(a.usable()) && all(b.usable()) }) < 0 {
		t.Fatal("not aggregated")
	}
	w.run(125 * TicksPerSecond)
	for i := 0; i < 2; i++ {
		// b is asked for fast: every second.
		for _, d := range intervals(b.sent[i], len(b.sent[i])-100) {
			if d != fastPeriodicTicks {
				t.Fatalf("b member %d: %v", i, b.sent[i])
			}
		}
		// a is asked for slow: every 30 s once aggregated.
		if d := intervals(a.sent[i], len(a.sent[i])-4); len(d) != 3 || d[0] != slowPeriodicTicks || d[1] != slowPeriodicTicks || d[2] != slowPeriodicTicks {
			t.Fatalf("a member %d: %v", i, a.sent[i])
		}
	}
	if st := b.c.Status().Ports[0]; st.Periodic != FastPeriodic || st.Actor.State&StateTimeout != 0 {
		t.Fatalf("b %+v", st)
	}
	if st := a.c.Status().Ports[0]; st.Periodic != SlowPeriodic || st.Actor.State&StateTimeout == 0 {
		t.Fatalf("a %+v", st)
	}
}

// TestMismatchedKeys: ports whose keys differ (on either side) are never aggregated together:
// they sit in different aggregators and only the active one's ports carry traffic.
func TestMismatchedKeys(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b func(*Config)
	}{
		{"partner keys", nil, func(c *Config) { c.Ports[1].Key = 0x99 }},
		{"actor keys", func(c *Config) { c.Ports[0].Key = 0x42 }, nil},
		{"speeds", func(c *Config) { c.Ports[1].Speed = 1000 }, func(c *Config) { c.Ports[1].Speed = 1000 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, minLinks := range []int{0, 2} {
				amod := func(c *Config) {
					c.MinLinks = minLinks
					if tc.a != nil {
						tc.a(c)
					}
				}
				a, b := newSide(t, 0xa, 2, amod), newSide(t, 0xb, 2, tc.b)
				w := newWire(a, b)
				for i := 0; i < 40*TicksPerSecond; i++ {
					w.step()
					if countTrue(a.usable()) > 1 {
						t.Fatalf("tick %d: both members usable: %+v", i, a.c.Status())
					}
				}
				st := a.c.Status()
				if st.Ports[0].Aggregator == st.Ports[1].Aggregator {
					t.Fatalf("one aggregator for both: %+v", st.Ports)
				}
				if minLinks == 2 && (st.Up || countTrue(a.usable()) != 0) {
					t.Fatalf("min_links 2 with one port per aggregator: up %v", st.Up)
				}
				if minLinks == 0 && (!st.Up || countTrue(a.usable()) != 1) {
					t.Fatalf("no single member carries traffic: %+v", st)
				}
			}
		})
	}
}

// TestPartnerChangesSystem: the partner of member 1 changes its system identifier; member 1 leaves
// the aggregate (stable keeps the old aggregator), then member 0's does too and the new
// aggregator takes over; the churn machines notice a port that never gets in sync.
func TestPartnerChangesSystem(t *testing.T) {
	s := newSide(t, 0xa, 2, nil)
	r := newRef(2, mac(0xb, 0))
	w := &refWire{s: s, r: r}
	if w.until(convergeTicks, func() bool { return all(s.usable()) }) < 0 {
		t.Fatalf("not aggregated: %+v", s.c.Status())
	}
	old := s.c.Status().Aggregator
	r.ports[1].sys = mac(0xc, 0)
	// The next LACPDU of member 1's partner moves it out at once.
	if n := w.until(2*TicksPerSecond, func() bool { return !s.c.Usable(1) }); n < 0 {
		t.Fatal("member 1 still usable after its partner changed")
	}
	if !s.c.Usable(0) || s.c.Status().Aggregator != old {
		t.Fatalf("member 0 lost or the aggregator changed: %+v", s.c.Status())
	}
	w.run(10 * TicksPerSecond)
	st := s.c.Status()
	if st.Ports[1].Aggregator == st.Aggregator || st.Ports[1].Partner.System != mac(0xc, 0) || s.c.Usable(1) {
		t.Fatalf("member 1 in %d (active %d), partner %v", st.Ports[1].Aggregator, st.Aggregator, st.Ports[1].Partner.System)
	}
	// Now member 0's partner moves too: both end up together in the new aggregator.
	r.ports[0].sys = mac(0xc, 0)
	if w.until(convergeTicks+TicksPerSecond, func() bool { return all(s.usable()) }) < 0 {
		t.Fatalf("not aggregated again: %+v", s.c.Status())
	}
	st = s.c.Status()
	if st.Ports[0].Aggregator != st.Ports[1].Aggregator || st.Ports[0].Partner.System != mac(0xc, 0) {
		t.Fatalf("%+v", st.Ports)
	}
	// A partner that never gets in sync: the partner churn machine reports it after 60 s.
	r.ports[1].individual = true
	w.run(churnTicks + 2*TicksPerSecond)
	if p := s.c.Status().Ports[1]; p.PartnerChurn != Churned || p.Stats.PartnerChurns == 0 || s.c.Usable(1) {
		t.Fatalf("member 1: %+v", p)
	}
}

// TestSilentPartner: a partner that stops sending is timed out 3 s (30 ticks) after its last
// LACPDU at the fast rate: the receive machine expires, the member leaves, the aggregate goes down;
// 3 s later the port is defaulted.
func TestSilentPartner(t *testing.T) {
	s := newSide(t, 0xa, 2, nil)
	r := newRef(2, mac(0xb, 0))
	w := &refWire{s: s, r: r}
	if w.until(convergeTicks, func() bool { return all(s.usable()) }) < 0 {
		t.Fatal("not aggregated")
	}
	w.run(5) // some ticks into a period
	for _, p := range r.ports {
		p.silent = true
	}
	// The last LACPDU reached the controller at the next Tick (the frames of this tick are
	// delivered before it); which tick sent it:
	last := r.ports[0].sentAt[len(r.ports[0].sentAt)-1]
	arrive := last + 1 // processed at the start of this tick
	s.events = nil
	for s.c.Usable(0) || w.now < arrive {
		if w.now > arrive+4*TicksPerSecond {
			t.Fatal("member 0 never expired")
		}
		w.step()
	}
	// The receive machine's current_while timer, 30 ticks from the tick that processed the PDU,
	// runs out at that tick + 29 (the same tick counts one).
	if got, want := w.now, arrive+shortTimeoutTicks-1; got != want {
		t.Fatalf("member 0 expired at tick %d, want %d (LACPDU processed at %d)", got, want, arrive)
	}
	if p := s.c.Status().Ports[0]; p.Rx != RxExpired || p.Actor.State&StateExpired == 0 || p.Partner.State&StateSync != 0 {
		t.Fatalf("%+v", p)
	}
	var sawDown bool
	for _, e := range s.events {
		if e.Kind == EventAggregate && !e.Up {
			sawDown = true
		}
	}
	if s.c.Up() || !sawDown {
		t.Fatalf("aggregate up %v, events %v", s.c.Up(), s.events)
	}
	w.run(shortTimeoutTicks)
	if p := s.c.Status().Ports[0]; p.Rx != RxDefaulted || p.Actor.State&StateDefaulted == 0 ||
		p.Partner != (Info{SystemPriority: 0xffff, Key: 1, Port: 1, PortPriority: 0xff}) {
		t.Fatalf("%+v", p)
	}
	// It comes back: the partner speaks again.
	for _, p := range r.ports {
		p.silent = false
	}
	if w.until(convergeTicks, func() bool { return all(s.usable()) }) < 0 {
		t.Fatal("not aggregated again")
	}
}

// TestLinkDown: a member whose link goes down stops carrying traffic at once (Process, no tick),
// its partner times it out; it returns when the link comes back.
func TestLinkDown(t *testing.T) {
	a, b := newSide(t, 0xa, 2, nil), newSide(t, 0xb, 2, nil)
	w := newWire(a, b)
	if w.until(convergeTicks, func() bool { return all(a.usable()) && all(b.usable()) }) < 0 {
		t.Fatal("not aggregated")
	}
	a.events = nil
	w.down[1] = true // frames are lost from now on
	a.c.SetLinkUp(1, false)
	a.c.Process()
	if a.c.Usable(1) || !a.c.Usable(0) || !a.c.Up() {
		t.Fatalf("after link down: %v", a.usable())
	}
	a.checkMirror()
	if len(a.events) < 2 || a.events[0].Kind != EventLink || a.events[0].Up || a.events[0].Member != 1 {
		t.Fatalf("events %v", a.events)
	}
	var member bool
	for _, e := range a.events {
		member = member || (e.Kind == EventMember && e.Member == 1 && !e.Up)
	}
	if !member {
		t.Fatalf("no member down event: %v", a.events)
	}
	// b hears nothing on member 1 and times it out within 3 s.
	if n := w.until(shortTimeoutTicks+1, func() bool { return !b.c.Usable(1) }); n < 0 {
		t.Fatal("the partner did not time out member 1")
	}
	if p := a.c.Status().Ports[1]; p.Rx != RxPortDisabled || p.Periodic != NoPeriodic || p.Mux == MuxCollectingDistributing {
		t.Fatalf("%+v", p)
	}
	w.setLink(1, true)
	if w.until(convergeTicks+shortTimeoutTicks, func() bool { return all(a.usable()) && all(b.usable()) }) < 0 {
		t.Fatalf("member 1 did not come back: %+v", a.c.Status().Ports[1])
	}
}

// TestLinkSource: the Link of a port is read every tick.
func TestLinkSource(t *testing.T) {
	var l fakeLink
	l.up = true
	a := newSide(t, 0xa, 2, func(c *Config) { c.Ports[0].Link = &l })
	b := newSide(t, 0xb, 2, nil)
	w := newWire(a, b)
	if w.until(convergeTicks, func() bool { return all(a.usable()) }) < 0 {
		t.Fatal("not aggregated")
	}
	l.up = false
	w.step()
	if a.c.Usable(0) || a.c.Status().Ports[0].Link {
		t.Fatal("member 0 usable with its link down")
	}
}

type fakeLink struct{ up bool }

func (l *fakeLink) LinkUp() bool { return l.up }

// TestMinLinks: with min_links 2 the aggregate is down (no member carries traffic) as soon as one
// of two members is lost, and up again when it returns.
func TestMinLinks(t *testing.T) {
	a, b := newSide(t, 0xa, 2, func(c *Config) { c.MinLinks = 2 }), newSide(t, 0xb, 2, nil)
	w := newWire(a, b)
	if w.until(convergeTicks, func() bool { return all(a.usable()) }) < 0 {
		t.Fatal("not aggregated")
	}
	w.setLink(0, false)
	a.c.Process()
	if a.c.Up() || countTrue(a.usable()) != 0 {
		t.Fatalf("up %v with one member of two and min_links 2: %v", a.c.Up(), a.usable())
	}
	w.setLink(0, true)
	if w.until(convergeTicks+shortTimeoutTicks, func() bool { return all(a.usable()) }) < 0 {
		t.Fatal("not up again")
	}
}

// TestSelectionPolicies: the partner splits the ports into two groups (keys 1: members 0, 1, 2;
// key 2: member 3). Count and Bandwidth pick the bigger; Stable keeps the aggregator it chose
// while it is up.
func TestSelectionPolicies(t *testing.T) {
	for _, sel := range []Selection{Stable, Bandwidth, Count} {
		t.Run(sel.String(), func(t *testing.T) {
			s := newSide(t, 0xa, 4, func(c *Config) { c.Select = sel })
			r := newRef(4, mac(0xb, 0))
			r.ports[3].key = 2
			w := &refWire{s: s, r: r}
			w.run(convergeTicks * 2)
			u := s.usable()
			if !u[0] || !u[1] || !u[2] || u[3] {
				t.Fatalf("usable %v: %+v", u, s.c.Status())
			}
			// Members 0-2 of the big group lose their links one by one; the small group takes
			// over under Bandwidth and Count as soon as it is bigger, under Stable only once the
			// active aggregator has no port up.
			w.setLink(0, false)
			w.setLink(1, false)
			w.run(convergeTicks)
			u = s.usable()
			switch sel {
			case Stable:
				if !u[2] || u[3] {
					t.Fatalf("stable: %v", u)
				}
			default:
				// 1 port against 1: a tie keeps the current one.
				if !u[2] || u[3] {
					t.Fatalf("%v: %v", sel, u)
				}
			}
			w.setLink(2, false)
			w.run(convergeTicks)
			if u = s.usable(); !u[3] {
				t.Fatalf("member 3 not used with the others down: %v", u)
			}
		})
	}
}

// TestCountPrefersBigger: under Count a bigger group replaces the active one when it appears;
// under Stable it does not.
func TestCountPrefersBigger(t *testing.T) {
	for _, sel := range []Selection{Stable, Count} {
		s := newSide(t, 0xa, 3, func(c *Config) { c.Select = sel })
		r := newRef(3, mac(0xb, 0))
		r.ports[1].silent, r.ports[2].silent = true, true
		w := &refWire{s: s, r: r}
		w.run(convergeTicks * 2)
		if u := s.usable(); !u[0] || u[1] || u[2] {
			t.Fatalf("%v: %v", sel, u)
		}
		// Ports 1 and 2 come up with another key: a group of two.
		r.ports[1].silent, r.ports[2].silent = false, false
		r.ports[1].key, r.ports[2].key = 9, 9
		w.run(convergeTicks * 2)
		u := s.usable()
		if sel == Count && (u[0] || !u[1] || !u[2]) {
			t.Fatalf("count: %v", u)
		}
		if sel == Stable && (!u[0] || u[1] || u[2]) {
			t.Fatalf("stable: %v", u)
		}
	}
}

// TestMarkerResponder: marker information is answered with a marker response carrying the same
// fields, at most MaxMarkersPerSecond a second; responses and other subtypes are counted.
func TestMarkerResponder(t *testing.T) {
	s := newSide(t, 0xa, 1, nil)
	s.c.Tick()
	s.collect()
	m := Marker{RequesterPort: 0x1234, RequesterSystem: mac(0xb, 0), TransactionID: 0xdeadbeef}
	f := make([]byte, FrameLen)
	PutMarkerFrame(f, mac(0xb, 1), &m)
	for i := 0; i < 8; i++ {
		s.c.HandleSlow(0, f)
	}
	s.c.Process() // marker responses go out without waiting for a tick
	s.collect()
	var resp []Marker
	for _, p := range s.pdus[0] {
		if p.Subtype == SubtypeMarker {
			if p.Src != mac(0xa, 1) {
				t.Fatalf("response from %v", p.Src)
			}
			resp = append(resp, p.Marker)
		}
	}
	want := m
	want.Response, want.Version = true, Version
	if len(resp) != MaxMarkersPerSecond {
		t.Fatalf("%d responses, want %d", len(resp), MaxMarkersPerSecond)
	}
	for _, r := range resp {
		if r != want {
			t.Fatalf("response %+v, want %+v", r, want)
		}
	}
	st := s.c.Status().Ports[0].Stats
	if st.MarkerRx != 8 || st.MarkerRespTx != MaxMarkersPerSecond || st.RateLimited != 8-MaxMarkersPerSecond {
		t.Fatalf("stats %+v", st)
	}
	// A second later the responder answers again.
	for i := 0; i < TicksPerSecond; i++ {
		s.c.Tick()
	}
	s.pdus[0] = nil
	s.c.HandleSlow(0, f)
	s.c.Process()
	s.collect()
	if p := s.pdus[0]; len(p) == 0 || p[len(p)-1].Subtype != SubtypeMarker || p[len(p)-1].Marker != want {
		t.Fatalf("after a second: %+v", s.pdus[0])
	}
	// A response, an OAM frame, garbage, our own LACPDU looped back.
	PutMarkerFrame(f, mac(0xb, 1), &Marker{Response: true})
	s.c.HandleSlow(0, f)
	oam := append([]byte(nil), f...)
	oam[14] = 3
	s.c.HandleSlow(0, oam)
	s.c.HandleSlow(0, f[:40])
	own := make([]byte, FrameLen)
	PutLACPFrame(own, mac(0xa, 1), &LACPDU{Actor: Info{System: mac(0xa, 0), State: StateActivity | StateAggregation}})
	s.c.HandleSlow(0, own)
	s.c.Process()
	st = s.c.Status().Ports[0].Stats
	if st.MarkerRespRx != 1 || st.Unknown != 1 || st.Illegal != 1 || st.Loopback != 1 || st.LACPDURx != 0 {
		t.Fatalf("stats %+v", st)
	}
	if p := s.c.Status().Ports[0]; p.Rx == RxCurrent {
		t.Fatal("a looped-back LACPDU made the port current")
	}
}

// TestRateLimit: a partner that changes what it says every tick calls for an LACPDU every tick;
// the controller sends at most three a second.
func TestRateLimit(t *testing.T) {
	s := newSide(t, 0xa, 1, nil)
	f := make([]byte, FrameLen)
	for i := 0; i < 10*TicksPerSecond; i++ {
		// Each PDU names a different partner key for us: NTT every time.
		PutLACPFrame(f, mac(0xb, 1), &LACPDU{Actor: Info{System: mac(0xb, 0), Key: 1, Port: 1, State: StateActivity | StateAggregation | StateTimeout},
			Partner: Info{Key: uint16(i)}})
		s.c.HandleSlow(0, f)
		s.c.Tick()
		s.collect()
		s.checkRate()
	}
	if n := len(s.sent[0]); n < 25 || n > 31 {
		t.Fatalf("%d LACPDUs in 10 s", n)
	}
	if s.c.Status().Ports[0].Stats.RateLimited == 0 {
		t.Fatal("nothing counted as rate limited")
	}
}

// TestRxOverflow: a flood of slow-protocols frames on one member fills its bounded queue; the rest
// are dropped and counted, and the other member's LACPDUs still get through.
func TestRxOverflow(t *testing.T) {
	s := newSide(t, 0xa, 2, nil)
	f := make([]byte, FrameLen)
	PutMarkerFrame(f, mac(0xb, 1), &Marker{Response: true})
	for i := 0; i < 100; i++ {
		s.c.HandleSlow(0, f)
	}
	s.c.HandleSlow(5, f)  // no such member: ignored
	s.c.HandleSlow(-1, f) // same
	l := make([]byte, FrameLen)
	PutLACPFrame(l, mac(0xb, 2), &LACPDU{Actor: Info{System: mac(0xb, 0), Key: 1, Port: 2, State: StateActivity | StateAggregation}})
	s.c.HandleSlow(1, l)
	st := s.c.Status().Ports[0].Stats
	if st.RxOverflow != 100-inboxPerPort {
		t.Fatalf("overflow %d", st.RxOverflow)
	}
	s.c.Tick()
	st = s.c.Status().Ports[0].Stats
	if st.MarkerRespRx != inboxPerPort || st.RxOverflow != 100-inboxPerPort {
		t.Fatalf("%+v", st)
	}
	if st := s.c.Status().Ports[1].Stats; st.LACPDURx != 1 || st.RxOverflow != 0 {
		t.Fatalf("member 1: %+v", st)
	}
}

func TestConfigErrors(t *testing.T) {
	tx := &capPort{}
	ok := PortConfig{Tx: tx, MAC: mac(1, 1)}
	for _, c := range []*Config{
		nil,
		{},
		{Ports: []PortConfig{{}}},
		{Ports: []PortConfig{ok, {Tx: tx, Number: 1}}},
		{Ports: []PortConfig{ok}, Key: 1024},
		{Ports: []PortConfig{ok}, MinLinks: 2},
		{Ports: []PortConfig{ok}, Select: 3},
		{Ports: []PortConfig{{Tx: tx}}},
	} {
		if _, err := New(c); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: %v", c, err)
		}
	}
	c, err := New(&Config{Ports: []PortConfig{ok, {Tx: tx}}})
	if err != nil {
		t.Fatal(err)
	}
	st := c.Status()
	if st.Ports[0].Actor.System != mac(1, 1) || st.Ports[0].Actor.SystemPriority != 0xffff || st.Ports[1].Actor.Port != 2 ||
		st.Ports[0].Actor.PortPriority != 0xff || st.Ports[0].Actor.Key != 1 {
		t.Fatalf("defaults %+v", st.Ports)
	}
	if c.SetLinkUp(2, false) == nil {
		t.Fatal("SetLinkUp out of range")
	}
	if s, err := ParseSelection("count"); err != nil || s != Count {
		t.Fatal(s, err)
	}
	if _, err := ParseSelection("prio"); !errors.Is(err, ErrConfig) {
		t.Fatal(err)
	}
}

// TestPartnerAsksFast: the partner switches to the short timeout; a port in SLOW_PERIODIC sends
// at once and then every second; back to the long timeout, every 30 s.
func TestPartnerAsksFast(t *testing.T) {
	s := newSide(t, 0xa, 1, nil)
	r := newRef(1, mac(0xb, 0))
	r.ports[0].fast = false
	w := &refWire{s: s, r: r}
	w.run(convergeTicks + 95*TicksPerSecond)
	if !s.c.Usable(0) || s.c.Status().Ports[0].Periodic != SlowPeriodic {
		t.Fatalf("%+v", s.c.Status().Ports[0])
	}
	if d := intervals(s.sent[0], len(s.sent[0])-3); d[0] != slowPeriodicTicks || d[1] != slowPeriodicTicks {
		t.Fatalf("slow: %v", s.sent[0])
	}
	before := len(s.sent[0])
	r.ports[0].fast = true
	at := w.now
	w.run(5 * TicksPerSecond)
	got := s.sent[0][before:]
	// The partner's LACPDU goes out at tick at+1, is processed at at+2, where the periodic
	// machine leaves SLOW_PERIODIC for PERIODIC_TX and the LACPDU goes out.
	if len(got) < 5 || got[0] != at+2 {
		t.Fatalf("after the partner asked for fast at %d: %v", at, got)
	}
	for _, d := range intervals(got, len(got)-4) { // (an answer to the partner's news may come between)
		if d != fastPeriodicTicks {
			t.Fatalf("fast: %v", got)
		}
	}
	if !s.c.Usable(0) {
		t.Fatal("lost the member")
	}
}

// TestUnmatchedPartner: a partner that says it is in sync but names us wrongly (another key) is
// not matched: its synchronization is not believed and the member never carries traffic.
func TestUnmatchedPartner(t *testing.T) {
	s := newSide(t, 0xa, 2, nil)
	r := newRef(2, mac(0xb, 0))
	r.ports[1].misecho = true
	w := &refWire{s: s, r: r}
	for i := 0; i < 20*TicksPerSecond; i++ {
		w.step()
		if s.c.Usable(1) {
			t.Fatalf("tick %d: member 1 usable with a partner that does not match it", w.now)
		}
	}
	if !s.c.Usable(0) {
		t.Fatal("member 0 not usable")
	}
	if p := s.c.Status().Ports[1]; p.Partner.State&StateSync != 0 || p.Mux == MuxCollectingDistributing {
		t.Fatalf("%+v", p)
	}
}

// TestConcurrent: workers hand frames to HandleSlow and read Status and Usable while the
// machines tick (run with -race).
func TestConcurrent(t *testing.T) {
	a, b := newSide(t, 0xa, 2, nil), newSide(t, 0xb, 2, nil)
	w := newWire(a, b)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	junk := make([]byte, FrameLen)
	PutMarkerFrame(junk, mac(0xb, 1), &Marker{Response: true})
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				a.c.HandleSlow(g%2, junk)
				_ = a.c.Status()
				_ = a.c.Usable(g % 2)
				if i%100 == 0 {
					a.c.Attach(&members{})
				}
			}
		}(g)
	}
	n := w.until(convergeTicks, func() bool { return all(a.usable()) && all(b.usable()) })
	close(stop)
	wg.Wait()
	if n < 0 {
		t.Fatalf("not aggregated with the noise: %+v", a.c.Status())
	}
	// Run returns when its context ends.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	a.c.Run(ctx)
}
