//go:build linux

package linuxcp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/wirespeed/wirespeed/fib"
	"golang.org/x/sys/unix"
)

// MirrorConfig configures a Mirror. Routes and NextHops are required; the other fields have working
// zero values.
type MirrorConfig struct {
	// Source is where the kernel's state comes from; nil: a NetlinkSource of the caller's network
	// namespace with ReceiveBuffer.
	Source Source
	// ReceiveBuffer is the default Source's receive buffer per socket (see NetlinkSource).
	ReceiveBuffer int
	// Ifaces maps the kernel's interface indices of the mirrored interfaces to router interface IDs
	// (fwd's and the vlan.Demux's numbering); IfaceNames does the same by interface name (looked up
	// in the kernel's links as they come and go). Routes, neighbours and addresses of other
	// interfaces are not mirrored.
	Ifaces     map[int]uint16
	IfaceNames map[string]uint16
	// Table is the kernel routing table mirrored (0: main, 254). The local table (255) is mirrored
	// too, for its local and broadcast routes.
	Table int
	// Routes and NextHops receive the mirrored routes and their next hops. The Mirror owns the routes
	// of Routes (it removes what the kernel does not have) and the next-hop indices
	// NextHopBase..NextHopBase+NextHopCount-1 of NextHops (NextHopCount 0: up to fib.MaxNextHop).
	Routes       *fib.Table
	NextHops     *fib.NextHops
	NextHopBase  uint32
	NextHopCount uint32
	// MaxBatch bounds the kernel updates applied in one batch (0: 65536); BatchWait is how long a
	// batch waits for more updates after its first one (0: 1 ms; negative: not at all).
	MaxBatch  int
	BatchWait time.Duration
	// OnAddrs, if set, is called from the Mirror's goroutine with a mirrored interface's IPv4
	// addresses each time they change (fwd.Iface.Addrs is fixed when the fwd.Router is made: the
	// router's own addresses reach the forwarding path as local routes of the local table instead).
	OnAddrs func(iface uint16, addrs []netip.Prefix)
	// Logf, if set, receives a line for each resynchronisation and each error the Mirror recovers from.
	Logf func(format string, args ...any)
}

// MirrorStats are a Mirror's counters and sizes.
type MirrorStats struct {
	Updates     uint64 // kernel updates received (links, addresses, routes, neighbours)
	Batches     uint64 // batches applied
	Changes     uint64 // route changes written to the route table (inserts, replacements, deletions)
	Resyncs     uint64 // full dumps taken (the first one included)
	Errors      uint64 // subscription failures and lost messages (ENOBUFS) that caused a resync
	Routes      int    // routes the Mirror has in the route table
	NextHops    int    // next-hop entries the Mirror has in the next-hop table
	Unmirrored  uint64 // kernel route updates with no next hop on a mirrored interface, or of a kind not mirrored
	NoNextHop   uint64 // routes left out because the next-hop index range was full
	Resolves    uint64 // neighbours the kernel was asked to resolve (Resolve)
	LastResync  time.Time
	LastApplied time.Time // when the last batch was written
}

// Mirror keeps a fib.Table and a fib.NextHops equal to the kernel's view of the mirrored interfaces:
// the routes of one routing table (and the local table), with next hops whose MAC addresses come
// from the kernel's neighbour table.
//
// What the kernel's objects become:
//
//   - A unicast route through a gateway on a mirrored interface: a next hop (one per interface and
//     gateway, shared by all its routes) carrying the MAC address of the kernel's neighbour entry
//     for the gateway while that entry is valid (REACHABLE, STALE, DELAY, PROBE, PERMANENT, NOARP),
//     flagged fib.NextHopUnresolved otherwise, so that fwd hands its frames to Output.Unresolved:
//     in linux-cp mode ARP is the kernel's; the application passes such frames to Resolve (which
//     asks the kernel to resolve the neighbour) and drops them or hands them to the kernel (the
//     exception path); the Mirror sees the new neighbour entry and fills in the MAC.
//   - A route without a gateway (a connected subnet, proto kernel scope link, or any device
//     route): a next hop of the interface flagged fib.NextHopUnresolved (frames to hosts the kernel
//     does not know go to the kernel, which resolves them). Every valid kernel neighbour on a
//     mirrored interface whose address is in one of that interface's subnets gets a /32 route to
//     its own next hop with its MAC, unless the kernel has a /32 route of its own for it.
//   - A multipath route (RTA_MULTIPATH): an ECMP group (fib.NextHopGroup) of its usable next hops,
//     weighted as the kernel weighs them (hops+1); one usable next hop is a plain next hop.
//   - local and broadcast routes (the local table: the host's own addresses): fib.NextHopLocal.
//   - blackhole, unreachable and prohibit routes: fib.NextHopDrop.
//   - Routes of other kinds, of other tables, with a TOS, or with no usable next hop on a mirrored
//     interface are not mirrored (counted as Unmirrored).
//
// Of several routes to one prefix, the local table's wins, then the lowest metric (priority) whose
// next hops are usable. A next hop is usable while its interface is up (IFF_UP) and running
// (IFF_RUNNING) and the kernel does not mark it dead. When an interface goes down (IFF_UP cleared)
// the kernel deletes the routes through it and its neighbours without notifying them; the Mirror
// does the same. Routes the kernel keeps through an interface that lost its carrier are kept and
// left out of the route table until it returns.
//
// Updates are applied in batches (one fib.NextHops.Apply and one fib.Table.Apply per batch), so a
// burst of route updates costs one table rebuild, not one per route. On ENOBUFS or any failure of
// a subscription, the Mirror subscribes again, takes a fresh dump, and writes only the difference
// between the route table and the dump (routes added, changed and removed meanwhile): routes that
// did not change stay in the table throughout, and forwarding goes on.
//
// The kernel's neighbour table takes the place of package neigh's here: neigh runs ARP itself and
// publishes what it learns into the same kind of next hops (a host's /32 to a next hop following its
// entry, a subnet's next hop unresolved), which the Mirror does from the kernel's entries instead.
// A Mirror owns the routes and next-hop range it is given; it is not used beside a neigh.Table on
// the same next hops.
//
// Concurrency: Run is the Mirror's one goroutine; Stats, Addrs and Synced may be called from any
// goroutine. Lookups in Routes and NextHops never wait for the Mirror (both are RCU-style).
type Mirror struct {
	cfg   MirrorConfig
	src   Source
	table int

	links  map[int]*linkInfo
	addrs  map[int][]netip.Prefix
	routes map[pkey]*kroute // per prefix, its routes (a list)
	neighs map[nkey]neighInfo

	installed map[pkey]*nhEnt
	nhs       map[nhKey]*nhEnt
	free      []uint32 // free next-hop indices, FIFO (released ones at the end)
	freeHead  int
	dirty     map[pkey]struct{}
	nhDirty   map[*nhEnt]struct{}
	addrDirty map[int]struct{}
	zero      []*nhEnt // entries whose reference count fell to zero in this batch

	byIdx    []*nhEnt // by next-hop index (NextHopBase..): the live entries
	resolveQ chan resolveReq
	asked    map[nkey]time.Time

	fibChanges []fib.Change
	nhChanges  []fib.NextHopChange

	mu        sync.Mutex
	st        MirrorStats
	flushedAt uint64 // st.Updates at the end of the last flush
	addrsPub  map[uint16][]netip.Prefix
	synced    chan struct{}
	hasSynced bool
}

// pkey is an IPv4 prefix as a map key: the address in bits 39..8, the length in bits 7..0 (8 bytes,
// where a netip.Prefix takes 32: a full table's state stays small).
type pkey uint64

func pkeyOf(p netip.Prefix) pkey {
	b := p.Addr().As4()
	return pkey(uint64(b[0])<<32|uint64(b[1])<<24|uint64(b[2])<<16|uint64(b[3])<<8) | pkey(p.Bits())
}

func (k pkey) prefix() netip.Prefix {
	a := uint32(k >> 8)
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(a >> 24), byte(a >> 16), byte(a >> 8), byte(a)}), int(k&0xff))
}

func hostKey(a netip.Addr) pkey { return pkeyOf(netip.PrefixFrom(a, 32)) }

// khop is one next hop of a kernel route; gw 0 is none (a device route).
type khop struct {
	link   int32
	gw     uint32
	weight uint32
	dead   bool
}

func (h khop) gateway() netip.Addr {
	return netip.AddrFrom4([4]byte{byte(h.gw >> 24), byte(h.gw >> 16), byte(h.gw >> 8), byte(h.gw)})
}

// kroute is one kernel route; the routes of one prefix form a list. A route is identified, as in
// the kernel, by its table, prefix, TOS and priority (metric).
type kroute struct {
	next  *kroute
	table int32
	tos   int32
	prio  int32
	typ   int32
	hops  []khop // one[:] for a route with one next hop
	one   [1]khop
}

type linkInfo struct {
	name     string
	up       bool // IFF_UP
	running  bool // IFF_RUNNING
	hasFlags bool
}

type nkey struct {
	link int
	ip   netip.Addr
}

type neighInfo struct {
	mac   [6]byte
	valid bool
}

type nhKind uint8

const (
	nhLocal nhKind = iota
	nhDrop
	nhGateway // a neighbour: link and address
	nhSubnet  // a device route: link
	nhGroup
)

type nhKey struct {
	kind    nhKind
	link    int
	addr    netip.Addr
	members string // nhGroup: the members' keys and weights, canonical
}

type nhEnt struct {
	key      nhKey
	idx      uint32
	ref      int
	members  []*nhEnt
	weights  []uint32
	pub      fib.NextHop
	pubMem   []fib.Member
	isPub    bool
	released bool
}

// ErrMirrorConfig is wrapped by NewMirror's configuration errors.
var ErrMirrorConfig = errors.New("linuxcp: bad mirror configuration")

// NewMirror returns a Mirror of cfg; Run starts it.
func NewMirror(cfg *MirrorConfig) (*Mirror, error) {
	if cfg == nil || cfg.Routes == nil || cfg.NextHops == nil {
		return nil, fmt.Errorf("%w: Routes and NextHops are required", ErrMirrorConfig)
	}
	c := *cfg
	if c.Table == 0 {
		c.Table = unix.RT_TABLE_MAIN
	}
	if c.NextHopCount == 0 {
		if c.NextHopBase > fib.MaxNextHop {
			return nil, fmt.Errorf("%w: next-hop base %d", ErrMirrorConfig, c.NextHopBase)
		}
		c.NextHopCount = fib.MaxNextHop + 1 - c.NextHopBase
	}
	if uint64(c.NextHopBase)+uint64(c.NextHopCount) > uint64(fib.MaxNextHop)+1 {
		return nil, fmt.Errorf("%w: next hops %d+%d beyond %d", ErrMirrorConfig, c.NextHopBase, c.NextHopCount, fib.MaxNextHop)
	}
	if c.MaxBatch <= 0 {
		c.MaxBatch = 65536
	}
	if c.BatchWait == 0 {
		c.BatchWait = time.Millisecond
	}
	if c.Source == nil {
		c.Source = &NetlinkSource{ReceiveBuffer: c.ReceiveBuffer}
	}
	m := &Mirror{cfg: c, src: c.Source, table: c.Table, installed: map[pkey]*nhEnt{}, nhs: map[nhKey]*nhEnt{},
		dirty: map[pkey]struct{}{}, nhDirty: map[*nhEnt]struct{}{}, addrDirty: map[int]struct{}{},
		synced: make(chan struct{}), addrsPub: map[uint16][]netip.Prefix{}}
	m.byIdx = make([]*nhEnt, c.NextHopBase+c.NextHopCount)
	m.resolveQ = make(chan resolveReq, 256)
	m.asked = map[nkey]time.Time{}
	m.free = make([]uint32, 0, c.NextHopCount)
	for i := range c.NextHopCount {
		m.free = append(m.free, c.NextHopBase+i)
	}
	m.reset()
	return m, nil
}

func (m *Mirror) reset() {
	m.links = map[int]*linkInfo{}
	m.addrs = map[int][]netip.Prefix{}
	m.routes = map[pkey]*kroute{}
	m.neighs = map[nkey]neighInfo{}
}

// Synced is closed once the first dump is in the route table.
func (m *Mirror) Synced() <-chan struct{} { return m.synced }

// Stats returns the Mirror's counters.
func (m *Mirror) Stats() MirrorStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.st
}

// Addrs returns router interface iface's IPv4 addresses as the kernel has them.
func (m *Mirror) Addrs(iface uint16) []netip.Prefix {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.addrsPub[iface])
}

func (m *Mirror) logf(format string, args ...any) {
	if m.cfg.Logf != nil {
		m.cfg.Logf(format, args...)
	}
}

// Run mirrors the kernel until ctx is done: it subscribes, applies the dump, then the updates in
// batches, and starts over from a fresh dump after a lost message. It returns ctx's error, or the
// error of a Subscribe or Dump that keeps failing (after 10 attempts a second apart).
func (m *Mirror) Run(ctx context.Context) error {
	fails := 0
	for {
		done := make(chan struct{})
		sub, err := m.src.Subscribe(done)
		if err == nil {
			err = m.resync()
		}
		if err != nil {
			close(done)
			if sub != nil {
				go drain(sub)
			}
			if fails++; fails >= 10 {
				return err
			}
			m.logf("linuxcp: mirror: %v; trying again", err)
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Second):
			}
			continue
		}
		fails = 0
		err = m.follow(ctx, sub)
		close(done)
		go drain(sub)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		m.mu.Lock()
		m.st.Errors++
		m.mu.Unlock()
		m.logf("linuxcp: mirror: %v; resynchronising", err)
	}
}

// drain reads an abandoned subscription until its channels close, so that the library's receive
// goroutines are not left blocked on a send.
func drain(s *Subscription) {
	links, addrs, routes, neighs := s.Links, s.Addrs, s.Routes, s.Neighs
	for links != nil || addrs != nil || routes != nil || neighs != nil {
		select {
		case _, ok := <-links:
			if !ok {
				links = nil
			}
		case _, ok := <-addrs:
			if !ok {
				addrs = nil
			}
		case _, ok := <-routes:
			if !ok {
				routes = nil
			}
		case _, ok := <-neighs:
			if !ok {
				neighs = nil
			}
		}
	}
}

var errClosed = errors.New("linuxcp: a subscription channel closed")

// follow applies sub's updates in batches until ctx is done or the subscription fails.
func (m *Mirror) follow(ctx context.Context, sub *Subscription) error {
	var timer *time.Timer
	for {
		n, err := m.receive(ctx, sub, false, nil)
		if err != nil {
			return err
		}
		var expire <-chan time.Time
		if m.cfg.BatchWait > 0 {
			if timer == nil {
				timer = time.NewTimer(m.cfg.BatchWait)
			} else {
				timer.Reset(m.cfg.BatchWait) // Go 1.23 timers: no stale tick after Stop or Reset
			}
			expire = timer.C
		}
		for n < m.cfg.MaxBatch {
			k, err := m.receive(ctx, sub, expire == nil, expire)
			n += k
			if err != nil {
				m.flush()
				return err
			}
			if k == 0 {
				break
			}
		}
		if timer != nil {
			timer.Stop()
		}
		m.flush()
	}
}

// receive handles one update. Updates already waiting are taken first; when there is none it
// returns 0 at once (poll), or waits until one comes, ctx is done or expire fires (expire nil: no
// expiry).
func (m *Mirror) receive(ctx context.Context, sub *Subscription, poll bool, expire <-chan time.Time) (int, error) {
	select {
	case err := <-sub.Errors:
		return 0, err
	case u, ok := <-sub.Links:
		return m.handle(u, ok)
	case u, ok := <-sub.Addrs:
		return m.handle(u, ok)
	case u, ok := <-sub.Routes:
		return m.handle(u, ok)
	case u, ok := <-sub.Neighs:
		return m.handle(u, ok)
	case q := <-m.resolveQ:
		m.resolve(q)
		return 0, nil
	default:
		if poll {
			return 0, nil
		}
	}
	select {
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-expire:
		return 0, nil
	case q := <-m.resolveQ:
		m.resolve(q)
		return 0, nil
	case err := <-sub.Errors:
		return 0, err
	case u, ok := <-sub.Links:
		return m.handle(u, ok)
	case u, ok := <-sub.Addrs:
		return m.handle(u, ok)
	case u, ok := <-sub.Routes:
		return m.handle(u, ok)
	case u, ok := <-sub.Neighs:
		return m.handle(u, ok)
	}
}

func (m *Mirror) handle(u any, ok bool) (int, error) {
	if !ok {
		return 0, errClosed
	}
	switch u := u.(type) {
	case netlink.LinkUpdate:
		m.link(u.Link, u.Header.Type == unix.RTM_DELLINK)
	case netlink.AddrUpdate:
		m.addr(u.LinkIndex, u.LinkAddress, u.NewAddr)
	case netlink.RouteUpdate:
		m.route(&u.Route, u.Type == unix.RTM_DELROUTE)
	case netlink.NeighUpdate:
		m.neigh(&u.Neigh, u.Type == unix.RTM_DELNEIGH)
	}
	m.mu.Lock()
	m.st.Updates++
	m.mu.Unlock()
	return 1, nil
}

// resync replaces the kernel state with a fresh dump and writes the difference.
func (m *Mirror) resync() error {
	snap, err := m.src.Dump()
	if err != nil {
		return err
	}
	old := m.routes
	oldNeighs := m.neighs
	oldAddrs := m.addrs
	m.reset()
	for _, l := range snap.Links {
		m.setLink(l)
	}
	for _, a := range snap.Addrs {
		if a.IPNet != nil {
			m.addr(a.LinkIndex, *a.IPNet, true)
		}
	}
	for i := range snap.Routes {
		m.route(&snap.Routes[i], false)
	}
	for i := range snap.Neighs {
		m.neigh(&snap.Neighs[i], false)
	}
	// Everything that was or is: the flush keeps what did not change.
	for p := range old {
		m.dirty[p] = struct{}{}
	}
	for p := range m.installed {
		m.dirty[p] = struct{}{}
	}
	for k := range oldNeighs {
		m.dirty[hostKey(k.ip)] = struct{}{}
	}
	for l := range oldAddrs {
		m.addrDirty[l] = struct{}{}
	}
	for _, e := range m.nhs {
		m.nhDirty[e] = struct{}{}
	}
	m.flush()
	m.mu.Lock()
	m.st.Resyncs++
	m.st.LastResync = time.Now()
	first := !m.hasSynced
	m.hasSynced = true
	m.mu.Unlock()
	if first {
		close(m.synced)
	}
	return nil
}

// iface returns the router interface of kernel link l, if it is mirrored.
func (m *Mirror) iface(l int) (uint16, bool) {
	if id, ok := m.cfg.Ifaces[l]; ok {
		return id, true
	}
	if li := m.links[l]; li != nil && m.cfg.IfaceNames != nil {
		id, ok := m.cfg.IfaceNames[li.name]
		return id, ok
	}
	return 0, false
}

// usable reports whether kernel link l is mirrored, up and running. A link the Mirror has no flags
// for (a test that sends no links) counts as up.
func (m *Mirror) usable(l int) bool {
	if _, ok := m.iface(l); !ok {
		return false
	}
	li := m.links[l]
	return li == nil || !li.hasFlags || li.up && li.running
}

func (m *Mirror) link(l netlink.Link, del bool) {
	if l == nil || l.Attrs() == nil {
		return
	}
	a := l.Attrs()
	if del {
		m.linkDown(a.Index)
		delete(m.links, a.Index)
		m.linkDirty(a.Index)
		return
	}
	old := m.links[a.Index]
	wasUp := old == nil || !old.hasFlags || old.up
	m.setLink(l)
	li := m.links[a.Index]
	if old != nil && *old == *li {
		return // statistics or attributes the Mirror does not follow
	}
	if wasUp && !li.up {
		m.linkDown(a.Index)
	}
	m.linkDirty(a.Index)
}

func (m *Mirror) setLink(l netlink.Link) {
	a := l.Attrs()
	if a == nil {
		return
	}
	m.links[a.Index] = &linkInfo{name: a.Name, up: a.RawFlags&unix.IFF_UP != 0, running: a.RawFlags&unix.IFF_RUNNING != 0, hasFlags: true}
}

// linkDown does what the kernel does, without telling, when link l goes down: its routes (those
// whose every next hop is on it), other than the local ones (the host keeps its addresses), and its
// neighbours are deleted.
func (m *Mirror) linkDown(l int) {
	for p, head := range m.routes {
		for r := head; r != nil; r = r.next {
			if len(r.hops) == 0 || r.typ == unix.RTN_LOCAL {
				continue
			}
			all := true
			for _, h := range r.hops {
				all = all && int(h.link) == l
			}
			if all {
				m.delRoute(p, r.table, r.tos, r.prio)
			}
		}
	}
	for k := range m.neighs {
		if k.link == l {
			delete(m.neighs, k)
			m.neighDirty(k)
		}
	}
}

// linkDirty marks what depends on link l: its routes, neighbours, addresses and next hops.
func (m *Mirror) linkDirty(l int) {
	for p, head := range m.routes {
	outer:
		for r := head; r != nil; r = r.next {
			for _, h := range r.hops {
				if int(h.link) == l {
					m.dirty[p] = struct{}{}
					break outer
				}
			}
		}
	}
	for k := range m.neighs {
		if k.link == l {
			m.neighDirty(k)
		}
	}
	for k, e := range m.nhs {
		if k.link == l {
			m.nhDirty[e] = struct{}{}
		}
	}
	m.addrDirty[l] = struct{}{}
}

func (m *Mirror) addr(l int, ipn net.IPNet, add bool) {
	ip, ok := netip.AddrFromSlice(ipn.IP)
	if !ok {
		return
	}
	ip = ip.Unmap()
	ones, bits := ipn.Mask.Size()
	if !ip.Is4() || bits != 32 {
		return
	}
	p := netip.PrefixFrom(ip, ones)
	as := m.addrs[l]
	i := slices.Index(as, p)
	switch {
	case add && i < 0:
		m.addrs[l] = append(as, p)
	case !add && i >= 0:
		m.addrs[l] = slices.Delete(as, i, i+1)
	default:
		return
	}
	m.addrDirty[l] = struct{}{}
	for k := range m.neighs {
		if k.link == l {
			m.neighDirty(k)
		}
	}
}

// route applies a route update (or a dumped route).
func (m *Mirror) route(r *netlink.Route, del bool) {
	if r.Family != 0 && r.Family != netlink.FAMILY_V4 {
		return
	}
	tbl := r.Table
	if tbl == 0 {
		tbl = unix.RT_TABLE_MAIN
	}
	if tbl != m.table && tbl != unix.RT_TABLE_LOCAL {
		return
	}
	p := netip.PrefixFrom(netip.IPv4Unspecified(), 0)
	if r.Dst != nil {
		ip, ok := netip.AddrFromSlice(r.Dst.IP)
		ones, bits := r.Dst.Mask.Size()
		if !ok || bits != 32 || !ip.Unmap().Is4() {
			return
		}
		p = netip.PrefixFrom(ip.Unmap(), ones).Masked()
	}
	k := pkeyOf(p)
	if del {
		m.delRoute(k, int32(tbl), int32(r.Tos), int32(r.Priority))
		return
	}
	if r.Tos != 0 {
		m.unmirrored()
		return
	}
	kr := &kroute{table: int32(tbl), tos: int32(r.Tos), prio: int32(r.Priority), typ: int32(r.Type)}
	if len(r.MultiPath) > 0 {
		for _, h := range r.MultiPath {
			kr.hops = append(kr.hops, khop{link: int32(h.LinkIndex), gw: gw32(h.Gw), weight: uint32(h.Hops) + 1,
				dead: h.Flags&unix.RTNH_F_DEAD != 0 || (h.Gw == nil && h.Via != nil)})
		}
	} else {
		kr.one[0] = khop{link: int32(r.LinkIndex), gw: gw32(r.Gw), weight: 1, dead: r.Flags&unix.RTNH_F_DEAD != 0 || (r.Gw == nil && r.Via != nil)}
		kr.hops = kr.one[:]
	}
	// Insert or replace in the prefix's list.
	head := m.routes[k]
	prev := (*kroute)(nil)
	for x := head; x != nil; prev, x = x, x.next {
		if x.table == kr.table && x.tos == kr.tos && x.prio == kr.prio {
			kr.next = x.next
			if prev == nil {
				head = kr
			} else {
				prev.next = kr
			}
			m.routes[k] = head
			m.dirty[k] = struct{}{}
			return
		}
	}
	kr.next = head
	m.routes[k] = kr
	m.dirty[k] = struct{}{}
}

// gw32 is an IPv4 gateway as khop keeps it (0: none, or not IPv4).
func gw32(ip net.IP) uint32 {
	a := ipAddr(ip)
	if !a.Is4() {
		return 0
	}
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

func (m *Mirror) unmirrored() {
	m.mu.Lock()
	m.st.Unmirrored++
	m.mu.Unlock()
}

func (m *Mirror) delRoute(k pkey, table, tos, prio int32) {
	var prev *kroute
	for x := m.routes[k]; x != nil; prev, x = x, x.next {
		if x.table == table && x.tos == tos && x.prio == prio {
			switch {
			case prev != nil:
				prev.next = x.next
			case x.next != nil:
				m.routes[k] = x.next
			default:
				delete(m.routes, k)
			}
			m.dirty[k] = struct{}{}
			return
		}
	}
}

func ipAddr(ip net.IP) netip.Addr {
	a, ok := netip.AddrFromSlice(ip)
	if !ok {
		return netip.Addr{}
	}
	return a.Unmap()
}

// Neighbour states whose link-layer address is usable.
const nudValid = unix.NUD_REACHABLE | unix.NUD_STALE | unix.NUD_DELAY | unix.NUD_PROBE | unix.NUD_PERMANENT | unix.NUD_NOARP

func (m *Mirror) neigh(n *netlink.Neigh, del bool) {
	if n.Family != 0 && n.Family != netlink.FAMILY_V4 {
		return
	}
	ip := ipAddr(n.IP)
	if !ip.Is4() {
		return
	}
	if _, ok := m.iface(n.LinkIndex); !ok && m.links[n.LinkIndex] != nil {
		return
	}
	k := nkey{n.LinkIndex, ip}
	if del {
		delete(m.neighs, k)
	} else {
		var ni neighInfo
		if len(n.HardwareAddr) == 6 && n.State&nudValid != 0 {
			ni.valid = true
			copy(ni.mac[:], n.HardwareAddr)
		}
		m.neighs[k] = ni
	}
	m.neighDirty(k)
}

func (m *Mirror) neighDirty(k nkey) {
	m.dirty[hostKey(k.ip)] = struct{}{}
	if e := m.nhs[nhKey{kind: nhGateway, link: k.link, addr: k.ip}]; e != nil {
		m.nhDirty[e] = struct{}{}
	}
}

// want is the next hop prefix p should have, if any.
type want struct {
	key     nhKey
	members []nhKey
	weights []uint32
}

// best returns the route prefix p takes: the local table's first, then the lowest metric with a
// usable next hop; then, for a /32, a neighbour of a connected subnet.
func (m *Mirror) best(k pkey) (want, bool) {
	// The prefix's routes in order: local table first, then by metric (lists are short).
	var buf [8]*kroute
	cands := buf[:0]
	for x := m.routes[k]; x != nil; x = x.next {
		cands = append(cands, x)
	}
	for i := 1; i < len(cands); i++ {
		for j := i; j > 0 && better(cands[j], cands[j-1]); j-- {
			cands[j], cands[j-1] = cands[j-1], cands[j]
		}
	}
	for _, r := range cands {
		if w, ok := m.routeWant(r); ok {
			return w, true
		}
	}
	if k&0xff == 32 {
		return m.hostWant(k.prefix().Addr())
	}
	return want{}, false
}

// better reports whether kernel route a is preferred to b (same prefix).
func better(a, b *kroute) bool {
	la, lb := a.table == unix.RT_TABLE_LOCAL, b.table == unix.RT_TABLE_LOCAL
	if la != lb {
		return la
	}
	return a.prio < b.prio
}

func (m *Mirror) routeWant(r *kroute) (want, bool) {
	switch r.typ {
	case unix.RTN_LOCAL, unix.RTN_BROADCAST:
		return want{key: nhKey{kind: nhLocal}}, true
	case unix.RTN_BLACKHOLE, unix.RTN_UNREACHABLE, unix.RTN_PROHIBIT:
		return want{key: nhKey{kind: nhDrop}}, true
	case unix.RTN_UNICAST:
	default:
		return want{}, false
	}
	var w want
	for _, h := range r.hops {
		if h.dead || !m.usable(int(h.link)) {
			continue
		}
		k := nhKey{kind: nhSubnet, link: int(h.link)}
		if h.gw != 0 {
			k = nhKey{kind: nhGateway, link: int(h.link), addr: h.gateway()}
		}
		if i := slices.Index(w.members, k); i >= 0 {
			w.weights[i] += h.weight
			continue
		}
		w.members = append(w.members, k)
		w.weights = append(w.weights, h.weight)
	}
	switch len(w.members) {
	case 0:
		return want{}, false
	case 1:
		return want{key: w.members[0]}, true
	}
	var b strings.Builder
	for i, k := range w.members {
		fmt.Fprintf(&b, "%d/%d/%s/%d,", k.kind, k.link, k.addr, w.weights[i])
	}
	w.key = nhKey{kind: nhGroup, members: b.String()}
	return w, true
}

// hostWant: a valid neighbour with address a on a mirrored, usable interface with a subnet that
// holds a.
func (m *Mirror) hostWant(a netip.Addr) (want, bool) {
	best := -1
	for l, as := range m.addrs {
		if !m.usable(l) {
			continue
		}
		n, ok := m.neighs[nkey{l, a}]
		if !ok || !n.valid {
			continue
		}
		for _, p := range as {
			if p.Contains(a) && p.Addr() != a && (best < 0 || l < best) {
				best = l
			}
		}
	}
	if best < 0 {
		return want{}, false
	}
	return want{key: nhKey{kind: nhGateway, link: best, addr: a}}, true
}

// acquire returns the entry of w, making it (and its members) when needed. It returns nil when the
// next-hop range is full.
func (m *Mirror) acquire(w want) *nhEnt {
	if e := m.nhs[w.key]; e != nil {
		return e
	}
	var mem []*nhEnt
	for _, k := range w.members {
		me := m.acquire(want{key: k})
		if me == nil {
			for _, x := range mem {
				m.unref(x)
			}
			return nil
		}
		me.ref++
		mem = append(mem, me)
	}
	if m.freeHead == len(m.free) {
		for _, x := range mem {
			m.unref(x)
		}
		return nil
	}
	idx := m.free[m.freeHead]
	m.freeHead++
	if m.freeHead > len(m.free)/2 && m.freeHead > 1024 {
		m.free = append(m.free[:0], m.free[m.freeHead:]...)
		m.freeHead = 0
	}
	e := &nhEnt{key: w.key, idx: idx, members: mem, weights: w.weights}
	m.nhs[w.key] = e
	m.byIdx[idx] = e
	m.nhDirty[e] = struct{}{}
	m.zero = append(m.zero, e) // released at the end of the batch unless a route takes it
	return e
}

func (m *Mirror) unref(e *nhEnt) {
	if e.ref--; e.ref == 0 {
		m.zero = append(m.zero, e)
	}
}

// entry computes what next hop e publishes.
func (m *Mirror) entry(e *nhEnt) (fib.NextHop, []fib.Member) {
	switch e.key.kind {
	case nhLocal:
		return fib.NextHop{Flags: fib.NextHopLocal}, nil
	case nhDrop:
		return fib.NextHop{Flags: fib.NextHopDrop}, nil
	case nhGroup:
		ms := make([]fib.Member, len(e.members))
		for i, x := range e.members {
			ms[i] = fib.Member{NextHop: x.idx, Weight: e.weights[i]}
		}
		return fib.NextHop{}, ms
	}
	id, _ := m.iface(e.key.link)
	if e.key.kind == nhGateway && m.usable(e.key.link) {
		if n, ok := m.neighs[nkey{e.key.link, e.key.addr}]; ok && n.valid {
			return fib.NextHop{Ifindex: id, DstMAC: n.mac}, nil
		}
	}
	return fib.NextHop{Ifindex: id, Flags: fib.NextHopUnresolved}, nil
}

// flush writes the batch: the next hops that changed, then the routes, then the release of next
// hops no route uses any more.
func (m *Mirror) flush() {
	fc := m.fibChanges[:0]
	for p := range m.dirty {
		old := m.installed[p]
		var e *nhEnt
		if w, ok := m.best(p); ok {
			if e = m.acquire(w); e == nil {
				m.mu.Lock()
				m.st.NoNextHop++
				m.mu.Unlock()
			}
		}
		if e == old {
			continue
		}
		if e != nil {
			e.ref++
			m.installed[p] = e
			fc = append(fc, fib.Change{Prefix: p.prefix(), NextHop: e.idx})
		} else {
			delete(m.installed, p)
			fc = append(fc, fib.Change{Prefix: p.prefix(), Delete: true})
		}
		if old != nil {
			m.unref(old)
		}
	}
	clear(m.dirty)
	// Next hops: new and changed entries first (members before their groups: a group's members
	// are in the same Apply, which publishes all at once).
	nc := m.nhChanges[:0]
	for e := range m.nhDirty {
		if e.released {
			continue
		}
		nh, ms := m.entry(e)
		if e.isPub && nh == e.pub && slices.Equal(ms, e.pubMem) {
			continue
		}
		e.pub, e.pubMem, e.isPub = nh, ms, true
		nc = append(nc, fib.NextHopChange{Index: e.idx, Entry: nh, Members: ms})
	}
	clear(m.nhDirty)
	if len(nc) > 0 {
		if err := m.cfg.NextHops.Apply(nc); err != nil {
			m.logf("linuxcp: mirror: next hops: %v", err)
		}
	}
	if len(fc) > 0 {
		if err := m.cfg.Routes.Apply(fc); err != nil {
			m.logf("linuxcp: mirror: routes: %v", err)
		}
	}
	// Release what no route or group uses.
	nc = nc[:0]
	for len(m.zero) > 0 {
		e := m.zero[len(m.zero)-1]
		m.zero = m.zero[:len(m.zero)-1]
		if e.ref > 0 || e.released {
			continue
		}
		e.released = true
		delete(m.nhs, e.key)
		m.byIdx[e.idx] = nil
		if e.isPub {
			nc = append(nc, fib.NextHopChange{Index: e.idx, Delete: true})
		}
		m.free = append(m.free, e.idx)
		for _, x := range e.members {
			m.unref(x)
		}
	}
	if len(nc) > 0 {
		if err := m.cfg.NextHops.Apply(nc); err != nil {
			m.logf("linuxcp: mirror: next hops: %v", err)
		}
	}
	m.fibChanges, m.nhChanges = fc[:0], nc[:0]
	// Addresses.
	type addrNote struct {
		id uint16
		as []netip.Prefix
	}
	var notes []addrNote
	m.mu.Lock()
	for l := range m.addrDirty {
		id, ok := m.iface(l)
		if !ok {
			continue
		}
		as := slices.Clone(m.addrs[l])
		slices.SortFunc(as, func(a, b netip.Prefix) int { return a.Addr().Compare(b.Addr()) })
		if !slices.Equal(as, m.addrsPub[id]) {
			m.addrsPub[id] = as
			notes = append(notes, addrNote{id, slices.Clone(as)})
		}
	}
	clear(m.addrDirty)
	m.st.Batches++
	m.st.Changes += uint64(len(fc))
	m.st.Routes = len(m.installed)
	m.st.NextHops = len(m.nhs)
	m.st.LastApplied = time.Now()
	m.flushedAt = m.st.Updates
	m.mu.Unlock()
	if m.cfg.OnAddrs != nil {
		for _, n := range notes {
			m.cfg.OnAddrs(n.id, n.as)
		}
	}
}

// String describes a next-hop key (for tests and logs).
func (k nhKey) String() string {
	switch k.kind {
	case nhLocal:
		return "local"
	case nhDrop:
		return "drop"
	case nhGateway:
		return "via " + k.addr.String() + " link " + strconv.Itoa(k.link)
	case nhSubnet:
		return "dev link " + strconv.Itoa(k.link)
	}
	return "group " + k.members
}
