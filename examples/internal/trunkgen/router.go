package trunkgen

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wirespeed/wirespeed/examples/internal/app"
	"github.com/wirespeed/wirespeed/fib"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/fwd"
	"github.com/wirespeed/wirespeed/neigh"
	"github.com/wirespeed/wirespeed/ops"
	"github.com/wirespeed/wirespeed/vlan"
	"github.com/wirespeed/wirespeed/xmit"
)

// The router's physical ports in the VLAN-trunk examples: the trunk (or the aggregate standing for
// it) and the untagged uplink.
const (
	PortTrunk  = 0
	PortUplink = 1
	NumPorts   = 2
)

// Plan is what BuildRouter needs from an example's configuration.
type Plan struct {
	VLANs int // VLAN sub-interfaces (1-200)
	// Neighbours are static next-hop MACs (-nexthop), by interface name ("uplink", "vlanNNN",
	// "trunk" for every VLAN, "*" for every interface): on such an interface the router sends no
	// ARP, every next hop there (the gateway, a connected subnet's hosts, a routes file's next
	// hops) is that MAC.
	Neighbours app.Neighbours
	Gateway    netip.Addr  // the uplink's gateway, resolved by ARP (zero: DefaultGateway)
	Routes     string      // a routes file instead of the built-in routes
	IPRoute    bool        // the routes file is `ip -4 route show` output
	Pool       *frame.Pool // buffers for the frames the router generates and the neighbour table holds (nil: their own)
}

// Errors of BuildRouter's checks, wrapped with the flag and the value at fault.
var (
	ErrNoInterface = errors.New("no such interface")
	ErrNoNextHop   = errors.New("no such next hop")
	ErrGateway     = errors.New("not a neighbour address on the interface's subnet")
)

// UplinkAddr is the router's address on the uplink; VLAN i's is 10.0.i.1/24.
var UplinkAddr = netip.MustParsePrefix("192.0.2.1/24")

// DefaultGateway is the uplink's gateway unless Plan.Gateway says otherwise: the address the
// examples' netns.sh gives the upstream namespace.
var DefaultGateway = netip.MustParseAddr("192.0.2.2")

// HostAddr is host h's address on VLAN i: 10.0.i.h.
func HostAddr(i, h int) netip.Addr { return netip.AddrFrom4([4]byte{10, 0, byte(i), byte(h)}) }

// VLANAddr is the router's address on VLAN i: 10.0.i.1/24.
func VLANAddr(i int) netip.Prefix { return netip.PrefixFrom(HostAddr(i, 1), 24) }

// Next-hop indices. 0 is the uplink's gateway; 1..VLANs are VLAN i's subnet in the built-in table
// (the neighbour table resolves each destination there by ARP) and, in a routes file of fib.Load
// format, the host 10.0.i.2 (a next hop of its own, resolved by ARP); DropNextHop is the drop next
// hop; UplinkSubnet the uplink's subnet; the gateways of an `ip route` file other than the uplink's
// take the indices from UplinkSubnet+1 up to FirstHostNextHop-1; from FirstHostNextHop on, the
// neighbour table gives each host of a connected subnet a next hop of its own.
const FirstHostNextHop = 1024

// DropNextHop is the next hop of blackhole, unreachable and prohibit routes: the one after the VLANs'.
func DropNextHop(vlans int) uint32 { return uint32(vlans) + 1 }

// UplinkSubnet is the next hop of the uplink's subnet (192.0.2.0/24): its hosts are resolved by ARP.
func UplinkSubnet(vlans int) uint32 { return uint32(vlans) + 2 }

// maxNeighbours is the neighbour table's size for vlans VLANs: every host of every connected /24,
// and room for gateways and for senders learnt from their requests.
func maxNeighbours(vlans int) int { return (vlans+1)*254 + 1024 }

// Router is what BuildRouter makes: the forwarding stage, the neighbour table beside it, the demux
// both send through (the Resolver needs it) and the interface names by ID.
type Router struct {
	*fwd.Router
	Table  *neigh.Table
	Demux  *vlan.Demux
	Routes *fib.Table // the route table the stage looks up
	Names  []string
	hosts  *hostRoutes
}

// Source is the operator's view of r (package ops) with the physical ports given and a packet
// trace (nil: none).
func (r *Router) Source(ports []ops.Port, trace *ops.Trace) *ops.Source {
	return &ops.Source{Ports: ports, Stage: r.Router, Neigh: r.Table, Routes: r.Routes, Trace: trace}
}

// FlushRoutes applies the host routes the neighbour table added or removed and that are still
// queued (see hostRoutes). Poll calls it after every batch; a worker loop without that hook calls
// it every millisecond or so (FlushEvery).
func (r *Router) FlushRoutes() { r.hosts.flush() }

// FlushEvery calls FlushRoutes every d until ctx ends.
func (r *Router) FlushEvery(ctx context.Context, d time.Duration) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			r.FlushRoutes()
			return
		case <-t.C:
			r.FlushRoutes()
		}
	}
}

// hostRoutes is the neighbour table's neigh.HostRoutes for the router's fib.Table, batched. Each
// fib.Table.Insert rebuilds the part of the table the prefix falls in, so that thousands of hosts
// resolving at once (the in-memory generator plays 250 per VLAN) would rebuild it thousands of
// times: a change comes into effect at once when none did in the last millisecond, and is queued
// otherwise, the queue applied as one fib.Table.Apply by the next change after the millisecond or
// by flush. Until its route is in, a host's frames take its subnet's next hop to the neighbour
// table (fwd's Unresolved output), which queues them on the host's entry while the host resolves
// and, once it has, hands them straight back to the worker: they go round (counted as held and
// resumed each time) until the route is in. Poll flushes after every batch, before the answers to
// the requests the batch caused can come; FlushEvery bounds the wait to its interval. Safe for
// concurrent use.
type hostRoutes struct {
	t       *fib.Table
	mu      sync.Mutex
	queue   []fib.Change
	last    time.Time // when a change last came into effect
	pending atomic.Bool
}

const hostRouteDelay = time.Millisecond

func (h *hostRoutes) AddHost(a netip.Addr, nh uint32) error {
	if !a.Is4() || nh > fib.MaxNextHop {
		return fmt.Errorf("host route %v to %d: %w", a, nh, fib.ErrNextHopRange)
	}
	h.change(fib.Change{Prefix: netip.PrefixFrom(a, 32), NextHop: nh})
	return nil
}

func (h *hostRoutes) DeleteHost(a netip.Addr) error {
	h.change(fib.Change{Prefix: netip.PrefixFrom(a, 32), Delete: true})
	return nil
}

func (h *hostRoutes) change(c fib.Change) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.queue = append(h.queue, c)
	if now := time.Now(); now.Sub(h.last) >= hostRouteDelay {
		h.applyLocked(now)
		return
	}
	h.pending.Store(true)
}

func (h *hostRoutes) flush() {
	if !h.pending.Load() {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.applyLocked(time.Now())
}

func (h *hostRoutes) applyLocked(now time.Time) {
	if len(h.queue) > 0 {
		h.t.Apply(h.queue) // validated: /32 prefixes, next hops in range
		h.queue = h.queue[:0]
	}
	h.last = now
	h.pending.Store(false)
}

// hop is a next hop a route uses, for the neighbour table: a neighbour to resolve (AddNextHop) or a
// connected subnet (AddSubnet).
type hop struct {
	iface uint16
	addr  netip.Addr // the zero Addr: the interface's subnet
}

// BuildRouter makes the router's tables: the demux (uplink untagged on port 1, VLAN i with VID 100+i
// on the trunk, port 0), the interfaces with the MACs mac gives them, the routes (cfg.Routes, or
// 10.0.i.0/24 on VLAN i, 192.0.2.0/24 on the uplink and a default route via the gateway), and the
// neighbour table that resolves every next hop by ARP: the gateway (cfg.Gateway), each host of a
// connected subnet as traffic for it comes, the hosts and gateways a routes file names. An interface
// with a -nexthop MAC (cfg.Neighbours) has no ARP: its next hops are static, all to that MAC.
// devNames maps more device names (the uplink's real interface name) to interface IDs, for an `ip
// route` file.
//
// It refuses, naming the flag: a VLAN count outside 1-200, a -nexthop name that is none of the
// interfaces (ErrNoInterface) or a MAC that is not unicast (neigh.ErrMAC), a gateway that is not a
// host address of the uplink's subnet other than the router's (ErrGateway), and in a routes file
// what fib's parsers refuse (a prefix with host bits set among them: fib.ErrSyntax), a next hop
// beyond 0..VLANs (ErrNoNextHop), a device that is none of the interfaces (ErrNoInterface) or a
// gateway that is not on its device's subnet (ErrGateway). In an `ip route` file, blackhole,
// unreachable and prohibit routes lead to a drop next hop (DropNextHop), local routes are skipped
// (the router's own addresses are the interfaces' Addrs), a route with a device and no gateway is a
// connected subnet's (its destinations are resolved on the device), and each distinct gateway is a
// next hop of its own.
func BuildRouter(cfg Plan, mac func(id int) frame.MAC, devNames map[string]uint32) (*Router, error) {
	if cfg.VLANs < 1 || cfg.VLANs > 200 {
		return nil, fmt.Errorf("-vlans %d out of range 1-200", cfg.VLANs)
	}
	nb := cfg.Neighbours
	for name, m := range nb {
		if !neighbourName(name, cfg.VLANs) {
			return nil, fmt.Errorf("-nexthop %s: %w (uplink, trunk for every VLAN, vlan%d..vlan%d)", name, ErrNoInterface, VID(1), VID(cfg.VLANs))
		}
		if m[0]&1 != 0 || m == (frame.MAC{}) {
			return nil, fmt.Errorf("-nexthop %s=%v: %w", name, m, neigh.ErrMAC)
		}
	}
	gw := cfg.Gateway
	if !gw.IsValid() {
		gw = DefaultGateway
	}
	if !onSubnet(UplinkAddr, gw) {
		return nil, fmt.Errorf("-gateway %v: %w (a host of %v other than the router's %v)", gw, ErrGateway, UplinkAddr.Masked(), UplinkAddr.Addr())
	}
	cfg.Gateway = gw
	demux := vlan.NewDemux(NumPorts, vlan.Parser{})
	n := cfg.VLANs + 1
	ifaces, nifs, names := make([]fwd.Iface, n), make([]neigh.Iface, n), make([]string, n)
	if err := demux.Add(vlan.Interface{ID: IfUplink, Port: PortUplink}); err != nil {
		return nil, err
	}
	ifaces[IfUplink] = fwd.Iface{Name: "uplink", MAC: mac(IfUplink), Addrs: []netip.Prefix{UplinkAddr}}
	names[IfUplink] = "uplink"
	dev := map[string]uint32{"uplink": IfUplink}
	for k, v := range devNames {
		dev[k] = v
	}
	for i := 1; i <= cfg.VLANs; i++ {
		if err := demux.Add(vlan.Interface{ID: uint16(i), Port: PortTrunk, Outer: vlan.C(VID(i))}); err != nil {
			return nil, err
		}
		name := fmt.Sprintf("vlan%d", VID(i))
		ifaces[i] = fwd.Iface{Name: name, MAC: mac(i), Addrs: []netip.Prefix{VLANAddr(i)}}
		names[i] = name
		dev[name] = uint32(i)
	}
	for i := range ifaces {
		nifs[i] = neigh.Iface{MAC: ifaces[i].MAC, Addrs: ifaces[i].Addrs}
	}
	nexthops := new(fib.NextHops)
	nexthops.Set(DropNextHop(cfg.VLANs), fib.NextHop{Flags: fib.NextHopDrop})
	routes := fib.New()
	hosts := &hostRoutes{t: routes}
	table, err := neigh.New(&neigh.Config{Ifaces: nifs, NextHops: nexthops, Pool: cfg.Pool, MaxEntries: maxNeighbours(cfg.VLANs),
		Hosts: hosts, HostNextHops: neigh.IndexRange{First: FirstHostNextHop, Count: (cfg.VLANs + 1) * 254}})
	if err != nil {
		return nil, err
	}
	hops := map[uint32]hop{}
	var rs []fib.Route
	if cfg.Routes == "" {
		rs = append(rs, fib.Route{Prefix: netip.MustParsePrefix("0.0.0.0/0"), NextHop: 0},
			fib.Route{Prefix: UplinkAddr.Masked(), NextHop: UplinkSubnet(cfg.VLANs)})
		hops[0] = hop{iface: IfUplink, addr: gw}
		hops[UplinkSubnet(cfg.VLANs)] = hop{iface: IfUplink}
		for i := 1; i <= cfg.VLANs; i++ {
			rs = append(rs, fib.Route{Prefix: VLANAddr(i).Masked(), NextHop: uint32(i)})
			hops[uint32(i)] = hop{iface: uint16(i)}
		}
	} else if rs, err = loadRoutes(cfg, dev, hops); err != nil {
		return nil, fmt.Errorf("-routes %s: %w", cfg.Routes, err)
	}
	if err := routes.Replace(rs); err != nil {
		return nil, fmt.Errorf("-routes %s: %w", cfg.Routes, err)
	}
	static := make([]frame.MAC, n) // by interface: the -nexthop MAC, or zero
	for id, name := range names {
		fallback := "trunk"
		if id == IfUplink {
			fallback = ""
		}
		static[id] = nb.Get(name, fallback, frame.MAC{})
	}
	for idx, h := range hops {
		switch {
		case static[h.iface] != (frame.MAC{}):
			err = nexthops.Set(idx, fib.NextHop{Ifindex: h.iface, DstMAC: static[h.iface]})
		case h.addr.IsValid():
			err = table.AddNextHop(idx, h.iface, h.addr)
		default:
			err = table.AddSubnet(idx, h.iface)
		}
		if err != nil {
			return nil, fmt.Errorf("next hop %d (%v on %s): %w", idx, h.addr, names[h.iface], err)
		}
	}
	r, err := fwd.New(demux, &fwd.Config{Ifaces: ifaces, Routes: routes, NextHops: nexthops, Pool: cfg.Pool, HoldUnresolved: true})
	if err != nil {
		return nil, err
	}
	return &Router{Router: r, Table: table, Demux: demux, Routes: routes, Names: names, hosts: hosts}, nil
}

// onSubnet reports whether a is a host address of p's subnet other than p's own address.
func onSubnet(p netip.Prefix, a netip.Addr) bool {
	if !a.Is4() || !p.Contains(a) || a == p.Addr() {
		return false
	}
	b := a.As4()
	host := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	mask := ^uint32(0) >> p.Bits()
	return p.Bits() > 30 || host&mask != 0 && host&mask != mask
}

// neighbourName reports whether name is a -nexthop key: uplink, trunk, * or vlan101..vlan(100+vlans).
func neighbourName(name string, vlans int) bool {
	switch name {
	case "uplink", "trunk", "*":
		return true
	}
	n, ok := strings.CutPrefix(name, "vlan")
	v, err := strconv.Atoi(n)
	return ok && err == nil && n == strconv.Itoa(v) && v >= int(VID(1)) && v <= int(VID(vlans))
}

// loadRoutes reads cfg.Routes (gzip or not) in fib.ParseRoutes format, or fib.ParseIPRoute's with
// cfg.IPRoute (devices looked up in dev), checks every route (no host bits, a next hop that exists)
// and records in hops the next hops the routes use.
func loadRoutes(cfg Plan, dev map[string]uint32, hops map[uint32]hop) ([]fib.Route, error) {
	data, err := os.ReadFile(cfg.Routes)
	if err != nil {
		return nil, err
	}
	if len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, err
		}
		if data, err = io.ReadAll(zr); err != nil {
			return nil, err
		}
	}
	if cfg.IPRoute {
		rs, _, err := fib.ParseIPRoute(bytes.NewReader(data), ipRouteHops(cfg, dev, hops))
		return rs, err
	}
	rs, _, err := fib.ParseRoutes(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	for _, r := range rs {
		switch {
		case r.NextHop > uint32(cfg.VLANs):
			return nil, fmt.Errorf("%v to next hop %d: %w (0 is the upstream gateway, 1..%d the host .2 on VLAN %d..%d)",
				r.Prefix, r.NextHop, ErrNoNextHop, cfg.VLANs, VID(1), VID(cfg.VLANs))
		case r.NextHop == 0:
			hops[0] = hop{iface: IfUplink, addr: cfg.Gateway}
		default:
			hops[r.NextHop] = hop{iface: uint16(r.NextHop), addr: HostAddr(int(r.NextHop), 2)}
		}
	}
	return rs, nil
}

// ipRouteHops is the next-hop function of an `ip route` file: drop types to DropNextHop, local
// routes skipped, a device without a gateway to the device's subnet (VLAN i's next hop i, the
// uplink's UplinkSubnet), the uplink's gateway (cfg.Gateway) to 0, every other gateway to a next hop
// of its own.
func ipRouteHops(cfg Plan, dev map[string]uint32, hops map[uint32]hop) func(h fib.IPRouteNextHop) (uint32, error) {
	gws := map[hop]uint32{{iface: IfUplink, addr: cfg.Gateway}: 0}
	next := UplinkSubnet(cfg.VLANs) + 1
	subnet := func(id uint16) (netip.Prefix, uint32) {
		if id == IfUplink {
			return UplinkAddr, UplinkSubnet(cfg.VLANs)
		}
		return VLANAddr(int(id)), uint32(id)
	}
	return func(h fib.IPRouteNextHop) (uint32, error) {
		switch h.Flags() {
		case fib.NextHopDrop:
			return DropNextHop(cfg.VLANs), nil
		case fib.NextHopLocal:
			return 0, fib.ErrSkipRoute
		}
		id, known := dev[h.Dev]
		if h.Dev != "" && (!known || id > uint32(cfg.VLANs)) {
			return 0, fmt.Errorf("device %q: %w (uplink, vlan%d..vlan%d)", h.Dev, ErrNoInterface, VID(1), VID(cfg.VLANs))
		}
		if !h.Gateway.IsValid() { // a connected subnet's route
			if h.Dev == "" {
				return 0, fmt.Errorf("a route with neither gateway nor device: %w", ErrNoInterface)
			}
			_, idx := subnet(uint16(id))
			hops[idx] = hop{iface: uint16(id)}
			return idx, nil
		}
		if h.Dev == "" { // the interface whose subnet holds the gateway
			id = math.MaxUint32
			for i := range uint32(cfg.VLANs) + 1 {
				if p, _ := subnet(uint16(i)); p.Contains(h.Gateway) {
					id = i
				}
			}
			if id == math.MaxUint32 {
				return 0, fmt.Errorf("via %v: %w (on none of the interfaces' subnets)", h.Gateway, ErrGateway)
			}
		}
		if p, _ := subnet(uint16(id)); !onSubnet(p, h.Gateway) {
			return 0, fmt.Errorf("via %v dev %s: %w (%v)", h.Gateway, h.Dev, ErrGateway, p.Masked())
		}
		k := hop{iface: uint16(id), addr: h.Gateway}
		idx, ok := gws[k]
		if !ok {
			if next >= FirstHostNextHop {
				return 0, fmt.Errorf("via %v: %w (more than %d gateways)", h.Gateway, ErrNoNextHop, FirstHostNextHop-UplinkSubnet(cfg.VLANs)-1)
			}
			idx, next = next, next+1
			gws[k] = idx
		}
		hops[idx] = k
		return idx, nil
	}
}

// Poll is the in-memory examples' worker: it polls ports, takes every batch through r and the
// neighbour resolver res (app.Resolver.Step: ARP answered and learnt from, frames of unresolved
// neighbours held and sent once resolved), runs res's timers (res.Poll) once a millisecond and
// whenever idle, and when idle waits briefly on one of waiters in turn; after ctx ends it keeps going
// until the ports stay empty for a few passes that all began after it saw ctx end (so nothing queued
// before is left behind). It sends a gratuitous ARP for every interface first. It returns the errors
// its Recv and Send calls got.
func Poll(ctx context.Context, r *Router, res *app.Resolver, ports []xmit.Port, waiters []xmit.Waiter, batch int, tap fwd.Tap, every int) app.PortErrors {
	return PollTraced(ctx, r, res, nil, ports, waiters, batch, tap, every)
}

// PollTraced is Poll feeding a packet trace (nil: none): its worker's hook (ops.TraceHook) is
// polled once per round of the ports.
func PollTraced(ctx context.Context, r *Router, res *app.Resolver, trace *ops.Trace, ports []xmit.Port, waiters []xmit.Waiter, batch int, tap fwd.Tap, every int) app.PortErrors {
	var errs app.PortErrors
	out := app.CountSends(ports, &errs)
	w := r.NewWorker(batch)
	hook := trace.Hook(0, w, tap, every)
	res.Announce(out)
	in := frame.NewBatch(batch)
	idle, batches := 0, 0
	draining := false
	lastPoll := time.Now()
	for {
		hook.Poll() // one atomic load while the trace's state is unchanged
		got := false
		for p, port := range ports {
			n, err := port.Recv(in)
			if err != nil {
				errs.RecvError(err)
			}
			if n > 0 {
				hook.Ingress(p)
				res.Step(w, uint16(p), in, out)
				hook.Ingress(-1)
				r.FlushRoutes() // before the replies of the hosts this batch made can come
				got = true
			}
		}
		if got {
			batches++ // once per round: with both ports busy a count per batch could step over the checks below
		}
		if batches&63 == 0 {
			w.Flush()
			res.Flush()
		}
		if !got || batches&15 == 0 {
			if now := time.Now(); !got || now.Sub(lastPoll) >= time.Millisecond {
				res.Poll(w, out)
				lastPoll = now
			}
		}
		if got {
			idle = 0
			continue
		}
		w.Flush()
		res.Flush()
		if !draining && ctx.Err() != nil {
			// Frames queued before ctx ended may have come after this pass polled their port:
			// count empty passes from here on only.
			draining, idle = true, 0
		}
		idle++
		if draining && idle > 3 {
			return errs
		}
		if idle > 16 && len(waiters) > 0 {
			waiters[idle%len(waiters)].Wait(int64(50 * time.Microsecond))
		}
	}
}

// PrintNeighbours prints t's entries as `ip neigh` does, names giving the interface names by ID.
func PrintNeighbours(out io.Writer, t *neigh.Table, names []string) {
	fmt.Fprintln(out, "neighbours:")
	for _, e := range t.Entries() {
		name := fmt.Sprint("if", e.Iface)
		if int(e.Iface) < len(names) {
			name = names[e.Iface]
		}
		if e.MAC == (frame.MAC{}) {
			fmt.Fprintf(out, "  %v dev %s %v\n", e.Addr, name, e.State)
			continue
		}
		fmt.Fprintf(out, "  %v dev %s lladdr %s %v\n", e.Addr, name, e.MAC, e.State)
	}
}
