package neigh

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/internal/race"
)

// model is the documented state machine of one neighbour (hostN), written as plainly as
// possible: the reference TestModel compares the table with. Timers are absolute times; the
// reachable time is 30 s (Rand fixed), the other timers and limits are the defaults.
type model struct {
	state    State
	mac      frame.MAC
	nh       bool // a next hop follows it
	deadline time.Duration
	probes   int
	queued   int
	ready    int // frames the next Poll hands out
	failed   int
	bcast    int // requests sent by the current step
	ucast    int
}

const (
	mReach = 30 * time.Second
	mDelay = 5 * time.Second
	mRetr  = time.Second
	mGC    = 60 * time.Second
	mQueue = 3
)

func (m *model) incomplete(now time.Duration) {
	m.state, m.probes, m.deadline = StateIncomplete, 0, now
}

func (m *model) stale(now time.Duration) {
	if m.nh {
		m.state, m.deadline = StateDelay, now+mDelay
	} else {
		m.state, m.deadline = StateStale, now+mGC
	}
}

func (m *model) fail(now time.Duration) {
	m.state, m.deadline = StateFailed, now+mGC
	m.failed += m.queued
	m.queued = 0
}

func (m *model) gone() {
	m.failed += m.queued
	*m = model{nh: false, ready: m.ready, failed: m.failed, bcast: m.bcast, ucast: m.ucast}
}

func (m *model) timers(now time.Duration) {
	for m.state != StateNone && m.state != StatePermanent && m.deadline <= now {
		switch m.state {
		case StateIncomplete:
			if m.probes == 3 {
				m.fail(now)
			} else {
				m.bcast++
				m.probes++
				m.deadline = now + mRetr
			}
		case StateProbe:
			if m.probes == 3 {
				m.fail(now)
			} else {
				m.ucast++
				m.probes++
				m.deadline = now + mRetr
			}
		case StateReachable:
			m.stale(now)
		case StateDelay:
			m.state, m.probes, m.deadline = StateProbe, 0, now
		case StateStale:
			m.gone()
		case StateFailed:
			if m.nh {
				m.incomplete(now)
			} else {
				m.gone()
			}
		}
	}
}

// news is what an ARP frame from a neighbour in the table teaches.
func (m *model) news(now time.Duration, mac frame.MAC, reach bool) {
	if m.state == StateNone || m.state == StatePermanent {
		return
	}
	was := m.state.Valid()
	switch {
	case reach:
		m.state, m.deadline = StateReachable, now+mReach
	case was && mac == m.mac:
		return
	default:
		m.stale(now)
	}
	m.mac = mac
	if !was {
		m.ready += m.queued
		m.queued = 0
	}
}

func (m *model) do(ev event, mac frame.MAC, now time.Duration) {
	switch ev {
	case evPoll:
		m.timers(now)
	case evAddNH:
		if m.nh {
			return
		}
		m.nh = true
		switch m.state {
		case StateNone, StateFailed:
			m.incomplete(now)
		case StateStale:
			m.state, m.deadline = StateDelay, now+mDelay
		}
	case evRemoveNH:
		m.nh = false
	case evReply:
		m.news(now, mac, true)
	case evReplyBcast, evRequestFar, evGarp:
		m.news(now, mac, false)
	case evRequest:
		if m.state == StateNone {
			m.state, m.mac, m.deadline = StateStale, mac, now+mGC
			return
		}
		m.news(now, mac, false)
	case evHold:
		if !m.nh {
			return
		}
		m.timers(now)
		switch m.state {
		case StateFailed:
			m.incomplete(now)
		case StateStale:
			m.state, m.deadline = StateDelay, now+mDelay
		}
		if m.state.Valid() {
			m.ready++
			return
		}
		m.queued = min(m.queued+1, mQueue)
		m.timers(now)
	case evStatic:
		was := m.state.Valid()
		m.state, m.mac = StatePermanent, mac
		if !was {
			m.ready += m.queued
			m.queued = 0
		}
	case evDelete:
		switch {
		case m.state == StateNone:
		case m.nh:
			m.mac = frame.MAC{}
			m.incomplete(now)
		default:
			m.gone()
		}
	}
}

// TestModel runs random sequences of events and clock steps on a table and on the model, and
// compares after every step hostN's state and MAC, the requests sent and the frames handed out.
func TestModel(t *testing.T) {
	seqs := 1500
	if race.Enabled || testing.Short() {
		seqs = 300
	}
	steps := []time.Duration{0, time.Millisecond, 999 * time.Millisecond, time.Second, 2500 * time.Millisecond,
		5 * time.Second, 30 * time.Second, 61 * time.Second}
	macs := []frame.MAC{macA, macB}
	for seq := range seqs {
		rng := rand.New(rand.NewPCG(uint64(seq), 99))
		r := newRig(t)
		var m model
		now := time.Duration(0)
		var log []string
		for k := 0; k < 60; k++ {
			ev := event(rng.IntN(int(evDelete) + 1))
			if rng.IntN(3) == 0 {
				ev = evPoll
			}
			mac := macs[rng.IntN(len(macs))]
			now += steps[rng.IntN(len(steps))]
			r.at(now)
			log = append(log, fmt.Sprintf("%v %v at %v", ev, mac, now))
			m.bcast, m.ucast = 0, 0
			m.do(ev, mac, now)
			switch ev {
			case evDelete:
				r.tab.Delete(0, hostN) // an absent entry is an error, which the model knows as nothing
			case evHold:
				r.hold(nhN, 0, 100, 1)
			default:
				r.do(ev, mac)
			}
			fail := func(format string, a ...any) {
				t.Helper()
				t.Fatalf("seq %d step %d: %s\nmodel %+v\n%s", seq, k, fmt.Sprintf(format, a...), m, strings.Join(log, "\n"))
			}
			e := r.entry(0, hostN)
			if e.State != m.state || (m.state.Valid() && e.MAC != m.mac) || e.Held != m.queued {
				fail("table %v %v (%d held)", e.State, e.MAC, e.Held)
			}
			var bc, uc int
			for _, x := range r.drainOut() {
				switch {
				case x.op == 2:
				case x.ethDst == macBC:
					bc++
				default:
					uc++
				}
			}
			if bc != m.bcast || uc != m.ucast {
				fail("sent %d broadcast, %d unicast requests", bc, uc)
			}
			if ev == evPoll {
				if len(r.ready.Frames) != m.ready || len(r.failed.Frames) != m.failed {
					fail("%d ready, %d failed", len(r.ready.Frames), len(r.failed.Frames))
				}
				m.ready, m.failed = 0, 0
				r.ready.Free()
				r.failed.Free()
			}
			r.checkConserved()
		}
	}
}
