package lacp

import (
	"fmt"

	"github.com/wirespeed/wirespeed/frame"
)

// Timers, in ticks of TickInterval (bond_3ad.c: AD_TIMER_INTERVAL, AD_*_TIME).
const (
	TicksPerSecond     = 10
	fastPeriodicTicks  = 1 * TicksPerSecond
	slowPeriodicTicks  = 30 * TicksPerSecond
	shortTimeoutTicks  = 3 * fastPeriodicTicks // Short_Timeout_Time: 3 s
	longTimeoutTicks   = 3 * slowPeriodicTicks // Long_Timeout_Time: 90 s
	churnTicks         = 60 * TicksPerSecond   // Churn_Detection_Time
	aggregateWaitTicks = 2 * TicksPerSecond    // Aggregate_Wait_Time
	aggSelectTicks     = 1                     // bond_open's bond_3ad_initiate_agg_selection(bond, 1)

	// MaxLACPDUsPerSecond and MaxMarkersPerSecond bound what one port sends in any second (any
	// TicksPerSecond consecutive ticks): 802.1AX's limit of three LACPDUs per Fast_Periodic_Time,
	// and 802.3's five marker PDUs a second for the marker responder's answers.
	MaxLACPDUsPerSecond = 3
	MaxMarkersPerSecond = 5
)

// Port variables (bond_3ad.c AD_PORT_*).
const (
	varBegin uint16 = 1 << iota
	varLACPEnabled
	varActorChurn
	varPartnerChurn
	varReady
	varReadyN
	varMatched
	varSelected
	varChurned
)

// RxState is the receive machine's state (802.1AX 6.4.12).
type RxState uint8

// Receive machine states.
const (
	RxInitialize RxState = iota + 1
	RxPortDisabled
	RxLACPDisabled
	RxExpired
	RxDefaulted
	RxCurrent
)

// PeriodicState is the periodic transmission machine's state (802.1AX 6.4.13).
type PeriodicState uint8

// Periodic machine states.
const (
	NoPeriodic PeriodicState = iota + 1
	FastPeriodic
	SlowPeriodic
	PeriodicTx
)

// MuxState is the mux machine's state (802.1AX 6.4.15, coupled control).
type MuxState uint8

// Mux machine states.
const (
	MuxDetached MuxState = iota + 1
	MuxWaiting
	MuxAttached
	MuxCollectingDistributing
)

// ChurnState is an actor or partner churn detection machine's state (802.1AX 6.4.17).
type ChurnState uint8

// Churn machine states.
const (
	ChurnMonitor ChurnState = iota + 1
	Churned
	NoChurn
)

var (
	rxNames       = [...]string{"", "initialize", "port_disabled", "lacp_disabled", "expired", "defaulted", "current"}
	periodicNames = [...]string{"", "no_periodic", "fast_periodic", "slow_periodic", "periodic_tx"}
	muxNames      = [...]string{"", "detached", "waiting", "attached", "collecting_distributing"}
	churnNames    = [...]string{"", "monitoring", "churned", "none"}
)

func stateName(names []string, s uint8) string {
	if int(s) < len(names) && names[s] != "" {
		return names[s]
	}
	return fmt.Sprintf("state(%d)", s)
}

func (s RxState) String() string       { return stateName(rxNames[:], uint8(s)) }
func (s PeriodicState) String() string { return stateName(periodicNames[:], uint8(s)) }
func (s MuxState) String() string      { return stateName(muxNames[:], uint8(s)) }
func (s ChurnState) String() string    { return stateName(churnNames[:], uint8(s)) }

// port is one member's LACP state (bond_3ad.h struct port).
type port struct {
	idx int
	mac frame.MAC // source address of its PDUs

	actor       Info // operational actor information (Key: the operational key)
	actorAdmin  State
	partner     Info // operational partner information
	partnerDflt Info // administrative partner information (recordDefault)
	speed       uint32

	enabled bool // link up (port_enabled)
	vars    uint16

	rx            RxState
	rxTimer       int
	periodic      PeriodicState
	periodicTimer int
	mux           MuxState
	muxTimer      int
	ntt           bool

	churnActor, churnPartner           ChurnState
	churnActorTimer, churnPartnerTimer int
	churnActorCount, churnPartnerCount uint64

	agg *aggregator

	txTimes     [MaxLACPDUsPerSecond]int64 // ticks of the last LACPDUs sent, oldest first
	markerTimes [MaxMarkersPerSecond]int64

	// Frames to send after the machines ran (built under the controller's lock).
	txLACP    bool
	txBuf     [FrameLen]byte
	markerBuf [][FrameLen]byte // marker responses waiting, at most MaxMarkersPerSecond
	stats     PortStats
}

// aggregator is one aggregator (bond_3ad.h struct aggregator): every member owns one, as in
// Linux, and ports with the same actor key and the same partner system and key share one.
type aggregator struct {
	id             int // 1-based, the owning member's index + 1
	individual     bool
	actorKey       uint16
	partnerSystem  frame.MAC
	partnerSysPrio uint16
	partnerKey     uint16
	ports          []*port // the most recently attached first (Linux's lag_ports list)
	active         bool
}

func (a *aggregator) clear() {
	*a = aggregator{id: a.id, ports: a.ports[:0]}
}

func (a *aggregator) hasPartner() bool { return a.partnerSystem != (frame.MAC{}) }

// activePorts counts the ports whose link is up (__agg_active_ports).
func (a *aggregator) activePorts() int {
	n := 0
	for _, p := range a.ports {
		if p.enabled {
			n++
		}
	}
	return n
}

// deviceUp is agg_device_up: some port's link is up.
func (a *aggregator) deviceUp() bool { return a.activePorts() > 0 }

func (a *aggregator) bandwidth() uint64 {
	if len(a.ports) == 0 {
		return 0
	}
	return uint64(a.ports[0].speed) * uint64(a.activePorts())
}

func (a *aggregator) portsReady() bool {
	for _, p := range a.ports {
		if p.vars&varReadyN == 0 {
			return false
		}
	}
	return true
}

func (a *aggregator) setReady() {
	if a == nil {
		return
	}
	r := a.portsReady()
	for _, p := range a.ports {
		if r {
			p.vars |= varReady
		} else {
			p.vars &^= varReady
		}
	}
}

func (a *aggregator) remove(p *port) {
	for i, q := range a.ports {
		if q == p {
			copy(a.ports[i:], a.ports[i+1:])
			a.ports = a.ports[:len(a.ports)-1]
			return
		}
	}
}

// individual reports whether the port may not be aggregated: its actor or its partner says
// Aggregation false (802.1AX 6.4.14.1; Linux only looks at the duplex bit of the actor key).
func (p *port) individual() bool {
	return p.actor.State&StateAggregation == 0 || p.partner.State&StateAggregation == 0
}

// ---- receive machine (ad_rx_machine) ----

func (c *Controller) rxMachine(p *port, pdu *LACPDU) {
	last := p.rx
	switch {
	case p.vars&varBegin != 0:
		p.rx = RxInitialize
		p.vars |= varChurned
	case !p.enabled:
		p.rx = RxPortDisabled
	case pdu != nil && (p.rx == RxExpired || p.rx == RxDefaulted || p.rx == RxCurrent):
		if p.rx != RxCurrent {
			p.vars |= varChurned
		}
		p.rxTimer = 0
		p.rx = RxCurrent
	default:
		expired := false
		if p.rxTimer > 0 {
			p.rxTimer--
			expired = p.rxTimer == 0
		}
		switch {
		case expired && p.rx == RxExpired:
			p.rx = RxDefaulted
		case expired && p.rx == RxCurrent:
			p.rx = RxExpired
		case !expired && p.rx == RxPortDisabled && p.enabled:
			if p.vars&varLACPEnabled != 0 {
				p.rx = RxExpired
			} else {
				p.rx = RxLACPDisabled
			}
		}
	}
	if p.rx == last && pdu == nil {
		return
	}
	switch p.rx {
	case RxInitialize:
		p.vars |= varLACPEnabled
		p.vars &^= varSelected
		p.recordDefault()
		p.actor.State &^= StateExpired
		p.rx = RxPortDisabled
		fallthrough
	case RxPortDisabled:
		p.vars &^= varMatched
		// 802.1AX's PORT_DISABLED also forgets the partner's synchronization, so that a port
		// whose link went down leaves COLLECTING_DISTRIBUTING (Linux leaves that to the slave
		// array's link check).
		p.partner.State &^= StateSync
	case RxLACPDisabled:
		p.vars &^= varSelected
		p.recordDefault()
		p.partner.State &^= StateAggregation
		p.vars |= varMatched
		p.actor.State &^= StateExpired
	case RxExpired:
		p.partner.State &^= StateSync
		p.partner.State |= StateTimeout
		p.vars &^= varMatched
		p.rxTimer = shortTimeoutTicks
		p.actor.State |= StateExpired
		p.vars |= varChurned
	case RxDefaulted:
		p.updateDefaultSelected()
		p.recordDefault()
		p.vars |= varMatched
		p.actor.State &^= StateExpired
	case RxCurrent:
		p.updateSelected(pdu)
		p.updateNTT(pdu)
		p.recordPDU(pdu)
		p.rxTimer = longTimeoutTicks
		if p.actor.State&StateTimeout != 0 {
			p.rxTimer = shortTimeoutTicks
		}
		p.actor.State &^= StateExpired
	}
}

// recordDefault is __record_default.
func (p *port) recordDefault() {
	p.partner = p.partnerDflt
	p.actor.State |= StateDefaulted
}

// chooseMatched is __choose_matched: the PDU's view of us matches what we are (or the partner is
// an individual link).
func (p *port) chooseMatched(pdu *LACPDU) {
	pp := &pdu.Partner
	if (pp.Port == p.actor.Port && pp.PortPriority == p.actor.PortPriority && pp.System == p.actor.System &&
		pp.SystemPriority == p.actor.SystemPriority && pp.Key == p.actor.Key &&
		pp.State&StateAggregation == p.actor.State&StateAggregation) || pdu.Actor.State&StateAggregation == 0 {
		p.vars |= varMatched
	} else {
		p.vars &^= varMatched
	}
}

// recordPDU is __record_pdu.
func (p *port) recordPDU(pdu *LACPDU) {
	p.chooseMatched(pdu)
	p.partner = pdu.Actor
	p.actor.State &^= StateDefaulted
	if p.vars&varMatched != 0 && pdu.Actor.State&StateSync != 0 {
		p.partner.State |= StateSync
	} else {
		p.partner.State &^= StateSync
	}
}

func sameLink(a, b *Info) bool {
	return a.Port == b.Port && a.PortPriority == b.PortPriority && a.System == b.System &&
		a.SystemPriority == b.SystemPriority && a.Key == b.Key && a.State&StateAggregation == b.State&StateAggregation
}

// updateSelected is __update_selected: a partner that is not the one recorded unselects the port.
func (p *port) updateSelected(pdu *LACPDU) {
	if !sameLink(&pdu.Actor, &p.partner) {
		p.vars &^= varSelected
	}
}

// updateDefaultSelected is __update_default_selected.
func (p *port) updateDefaultSelected() {
	if !sameLink(&p.partnerDflt, &p.partner) {
		p.vars &^= varSelected
	}
}

// updateNTT is __update_ntt: the partner's view of us is out of date.
func (p *port) updateNTT(pdu *LACPDU) {
	const bits = StateActivity | StateTimeout | StateSync | StateAggregation
	pp := &pdu.Partner
	if pp.Port != p.actor.Port || pp.PortPriority != p.actor.PortPriority || pp.System != p.actor.System ||
		pp.SystemPriority != p.actor.SystemPriority || pp.Key != p.actor.Key || (pp.State^p.actor.State)&bits != 0 {
		p.ntt = true
	}
}

// ---- periodic transmission machine (ad_periodic_machine) ----

func (c *Controller) periodicMachine(p *port) {
	last := p.periodic
	switch {
	case p.vars&varBegin != 0 || p.vars&varLACPEnabled == 0 || !p.enabled ||
		(p.actor.State&StateActivity == 0 && p.partner.State&StateActivity == 0):
		p.periodic = NoPeriodic
	case p.periodicTimer > 0:
		p.periodicTimer--
		switch {
		case p.periodicTimer == 0:
			p.periodic = PeriodicTx
		case p.periodic == FastPeriodic && p.partner.State&StateTimeout == 0:
			p.periodic = SlowPeriodic
		case p.periodic == SlowPeriodic && p.partner.State&StateTimeout != 0:
			p.periodicTimer = 0
			p.periodic = PeriodicTx
		}
	default:
		switch p.periodic {
		case NoPeriodic:
			p.periodic = FastPeriodic
		case PeriodicTx:
			if p.partner.State&StateTimeout == 0 {
				p.periodic = SlowPeriodic
			} else {
				p.periodic = FastPeriodic
			}
		}
	}
	if p.periodic == last {
		return
	}
	switch p.periodic {
	case NoPeriodic:
		p.periodicTimer = 0
	case FastPeriodic:
		p.periodicTimer = fastPeriodicTicks - 1 // the tick PERIODIC_TX takes
	case SlowPeriodic:
		p.periodicTimer = slowPeriodicTicks - 1
	case PeriodicTx:
		p.ntt = true
	}
}

// ---- selection logic (ad_port_selection_logic, ad_agg_selection_logic) ----

func (c *Controller) portSelection(p *port) {
	if p.vars&varSelected != 0 {
		return
	}
	if p.agg != nil && p.mux != MuxDetached {
		// An unselected port goes back through DETACHED (and then WAITING) before it joins
		// another aggregator; Linux re-selects it at once, before its mux machine has run.
		return
	}
	if a := p.agg; a != nil {
		a.remove(p)
		p.agg = nil
		if len(a.ports) == 0 {
			a.clear()
		}
	}
	var free *aggregator
	for _, a := range c.aggs {
		if len(a.ports) == 0 {
			if free == nil {
				free = a
			}
			continue
		}
		if a.actorKey == p.actor.Key && a.partnerSystem == p.partner.System && a.partnerSysPrio == p.partner.SystemPriority &&
			a.partnerKey == p.partner.Key && p.partner.System != (frame.MAC{}) && !a.individual && !p.individual() {
			p.agg = a
			break
		}
	}
	if p.agg == nil {
		// A port that left its aggregator leaves at least one of the members' aggregators free.
		a := free
		a.individual = p.individual()
		a.actorKey = p.actor.Key
		a.partnerSystem = p.partner.System
		a.partnerSysPrio = p.partner.SystemPriority
		a.partnerKey = p.partner.Key
		p.agg = a
	}
	p.agg.ports = append(p.agg.ports, nil)
	copy(p.agg.ports[1:], p.agg.ports)
	p.agg.ports[0] = p
	p.vars |= varSelected
	p.agg.setReady()
	c.aggSelection()
	if !p.agg.active {
		p.actor.State &^= StateSync
	}
}

// selectionTest is ad_agg_selection_test: whether cur is a better active aggregator than best.
func (c *Controller) selectionTest(best, cur *aggregator) *aggregator {
	switch {
	case best == nil:
		return cur
	case !cur.individual && best.individual:
		return cur
	case cur.individual && !best.individual:
		return best
	case cur.hasPartner() && !best.hasPartner():
		return cur
	case !cur.hasPartner() && best.hasPartner():
		return best
	}
	if c.cfg.Select == Count {
		if n, m := cur.activePorts(), best.activePorts(); n != m {
			if n > m {
				return cur
			}
			return best
		}
	}
	if cur.bandwidth() > best.bandwidth() {
		return cur
	}
	return best
}

// aggSelection is ad_agg_selection_logic: which aggregator is the active one.
func (c *Controller) aggSelection() {
	var active *aggregator
	for _, a := range c.aggs {
		if a.active {
			active = a
			break
		}
	}
	var best *aggregator
	if active != nil && active.deviceUp() {
		best = active
	}
	for _, a := range c.aggs {
		a.active = false
		if a.activePorts() > 0 && a.deviceUp() {
			best = c.selectionTest(best, a)
		}
	}
	if best != nil && c.cfg.Select == Stable && active != nil && len(active.ports) > 0 && active.activePorts() > 0 &&
		(active.hasPartner() || !best.hasPartner()) && !(active.actorKey == 0 && best.actorKey != 0) {
		// Stable keeps the active aggregator while it has a port up and an answering partner (or
		// when neither has one).
		best = active
	}
	if best != nil {
		best.active = true
	}
}

// ---- mux machine (ad_mux_machine, coupled control) ----

func (c *Controller) muxMachine(p *port) {
	last := p.mux
	if p.vars&varBegin != 0 {
		p.mux = MuxDetached
	} else {
		selected := p.vars&varSelected != 0
		switch p.mux {
		case MuxDetached:
			if selected {
				p.mux = MuxWaiting
			}
		case MuxWaiting:
			if !selected {
				p.vars &^= varReadyN
				p.agg.setReady()
				p.mux = MuxDetached
				break
			}
			if p.muxTimer > 0 {
				p.muxTimer--
				if p.muxTimer == 0 {
					p.vars |= varReadyN
				}
			}
			p.agg.setReady()
			if p.vars&varReady != 0 && p.muxTimer == 0 {
				p.mux = MuxAttached
			}
		case MuxAttached:
			switch {
			case selected && p.partner.State&StateSync != 0 && c.aggSelectTimer == 0:
				if p.agg.active {
					p.mux = MuxCollectingDistributing
				}
			case !selected:
				p.vars &^= varReadyN
				p.agg.setReady()
				p.mux = MuxDetached
			case p.agg.active:
				p.actor.State |= StateSync
			}
		case MuxCollectingDistributing:
			// Leaving also when the aggregator stopped being the active one, so that the partner
			// is told the port no longer distributes (Linux keeps the state and only takes the
			// slave out of its transmit array).
			if !selected || p.partner.State&StateSync == 0 || p.actor.State&StateSync == 0 || !p.agg.active {
				p.mux = MuxAttached
			}
		}
	}
	if p.mux == last {
		return
	}
	switch p.mux {
	case MuxDetached:
		p.actor.State &^= StateSync | StateCollecting | StateDistributing
		p.ntt = true
	case MuxWaiting:
		p.muxTimer = aggregateWaitTicks
	case MuxAttached:
		if p.agg.active {
			p.actor.State |= StateSync
		} else {
			p.actor.State &^= StateSync
		}
		p.actor.State &^= StateCollecting | StateDistributing
		p.ntt = true
	case MuxCollectingDistributing:
		p.actor.State |= StateSync | StateCollecting | StateDistributing
		p.ntt = true
	}
}

// ---- transmit machine (ad_tx_machine) ----

// txMachine sends an LACPDU when one is needed, at most MaxLACPDUsPerSecond in any second: a
// sliding window over the last sends (Linux waits ticks/3 between two, which lets four through
// some one-second windows).
//
// Nothing is sent while the periodic machine is in NO_PERIODIC (802.1AX 6.4.16: a passive port
// whose partner is passive too stays silent); Linux sends the LACPDUs its mux machine calls for
// even then.
func (c *Controller) txMachine(p *port) {
	if !p.ntt || p.vars&varLACPEnabled == 0 || !p.enabled || p.periodic == NoPeriodic {
		return
	}
	if c.tick-p.txTimes[0] < TicksPerSecond {
		p.stats.RateLimited++
		return
	}
	pdu := LACPDU{Version: Version, Actor: p.actor, Partner: p.partner}
	PutLACPFrame(p.txBuf[:], p.mac, &pdu)
	p.txLACP = true
	copy(p.txTimes[:], p.txTimes[1:])
	p.txTimes[len(p.txTimes)-1] = c.tick
	p.ntt = false
}

// ---- churn detection (ad_churn_machine) ----

func (c *Controller) churnMachine(p *port) {
	if p.vars&varChurned != 0 {
		p.vars &^= varChurned
		p.churnActor, p.churnPartner = ChurnMonitor, ChurnMonitor
		p.churnActorTimer, p.churnPartnerTimer = churnTicks, churnTicks
		return
	}
	if p.churnActorTimer > 0 {
		p.churnActorTimer--
		if p.churnActorTimer == 0 && p.churnActor == ChurnMonitor {
			if p.actor.State&StateSync != 0 {
				p.churnActor = NoChurn
			} else {
				p.churnActorCount++
				p.churnActor = Churned
			}
		}
	}
	if p.churnPartnerTimer > 0 {
		p.churnPartnerTimer--
		if p.churnPartnerTimer == 0 && p.churnPartner == ChurnMonitor {
			if p.partner.State&StateSync != 0 {
				p.churnPartner = NoChurn
			} else {
				p.churnPartnerCount++
				p.churnPartner = Churned
			}
		}
	}
}

// ---- marker responder (ad_marker_info_received) ----

func (c *Controller) markerReceived(p *port, m *Marker) {
	if m.Response {
		p.stats.MarkerRespRx++
		return
	}
	p.stats.MarkerRx++
	if c.tick-p.markerTimes[0] < TicksPerSecond || len(p.markerBuf) == cap(p.markerBuf) {
		p.stats.RateLimited++
		return
	}
	r := *m
	r.Response = true
	p.markerBuf = p.markerBuf[:len(p.markerBuf)+1]
	PutMarkerFrame(p.markerBuf[len(p.markerBuf)-1][:], p.mac, &r)
	copy(p.markerTimes[:], p.markerTimes[1:])
	p.markerTimes[len(p.markerTimes)-1] = c.tick
}
