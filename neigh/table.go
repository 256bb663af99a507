package neigh

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/wirespeed/wirespeed/fib"
	"github.com/wirespeed/wirespeed/frame"
)

// Iface is one logical interface as the neighbour table sees it, indexed by the interface ID fwd
// and vlan use.
type Iface struct {
	MAC   frame.MAC      // the router's MAC on it: the source of every ARP frame sent on it
	Addrs []netip.Prefix // the router's IPv4 addresses on it, with their subnets (10.0.1.1/24)
}

// Config configures a Table. The zero value of every field is a working default.
type Config struct {
	// Ifaces are the interfaces, indexed by interface ID (Frame.Port of the frames Input and Hold get).
	Ifaces []Iface
	// NextHops is where neighbour resolution reaches the workers: for every next hop added with
	// AddNextHop, the table writes the entry whole (the egress interface, the neighbour's MAC, and
	// fib.NextHopUnresolved while the neighbour has no valid MAC). nil: New makes an empty table
	// (Table.NextHops).
	NextHops *fib.NextHops
	// Pool provides the buffers of generated ARP frames and of held frames (copied in when held).
	// Its buffers need room for 60 bytes after the headroom. nil: New makes one of 1024 buffers.
	Pool *frame.Pool
	// Timers, as Linux's neighbour parameters: BaseReachable (base_reachable_time, default 30 s; an
	// entry stays REACHABLE for a random time in [0.5, 1.5) x BaseReachable after each
	// confirmation), Retrans (retrans_time, 1 s between requests), DelayFirstProbe
	// (delay_first_probe_time, 5 s in DELAY), GCStale (gc_stale_time, 60 s: how long a STALE or
	// FAILED entry without next hops is kept, and how long a FAILED one with next hops waits before
	// it tries again).
	BaseReachable, Retrans, DelayFirstProbe, GCStale time.Duration
	// McastProbes is the number of broadcast requests in INCOMPLETE (mcast_solicit, 3), UcastProbes
	// the number of unicast requests in PROBE (ucast_solicit, 3), before the entry fails.
	McastProbes, UcastProbes int
	// MaxEntries bounds the table (gc_thresh3, default 1024). A full table refuses to learn new
	// senders (Counters.Refused); AddNextHop and AddStatic make room by removing the oldest entry no
	// next hop uses, and fail with ErrTableFull when there is none.
	MaxEntries int
	// QueueFrames and QueueBytes bound each neighbour's hold queue (default 3 frames, Linux's
	// unres_qlen of old, and 212992 bytes, unres_qlen_bytes, counting frame lengths). A frame that
	// does not fit pushes out the oldest ones (as Linux does).
	QueueFrames, QueueBytes int
	// Now is the clock (tests use a fake one); nil: time.Now. Only differences between its readings
	// matter.
	Now func() time.Time
	// Rand draws the reachable time's randomisation; nil: math/rand/v2.Uint64.
	Rand func() uint64
	// Hosts and HostNextHops let the table resolve hosts of connected subnets (AddSubnet): each
	// host it resolves gets a next-hop index of HostNextHops, which the table owns, and a /32 route
	// to it added through Hosts. Both unset: AddSubnet fails.
	Hosts        HostRoutes
	HostNextHops IndexRange
}

// IndexRange is a range of next-hop indices: First to First+Count-1.
type IndexRange struct {
	First uint32
	Count int
}

// Sentinel errors. Compare with errors.Is.
var (
	ErrConfig    = errors.New("neigh: bad configuration")
	ErrIface     = errors.New("neigh: no such interface")
	ErrAddr      = errors.New("neigh: not a unicast IPv4 address")
	ErrMAC       = errors.New("neigh: not a unicast MAC address")
	ErrNextHop   = errors.New("neigh: next-hop index out of range")
	ErrTableFull = errors.New("neigh: table full")
	ErrNotFound  = errors.New("neigh: no such entry")
)

// never is the deadline of an entry without a timer.
const never = math.MaxInt64

type key struct {
	iface uint16
	addr  uint32
}

// entry is one neighbour. Its hold queue is the ring t.queue[i*QueueFrames:][:QueueFrames] (i its
// index), qn frames from slot q0.
type entry struct {
	key      key
	mac      frame.MAC
	pubMAC   frame.MAC // the MAC the next hops were last given
	state    State
	probes   uint8
	live     bool
	dirty    bool // in t.dirty: its next hops may need publishing
	pubValid bool // whether the next hops were last published resolved
	nh       []uint32
	host     bool   // resolved through a subnet next hop (AddSubnet): it has a host next hop and route
	hostNH   uint32 // that next hop, one of nh
	via      uint32 // the subnet next hop
	deadline int64  // the next timer event, in clock nanoseconds; never: none
	updated  int64  // when the state or MAC last changed
	q0, qn   int
	qBytes   int
}

type iface struct {
	mac   frame.MAC
	addrs []prefix
}

type prefix struct {
	addr, mask uint32
	bits       int
}

// Table is an ARP neighbour table and resolver for the data plane: it answers and learns from the
// ARP frames of fwd's local batches, holds the frames of unresolved next hops, resolves them, and
// publishes each neighbour's MAC into the fib.NextHops entries that follow it.
//
// Concurrency: every method takes the table's mutex, so a Table may be shared by any number of
// goroutines. Its methods are meant to be called once per batch, with the ARP frames a worker's
// Output.Local holds, its Output.Unresolved batch, or from an idle loop (Poll, every few
// milliseconds); the forwarding path itself never calls them and reads only fib.NextHops views.
// The batches passed in belong to the caller again when a method returns.
type Table struct {
	_  [0]sync.Mutex
	mu sync.Mutex

	c      Config
	pool   *frame.Pool
	nhs    *fib.NextHops
	ifaces []iface
	own    map[uint32]struct{} // the router's addresses, on any interface
	anySrc uint32              // the first address of any interface
	epoch  time.Time
	now    int64 // the current call's clock reading

	byKey    map[key]int32
	ents     []entry
	free     []int32
	queue    []frame.Frame
	bound    map[uint32]int32  // next-hop index -> entry
	subnets  map[uint32]uint16 // subnet next-hop index -> interface
	hostFree idxRing           // free host next-hop indices
	next     int64             // no entry has a deadline before it
	ready    fifo
	failed   fifo
	jobs     []job
	dirty    []int32
	changes  []fib.NextHopChange
	arpTmp   []frame.Frame // Input: ARP frames to release
	rel      []frame.Frame // pool frames to release at the end of the call
	bufs     *frame.Batch  // Hold: fresh buffers
	cnt      Counters
}

// New returns a table for cfg's interfaces. A nil cfg means defaults (and no interfaces).
func New(cfg *Config) (*Table, error) {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	durs := []*time.Duration{&c.BaseReachable, &c.Retrans, &c.DelayFirstProbe, &c.GCStale}
	for i, def := range []time.Duration{30 * time.Second, time.Second, 5 * time.Second, 60 * time.Second} {
		switch d := durs[i]; {
		case *d == 0:
			*d = def
		case *d < 0:
			return nil, fmt.Errorf("%w: negative timer %v", ErrConfig, *d)
		}
	}
	ints := []*int{&c.McastProbes, &c.UcastProbes, &c.MaxEntries, &c.QueueFrames, &c.QueueBytes}
	limits := []int{255, 255, 1 << 20, 1024, 1 << 30}
	for i, def := range []int{3, 3, 1024, 3, 212992} {
		switch n := ints[i]; {
		case *n == 0:
			*n = def
		case *n < 0 || *n > limits[i]:
			return nil, fmt.Errorf("%w: %d outside 1-%d", ErrConfig, *n, limits[i])
		}
	}
	if c.NextHops == nil {
		c.NextHops = new(fib.NextHops)
	}
	if c.Pool == nil {
		p, err := frame.NewPool(&frame.PoolConfig{Buffers: 1024})
		if err != nil {
			return nil, err
		}
		c.Pool = p
	}
	if c.Pool.BufSize()-c.Pool.Headroom() < frameLen {
		return nil, fmt.Errorf("%w: pool buffers leave %d bytes after the headroom, ARP frames need %d",
			ErrConfig, c.Pool.BufSize()-c.Pool.Headroom(), frameLen)
	}
	if h := c.HostNextHops; h.Count < 0 || uint64(h.First)+uint64(h.Count) > uint64(fib.MaxNextHop)+1 {
		return nil, fmt.Errorf("%w: host next hops %d-%d beyond %d", ErrConfig, h.First, int64(h.First)+int64(h.Count)-1, fib.MaxNextHop)
	}
	if len(c.Ifaces) > 0x10000 {
		return nil, fmt.Errorf("%w: %d interfaces", ErrConfig, len(c.Ifaces))
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Rand == nil {
		c.Rand = rand.Uint64
	}
	t := &Table{c: c, pool: c.Pool, nhs: c.NextHops, own: map[uint32]struct{}{}, epoch: c.Now(), next: never}
	for i, ifc := range c.Ifaces {
		if isBadMAC(ifc.MAC) {
			return nil, fmt.Errorf("%w: interface %d: MAC %v: %w", ErrConfig, i, ifc.MAC, ErrMAC)
		}
		x := iface{mac: ifc.MAC}
		for _, p := range ifc.Addrs {
			if !p.IsValid() || !p.Addr().Is4() {
				return nil, fmt.Errorf("%w: interface %d: %v is not an IPv4 address with a prefix length", ErrConfig, i, p)
			}
			a := be32(p.Addr())
			if isBadSender(a) {
				return nil, fmt.Errorf("%w: interface %d: %v: %w", ErrConfig, i, p, ErrAddr)
			}
			var mask uint32
			if p.Bits() > 0 {
				mask = ^uint32(0) << (32 - p.Bits())
			}
			x.addrs = append(x.addrs, prefix{addr: a, mask: mask, bits: p.Bits()})
			t.own[a] = struct{}{}
			if t.anySrc == 0 {
				t.anySrc = a
			}
		}
		t.ifaces = append(t.ifaces, x)
	}
	n := c.MaxEntries
	t.byKey = make(map[key]int32, n)
	t.bound = make(map[uint32]int32)
	t.subnets = make(map[uint32]uint16)
	t.hostFree.buf = make([]uint32, c.HostNextHops.Count)
	for k := range c.HostNextHops.Count {
		t.hostFree.push(c.HostNextHops.First + uint32(k))
	}
	t.ents = make([]entry, n)
	t.free = make([]int32, n)
	for i := range t.free {
		t.free[i] = int32(n - 1 - i)
	}
	t.queue = make([]frame.Frame, n*c.QueueFrames)
	t.ready.buf = make([]frame.Frame, n*c.QueueFrames)
	t.failed.buf = make([]frame.Frame, n*c.QueueFrames)
	t.dirty = make([]int32, 0, n)
	t.jobs = make([]job, 0, frame.DefaultBatch)
	t.arpTmp = make([]frame.Frame, 0, frame.DefaultBatch)
	t.rel = make([]frame.Frame, 0, frame.DefaultBatch)
	t.bufs = frame.NewBatch(frame.DefaultBatch)
	return t, nil
}

// NextHops returns the next-hop table the Table writes.
func (t *Table) NextHops() *fib.NextHops { return t.nhs }

// Pool returns the pool of generated and held frames.
func (t *Table) Pool() *frame.Pool { return t.pool }

func be32(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

func addr4(a uint32) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(a >> 24), byte(a >> 16), byte(a >> 8), byte(a)})
}

func (t *Table) clock() int64 { return int64(t.c.Now().Sub(t.epoch)) }

func (t *Table) isOwn(a uint32) bool {
	_, ok := t.own[a]
	return ok
}

// onLink reports whether a is a host address of one of interface ifc's subnets.
func (t *Table) onLink(ifc int, a uint32) bool {
	for _, p := range t.ifaces[ifc].addrs {
		if p.bits == 32 || a&p.mask != p.addr&p.mask {
			continue
		}
		if p.bits <= 30 && (a&^p.mask == 0 || a|p.mask == ^uint32(0)) {
			continue // the subnet's network or broadcast address
		}
		return true
	}
	return false
}

// srcFor returns the sender address of a request for target on interface ifc: the interface's
// address on target's subnet, else its first address, else the router's first address, else 0.
func (t *Table) srcFor(ifc uint16, target uint32) uint32 {
	as := t.ifaces[ifc].addrs
	for _, p := range as {
		if target&p.mask == p.addr&p.mask {
			return p.addr
		}
	}
	if len(as) > 0 {
		return as[0].addr
	}
	return t.anySrc
}

// checkAddr validates an (interface, address) pair of the control API.
func (t *Table) checkAddr(ifc uint16, addr netip.Addr) (key, error) {
	if int(ifc) >= len(t.ifaces) {
		return key{}, fmt.Errorf("%w: %d", ErrIface, ifc)
	}
	if !addr.Is4() {
		return key{}, fmt.Errorf("%w: %v", ErrAddr, addr)
	}
	a := be32(addr)
	if a == 0 || isBadSender(a) || t.isOwn(a) {
		return key{}, fmt.Errorf("%w: %v", ErrAddr, addr)
	}
	return key{ifc, a}, nil
}

// create makes an entry for k in state NONE. A full table makes room by evicting an entry no next
// hop uses (with hosts set, also a subnet's host that no other next hop uses), and otherwise
// reports false.
func (t *Table) create(k key, evict, hosts bool) (int32, bool) {
	if len(t.free) == 0 && (!evict || !t.evictOne(hosts)) {
		return 0, false
	}
	i := t.free[len(t.free)-1]
	t.free = t.free[:len(t.free)-1]
	e := &t.ents[i]
	nh := e.nh[:0]
	*e = entry{key: k, live: true, nh: nh, deadline: never, updated: t.now}
	t.byKey[k] = i
	t.cnt.Created++
	return i, true
}

// evictOne removes the entry without next hops (with hosts set, or only its host next hop), other
// than a permanent one, that changed longest ago. It reports false when there is none.
func (t *Table) evictOne(hosts bool) bool {
	best := int32(-1)
	for i := range t.ents {
		e := &t.ents[i]
		free := len(e.nh) == 0 || (hosts && e.host && len(e.nh) == 1)
		if e.live && free && e.state != StatePermanent && (best < 0 || e.updated < t.ents[best].updated) {
			best = int32(i)
		}
	}
	if best < 0 {
		return false
	}
	t.cnt.Evicted++
	t.remove(best)
	return true
}

// remove deletes entry i, which no next hop other than its host next hop uses; its held frames go
// to the failed backlog.
func (t *Table) remove(i int32) {
	t.flushQueue(i, &t.failed)
	t.dropHost(i)
	e := &t.ents[i]
	delete(t.byKey, e.key)
	e.live, e.state, e.deadline = false, StateNone, never
	t.free = append(t.free, i)
}

func (t *Table) setTimer(e *entry, d int64) {
	e.deadline = d
	if d < t.next {
		t.next = d
	}
}

func (t *Table) markDirty(i int32) {
	if e := &t.ents[i]; !e.dirty {
		e.dirty = true
		t.dirty = append(t.dirty, i)
	}
}

// reachable draws a reachable time: uniform in [0.5, 1.5) x BaseReachable, as Linux.
func (t *Table) reachable() int64 {
	b := int64(t.c.BaseReachable)
	return b/2 + int64(t.c.Rand()%uint64(b))
}

func (t *Table) enterReachable(i int32) {
	e := &t.ents[i]
	e.state = StateReachable
	t.setTimer(e, t.now+t.reachable())
}

// enterStale moves entry i to STALE, or, when next hops use it, straight on to DELAY: a next hop
// stands for traffic, and Linux moves a STALE entry to DELAY on its first use.
func (t *Table) enterStale(i int32) {
	e := &t.ents[i]
	if len(e.nh) > 0 {
		t.enterDelay(i)
		return
	}
	e.state = StateStale
	t.setTimer(e, t.now+int64(t.c.GCStale))
}

func (t *Table) enterDelay(i int32) {
	e := &t.ents[i]
	e.state = StateDelay
	t.setTimer(e, t.now+int64(t.c.DelayFirstProbe))
}

// enterIncomplete starts resolution: the first broadcast request is due at once.
func (t *Table) enterIncomplete(i int32) {
	e := &t.ents[i]
	e.state, e.probes = StateIncomplete, 0
	e.updated = t.now
	t.setTimer(e, t.now)
	t.markDirty(i)
}

// enterFailed gives up: the held frames go to the failed backlog, the next hops are unresolved.
func (t *Table) enterFailed(i int32) {
	e := &t.ents[i]
	e.state, e.updated = StateFailed, t.now
	t.cnt.Failures++
	t.flushQueue(i, &t.failed)
	t.dropHost(i)
	t.setTimer(e, t.now+int64(t.c.GCStale))
	t.markDirty(i)
}

// update applies news about entry i's neighbour, as Linux's neigh_update with override: a reply
// addressed to us (reach) confirms it REACHABLE with mac; any other news makes it STALE with mac,
// except that an entry already valid with that same MAC keeps its state. Permanent entries do not
// change.
func (t *Table) update(i int32, mac frame.MAC, reach bool) {
	e := &t.ents[i]
	old := e.state
	if old == StatePermanent {
		return
	}
	changed := mac != e.mac
	if !reach && old.Valid() && !changed {
		return
	}
	if changed && old.Valid() {
		t.cnt.MACChanges++
	}
	e.mac, e.updated = mac, t.now
	if reach {
		t.enterReachable(i)
	} else {
		t.enterStale(i)
	}
	t.resolved(i, old)
	t.markDirty(i)
}

// resolved releases entry i's held frames to the ready backlog when it has just become valid,
// coming from state old.
func (t *Table) resolved(i int32, old State) {
	if old == StateIncomplete || old == StateFailed {
		t.cnt.Resolved++
	}
	if !old.Valid() {
		t.flushQueue(i, &t.ready)
	}
}

// run takes entry i through every timer event due by now.
func (t *Table) run(i int32) {
	e := &t.ents[i]
	for e.live && e.deadline <= t.now {
		switch e.state {
		case StateIncomplete:
			if int(e.probes) >= t.c.McastProbes {
				t.enterFailed(i)
				continue
			}
			t.solicit(i, broadcast, jobRequest)
		case StateProbe:
			if int(e.probes) >= t.c.UcastProbes {
				t.enterFailed(i)
				continue
			}
			t.solicit(i, e.mac, jobProbe)
		case StateReachable:
			e.updated = t.now
			t.enterStale(i)
		case StateDelay:
			e.state, e.probes = StateProbe, 0
			e.updated = t.now
			e.deadline = t.now // the first unicast probe at once
		case StateStale, StateFailed:
			if len(e.nh) == 0 {
				t.cnt.Collected++
				t.remove(i)
				return
			}
			t.enterIncomplete(i) // FAILED with next hops: try again
		default:
			e.deadline = never
		}
	}
}

// solicit queues a request for entry i's address to dst and arms the retransmission timer.
func (t *Table) solicit(i int32, dst frame.MAC, kind uint8) {
	e := &t.ents[i]
	e.probes++
	t.jobs = append(t.jobs, job{kind: kind, dst: dst, iface: e.key.iface,
		p: arpPacket{op: arpOpRequest, spa: t.srcFor(e.key.iface, e.key.addr), tpa: e.key.addr}})
	t.setTimer(e, t.now+int64(t.c.Retrans))
}

// enqueue adds the pool frame c to entry i's hold queue, pushing out the oldest frames that keep it
// from fitting.
func (t *Table) enqueue(i int32, c frame.Frame) {
	e := &t.ents[i]
	qf := t.c.QueueFrames
	q := t.queue[int(i)*qf : int(i+1)*qf]
	for e.qn > 0 && (e.qn == qf || e.qBytes+int(c.Len) > t.c.QueueBytes) {
		old := q[e.q0]
		e.q0 = (e.q0 + 1) % qf
		e.qn--
		e.qBytes -= int(old.Len)
		t.rel = append(t.rel, old)
		t.cnt.QueueOverflow++
	}
	q[(e.q0+e.qn)%qf] = c
	e.qn++
	e.qBytes += int(c.Len)
}

// flushQueue moves entry i's held frames, oldest first, to the backlog q.
func (t *Table) flushQueue(i int32, q *fifo) {
	e := &t.ents[i]
	qf := t.c.QueueFrames
	base := int(i) * qf
	for ; e.qn > 0; e.qn-- {
		t.toBacklog(q, t.queue[base+e.q0])
		e.q0 = (e.q0 + 1) % qf
	}
	e.q0, e.qBytes = 0, 0
}

func (t *Table) toBacklog(q *fifo, f frame.Frame) {
	if !q.push(f) {
		t.cnt.BacklogOverflow++
		t.rel = append(t.rel, f)
	}
}

// finish ends a call: the queued jobs become frames in out, the frames dropped during the call go
// back to the pool, and the next hops of the entries that changed are published, once.
func (t *Table) finish(out *frame.Batch) {
	if len(t.jobs) > 0 {
		t.build(out)
	}
	if len(t.rel) > 0 {
		t.pool.Release(t.rel)
		t.rel = t.rel[:0]
	}
	t.publish()
}

// mustOwn makes an empty b a batch of t's pool and panics if a non-empty b is a batch of another
// arena (its frames could not be mixed with the pool's).
func (t *Table) mustOwn(b *frame.Batch, what string) {
	if len(b.Frames) == 0 {
		b.Mem, b.Owner = t.pool.Mem(), t.pool
	} else if b.Owner != frame.Owner(t.pool) {
		panic("neigh: " + what + " is not a batch of the table's pool")
	}
}

// Kinds of job, for the counters.
const (
	jobReply = iota
	jobProbeReply
	jobRequest
	jobProbe
	jobAnnounce
)

// build turns the queued jobs into frames appended to out, allocated from the pool at once.
func (t *Table) build(out *frame.Batch) {
	got, base := 0, 0
	if out != nil {
		t.mustOwn(out, "out")
		got, _ = t.pool.Alloc(out, len(t.jobs))
		base = len(out.Frames) - got
	}
	mem := t.pool.Mem()
	for k := range t.jobs {
		j := &t.jobs[k]
		if k >= got {
			t.cnt.GenNoBuffer++
			continue
		}
		buildFrame(mem, &out.Frames[base+k], j, t.ifaces[j.iface].mac)
		switch j.kind {
		case jobReply:
			t.cnt.RepliesSent++
		case jobProbeReply:
			t.cnt.RepliesSent++
			t.cnt.ProbeReplies++
		case jobRequest:
			t.cnt.RequestsSent++
		case jobProbe:
			t.cnt.ProbesSent++
		case jobAnnounce:
			t.cnt.AnnouncesSent++
		}
	}
	t.jobs = t.jobs[:0]
}

// publish writes the next hops of every entry whose validity or MAC changed since they were last
// written, in one fib.NextHops update.
func (t *Table) publish() {
	ch := t.changes[:0]
	for _, i := range t.dirty {
		e := &t.ents[i]
		e.dirty = false
		valid := e.live && e.state.Valid()
		if valid == e.pubValid && (!valid || e.mac == e.pubMAC) {
			continue
		}
		e.pubValid, e.pubMAC = valid, e.mac
		for _, idx := range e.nh {
			ch = append(ch, fib.NextHopChange{Index: idx, Entry: t.hop(e)})
		}
	}
	t.dirty = t.dirty[:0]
	if len(ch) > 0 {
		t.nhs.Apply(ch) // indices were checked by AddNextHop
		t.cnt.NextHopPub++
	}
	t.changes = ch[:0]
}

// hop is the next-hop entry of a next hop that follows e.
func (t *Table) hop(e *entry) fib.NextHop {
	h := fib.NextHop{Ifindex: e.key.iface, DstMAC: e.mac}
	if !e.state.Valid() {
		h.Flags = fib.NextHopUnresolved
	}
	return h
}

// AddNextHop makes next hop idx follow the neighbour addr on interface iface: the table writes
// entry idx of the next-hop table now (flagged fib.NextHopUnresolved unless the neighbour is already
// known) and whenever the neighbour's validity or MAC changes. A new neighbour's resolution starts
// at once: its first request goes out at the next Poll (or Hold). Adding idx again moves it to the
// new neighbour. The table owns entry idx of the next-hop table until RemoveNextHop.
func (t *Table) AddNextHop(idx uint32, ifc uint16, addr netip.Addr) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.now = t.clock()
	if err := t.checkIndex(idx); err != nil {
		return err
	}
	k, err := t.checkAddr(ifc, addr)
	if err != nil {
		return err
	}
	if old, ok := t.bound[idx]; ok {
		if t.ents[old].key == k {
			return nil
		}
		t.unbind(idx, old)
	}
	if _, ok := t.subnets[idx]; ok {
		t.dropSubnet(idx)
	}
	i, ok := t.byKey[k]
	if !ok {
		if i, ok = t.create(k, true, true); !ok {
			t.finish(nil)
			return fmt.Errorf("%w: %d entries, every one used by a next hop or static", ErrTableFull, len(t.ents))
		}
		t.enterIncomplete(i)
	}
	switch e := &t.ents[i]; e.state {
	case StateStale:
		t.enterDelay(i)
	case StateFailed:
		t.enterIncomplete(i)
	}
	t.bind(i, idx)
	t.finish(nil)
	return nil
}

// bind makes next hop idx follow entry i and writes it.
func (t *Table) bind(i int32, idx uint32) {
	e := &t.ents[i]
	pos, _ := slices.BinarySearch(e.nh, idx)
	e.nh = slices.Insert(e.nh, pos, idx)
	t.bound[idx] = i
	t.nhs.Set(idx, t.hop(e))
	t.cnt.NextHopPub++
}

// RemoveNextHop stops the table writing next hop idx; the entry of the next-hop table is left as
// it is (its owner deletes or reuses it). A neighbour no next hop uses any more is collected once it
// is STALE or FAILED for GCStale. Host next hops (AddSubnet) are the table's own: RemoveNextHop
// leaves them alone.
func (t *Table) RemoveNextHop(idx uint32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.now = t.clock()
	if i, ok := t.bound[idx]; ok && t.checkIndex(idx) == nil {
		t.unbind(idx, i)
	}
	t.finish(nil)
}

func (t *Table) unbind(idx uint32, i int32) {
	e := &t.ents[i]
	if pos, ok := slices.BinarySearch(e.nh, idx); ok {
		e.nh = slices.Delete(e.nh, pos, pos+1)
	}
	delete(t.bound, idx)
}

// AddStatic makes addr on iface a permanent neighbour with mac (ip neigh replace ... nud permanent):
// it never expires and ARP does not change it. Frames held for it are released to Poll's ready
// batch.
func (t *Table) AddStatic(ifc uint16, addr netip.Addr, mac frame.MAC) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.now = t.clock()
	k, err := t.checkAddr(ifc, addr)
	if err != nil {
		return err
	}
	if isBadMAC(mac) {
		return fmt.Errorf("%w: %v", ErrMAC, mac)
	}
	i, ok := t.byKey[k]
	if !ok {
		if i, ok = t.create(k, true, true); !ok {
			t.finish(nil)
			return fmt.Errorf("%w: %d entries, every one used by a next hop or static", ErrTableFull, len(t.ents))
		}
	}
	e := &t.ents[i]
	old := e.state
	if old.Valid() && mac != e.mac {
		t.cnt.MACChanges++
	}
	e.mac, e.state, e.deadline, e.updated = mac, StatePermanent, never, t.now
	t.resolved(i, old)
	t.markDirty(i)
	t.finish(nil)
	return nil
}

// Delete removes the neighbour addr on iface (ip neigh del), permanent or not. A neighbour that next
// hops use is not removed but forgotten: it starts resolving again (INCOMPLETE) and its next hops
// are unresolved until it answers.
func (t *Table) Delete(ifc uint16, addr netip.Addr) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.now = t.clock()
	k, err := t.checkAddr(ifc, addr)
	if err != nil {
		return err
	}
	i, ok := t.byKey[k]
	if !ok {
		return fmt.Errorf("%w: %v on interface %d", ErrNotFound, addr, ifc)
	}
	t.dropHost(i)
	if len(t.ents[i].nh) == 0 {
		t.remove(i)
	} else {
		t.ents[i].mac = frame.MAC{}
		t.enterIncomplete(i)
	}
	t.finish(nil)
	return nil
}

// Entries returns every neighbour, ordered by interface and address.
func (t *Table) Entries() []Entry {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []Entry
	for i := range t.ents {
		e := &t.ents[i]
		if !e.live {
			continue
		}
		out = append(out, Entry{Iface: e.key.iface, Addr: addr4(e.key.addr), MAC: e.mac, State: e.state,
			NextHops: slices.Clone(e.nh), Held: e.qn})
	}
	slices.SortFunc(out, func(a, b Entry) int {
		if a.Iface != b.Iface {
			return int(a.Iface) - int(b.Iface)
		}
		return a.Addr.Compare(b.Addr)
	})
	return out
}

// Counters returns a copy of the counters.
func (t *Table) Counters() Counters {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cnt
}

// NextTimer returns when the earliest timer of the table is due, and false when none is armed: an
// idle loop may sleep until then (or until frames arrive) before its next Poll. Frames waiting in
// the ready and failed backlogs are due at once.
func (t *Table) NextTimer() (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ready.n+t.failed.n > 0 {
		return t.c.Now(), true
	}
	if t.next == never {
		return time.Time{}, false
	}
	return t.epoch.Add(time.Duration(t.next)), true
}

// fifo is a bounded queue of frames.
type fifo struct {
	buf     []frame.Frame
	head, n int
}

func (q *fifo) push(f frame.Frame) bool {
	if q.n == len(q.buf) {
		return false
	}
	q.buf[(q.head+q.n)%len(q.buf)] = f
	q.n++
	return true
}

func (q *fifo) pop() frame.Frame {
	f := q.buf[q.head]
	q.head = (q.head + 1) % len(q.buf)
	q.n--
	return f
}
