package lacp

import (
	"github.com/wirespeed/wirespeed/frame"
)

// refPartner is a plain LACP partner written from 802.1AX's description of what a partner says,
// sharing no code with the controller's machines: per port it sends its own information and
// echoes the last it heard from us, periodically at the rate we ask for and at once when what it
// would say changes (at most three a second); it is in sync with a port it has heard from
// within its timeout, and collecting and distributing when we say we are in sync too.
type refPartner struct {
	ports []*refPort
}

type refPort struct {
	sys        frame.MAC
	sysPrio    uint16
	number     uint16
	key        uint16
	active     bool // sends without hearing an active partner
	fast       bool // asks for LACPDUs every second (and times us out after 3 s)
	individual bool // says Aggregation false
	silent     bool // sends nothing
	misecho    bool // echoes a wrong key for us
	link       bool

	heard   *LACPDU
	heardAt int64
	sentAt  []int64
	last    LACPDU // what it last sent
	next    int64  // next periodic send
}

func newRef(n int, sys frame.MAC) *refPartner {
	r := &refPartner{}
	for i := 0; i < n; i++ {
		r.ports = append(r.ports, &refPort{sys: sys, sysPrio: 0x8000, number: uint16(0x100 + i), key: 7, active: true, fast: true, link: true})
	}
	return r
}

func (p *refPort) timeout() int64 {
	if p.fast {
		return shortTimeoutTicks
	}
	return longTimeoutTicks
}

func (p *refPort) current(now int64) bool { return p.heard != nil && now-p.heardAt < p.timeout() }

func (p *refPort) receive(f []byte, now int64) {
	var pdu PDU
	if DecodeFrame(f, &pdu) != nil || pdu.Subtype != SubtypeLACP || !p.link {
		return
	}
	l := pdu.LACP
	p.heard, p.heardAt = &l, now
}

// pdu is what the port says at now.
func (p *refPort) pdu(now int64) LACPDU {
	var st State
	if p.active {
		st |= StateActivity
	}
	if p.fast {
		st |= StateTimeout
	}
	if !p.individual {
		st |= StateAggregation
	}
	var partner Info
	if p.current(now) {
		partner = p.heard.Actor
		if p.misecho {
			partner.Key ^= 0x100
		}
		if !p.individual && p.heard.Actor.State&StateAggregation != 0 {
			st |= StateSync
			if p.heard.Actor.State&StateSync != 0 {
				st |= StateCollecting | StateDistributing
			}
		}
	} else {
		st |= StateDefaulted
	}
	return LACPDU{Version: 1, Actor: Info{SystemPriority: p.sysPrio, System: p.sys, Key: p.key, PortPriority: 0x80, Port: p.number, State: st}, Partner: partner}
}

// tick returns the frames each port sends at now.
func (r *refPartner) tick(now int64) [][]byte {
	out := make([][]byte, len(r.ports))
	for i, p := range r.ports {
		if p.heard != nil && !p.current(now) {
			p.heard = nil
		}
		if p.silent || !p.link {
			continue
		}
		cur := p.current(now)
		if !p.active && !(cur && p.heard.Actor.State&StateActivity != 0) {
			continue
		}
		d := p.pdu(now)
		period := int64(fastPeriodicTicks)
		if cur && p.heard.Actor.State&StateTimeout == 0 {
			period = slowPeriodicTicks
		}
		due := now >= p.next
		changed := d != p.last
		const bits = StateActivity | StateTimeout | StateSync | StateAggregation
		hp := Info{}
		if cur {
			hp = p.heard.Partner
		}
		stale := cur && (hp.System != d.Actor.System || hp.SystemPriority != d.Actor.SystemPriority || hp.Key != d.Actor.Key ||
			hp.Port != d.Actor.Port || hp.PortPriority != d.Actor.PortPriority || (hp.State^d.Actor.State)&bits != 0)
		if !due && !changed && !stale {
			continue
		}
		if k := len(p.sentAt); k >= MaxLACPDUsPerSecond && now-p.sentAt[k-MaxLACPDUsPerSecond] < TicksPerSecond {
			continue
		}
		f := make([]byte, FrameLen)
		PutLACPFrame(f, frame.MAC{0x02, 0xee, 0, 0, byte(i >> 8), byte(i)}, &d)
		out[i] = f
		p.last = d
		p.sentAt = append(p.sentAt, now)
		p.next = now + period
	}
	return out
}

// refWire connects a controller side with a refPartner.
type refWire struct {
	s   *side
	r   *refPartner
	toS [][]byte
	now int64
}

func (w *refWire) step() {
	for i, f := range w.toS {
		if f != nil && w.r.ports[i].link {
			w.s.c.HandleSlow(i, f)
		}
	}
	w.s.c.Tick()
	w.now++
	for i, fs := range w.s.collect() {
		for _, f := range fs {
			w.r.ports[i].receive(f, w.now)
		}
	}
	w.toS = w.r.tick(w.now)
	w.s.checkMirror()
	w.s.checkRate()
	checkInvariants(w.s.t, w.s)
}

func (w *refWire) run(n int) {
	for i := 0; i < n; i++ {
		w.step()
	}
}

func (w *refWire) until(max int, cond func() bool) int {
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

func (w *refWire) setLink(i int, up bool) {
	w.r.ports[i].link = up
	if !up {
		w.r.ports[i].heard = nil
	}
	w.s.c.SetLinkUp(i, up)
}
