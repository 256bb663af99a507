package lacp

import (
	"sync"
	"testing"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/xmit"
)

// capPort is a Tx port that keeps copies of what it is sent.
type capPort struct {
	mu     sync.Mutex
	name   string
	frames [][]byte
	stats  xmit.Stats
}

func (p *capPort) Name() string                     { return p.name }
func (p *capPort) Recv(b *frame.Batch) (int, error) { return 0, nil }
func (p *capPort) Stats() xmit.Stats                { p.mu.Lock(); defer p.mu.Unlock(); return p.stats }
func (p *capPort) Close() error                     { return nil }
func (p *capPort) Send(b *frame.Batch) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(b.Frames)
	for i := range b.Frames {
		p.frames = append(p.frames, append([]byte(nil), b.Bytes(i)...))
	}
	p.stats.TxPackets += uint64(n)
	b.Free()
	return n, nil
}

// take returns and forgets the frames sent so far.
func (p *capPort) take() [][]byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.frames
	p.frames = nil
	return f
}

// members records what a controller sets (a stand-in for lag.Aggregate).
type members struct {
	mu sync.Mutex
	up []bool
}

func (m *members) SetMemberUp(i int, up bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for len(m.up) <= i {
		m.up = append(m.up, true) // an aggregate's members start usable
	}
	m.up[i] = up
	return nil
}

// side is one end of a simulated link aggregate: a controller and what it sent, per tick.
type side struct {
	t      testing.TB
	c      *Controller
	tx     []*capPort
	m      *members
	events []Event
	sent   [][]int64 // ticks at which each member sent an LACPDU
	pdus   [][]PDU   // every PDU sent, per member
	stale  []int     // ticks each member has claimed distributing outside the active aggregator
	agg    []int     // each member's aggregator at the last check, and the tick it joined it
	joined []int64
}

func mac(a, b byte) frame.MAC { return frame.MAC{0x02, 0, 0, 0, a, b} }

// newSide makes a controller of n ports named by sys (system MAC 02:00:00:00:sys:00, port
// MACs ...:sys:i+1); mod edits the config first.
func newSide(t testing.TB, sys byte, n int, mod func(*Config)) *side {
	s := &side{t: t, m: &members{}}
	cfg := &Config{System: mac(sys, 0), Fast: true, Events: func(e Event) { s.events = append(s.events, e) }}
	for i := 0; i < n; i++ {
		p := &capPort{name: "p"}
		s.tx = append(s.tx, p)
		cfg.Ports = append(cfg.Ports, PortConfig{Tx: p, MAC: mac(sys, byte(i+1)), Speed: 10000})
	}
	if mod != nil {
		mod(cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.c = c
	c.Attach(s.m)
	s.sent = make([][]int64, n)
	s.pdus = make([][]PDU, n)
	s.stale = make([]int, n)
	s.agg = make([]int, n)
	s.joined = make([]int64, n)
	return s
}

// collect decodes what each member sent since the last call (after a Tick at tick).
func (s *side) collect() [][][]byte {
	out := make([][][]byte, len(s.tx))
	tick := s.c.Status().Tick
	for i, p := range s.tx {
		for _, f := range p.take() {
			var pdu PDU
			if err := DecodeFrame(f, &pdu); err != nil {
				s.t.Fatalf("member %d sent a frame that does not decode: %v", i, err)
			}
			if pdu.Subtype == SubtypeLACP {
				s.sent[i] = append(s.sent[i], tick)
			}
			s.pdus[i] = append(s.pdus[i], pdu)
			out[i] = append(out[i], f)
		}
	}
	return out
}

func (s *side) usable() []bool {
	u := make([]bool, len(s.tx))
	for i := range u {
		u[i] = s.c.Usable(i)
	}
	return u
}

func countTrue(b []bool) int {
	n := 0
	for _, v := range b {
		if v {
			n++
		}
	}
	return n
}

// checkRate fails when a member sent more than MaxLACPDUsPerSecond LACPDUs in any
// TicksPerSecond consecutive ticks.
func (s *side) checkRate() {
	s.t.Helper()
	for i, ts := range s.sent {
		for k := MaxLACPDUsPerSecond; k < len(ts); k++ {
			if ts[k]-ts[k-MaxLACPDUsPerSecond] < TicksPerSecond {
				s.t.Fatalf("member %d sent LACPDUs at ticks %v: more than %d in a second", i, ts[k-MaxLACPDUsPerSecond:k+1], MaxLACPDUsPerSecond)
			}
		}
	}
}

// checkMirror fails unless the attached aggregate mirrors Usable.
func (s *side) checkMirror() {
	s.t.Helper()
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	for i := range s.tx {
		if i >= len(s.m.up) || s.m.up[i] != s.c.Usable(i) {
			s.t.Fatalf("attached aggregate %v, controller usable %v", s.m.up, s.usable())
		}
	}
}

// wire connects two sides member by member; a member's link can be cut.
type wire struct {
	a, b *side
	down []bool
	// pending frames, delivered before the next tick
	toA, toB [][][]byte
}

func newWire(a, b *side) *wire {
	return &wire{a: a, b: b, down: make([]bool, len(a.tx))}
}

// step delivers what was sent at the last tick and ticks both sides.
func (w *wire) step() {
	for i := range w.down {
		if w.down[i] {
			continue
		}
		if w.toA != nil {
			for _, f := range w.toA[i] {
				w.a.c.HandleSlow(i, f)
			}
		}
		if w.toB != nil {
			for _, f := range w.toB[i] {
				w.b.c.HandleSlow(i, f)
			}
		}
	}
	w.a.c.Tick()
	w.b.c.Tick()
	w.toB = w.a.collect()
	w.toA = w.b.collect()
	w.a.checkMirror()
	w.b.checkMirror()
	checkInvariants(w.a.t, w.a)
	checkInvariants(w.b.t, w.b)
}

func (w *wire) run(ticks int) {
	for i := 0; i < ticks; i++ {
		w.step()
	}
}

// until steps until cond holds, at most max ticks, and returns the ticks it took (-1: never).
func (w *wire) until(max int, cond func() bool) int {
	for i := 0; i < max; i++ {
		if cond() {
			return i
		}
		w.step()
	}
	if cond() {
		return max
	}
	return -1
}

func (w *wire) setLink(i int, up bool) {
	w.down[i] = !up
	w.a.c.SetLinkUp(i, up)
	w.b.c.SetLinkUp(i, up)
}

func all(b []bool) bool { return countTrue(b) == len(b) }
