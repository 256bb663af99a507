package lag

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/xmit"
)

// Sentinel errors.
var (
	ErrNoMembers = errors.New("lag: no members")
	ErrMember    = errors.New("lag: member index out of range")
	ErrConfig    = errors.New("lag: invalid configuration")
)

// Config configures an aggregate. The zero value is a round-robin aggregate, one frame per member
// in turn, without carrier polling.
type Config struct {
	Name string // the aggregate's port name (default "lag0")

	Mode   Mode
	Policy Policy // XOR: the hash policy (default layer2, as bonding's)

	// PacketsPerMember is bonding's packets_per_slave for RoundRobin: frames sent on a member
	// before moving to the next. 0 means 1 (the default); a negative value picks a random member
	// per frame (bonding's packets_per_slave=0).
	PacketsPerMember int

	// Table makes XOR choose through a 256-bucket hash-to-member table (team's loadbalance
	// hash_to_port_mapping) instead of bonding's usable[hash % count]: when a member fails only its
	// buckets move (spread over the usable members) and every other flow stays where it was; when
	// it comes back its buckets return. SetTable installs a rebalanced table. Without Table a
	// change of the usable count re-modulos every hash, as bonding does, and most flows move.
	Table bool

	// Primary names the member (by port name) ActiveBackup prefers whenever it is usable; empty:
	// the first usable member is chosen and kept until it fails (bonding without primary).
	Primary string

	// Miimon is the carrier polling interval (bonding's miimon); 0: no poller, member state comes
	// only from SetMemberUp. The poller asks ports that implement xmit.LinkStater, and reads
	// /sys/class/net/<name>/carrier (Linux) for the others.
	Miimon time.Duration
	// UpDelay and DownDelay are how long the carrier must be seen up (down) before the member is
	// used (dropped): bonding's updelay and downdelay, debouncing a flapping link.
	UpDelay, DownDelay time.Duration
	// Ifnames overrides, per member, the interface name whose carrier the poller reads (default
	// the port's Name).
	Ifnames []string

	// ClonePool is where Broadcast takes the copies of a frame for every usable member but the
	// last, which gets the original (bond_xmit_broadcast clones the skb). Required for Broadcast.
	// A copy the pool cannot provide is counted in Stats.TxDropped and in CloneFailed.
	ClonePool *frame.Pool

	// BatchSize is the capacity of the per-member batches Send fills (default 256; a larger
	// batch grows them once).
	BatchSize int

	// SlowProtocols, when not nil, runs the aggregate under a slow-protocols control plane (LACP:
	// a lacp.Controller, which also sets the members usable or not): Recv takes the frames of
	// EtherType 0x8809 out of every batch and hands them to it, never to the caller, and drops
	// the frames received on members that are not usable (bonding's inactive slaves in 802.3ad
	// mode). A batch without such frames costs a two-byte read per frame and one test per batch.
	SlowProtocols SlowHandler
	// SlowFiltered says the members never deliver slow-protocols frames (a kernel filter keeps
	// them out of the members' sockets, lacp.NoSlowFilter, and the handler gets them another way,
	// lacp.Sender.Receive): Recv then skips the per-frame scan and only drops the frames of
	// members that are not usable, one test per batch. Any slow-protocols frame that still comes
	// is passed on as data.
	SlowFiltered bool
}

// Aggregate is a link aggregate: several member ports used as one. It is itself an xmit.Port:
// Send splits a batch per member (one Send per member per batch), Recv reads the members in
// turn, Stats sums the members' counters and the aggregate's own drops.
//
// Concurrency: as for any Port, one goroutine at a time in Send (the aggregate's own Selector is
// used there) and one in Recv; Stats, Name, LinkUp, SetMemberUp, MemberUp, SetTable, Table and
// Close from any goroutine. Workers that transmit on their own per-member queues take a Selector
// each (NewSelector) and call Select: member changes reach them through one atomic pointer read per
// batch. Control-path changes (member state, table) take a mutex and publish a new immutable
// snapshot; they never block a worker. The aggregate owns its members: Close closes them.
type Aggregate struct {
	_ [0]sync.Mutex

	cfg     Config
	name    string
	ports   []xmit.Port
	pps     int
	primary int // member index or -1
	seed    atomic.Uint64

	state atomic.Pointer[snapshot]

	mu      sync.Mutex // control path: member state, table, publication
	carrier []bool     // debounced carrier (poller; true when not polled)
	link    []bool     // SetMemberUp
	active  uint8      // active-backup choice, kept while usable
	table   [Buckets]uint8
	version uint64

	// Send side (one goroutine).
	sel    *Selector
	choice []uint8
	perMem []*frame.Batch
	drop   *frame.Batch
	// Recv side (one goroutine).
	rxNext int
	slow   SlowHandler
	noScan bool // Config.SlowFiltered
	rxDrop []frame.Frame

	rxSlow, rxSlowBytes       atomic.Uint64 // frames handed to slow
	rxDropped, rxDroppedBytes atomic.Uint64 // inactive members' frames, tagged slow frames

	txDropped   atomic.Uint64
	cloneFailed atomic.Uint64
	closed      atomic.Bool

	stop chan struct{}
	done chan struct{}
}

// New makes an aggregate of members (at most MaxMembers), all usable at first unless a carrier
// poller is configured, which reads the carrier once before New returns. A nil config means
// defaults.
func New(members []xmit.Port, cfg *Config) (*Aggregate, error) {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	n := len(members)
	switch {
	case n == 0:
		return nil, ErrNoMembers
	case n > MaxMembers:
		return nil, fmt.Errorf("%w: %d members, at most %d", ErrConfig, n, MaxMembers)
	case int(c.Mode) >= len(modeNames):
		return nil, fmt.Errorf("%w: mode %d", ErrConfig, c.Mode)
	case !c.Policy.valid():
		return nil, fmt.Errorf("%w: hash policy %d", ErrConfig, c.Policy)
	case c.Mode == Broadcast && c.ClonePool == nil:
		return nil, fmt.Errorf("%w: broadcast needs a ClonePool", ErrConfig)
	case c.Ifnames != nil && len(c.Ifnames) != n:
		return nil, fmt.Errorf("%w: %d Ifnames for %d members", ErrConfig, len(c.Ifnames), n)
	case c.Miimon < 0 || c.UpDelay < 0 || c.DownDelay < 0:
		return nil, fmt.Errorf("%w: negative interval", ErrConfig)
	}
	if c.Name == "" {
		c.Name = "lag0"
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 256
	}
	a := &Aggregate{
		cfg:     c,
		name:    c.Name,
		ports:   append([]xmit.Port(nil), members...),
		pps:     c.PacketsPerMember,
		primary: -1,
		carrier: make([]bool, n),
		link:    make([]bool, n),
		active:  NoMember,
		choice:  make([]uint8, c.BatchSize),
		perMem:  make([]*frame.Batch, n),
		drop:    frame.NewBatch(c.BatchSize),
		slow:    c.SlowProtocols,
		noScan:  c.SlowFiltered,
	}
	if a.slow != nil {
		a.rxDrop = make([]frame.Frame, 0, c.BatchSize)
	}
	if a.pps == 0 {
		a.pps = 1
	}
	a.seed.Store(uint64(time.Now().UnixNano()) | 1)
	for i, p := range members {
		if p == nil {
			return nil, fmt.Errorf("%w: member %d is nil", ErrConfig, i)
		}
		if c.Primary != "" && p.Name() == c.Primary {
			a.primary = i
		}
		a.carrier[i], a.link[i] = true, true
		a.perMem[i] = frame.NewBatch(c.BatchSize)
	}
	if c.Primary != "" && a.primary < 0 {
		return nil, fmt.Errorf("%w: primary %q is not a member", ErrConfig, c.Primary)
	}
	for b := range a.table {
		a.table[b] = uint8(b % n)
	}
	a.sel = a.NewSelector()
	if c.Miimon > 0 {
		a.startPoller()
	} else {
		a.mu.Lock()
		a.publish()
		a.mu.Unlock()
	}
	return a, nil
}

// publish builds and publishes a new snapshot from the control state. a.mu is held.
func (a *Aggregate) publish() {
	n := len(a.ports)
	st := &snapshot{n: n}
	st.mpAll, st.dsAll = pickConsts(uint32(n))
	for i := 0; i < n; i++ {
		if a.carrier[i] && a.link[i] {
			st.usable = append(st.usable, uint8(i))
			st.upMask |= 1 << i
		}
	}
	st.cnt = uint32(len(st.usable))
	st.setPick()
	// Round-robin skip-forward map: the first usable member at or after i, cyclically.
	for i := 0; i < MaxMembers; i++ {
		st.next[i] = NoMember
	}
	for i := 0; i < n && st.cnt > 0; i++ {
		for k := 0; k < n; k++ {
			j := (i + k) % n
			if st.upMask&(1<<j) != 0 {
				st.next[i] = uint8(j)
				break
			}
		}
	}
	// Active-backup: the primary when usable, else the current active while usable, else the
	// first usable member (bond_find_best_slave with primary_reselect=always).
	switch {
	case a.primary >= 0 && st.upMask&(1<<a.primary) != 0:
		a.active = uint8(a.primary)
	case a.active != NoMember && st.upMask&(1<<a.active) != 0:
	case st.cnt > 0:
		a.active = st.usable[0]
	default:
		a.active = NoMember
	}
	st.active = a.active
	if a.cfg.Table && st.cnt > 0 {
		// Buckets of usable members stay; those of the others are dealt over the usable members
		// in turn, so a failure moves only the failed member's flows and spreads them evenly.
		t := new([Buckets]uint8)
		k := 0
		for b, m := range a.table {
			if int(m) < n && st.upMask&(1<<m) != 0 {
				t[b] = m
				continue
			}
			t[b] = st.usable[k%len(st.usable)]
			k++
		}
		st.table = t
	}
	a.version++
	st.version = a.version
	a.state.Store(st)
}

// SetMemberUp is the hook for link state known elsewhere (LACP, a switch driver, an operator): a
// member is usable when SetMemberUp last said up (the default) and, with a carrier poller, its
// debounced carrier is up. The change is published before SetMemberUp returns; workers see it at
// their next batch.
func (a *Aggregate) SetMemberUp(i int, up bool) error {
	if i < 0 || i >= len(a.ports) {
		return ErrMember
	}
	a.mu.Lock()
	if a.link[i] != up {
		a.link[i] = up
		a.publish()
	}
	a.mu.Unlock()
	return nil
}

// MemberUp reports whether member i is usable in the published state.
func (a *Aggregate) MemberUp(i int) bool {
	if i < 0 || i >= len(a.ports) {
		return false
	}
	return a.state.Load().upMask&(1<<i) != 0
}

// Usable returns the usable members' indices, in member order.
func (a *Aggregate) Usable() []int {
	st := a.state.Load()
	u := make([]int, len(st.usable))
	for i, m := range st.usable {
		u[i] = int(m)
	}
	return u
}

// Active is the member ActiveBackup sends on, or -1.
func (a *Aggregate) Active() int {
	if m := a.state.Load().active; m != NoMember {
		return int(m)
	}
	return -1
}

// Members are the member ports, in order.
func (a *Aggregate) Members() []xmit.Port { return append([]xmit.Port(nil), a.ports...) }

// SetTable installs a configured bucket → member table (the control loop's rebalancing, as teamd
// does for team's loadbalance runner). Buckets naming a member that is not usable are dealt over
// the usable ones until it is. The new table reaches workers whole, at their next batch.
func (a *Aggregate) SetTable(t *[Buckets]uint8) error {
	for b, m := range t {
		if int(m) >= len(a.ports) {
			return fmt.Errorf("%w: bucket %d names member %d", ErrMember, b, m)
		}
	}
	a.mu.Lock()
	a.table = *t
	a.publish()
	a.mu.Unlock()
	return nil
}

// Table returns the effective bucket → member table workers use (meaningful with Config.Table).
func (a *Aggregate) Table() [Buckets]uint8 {
	if t := a.state.Load().table; t != nil {
		return *t
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.table
}

// Name implements xmit.Port.
func (a *Aggregate) Name() string { return a.name }

// LinkUp implements xmit.LinkStater: an aggregate is up while some member is usable.
func (a *Aggregate) LinkUp() bool { return a.state.Load().cnt > 0 }

// CloneFailed counts broadcast copies the ClonePool could not provide.
func (a *Aggregate) CloneFailed() uint64 { return a.cloneFailed.Load() }

// Stats implements xmit.Port: the sum of the members' counters plus the aggregate's own drops
// (frames for which no member was usable, broadcast copies that could not be made). With
// Config.SlowProtocols, the frames Recv took out are not in RxPackets and RxBytes (Recv's
// callers never saw them): those handed to the handler are in SlowFrames, those dropped in
// RxInactive and RxDropped.
func (a *Aggregate) Stats() xmit.Stats {
	// Ours first: a member counts a frame before Recv can take it out.
	slow, slowBytes := a.rxSlow.Load(), a.rxSlowBytes.Load()
	dropped, droppedBytes := a.rxDropped.Load(), a.rxDroppedBytes.Load()
	var s xmit.Stats
	for _, p := range a.ports {
		s = s.Add(p.Stats())
	}
	s.TxDropped += a.txDropped.Load()
	s.RxPackets -= slow + dropped
	s.RxBytes -= slowBytes + droppedBytes
	s.RxDropped += dropped
	return s
}

// Send implements xmit.Port: it chooses a member for every frame, then calls Send once on every
// member that got frames, in member order. Frames keep their order within a member. Frames for
// which no member is usable are released and counted in TxDropped. It returns how many frames the
// members queued and the first error a member returned (the other members are still sent to).
func (a *Aggregate) Send(b *frame.Batch) (int, error) {
	n := len(b.Frames)
	if n == 0 {
		return 0, nil
	}
	if a.closed.Load() {
		a.txDropped.Add(uint64(n))
		b.Free()
		return 0, xmit.ErrClosed
	}
	if a.cfg.Mode == Broadcast {
		return a.broadcast(b)
	}
	if cap(a.choice) < n {
		a.choice = make([]uint8, n) // a larger batch than ever before: grow once
	}
	ch := a.choice[:n]
	a.sel.Select(b, ch)
	for _, pb := range a.perMem {
		pb.Adopt(b)
	}
	a.drop.Adopt(b)
	for i := range b.Frames {
		m := ch[i]
		var pb *frame.Batch
		if int(m) < len(a.perMem) {
			pb = a.perMem[m]
		} else {
			pb = a.drop
		}
		if !pb.Append(b.Frames[i]) {
			grow(pb, b.Cap())
			pb.Append(b.Frames[i])
		}
	}
	b.Frames = b.Frames[:0]
	if d := len(a.drop.Frames); d > 0 {
		a.txDropped.Add(uint64(d))
		a.drop.Free()
	}
	sent := 0
	var first error
	for i, pb := range a.perMem {
		if len(pb.Frames) == 0 {
			continue
		}
		k, err := a.ports[i].Send(pb)
		sent += k
		if err != nil && first == nil {
			first = fmt.Errorf("lag: member %s: %w", a.ports[i].Name(), err)
		}
		pb.Frames = pb.Frames[:0] // Send empties it; be safe with a port that does not
	}
	return sent, first
}

// grow replaces a full per-member batch's frame array by a larger one (keeping its frames).
func grow(pb *frame.Batch, atLeast int) {
	c := 2 * cap(pb.Frames)
	if c < atLeast {
		c = atLeast
	}
	f := make([]frame.Frame, len(pb.Frames), c)
	copy(f, pb.Frames)
	pb.Frames = f
}

// broadcast sends every frame on every usable member: copies from ClonePool for all but the last
// usable member, the originals to the last.
func (a *Aggregate) broadcast(b *frame.Batch) (int, error) {
	st := a.state.Load()
	n := len(b.Frames)
	if st.cnt == 0 {
		a.txDropped.Add(uint64(n))
		b.Free()
		return 0, nil
	}
	sent := 0
	var first error
	last := int(st.usable[st.cnt-1])
	pool := a.cfg.ClonePool
	for _, m := range st.usable[:st.cnt-1] {
		cb := a.perMem[m]
		cb.Frames = cb.Frames[:0]
		if cap(cb.Frames) < n {
			grow(cb, n)
		}
		got, _ := pool.Alloc(cb, n)
		for i := 0; i < got; i++ {
			src := &b.Frames[i]
			dst := &cb.Frames[i]
			if !dst.Resize(int(src.Len)) {
				got = i // too big for a pool buffer: this and the rest are not copied
				break
			}
			copy(cb.Bytes(i), src.Data(b.Mem))
			dst.Flags, dst.TPID, dst.TCI, dst.Port, dst.Out, dst.Meta = src.Flags, src.TPID, src.TCI, src.Port, src.Out, src.Meta
		}
		if got < len(cb.Frames) {
			pool.Release(cb.Frames[got:])
			cb.Frames = cb.Frames[:got]
		}
		if miss := n - got; miss > 0 {
			a.cloneFailed.Add(uint64(miss))
			a.txDropped.Add(uint64(miss))
		}
		if got == 0 {
			continue
		}
		k, err := a.ports[m].Send(cb)
		sent += k
		if err != nil && first == nil {
			first = fmt.Errorf("lag: member %s: %w", a.ports[m].Name(), err)
		}
		cb.Frames = cb.Frames[:0]
	}
	k, err := a.ports[last].Send(b)
	sent += k
	if err != nil && first == nil {
		first = fmt.Errorf("lag: member %s: %w", a.ports[last].Name(), err)
	}
	return sent, first
}

// Recv implements xmit.Port.
func (a *Aggregate) Recv(b *frame.Batch) (int, error) {
	_, n, err := a.RecvFrom(b)
	return n, err
}

// RecvFrom is Recv that also reports which member the frames came from. Members are read in turn,
// starting after the one that last delivered, until one has frames; a closed member is skipped;
// when every member is closed it returns xmit.ErrClosed. Without Config.SlowProtocols frames are
// read from every member, usable or not (bonding delivers what inactive slaves receive only in
// some modes; filter on the member index if that matters); with it, slow-protocols frames go to
// the handler and a member that is not usable delivers nothing else (its frames are dropped and
// counted in RxInactive).
func (a *Aggregate) RecvFrom(b *frame.Batch) (member, n int, err error) {
	if len(b.Frames) != 0 {
		return -1, 0, xmit.ErrNotEmpty
	}
	nm := len(a.ports)
	closed := 0
	for k := 0; k < nm; k++ {
		i := a.rxNext
		a.rxNext++
		if a.rxNext == nm {
			a.rxNext = 0
		}
		n, err := a.ports[i].Recv(b)
		if errors.Is(err, xmit.ErrClosed) {
			closed++
			continue
		}
		if a.slow != nil { // (an empty batch scans as nothing)
			// One test per batch: a slow-protocols frame in it, or a member not usable.
			inactive := uint32(^a.state.Load().upMask>>uint(i)) & 1
			switch {
			case a.noScan:
				if inactive != 0 {
					n = a.dropInactive(b)
				}
			case slowScan(b.Mem, b.Frames)|inactive != 0:
				n = a.filterRx(i, b, inactive != 0)
			}
		}
		if n > 0 || err != nil {
			return i, n, err
		}
	}
	if closed == nm || a.closed.Load() {
		return -1, 0, xmit.ErrClosed
	}
	return -1, 0, nil
}

// Close stops the carrier poller and closes every member; it returns the first error. After
// Close, Send drops and counts, Recv returns xmit.ErrClosed. Closing twice is harmless.
func (a *Aggregate) Close() error {
	if a.closed.Swap(true) {
		return nil
	}
	if a.stop != nil {
		close(a.stop)
		<-a.done
	}
	var first error
	for _, p := range a.ports {
		if err := p.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

var (
	_ xmit.Port       = (*Aggregate)(nil)
	_ xmit.LinkStater = (*Aggregate)(nil)
)
