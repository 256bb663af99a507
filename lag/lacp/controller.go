package lacp

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/xmit"
)

// TickInterval is how often Run steps the machines (bond_3ad.c's AD_TIMER_INTERVAL).
const TickInterval = time.Second / TicksPerSecond

// ErrConfig is wrapped by New's errors for an invalid Config.
var ErrConfig = errors.New("lacp: invalid configuration")

// Selection is the aggregator selection policy (bonding's ad_select).
type Selection uint8

// Selection policies.
const (
	// Stable keeps the active aggregator while it has a port up and an answering partner, and
	// otherwise picks the best (bonding's default).
	Stable Selection = iota
	// Bandwidth picks the aggregator with the most bandwidth (Speed of its ports times the ports
	// up) every time the selection runs.
	Bandwidth
	// Count picks the aggregator with the most ports up (ties: bandwidth).
	Count
)

var selectionNames = [...]string{"stable", "bandwidth", "count"}

func (s Selection) String() string {
	if int(s) < len(selectionNames) {
		return selectionNames[s]
	}
	return fmt.Sprintf("selection(%d)", uint8(s))
}

// ParseSelection converts bonding's ad_select name ("stable") or number ("0").
func ParseSelection(s string) (Selection, error) {
	for i, n := range selectionNames {
		if s == n || s == fmt.Sprint(i) {
			return Selection(i), nil
		}
	}
	return 0, fmt.Errorf("%w: unknown ad_select %q", ErrConfig, s)
}

// Config configures a Controller.
type Config struct {
	// System is the actor's system identifier (bonding's ad_actor_system, default the bond's MAC);
	// zero: the first port's MAC.
	System frame.MAC
	// SystemPriority is ad_actor_sys_prio, 1-65535; 0 means 65535.
	SystemPriority uint16
	// Key is the user part of every port's operational key (ad_user_port_key, 0-1023): the key is
	// Key<<6 | speed<<1 | 1 (full duplex), as Linux builds it, unless PortConfig.Key says otherwise.
	Key uint16

	// Passive makes the actor passive (lacp_active off): it sends LACPDUs only while its partner
	// is active. Active partners reach the same aggregation either way; two passive ends never do.
	Passive bool
	// Fast asks the partner for LACPDUs every second and times it out after 3 s (lacp_rate fast,
	// the Timeout bit); otherwise every 30 s, timed out after 90 s. How often this end sends
	// follows the partner's request, not this setting.
	Fast bool

	// MinLinks is bonding's min_links: the aggregate is up (and carries traffic) only while at
	// least max(MinLinks, 1) of its ports are collecting and distributing.
	MinLinks int
	// Select is the aggregator selection policy (ad_select).
	Select Selection

	// Ports are the members, in the order of the aggregates the controller drives (at most
	// lag.MaxMembers).
	Ports []PortConfig

	// Events, when not nil, is called for every event, in order, from the goroutine that runs Tick
	// and Process (Run's). It may call Status, Usable, Up and SetLinkUp; it must not call Tick,
	// Process, Run or Attach, and it should return quickly: the machines wait for it.
	Events func(Event)
}

// PortConfig configures one member.
type PortConfig struct {
	// Tx sends the member's LACPDUs and marker responses. The controller calls its Send from the
	// goroutine that runs Tick and Process, so it must not be a port another goroutine sends on:
	// give it a port of its own (OpenSender on Linux) or a dedicated queue. Required.
	Tx xmit.Port
	// MAC is the source address of the member's PDUs (a slave's permanent address); zero: Tx's
	// address when Tx has a MAC() method, else an address made from System and the port number.
	MAC frame.MAC
	// Link reports the member's carrier, read every tick; nil: Tx when it implements
	// xmit.LinkStater, else always up. SetLinkUp can take a member down as well.
	Link xmit.LinkStater
	// Number is the actor port number (default the member index + 1); numbers must differ.
	Number uint16
	// Priority is the actor port priority (default 255, Linux's).
	Priority uint16
	// Speed in Mbit/s goes into the key (members of different speeds do not aggregate) and into
	// the Bandwidth and Stable policies' comparisons; 0: unknown.
	Speed uint32
	// Key, when not zero, is the port's operational key as is.
	Key uint16
}

// MemberSetter is what the controller drives: lag.Aggregate's SetMemberUp. A member is set up
// while it is collecting and distributing in the active aggregator and the aggregate is up.
type MemberSetter interface {
	SetMemberUp(member int, up bool) error
}

// PortStats are one member's LACP counters.
type PortStats struct {
	LACPDURx, LACPDUTx         uint64
	MarkerRx, MarkerRespRx     uint64 // marker information and marker responses received
	MarkerRespTx               uint64 // marker responses sent
	Unknown                    uint64 // slow-protocols frames of another subtype (OAM, OSSP...)
	Illegal                    uint64 // frames that do not decode (ErrTruncated, ErrNotSlow, ErrTLV)
	Loopback                   uint64 // LACPDUs carrying this system's own identifier, ignored
	RateLimited                uint64 // ticks an LACPDU waited, marker responses dropped, for the rate limits
	RxOverflow                 uint64 // frames dropped because the receive queue was full
	TxErrors                   uint64 // PDUs Tx did not queue
	ActorChurns, PartnerChurns uint64
}

// PortStatus is one member's state.
type PortStatus struct {
	Member                   int
	Link                     bool
	Actor                    Info // operational actor information, as sent
	Partner                  Info // operational partner information
	Rx                       RxState
	Periodic                 PeriodicState
	Mux                      MuxState
	Selected                 bool
	Aggregator               int  // the aggregator's id (the index + 1 of the member that owns it), 0: none
	Usable                   bool // collecting and distributing in the active aggregator of an aggregate that is up
	ActorChurn, PartnerChurn ChurnState
	Stats                    PortStats
}

// Status is the controller's state.
type Status struct {
	Up         bool // the aggregate is up: enough members usable (MinLinks)
	Aggregator int  // the active aggregator's id, 0: none
	Tick       int64
	Ports      []PortStatus
}

// EventKind says what an Event reports.
type EventKind uint8

// Event kinds.
const (
	// EventLink: a member's link went up or down (Up).
	EventLink EventKind = iota + 1
	// EventState: a member's LACP state changed: its actor or partner state byte, a machine's
	// state, its aggregator or its selection.
	EventState
	// EventMember: a member started (Up) or stopped carrying traffic.
	EventMember
	// EventAggregate: the aggregate came up (Up: enough members carry traffic) or went down.
	EventAggregate
)

var eventNames = [...]string{"", "link", "state", "member", "aggregate"}

func (k EventKind) String() string { return stateName(eventNames[:], uint8(k)) }

// Event is a change the controller reports through Config.Events.
type Event struct {
	Kind   EventKind
	Member int  // -1 for EventAggregate
	Up     bool // EventLink, EventMember, EventAggregate
	Tick   int64
	Port   PortStatus // the member's state after the change (zero for EventAggregate)
}

func (e Event) String() string {
	switch e.Kind {
	case EventAggregate:
		return fmt.Sprintf("tick %d: aggregate up=%v", e.Tick, e.Up)
	case EventState:
		p := &e.Port
		return fmt.Sprintf("tick %d: member %d: rx %v mux %v agg %d actor [%v] partner [%v]", e.Tick, e.Member, p.Rx, p.Mux, p.Aggregator, p.Actor.State, p.Partner.State)
	}
	return fmt.Sprintf("tick %d: member %d %v up=%v", e.Tick, e.Member, e.Kind, e.Up)
}

const inboxPerPort = 16

type inFrame struct {
	n int
	b [FrameLen]byte
}

// inQueue is one member's queue of received frames: a flood on one member cannot crowd out the
// others' LACPDUs.
type inQueue struct {
	head, len int
	f         [inboxPerPort]inFrame
}

// Controller runs LACP for the members of an aggregate: one set of state machines per member,
// one aggregator per member as in Linux, and the selection of the active aggregator. It takes
// received slow-protocols frames through HandleSlow (lag.Config.SlowProtocols), sends through each
// member's PortConfig.Tx, and sets the members of every attached aggregate usable or not.
//
// Concurrency: HandleSlow, SetLinkUp, Status and Attach may be called from any goroutine
// (HandleSlow from every worker's receive path at once: it copies the frame into a bounded queue
// under a short lock). Tick and Process run the machines, transmit, update the attached aggregates
// and deliver events; they are meant for one goroutine: Run, or a test stepping a fake clock.
type Controller struct {
	_ [0]sync.Mutex

	cfg Config

	step sync.Mutex // Tick, Process, Attach: one at a time, events in order

	mu             sync.Mutex // the machines' state
	ports          []*port
	aggs           []*aggregator
	tick           int64
	aggSelectTimer int
	linkDown       []bool // SetLinkUp(false)
	links          []xmit.LinkStater
	usable         []bool // last published per member
	up             bool
	reported       []PortStatus // last EventState per member
	events         []Event

	inMu     sync.Mutex
	inbox    []inQueue
	overflow []uint64
	wake     chan struct{}

	attached []MemberSetter
	pool     *frame.Pool
	txb      *frame.Batch
	one      *frame.Batch
}

// New makes a controller; the machines start at the first Tick.
func New(cfg *Config) (*Controller, error) {
	if cfg == nil || len(cfg.Ports) == 0 {
		return nil, fmt.Errorf("%w: no ports", ErrConfig)
	}
	c := &Controller{cfg: *cfg}
	n := len(cfg.Ports)
	switch {
	case n > 64:
		return nil, fmt.Errorf("%w: %d ports, at most 64", ErrConfig, n)
	case cfg.Key > 1023:
		return nil, fmt.Errorf("%w: Key %d above 1023", ErrConfig, cfg.Key)
	case cfg.MinLinks < 0 || cfg.MinLinks > n:
		return nil, fmt.Errorf("%w: MinLinks %d with %d ports", ErrConfig, cfg.MinLinks, n)
	case cfg.Select > Count:
		return nil, fmt.Errorf("%w: selection %d", ErrConfig, cfg.Select)
	}
	if c.cfg.SystemPriority == 0 {
		c.cfg.SystemPriority = 0xffff
	}
	c.cfg.Ports = append([]PortConfig(nil), cfg.Ports...)
	numbers := map[uint16]bool{}
	for i := range c.cfg.Ports {
		pc := &c.cfg.Ports[i]
		if pc.Tx == nil {
			return nil, fmt.Errorf("%w: port %d has no Tx", ErrConfig, i)
		}
		if pc.Number == 0 {
			pc.Number = uint16(i + 1)
		}
		if numbers[pc.Number] {
			return nil, fmt.Errorf("%w: port number %d used twice", ErrConfig, pc.Number)
		}
		numbers[pc.Number] = true
		if pc.Priority == 0 {
			pc.Priority = 0xff
		}
		if pc.MAC == (frame.MAC{}) {
			if m, ok := pc.Tx.(interface{ MAC() frame.MAC }); ok {
				pc.MAC = m.MAC()
			}
		}
		if pc.Link == nil {
			if ls, ok := pc.Tx.(xmit.LinkStater); ok {
				pc.Link = ls
			}
		}
	}
	if c.cfg.System == (frame.MAC{}) {
		c.cfg.System = c.cfg.Ports[0].MAC
	}
	if c.cfg.System == (frame.MAC{}) {
		return nil, fmt.Errorf("%w: no System and no port MAC", ErrConfig)
	}
	for i := range c.cfg.Ports {
		pc := &c.cfg.Ports[i]
		if pc.MAC == (frame.MAC{}) {
			pc.MAC = c.cfg.System
			pc.MAC[0] |= 0x02 // locally administered
			pc.MAC[4] ^= byte(pc.Number >> 8)
			pc.MAC[5] ^= byte(pc.Number)
		}
	}
	pool, err := frame.NewPool(&frame.PoolConfig{Buffers: n * (2 + MaxMarkersPerSecond), BufSize: 256, Headroom: 64})
	if err != nil {
		return nil, err
	}
	c.pool = pool
	c.txb = frame.NewBatch(n * (1 + MaxMarkersPerSecond))
	c.one = frame.NewBatch(1 + MaxMarkersPerSecond)
	c.inbox = make([]inQueue, n)
	c.overflow = make([]uint64, n)
	c.wake = make(chan struct{}, 1)
	c.linkDown = make([]bool, n)
	c.links = make([]xmit.LinkStater, n)
	c.usable = make([]bool, n)
	c.reported = make([]PortStatus, n)
	c.aggSelectTimer = aggSelectTicks
	for i := range c.cfg.Ports {
		pc := &c.cfg.Ports[i]
		c.links[i] = pc.Link
		p := &port{idx: i, mac: pc.MAC, speed: pc.Speed, enabled: true}
		key := pc.Key
		if key == 0 {
			key = c.cfg.Key<<6 | speedBits(pc.Speed)<<1 | 1
		}
		p.actor = Info{SystemPriority: c.cfg.SystemPriority, System: c.cfg.System, Key: key, PortPriority: pc.Priority, Port: pc.Number}
		p.actorAdmin = StateAggregation
		if !c.cfg.Passive {
			p.actorAdmin |= StateActivity
		}
		p.actor.State = p.actorAdmin
		if c.cfg.Fast {
			p.actor.State |= StateTimeout
		}
		p.partnerDflt = Info{SystemPriority: 0xffff, Key: 1, Port: 1, PortPriority: 0xff}
		p.partner = p.partnerDflt
		p.vars = varBegin | varLACPEnabled
		for k := range p.txTimes {
			p.txTimes[k] = -TicksPerSecond
		}
		for k := range p.markerTimes {
			p.markerTimes[k] = -TicksPerSecond
		}
		p.markerBuf = make([][FrameLen]byte, 0, MaxMarkersPerSecond)
		if c.links[i] != nil {
			p.enabled = c.links[i].LinkUp()
		}
		c.ports = append(c.ports, p)
		c.aggs = append(c.aggs, &aggregator{id: i + 1})
	}
	return c, nil
}

// speedBits is the speed field of Linux's port key (enum ad_link_speed_type).
func speedBits(mbps uint32) uint16 {
	switch mbps {
	case 1:
		return 1
	case 10:
		return 2
	case 100:
		return 3
	case 1000:
		return 4
	case 2500:
		return 5
	case 10000:
		return 6
	case 20000:
		return 7
	case 40000:
		return 8
	case 56000:
		return 9
	case 100000:
		return 10
	case 25000:
		return 11
	case 50000:
		return 12
	case 200000:
		return 13
	case 400000:
		return 14
	case 5000:
		return 15
	case 800000:
		return 16
	}
	return 0
}

// Attach makes the controller drive m's members (lag.Aggregate.SetMemberUp), one call per member
// at once with the current state and then one per change. Attach every worker's aggregate over
// the same members.
func (c *Controller) Attach(m MemberSetter) {
	c.step.Lock()
	defer c.step.Unlock()
	c.mu.Lock()
	u := append([]bool(nil), c.usable...)
	c.attached = append(c.attached, m)
	c.mu.Unlock()
	for i, up := range u {
		m.SetMemberUp(i, up)
	}
}

// HandleSlow takes a slow-protocols frame received on member (lag.SlowHandler): it copies the
// first FrameLen bytes into the member's receive queue (16 frames) and wakes Run. The frame is processed by
// the next Process or Tick. A full queue drops the frame and counts it (RxOverflow).
func (c *Controller) HandleSlow(member int, f []byte) {
	if member < 0 || member >= len(c.ports) {
		return
	}
	c.inMu.Lock()
	q := &c.inbox[member]
	if q.len == inboxPerPort {
		c.overflow[member]++
		c.inMu.Unlock()
		return
	}
	s := &q.f[(q.head+q.len)%inboxPerPort]
	q.len++
	s.n = copy(s.b[:], f) // what follows the PDU is not read
	c.inMu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// SetLinkUp takes member's link down (false) or gives it back to its Link source (true), for
// link state known elsewhere. It takes effect at the next Process or Tick (Run processes at once).
func (c *Controller) SetLinkUp(member int, up bool) error {
	if member < 0 || member >= len(c.ports) {
		return fmt.Errorf("%w: member %d", ErrConfig, member)
	}
	c.mu.Lock()
	c.linkDown[member] = !up
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return nil
}

// Run steps the machines every TickInterval and processes received frames and link changes as
// they come, until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	t := time.NewTicker(TickInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c.Tick()
		case <-c.wake:
			c.Process()
		}
	}
}

// Tick advances the clock by one TickInterval: it processes the received frames and link
// changes, then runs every member's receive, periodic, selection, mux, transmit and churn
// machines once (bond_3ad_state_machine_handler), sends, updates the attached aggregates and
// delivers the events.
func (c *Controller) Tick() { c.run(true) }

// Process handles the received frames and link changes without advancing the clock (the
// receive machine and the marker responder run; LACPDUs they call for go out at the next Tick).
func (c *Controller) Process() { c.run(false) }

func (c *Controller) run(tick bool) {
	c.step.Lock()
	defer c.step.Unlock()
	c.mu.Lock()
	if tick {
		c.tick++
	}
	c.pollLinks()
	c.drain()
	if tick {
		if c.aggSelectTimer > 0 {
			c.aggSelectTimer--
			if c.aggSelectTimer == 0 {
				c.aggSelection()
			}
		}
		for _, p := range c.ports {
			c.rxMachine(p, nil)
			c.periodicMachine(p)
			c.portSelection(p)
			c.muxMachine(p)
			c.txMachine(p)
			c.churnMachine(p)
			p.vars &^= varBegin
		}
	}
	changes := c.publish()
	c.collect()
	c.txb.Frames = c.txb.Frames[:0]
	var sends []int // member of each frame of txb
	for _, p := range c.ports {
		if p.txLACP {
			if c.stage(p.txBuf[:]) {
				sends = append(sends, p.idx)
				p.stats.LACPDUTx++
			} else {
				p.stats.TxErrors++
			}
			p.txLACP = false
		}
		for k := range p.markerBuf {
			if c.stage(p.markerBuf[k][:]) {
				sends = append(sends, p.idx)
				p.stats.MarkerRespTx++
			} else {
				p.stats.TxErrors++
			}
		}
		p.markerBuf = p.markerBuf[:0]
	}
	events := c.events
	c.events = nil
	attached := c.attached
	c.mu.Unlock()

	c.transmit(sends)
	for _, ch := range changes {
		for _, m := range attached {
			m.SetMemberUp(ch.member, ch.up)
		}
	}
	if c.cfg.Events != nil {
		for _, e := range events {
			c.cfg.Events(e)
		}
	}
}

// stage copies one frame into a pool buffer at the end of txb.
func (c *Controller) stage(b []byte) bool {
	k := len(c.txb.Frames)
	if got, _ := c.pool.Alloc(c.txb, 1); got != 1 {
		return false
	}
	f := &c.txb.Frames[k]
	f.Resize(len(b))
	copy(c.txb.Bytes(k), b)
	return true
}

// transmit sends the staged frames, one Send per member (in member order, so each batch holds
// one member's frames). c.step is held.
func (c *Controller) transmit(sends []int) {
	if len(sends) == 0 {
		return
	}
	all := c.txb.Frames
	one := c.one
	start := 0
	for start < len(all) {
		end := start + 1
		for end < len(all) && sends[end] == sends[start] {
			end++
		}
		one.Adopt(c.txb)
		one.Frames = append(one.Frames, all[start:end]...)
		m := sends[start]
		n, err := c.cfg.Ports[m].Tx.Send(one)
		if err != nil || n < end-start {
			c.mu.Lock()
			c.ports[m].stats.TxErrors += uint64(end - start - n)
			c.mu.Unlock()
		}
		start = end
	}
	c.txb.Frames = c.txb.Frames[:0]
}

// pollLinks reads the link sources and applies SetLinkUp (bond_3ad_handle_link_change). c.mu is
// held.
func (c *Controller) pollLinks() {
	changed := false
	for i, p := range c.ports {
		up := !c.linkDown[i]
		if up && c.links[i] != nil {
			up = c.links[i].LinkUp()
		}
		if up == p.enabled {
			continue
		}
		p.enabled = up
		changed = true
		c.events = append(c.events, Event{Kind: EventLink, Member: i, Up: up, Tick: c.tick, Port: c.status(p)})
	}
	if changed {
		// A link change may leave the active aggregator without a port up (or bring back a
		// better one): select again, as bond_3ad_handle_link_change does.
		c.aggSelection()
	}
}

// drain runs the receive machine and the marker responder on the queued frames. c.mu is held.
func (c *Controller) drain() {
	c.inMu.Lock()
	defer c.inMu.Unlock()
	for i, n := range c.overflow {
		c.ports[i].stats.RxOverflow += n
		c.overflow[i] = 0
	}
	for i := range c.inbox {
		q := &c.inbox[i]
		p := c.ports[i]
		for ; q.len > 0; q.len-- {
			s := &q.f[q.head]
			q.head = (q.head + 1) % inboxPerPort
			c.receive(p, s.b[:s.n])
		}
	}
}

// receive hands one frame to the receive machine or the marker responder. c.mu is held.
func (c *Controller) receive(p *port, f []byte) {
	var pdu PDU
	err := DecodeFrame(f, &pdu)
	switch {
	case errors.Is(err, ErrSubtype):
		p.stats.Unknown++
	case err != nil:
		p.stats.Illegal++
	case pdu.Subtype == SubtypeMarker:
		c.markerReceived(p, &pdu.Marker)
	case pdu.LACP.Actor.System == c.cfg.System:
		// Our own LACPDU looped back (bond_3ad.c's "illegal loopback"): ignored before the
		// receive machine, which Linux would leave in CURRENT without a timer.
		p.stats.Loopback++
	default:
		p.stats.LACPDURx++
		c.rxMachine(p, &pdu.LACP)
	}
}

type change struct {
	member int
	up     bool
}

// publish computes which members carry traffic and whether the aggregate is up, and returns the
// members whose state changed. c.mu is held.
func (c *Controller) publish() []change {
	var active *aggregator
	for _, a := range c.aggs {
		if a.active {
			active = a
			break
		}
	}
	distributing := 0
	for _, p := range c.ports {
		if c.carries(p, active) {
			distributing++
		}
	}
	up := distributing > 0 && distributing >= c.cfg.MinLinks
	var ch []change
	for i, p := range c.ports {
		u := up && c.carries(p, active)
		if u != c.usable[i] {
			c.usable[i] = u
			ch = append(ch, change{i, u})
			c.events = append(c.events, Event{Kind: EventMember, Member: i, Up: u, Tick: c.tick, Port: c.status(p)})
		}
	}
	if up != c.up {
		c.up = up
		c.events = append(c.events, Event{Kind: EventAggregate, Member: -1, Up: up, Tick: c.tick})
	}
	return ch
}

func (c *Controller) carries(p *port, active *aggregator) bool {
	return p.enabled && p.mux == MuxCollectingDistributing && p.agg != nil && p.agg == active
}

// collect appends an EventState for every member whose reported state changed. c.mu is held.
func (c *Controller) collect() {
	for i, p := range c.ports {
		s := c.status(p)
		r := &c.reported[i]
		if s.Actor.State != r.Actor.State || s.Partner != r.Partner || s.Rx != r.Rx || s.Mux != r.Mux ||
			s.Periodic != r.Periodic || s.Selected != r.Selected || s.Aggregator != r.Aggregator || s.Actor.Key != r.Actor.Key {
			*r = s
			c.events = append(c.events, Event{Kind: EventState, Member: i, Tick: c.tick, Port: s})
		}
	}
}

func (c *Controller) status(p *port) PortStatus {
	s := PortStatus{
		Member: p.idx, Link: p.enabled, Actor: p.actor, Partner: p.partner,
		Rx: p.rx, Periodic: p.periodic, Mux: p.mux, Selected: p.vars&varSelected != 0,
		Usable: c.usable[p.idx], ActorChurn: p.churnActor, PartnerChurn: p.churnPartner, Stats: p.stats,
	}
	s.Stats.ActorChurns, s.Stats.PartnerChurns = p.churnActorCount, p.churnPartnerCount
	if p.agg != nil {
		s.Aggregator = p.agg.id
	}
	return s
}

// Status returns the controller's state.
func (c *Controller) Status() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := Status{Up: c.up, Tick: c.tick}
	for _, a := range c.aggs {
		if a.active {
			s.Aggregator = a.id
		}
	}
	for _, p := range c.ports {
		s.Ports = append(s.Ports, c.status(p))
	}
	c.inMu.Lock()
	for i, n := range c.overflow {
		s.Ports[i].Stats.RxOverflow += n
	}
	c.inMu.Unlock()
	return s
}

// Usable reports whether member carries traffic in the published state.
func (c *Controller) Usable(member int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return member >= 0 && member < len(c.usable) && c.usable[member]
}

// Up reports whether the aggregate is up.
func (c *Controller) Up() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.up
}
