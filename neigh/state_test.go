package neigh

import (
	"fmt"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/fib"
	"github.com/wirespeed/wirespeed/frame"
)

// Events of the transition tests, all about the neighbour hostN on interface 0 (next hop nhN).
type event int

const (
	evPoll       event = iota
	evAddNH            // AddNextHop(nhN, 0, hostN)
	evRemoveNH         // RemoveNextHop(nhN)
	evReply            // a reply from hostN to our MAC
	evReplyBcast       // a reply from hostN to the broadcast address
	evRequest          // a request from hostN for our address
	evRequestFar       // a request from hostN for another host
	evGarp             // a gratuitous request from hostN (sender = target = hostN)
	evHold             // a frame held for nhN
	evStatic           // AddStatic(0, hostN, mac)
	evDelete           // Delete(0, hostN)
)

const nhN = 7

var evNames = [...]string{"poll", "add-nh", "remove-nh", "reply", "reply-bcast", "request", "request-far", "garp", "hold", "static", "delete"}

func (e event) String() string { return evNames[e] }

func (r *rig) do(ev event, mac frame.MAC) {
	r.t.Helper()
	switch ev {
	case evPoll:
		r.poll()
	case evAddNH:
		if err := r.tab.AddNextHop(nhN, 0, hostN); err != nil {
			r.t.Fatal(err)
		}
	case evRemoveNH:
		r.tab.RemoveNextHop(nhN)
	case evReply:
		r.replyFrom(0, mac, hostN, own0, mac0)
	case evReplyBcast:
		r.replyFrom(0, mac, hostN, own0, macBC)
	case evRequest:
		r.requestFrom(0, mac, hostN, own0)
	case evRequestFar:
		r.requestFrom(0, mac, hostN, hostM)
	case evGarp:
		r.requestFrom(0, mac, hostN, hostN)
	case evHold:
		r.hold(nhN, 0, 100, 0x5a)
	case evStatic:
		if err := r.tab.AddStatic(0, hostN, mac); err != nil {
			r.t.Fatal(err)
		}
	case evDelete:
		if err := r.tab.Delete(0, hostN); err != nil {
			r.t.Fatal(err)
		}
	}
}

// step is one event at a time (from the start) and what must hold after it.
type step struct {
	at    time.Duration
	ev    event
	mac   frame.MAC // the MAC the event carries
	state State     // hostN's state afterwards (StateNone: no entry)
	bcast int       // broadcast requests for hostN the step sent
	ucast int       // unicast requests (to the entry's MAC) the step sent
	ready int       // held frames the step made ready (Poll's ready batch)
	fail  int       // held frames the step failed (Poll's failed batch)
}

const s = time.Second

// TestTransitions runs each scenario with a fake clock (Rand fixed: the reachable time is 30 s)
// and checks after every step hostN's state and MAC, what was sent, what came out of the hold
// queue, and the next hop as workers see it: unresolved exactly while the state is not valid,
// the entry's MAC otherwise.
func TestTransitions(t *testing.T) {
	resolve := []step{
		{0, evAddNH, frame.MAC{}, StateIncomplete, 0, 0, 0, 0},
		{0, evPoll, frame.MAC{}, StateIncomplete, 1, 0, 0, 0},
		{s / 2, evReply, macA, StateReachable, 0, 0, 0, 0},
	}
	cat := func(parts ...[]step) []step {
		var x []step
		for _, p := range parts {
			x = append(x, p...)
		}
		return x
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"resolve", resolve},
		{"incomplete-fails", []step{
			{0, evAddNH, frame.MAC{}, StateIncomplete, 0, 0, 0, 0},
			{0, evPoll, frame.MAC{}, StateIncomplete, 1, 0, 0, 0},
			{s - 1, evPoll, frame.MAC{}, StateIncomplete, 0, 0, 0, 0},
			{s, evPoll, frame.MAC{}, StateIncomplete, 1, 0, 0, 0},
			{2 * s, evPoll, frame.MAC{}, StateIncomplete, 1, 0, 0, 0},
			{3*s - 1, evPoll, frame.MAC{}, StateIncomplete, 0, 0, 0, 0},
			{3 * s, evPoll, frame.MAC{}, StateFailed, 0, 0, 0, 0},
			{62 * s, evPoll, frame.MAC{}, StateFailed, 0, 0, 0, 0},
			{63 * s, evPoll, frame.MAC{}, StateIncomplete, 1, 0, 0, 0}, // GCStale later: again
		}},
		{"hold-then-resolve", []step{
			{0, evAddNH, frame.MAC{}, StateIncomplete, 0, 0, 0, 0},
			{0, evHold, frame.MAC{}, StateIncomplete, 1, 0, 0, 0}, // the request goes out with Hold
			{s / 4, evHold, frame.MAC{}, StateIncomplete, 0, 0, 0, 0},
			{s / 2, evPoll, frame.MAC{}, StateIncomplete, 0, 0, 0, 0},
			{s, evHold, frame.MAC{}, StateIncomplete, 1, 0, 0, 0}, // Retrans later, Hold sends the next
			{s + 1, evReply, macA, StateReachable, 0, 0, 0, 0},
			{s + 1, evPoll, macA, StateReachable, 0, 0, 3, 0},
			{s + 2, evHold, macA, StateReachable, 0, 0, 0, 0}, // a worker's older view: straight to ready
			{s + 2, evPoll, macA, StateReachable, 0, 0, 1, 0},
		}},
		{"hold-then-fail", []step{
			{0, evAddNH, frame.MAC{}, StateIncomplete, 0, 0, 0, 0},
			{0, evHold, frame.MAC{}, StateIncomplete, 1, 0, 0, 0},
			{s, evHold, frame.MAC{}, StateIncomplete, 1, 0, 0, 0},
			{2 * s, evPoll, frame.MAC{}, StateIncomplete, 1, 0, 0, 0},
			{3 * s, evPoll, frame.MAC{}, StateFailed, 0, 0, 0, 2},
			{4 * s, evHold, frame.MAC{}, StateIncomplete, 1, 0, 0, 0}, // traffic restarts it at once
			{7 * s, evPoll, frame.MAC{}, StateIncomplete, 1, 0, 0, 0}, // a late timer: one request, the next Retrans later
			{8 * s, evPoll, frame.MAC{}, StateIncomplete, 1, 0, 0, 0},
			{9 * s, evPoll, frame.MAC{}, StateFailed, 0, 0, 0, 1},
		}},
		{"reconfirm", cat(resolve, []step{
			{30*s + s/2 - 1, evPoll, macA, StateReachable, 0, 0, 0, 0},
			{30*s + s/2, evPoll, macA, StateDelay, 0, 0, 0, 0}, // a next hop: STALE becomes DELAY at once
			{35*s + s/2 - 1, evPoll, macA, StateDelay, 0, 0, 0, 0},
			{35*s + s/2, evPoll, macA, StateProbe, 0, 1, 0, 0},
			{36*s + s/2, evPoll, macA, StateProbe, 0, 1, 0, 0},
			{37 * s, evReply, macA, StateReachable, 0, 0, 0, 0},
			{67*s - 1, evPoll, macA, StateReachable, 0, 0, 0, 0},
			{67 * s, evPoll, macA, StateDelay, 0, 0, 0, 0},
		})},
		{"probe-fails", cat(resolve, []step{
			{30*s + s/2, evPoll, macA, StateDelay, 0, 0, 0, 0},
			{35*s + s/2, evPoll, macA, StateProbe, 0, 1, 0, 0},
			{36*s + s/2, evPoll, macA, StateProbe, 0, 1, 0, 0},
			{37*s + s/2, evPoll, macA, StateProbe, 0, 1, 0, 0},
			{38*s + s/2 - 1, evPoll, macA, StateProbe, 0, 0, 0, 0},
			{38*s + s/2, evPoll, macA, StateFailed, 0, 0, 0, 0},
		})},
		{"late-poll-catches-up", cat(resolve, []step{
			{100 * s, evPoll, macA, StateDelay, 0, 0, 0, 0}, // late: DELAY from now on
			{105*s - 1, evPoll, macA, StateDelay, 0, 0, 0, 0},
			{105 * s, evPoll, macA, StateProbe, 0, 1, 0, 0},
		})},
		{"broadcast-reply-stale", cat(resolve, []step{
			{2 * s, evReplyBcast, macA, StateReachable, 0, 0, 0, 0}, // same MAC: state kept
			{3 * s, evReplyBcast, macB, StateDelay, 0, 0, 0, 0},     // new MAC, unconfirmed
			{4 * s, evReply, macB, StateReachable, 0, 0, 0, 0},
		})},
		{"garp-updates-known", cat(resolve, []step{
			{2 * s, evGarp, macA, StateReachable, 0, 0, 0, 0},
			{3 * s, evGarp, macB, StateDelay, 0, 0, 0, 0},
			{8 * s, evPoll, macB, StateProbe, 0, 1, 0, 0}, // probes the new MAC
		})},
		{"garp-unknown-ignored", []step{
			{0, evGarp, macA, StateNone, 0, 0, 0, 0},
			{0, evReply, macA, StateNone, 0, 0, 0, 0},
			{0, evReplyBcast, macA, StateNone, 0, 0, 0, 0},
			{0, evRequestFar, macA, StateNone, 0, 0, 0, 0},
		}},
		{"request-learns-stale-collected", []step{
			{0, evRequest, macA, StateStale, 0, 0, 0, 0},
			{59 * s, evRequest, macA, StateStale, 0, 0, 0, 0}, // same MAC: nothing changes, not even the age
			{60*s - 1, evPoll, macA, StateStale, 0, 0, 0, 0},
			{60 * s, evPoll, frame.MAC{}, StateNone, 0, 0, 0, 0},
		}},
		{"request-moves-mac", []step{
			{0, evRequest, macA, StateStale, 0, 0, 0, 0},
			{50 * s, evRequestFar, macB, StateStale, 0, 0, 0, 0}, // a known sender: updated (and younger)
			{110*s - 1, evPoll, macB, StateStale, 0, 0, 0, 0},
			{110 * s, evPoll, frame.MAC{}, StateNone, 0, 0, 0, 0},
		}},
		{"stale-then-next-hop", []step{
			{0, evRequest, macA, StateStale, 0, 0, 0, 0},
			{s, evAddNH, macA, StateDelay, 0, 0, 0, 0}, // resolved already: the next hop is usable at once
			{6 * s, evPoll, macA, StateProbe, 0, 1, 0, 0},
			{6*s + 1, evReply, macA, StateReachable, 0, 0, 0, 0},
		}},
		{"request-resolves-incomplete", []step{
			{0, evAddNH, frame.MAC{}, StateIncomplete, 0, 0, 0, 0},
			{0, evHold, frame.MAC{}, StateIncomplete, 1, 0, 0, 0},
			{s / 2, evRequest, macA, StateDelay, 0, 0, 0, 0}, // valid but unconfirmed
			{s / 2, evPoll, macA, StateDelay, 0, 0, 1, 0},
			{5*s + s/2, evPoll, macA, StateProbe, 0, 1, 0, 0},
		}},
		{"reachable-without-next-hop", []step{
			{0, evRequest, macA, StateStale, 0, 0, 0, 0},
			{s, evReply, macA, StateReachable, 0, 0, 0, 0}, // a reply to us confirms any entry
			{31 * s, evPoll, macA, StateStale, 0, 0, 0, 0}, // no next hop: rests in STALE
			{91*s - 1, evPoll, macA, StateStale, 0, 0, 0, 0},
			{91 * s, evPoll, frame.MAC{}, StateNone, 0, 0, 0, 0},
		}},
		{"remove-next-hop", cat(resolve, []step{
			{s, evRemoveNH, macA, StateReachable, 0, 0, 0, 0},
			{30*s + s/2, evPoll, macA, StateStale, 0, 0, 0, 0},
			{90*s + s/2, evPoll, frame.MAC{}, StateNone, 0, 0, 0, 0},
		})},
		{"failed-without-next-hop-collected", []step{
			{0, evAddNH, frame.MAC{}, StateIncomplete, 0, 0, 0, 0},
			{0, evPoll, frame.MAC{}, StateIncomplete, 1, 0, 0, 0},
			{s / 2, evRemoveNH, frame.MAC{}, StateIncomplete, 0, 0, 0, 0},
			{s, evPoll, frame.MAC{}, StateIncomplete, 1, 0, 0, 0},
			{3 * s, evPoll, frame.MAC{}, StateIncomplete, 1, 0, 0, 0}, // late: the third request, its wait from now
			{4*s - 1, evPoll, frame.MAC{}, StateIncomplete, 0, 0, 0, 0},
			{4 * s, evPoll, frame.MAC{}, StateFailed, 0, 0, 0, 0},
			{64*s - 1, evPoll, frame.MAC{}, StateFailed, 0, 0, 0, 0},
			{64 * s, evPoll, frame.MAC{}, StateNone, 0, 0, 0, 0}, // no next hop: collected
		}},
		{"static", []step{
			{0, evAddNH, frame.MAC{}, StateIncomplete, 0, 0, 0, 0},
			{0, evHold, frame.MAC{}, StateIncomplete, 1, 0, 0, 0},
			{s / 2, evStatic, macC, StatePermanent, 0, 0, 0, 0},
			{s / 2, evPoll, macC, StatePermanent, 0, 0, 1, 0},
			{2 * s, evReply, macA, StatePermanent, 0, 0, 0, 0},
			{3 * s, evGarp, macA, StatePermanent, 0, 0, 0, 0},
			{1000 * s, evPoll, macC, StatePermanent, 0, 0, 0, 0},
		}},
		{"delete", cat(resolve, []step{
			{s, evDelete, frame.MAC{}, StateIncomplete, 0, 0, 0, 0}, // next hops use it: resolved again
			{s, evPoll, frame.MAC{}, StateIncomplete, 1, 0, 0, 0},
			{s, evRemoveNH, frame.MAC{}, StateIncomplete, 0, 0, 0, 0},
			{s, evDelete, frame.MAC{}, StateNone, 0, 0, 0, 0},
		})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			var mac frame.MAC // the MAC hostN's entry must have
			prev := StateNone
			for k, st := range tc.steps {
				r.at(st.at)
				r.do(st.ev, st.mac)
				where := fmt.Sprintf("step %d (%v at %v)", k, st.ev, st.at)
				e := r.entry(0, hostN)
				if e.State != st.state {
					t.Fatalf("%s: state %v, want %v", where, e.State, st.state)
				}
				switch {
				case st.ev == evStatic:
					mac = st.mac
				case st.ev == evDelete:
					mac = frame.MAC{}
				case st.mac != frame.MAC{} && prev != StatePermanent && st.state != StateNone:
					mac = st.mac // news with a MAC: the entry takes it (a permanent entry ignores it)
				}
				if st.state != StateNone && e.MAC != mac {
					t.Fatalf("%s: MAC %v, want %v", where, e.MAC, mac)
				}
				prev = st.state
				var bc, uc int
				for _, x := range r.drainOut() {
					switch {
					case x.op == 2: // our answers to evRequest
						if st.ev != evRequest || x.tpa != hostN || x.spa != own0 || x.ethDst != st.mac || x.tha != st.mac {
							t.Fatalf("%s: unexpected reply %+v", where, x)
						}
					case x.tpa != hostN || x.spa != own0 || x.tha != (frame.MAC{}) || x.out != 0:
						t.Fatalf("%s: request %+v", where, x)
					case x.ethDst == macBC:
						bc++
					case x.ethDst == e.MAC:
						uc++
					default:
						t.Fatalf("%s: request to %v", where, x.ethDst)
					}
				}
				if bc != st.bcast || uc != st.ucast {
					t.Fatalf("%s: sent %d broadcast and %d unicast requests, want %d and %d", where, bc, uc, st.bcast, st.ucast)
				}
				if len(r.ready.Frames) != st.ready || len(r.failed.Frames) != st.fail {
					t.Fatalf("%s: %d ready and %d failed, want %d and %d", where, len(r.ready.Frames), len(r.failed.Frames), st.ready, st.fail)
				}
				for _, b := range []*frame.Batch{r.ready, r.failed} {
					for i := range b.Frames {
						f := &b.Frames[i]
						if f.Meta != nhN || f.Port != 0 || f.L3 != 14 || f.Len != 100 || b.Bytes(i)[20] != 0x5a {
							t.Fatalf("%s: held frame came back as %+v", where, *f)
						}
					}
					b.Free()
				}
				if len(e.NextHops) > 0 {
					h := r.nextHop(nhN)
					if unres := h.Flags&fib.NextHopUnresolved != 0; unres == st.state.Valid() || h.Ifindex != 0 ||
						(st.state.Valid() && h.DstMAC != e.MAC) {
						t.Fatalf("%s: next hop %+v for a %v entry with %v", where, h, e.State, e.MAC)
					}
				}
				r.checkConserved()
			}
		})
	}
}

// TestReachableTime: the reachable time is BaseReachable x [0.5, 1.5), drawn from Rand at each
// confirmation.
func TestReachableTime(t *testing.T) {
	base := 30 * s
	for _, tc := range []struct {
		rnd  uint64
		want time.Duration
	}{
		{0, base / 2},
		{uint64(base) - 1, 3*base/2 - 1},
		{uint64(base) + 7, base/2 + 7}, // modulo
		{uint64(base / 4), base/2 + base/4},
	} {
		r := newRig(t)
		r.rnd = tc.rnd
		r.requestFrom(0, macA, hostN, own0)
		r.at(s)
		r.replyFrom(0, macA, hostN, own0, mac0)
		r.at(s + tc.want - 1)
		r.poll()
		if st := r.entry(0, hostN).State; st != StateReachable {
			t.Fatalf("rand %d: %v just before %v", tc.rnd, st, tc.want)
		}
		r.at(s + tc.want)
		r.poll()
		if st := r.entry(0, hostN).State; st != StateStale {
			t.Fatalf("rand %d: %v at %v", tc.rnd, st, tc.want)
		}
	}
}

func TestStateString(t *testing.T) {
	for st, want := range map[State]string{StateIncomplete: "INCOMPLETE", StateReachable: "REACHABLE", StateStale: "STALE",
		StateDelay: "DELAY", StateProbe: "PROBE", StateFailed: "FAILED", StatePermanent: "PERMANENT", StateNone: "NONE", 99: "?"} {
		if st.String() != want {
			t.Errorf("%d: %q, want %q", st, st.String(), want)
		}
	}
}
