package lacp

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// The model: what 802.1AX says the aggregate must look like once things have been quiet for a
// while, from the configuration of both ends alone.
//
//   - A member is eligible when its link is up, its partner speaks (is not silent) and at least
//     one end is active.
//   - Eligible members aggregate exactly when they share the actor key, the partner's system and
//     the partner's key: these groups are the candidate aggregates.
//   - The members that carry traffic are the whole of one candidate group, the active
//     aggregator's, or none when that group is smaller than max(MinLinks, 1); when any member is
//     eligible, the active aggregator is one of the groups. Count and Bandwidth (equal speeds)
//     choose a largest group.
//
// And at every tick, whatever happened: a member carries traffic only when its link is up, its
// mux is COLLECTING_DISTRIBUTING, its partner information is current and in sync and it is in the
// active aggregator, which it joined Aggregate_Wait_Time ago or more; all such members share one
// aggregator; only members of the active
// aggregator tell the partner they collect and distribute; the attached aggregate mirrors the
// controller; no port sends more than three LACPDUs in a second.

type modelCase struct {
	n        int
	passive  bool
	minLinks int
	sel      Selection
	keys     []uint16 // our PortConfig.Key per member (0: the default)
}

func (m *modelCase) groupKey(r *refPartner, s *side, i int) string {
	p := r.ports[i]
	return fmt.Sprintf("%d/%v/%d", s.c.Status().Ports[i].Actor.Key, p.sys, p.key)
}

func (m *modelCase) eligible(r *refPartner, i int) bool {
	p := r.ports[i]
	return p.link && !p.silent && (!m.passive || p.active)
}

// checkInvariants runs at every tick.
func checkInvariants(t testing.TB, s *side) {
	minLinks := s.c.cfg.MinLinks
	t.Helper()
	st := s.c.Status()
	agg := 0
	n := 0
	for _, p := range st.Ports {
		// What the partner is told: distributing only in the active aggregator. A selection run
		// by a later member's machines (or a link change) can leave an earlier member claiming it
		// until its mux machine runs at the next tick, never longer.
		if p.Actor.State&(StateCollecting|StateDistributing) != 0 && (p.Mux != MuxCollectingDistributing || p.Aggregator != st.Aggregator) {
			if s.stale[p.Member]++; s.stale[p.Member] > 1 {
				t.Fatalf("tick %d: member %d says %v in mux %v, aggregator %d (active %d)", st.Tick, p.Member, p.Actor.State, p.Mux, p.Aggregator, st.Aggregator)
			}
		} else {
			s.stale[p.Member] = 0
		}
		if p.Aggregator != s.agg[p.Member] {
			s.agg[p.Member], s.joined[p.Member] = p.Aggregator, st.Tick
		}
		if !p.Usable {
			continue
		}
		// A port that joined an aggregator waits Aggregate_Wait_Time in WAITING first.
		if st.Tick-s.joined[p.Member] < aggregateWaitTicks {
			t.Fatalf("tick %d: member %d usable %d ticks after it joined aggregator %d", st.Tick, p.Member, st.Tick-s.joined[p.Member], p.Aggregator)
		}
		n++
		if !p.Link || p.Mux != MuxCollectingDistributing || p.Rx != RxCurrent || p.Partner.State&StateSync == 0 ||
			p.Aggregator != st.Aggregator || p.Actor.State&(StateCollecting|StateDistributing|StateSync) != StateCollecting|StateDistributing|StateSync {
			t.Fatalf("tick %d: member %d usable in %+v", st.Tick, p.Member, p)
		}
		if agg != 0 && p.Aggregator != agg {
			t.Fatalf("tick %d: usable members in aggregators %d and %d", st.Tick, agg, p.Aggregator)
		}
		agg = p.Aggregator
	}
	if st.Up != (n > 0) || (n > 0 && n < minLinks) {
		t.Fatalf("tick %d: up %v with %d usable, min_links %d", st.Tick, st.Up, n, minLinks)
	}
}

// checkModel runs after a quiet period.
func checkModel(t *testing.T, m *modelCase, s *side, r *refPartner, history string) {
	t.Helper()
	st := s.c.Status()
	groups := map[string][]int{}
	for i := 0; i < m.n; i++ {
		if m.eligible(r, i) {
			k := m.groupKey(r, s, i)
			groups[k] = append(groups[k], i)
		}
	}
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("tick %d: %s\ngroups %v, status %+v\nhistory: %s", st.Tick, fmt.Sprintf(format, args...), groups, st, history)
	}
	if len(groups) == 0 {
		if st.Up {
			fail("up with no eligible member")
		}
		return
	}
	// The active aggregator's eligible members form one whole group.
	var act []int
	for i, p := range st.Ports {
		if p.Aggregator == st.Aggregator && st.Aggregator != 0 && m.eligible(r, i) {
			act = append(act, i)
		}
	}
	g, ok := groups[func() string {
		if len(act) == 0 {
			return ""
		}
		return m.groupKey(r, s, act[0])
	}()]
	if !ok || fmt.Sprint(g) != fmt.Sprint(act) {
		fail("active aggregator %d holds %v, not a whole group", st.Aggregator, act)
	}
	if m.sel != Stable {
		for _, h := range groups {
			if len(h) > len(g) {
				fail("%v picked %v over the bigger %v", m.sel, g, h)
			}
		}
	}
	want := len(g) >= max(m.minLinks, 1)
	for i, p := range st.Ports {
		in := false
		for _, j := range g {
			in = in || i == j
		}
		if p.Usable != (want && in) {
			fail("member %d usable %v, model says %v", i, p.Usable, want && in)
		}
	}
	if st.Up != want {
		fail("up %v, model says %v", st.Up, want)
	}
}

func TestModel(t *testing.T) {
	seeds := 24
	if testing.Short() {
		seeds = 6
	}
	for seed := 0; seed < seeds; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runModel(t, uint64(seed)) })
	}
}

func runModel(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0x1ac9))
	m := &modelCase{n: 2 + rng.IntN(3), passive: rng.IntN(4) == 0, sel: Selection(rng.IntN(3))}
	m.minLinks = rng.IntN(m.n + 1)
	for i := 0; i < m.n; i++ {
		k := uint16(0)
		if rng.IntN(6) == 0 {
			k = 0x42
		}
		m.keys = append(m.keys, k)
	}
	s := newSide(t, 0xa, m.n, func(c *Config) {
		c.Passive, c.MinLinks, c.Select = m.passive, m.minLinks, m.sel
		for i := range c.Ports {
			c.Ports[i].Key = m.keys[i]
		}
	})
	systems := []byte{0xb, 0xc}
	r := newRef(m.n, mac(0xb, 0))
	for _, p := range r.ports {
		p.active = rng.IntN(3) != 0
		p.fast = rng.IntN(3) != 0
		p.key = uint16(7 + rng.IntN(2))
	}
	w := &refWire{s: s, r: r}
	history := fmt.Sprintf("%+v;", *m)
	const quiet = 25 * TicksPerSecond
	for ep := 0; ep < 25; ep++ {
		for k := 1 + rng.IntN(2); k > 0; k-- {
			i := rng.IntN(m.n)
			p := r.ports[i]
			switch rng.IntN(7) {
			case 0:
				w.setLink(i, !p.link)
				history += fmt.Sprintf(" link%d=%v", i, p.link)
			case 1:
				p.silent = !p.silent
				history += fmt.Sprintf(" silent%d=%v", i, p.silent)
			case 2:
				p.key = uint16(7 + rng.IntN(2))
				history += fmt.Sprintf(" key%d=%d", i, p.key)
			case 3:
				p.sys = mac(systems[rng.IntN(2)], 0)
				history += fmt.Sprintf(" sys%d=%v", i, p.sys)
			case 4:
				sys := mac(systems[rng.IntN(2)], 0)
				for _, q := range r.ports {
					q.sys = sys
				}
				history += fmt.Sprintf(" sys*=%v", sys)
			case 5:
				p.active = !p.active
				history += fmt.Sprintf(" active%d=%v", i, p.active)
			case 6:
				p.fast = !p.fast
				history += fmt.Sprintf(" fast%d=%v", i, p.fast)
			}
		}
		history += fmt.Sprintf(" @%d;", w.now)
		for i := 0; i < quiet; i++ {
			w.step()
		}
		checkModel(t, m, s, r, history)
	}
}
