package fwd

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wirespeed/wirespeed/fib"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/vlan"
)

// Routes is a batched longest-prefix-match table: for each destination address it writes a next-hop
// index to nh, or NoRoute, and returns how many it wrote. It is called once per batch, never per
// frame. *fib.Table is the real one; Static is a tiny one for tests.
type Routes interface {
	LookupBatch(dst []uint32, nh []uint32) int
}

// NoRoute marks a destination without a route.
const NoRoute = fib.NoRoute

// Iface is a logical interface (as numbered in the vlan.Demux) as the router sees it.
type Iface struct {
	Name string
	MAC  frame.MAC // the router's address on it: frames to other unicast MACs are not routed
	MTU  int       // largest IPv4 packet it sends (0: 1500; at least 68)
	// Addrs are the router's addresses on the interface with their subnets (10.0.1.1/24). The
	// first is the source of ICMP errors for frames that came in on it.
	Addrs []netip.Prefix
}

// Config is the stage's configuration. The zero value of every field is a working default.
type Config struct {
	// Ifaces are the logical interfaces, indexed by interface ID; every interface of the demux needs
	// an entry.
	Ifaces []Iface
	// Ports is the number of physical ports (the demux's); 0 means the demux's own count.
	Ports int
	// Routes and NextHops are the route table and its next hops; both may change while workers run
	// (SetRoutes; fib.NextHops updates itself). A nil NextHops is an empty table.
	Routes   Routes
	NextHops *fib.NextHops
	// Pool holds the frames the stage generates (ICMP errors, fragments). nil: New makes one of
	// 1024 buffers.
	Pool *frame.Pool
	// ICMPRate and ICMPBurst size the token bucket of ICMP errors (per second; default 1000 and 50,
	// Linux's). A negative ICMPRate sends none.
	ICMPRate, ICMPBurst int
	// NoEcho hands ICMP echo requests for the router's addresses to Output.Local instead of
	// answering them.
	NoEcho bool
	// DirectedBroadcast forwards packets for the broadcast address of a connected subnet (other than
	// the ingress one) to that subnet's Ethernet broadcast address (RFC 1812 §5.3.5.2; off: dropped).
	DirectedBroadcast bool
	// HoldUnresolved hands frames routed to a next hop flagged fib.NextHopUnresolved to
	// Output.Unresolved, for a neighbour resolver; off, they are dropped (DropUnresolved).
	HoldUnresolved bool
	// Now is the clock of the ICMP limiter in nanoseconds (tests use a fake one); nil: monotonic.
	Now func() int64
}

// ErrConfig is wrapped by every configuration error New returns.
var ErrConfig = errors.New("fwd: bad configuration")

// Router holds the configuration all workers share. Build it with New, then start workers.
type Router struct {
	demux  *vlan.Demux
	ifaces []Iface
	ports  int
	routes atomic.Pointer[routesBox]
	nh     *fib.NextHops
	pool   *frame.Pool
	cfg    Config

	local   addrSet // the router's addresses and its subnets' broadcast addresses
	icmpSrc []uint32
	limit   limiter

	mu      sync.Mutex
	workers []*Worker
	probed  uint8 // ipv4IsTPID's answer: 0 not yet, 1 no, 2 yes
}

type routesBox struct{ r Routes }

// New returns a router over demux's interfaces. A nil cfg means defaults, which forward nothing (no
// routes).
func New(demux *vlan.Demux, cfg *Config) (*Router, error) {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	if demux == nil {
		return nil, fmt.Errorf("%w: no demux", ErrConfig)
	}
	if c.Ports == 0 {
		c.Ports = demux.Ports()
	}
	if c.Ports < 1 || c.Ports > 0xffff {
		return nil, fmt.Errorf("%w: %d ports", ErrConfig, c.Ports)
	}
	for _, id := range demux.Interfaces() {
		if int(id) >= len(c.Ifaces) {
			return nil, fmt.Errorf("%w: demux interface %d has no Iface entry", ErrConfig, id)
		}
	}
	if c.NextHops == nil {
		c.NextHops = new(fib.NextHops)
	}
	if c.Routes == nil {
		c.Routes = &Static{}
	}
	if c.ICMPRate == 0 {
		c.ICMPRate = 1000
	}
	if c.ICMPBurst <= 0 {
		c.ICMPBurst = 50
	}
	if c.Now == nil {
		start := time.Now()
		c.Now = func() int64 { return int64(time.Since(start)) }
	}
	if c.Pool == nil {
		p, err := frame.NewPool(&frame.PoolConfig{Buffers: 1024})
		if err != nil {
			return nil, err
		}
		c.Pool = p
	}
	if c.Pool.Headroom() < 8 || c.Pool.BufSize()-c.Pool.Headroom() < frame.EtherLen+icmpMaxLen {
		return nil, fmt.Errorf("%w: pool buffers of %d bytes with %d of headroom: generated frames need %d bytes and 8 of headroom",
			ErrConfig, c.Pool.BufSize(), c.Pool.Headroom(), frame.EtherLen+icmpMaxLen)
	}
	r := &Router{demux: demux, ifaces: append([]Iface(nil), c.Ifaces...), ports: c.Ports, nh: c.NextHops,
		pool: c.Pool, cfg: c}
	var entries []addrEntry
	r.icmpSrc = make([]uint32, len(r.ifaces))
	var anySrc uint32
	for i := range r.ifaces {
		ifc := &r.ifaces[i]
		if ifc.MTU == 0 {
			ifc.MTU = 1500
		}
		if ifc.MTU < 68 || ifc.MTU > 0xffff {
			return nil, fmt.Errorf("%w: interface %d (%s): MTU %d outside 68-65535", ErrConfig, i, ifc.Name, ifc.MTU)
		}
		ifc.Addrs = append([]netip.Prefix(nil), ifc.Addrs...)
		for _, p := range ifc.Addrs {
			if !p.Addr().Is4() || p.Bits() < 0 {
				return nil, fmt.Errorf("%w: interface %d (%s): %v is not an IPv4 address with a prefix length", ErrConfig, i, ifc.Name, p)
			}
			a := be32(p.Addr().As4())
			if addrClass(a) != classNormal {
				return nil, fmt.Errorf("%w: interface %d (%s): %v is not a unicast address", ErrConfig, i, ifc.Name, p)
			}
			if r.icmpSrc[i] == 0 {
				r.icmpSrc[i] = a
			}
			if anySrc == 0 {
				anySrc = a
			}
			entries = append(entries, addrEntry{addr: a, kind: kindOwn, iface: uint16(i)})
			if p.Bits() <= 30 {
				bc := a | ^uint32(0)>>p.Bits()
				if bc == a {
					return nil, fmt.Errorf("%w: interface %d (%s): %v is its subnet's broadcast address", ErrConfig, i, ifc.Name, p)
				}
				entries = append(entries, addrEntry{addr: bc, kind: kindBroadcast, iface: uint16(i)})
			}
		}
	}
	for i := range r.icmpSrc {
		if r.icmpSrc[i] == 0 {
			r.icmpSrc[i] = anySrc
		}
	}
	var err error
	if r.local, err = newAddrSet(entries); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	r.limit.init(c.ICMPRate, c.ICMPBurst, c.Now)
	r.SetRoutes(c.Routes)
	return r, nil
}

// SetRoutes swaps the route table.
func (r *Router) SetRoutes(rt Routes) { r.routes.Store(&routesBox{rt}) }

// Ifaces returns the interface table.
func (r *Router) Ifaces() []Iface { return r.ifaces }

// NextHops returns the next-hop table.
func (r *Router) NextHops() *fib.NextHops { return r.nh }

// Pool returns the pool of generated frames.
func (r *Router) Pool() *frame.Pool { return r.pool }

// IfaceStats returns interface id's counters (the demux's: received, and sent by the stage).
func (r *Router) IfaceStats(id uint16) vlan.Counters { return r.demux.Stats(id) }

// Counters sums the published counters of every worker. Safe from any goroutine.
func (r *Router) Counters() Counters {
	var c Counters
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, w := range r.workers {
		var x [numCounters]uint64
		for i := range x {
			x[i] = w.pub[i].Load()
		}
		c.add(x)
	}
	c.ICMPRateLimited = r.limit.suppressed.Load()
	return c
}

func be32(a [4]byte) uint32 {
	return uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
}
