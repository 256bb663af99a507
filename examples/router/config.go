package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/wirespeed/wirespeed/examples/internal/app"
	"github.com/wirespeed/wirespeed/fib"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/fwd"
	"github.com/wirespeed/wirespeed/neigh"
	"github.com/wirespeed/wirespeed/vlan"
)

// Config is the router's configuration: its ports, its static neighbours and its routes.
type Config struct {
	Backend  app.Backend
	Ports    []PortSpec
	Neigh    []Neighbour
	Routes   []RouteSpec
	Workers  int
	Spin     bool          // workers poll idle ports instead of blocking (afpacket, afxdp)
	IdleSpin time.Duration // workers poll idle ports this long before they block (app.Options.IdleSpin)
	Batch    int
	Duration time.Duration
	Interval time.Duration
	Rate     int // mem: generator frames per second per direction (0: as fast as the router takes them)
	// The operator's flags: -metrics, -metrics-any, -log, -view, -top, -per-worker.
	app.OperatorFlags
	// LinuxCP makes the kernel the control plane (afpacket, afxdp): a TAP per port named TapPrefix
	// and the port's index, the router's addresses on the TAPs, ARP by the kernel.
	LinuxCP   bool
	TapPrefix string

	ready        func()            // called once the ports are open and the workers started (tests)
	everyKind    bool              // mem: the generator runs past ctx until the hosts got every kind of frame back, 60 s at most (tests)
	metricsReady func(addr string) // called with the metrics endpoint's address once it listens (tests)
	stopped      func()            // called once the workers have stopped, before the endpoint closes (tests)
	logw         io.Writer         // the event log's destination (nil: stderr)
}

// PortSpec is one -port flag: an interface, the router's address on it, its MTU. With -linuxcp the
// address is optional (it is put on the port's TAP; the TAP's addresses are the router's).
type PortSpec struct {
	Name string
	Addr netip.Prefix // the zero Prefix: none given
	MTU  int
}

// Neighbour is one -neigh flag: a neighbour's IPv4 address and MAC.
type Neighbour struct {
	Addr netip.Addr
	MAC  frame.MAC
}

// RouteSpec is one -route flag: a prefix and its gateway.
type RouteSpec struct {
	Prefix netip.Prefix
	Via    netip.Addr
}

func defaultConfig() Config {
	return Config{Backend: app.Mem, Workers: 1, Batch: 64, Duration: 5 * time.Second, Interval: time.Second, OperatorFlags: app.DefaultOperatorFlags(), TapPrefix: "ws"}
}

// The in-memory network: two ports, 10.0.1.0/24 and 10.0.2.0/24, with host .2 on each.
func memPorts() []PortSpec {
	return []PortSpec{
		{Name: "port0", Addr: netip.MustParsePrefix("10.0.1.1/24"), MTU: 1500},
		{Name: "port1", Addr: netip.MustParsePrefix("10.0.2.1/24"), MTU: 1500},
	}
}

// memHostMAC is the MAC of the in-memory host on port p.
func memHostMAC(p int) frame.MAC { return frame.MAC{0x02, 0x68, 0x6f, 0x73, 0x74, byte(p)} }

// memRouterMAC is the router's MAC on in-memory port p.
func memRouterMAC(p int) frame.MAC { return frame.MAC{0x02, 0x77, 0x73, 0x72, 0x74, byte(p)} }

// portsFlag, neighFlag and routeFlag parse the repeatable flags.
type portsFlag struct{ c *Config }

func (f portsFlag) String() string { return "" }

// Set takes NAME,ADDR/LEN[,mtu=N] (with -linuxcp also NAME or NAME,mtu=N).
func (f portsFlag) Set(v string) error {
	parts := strings.Split(v, ",")
	if len(parts) > 3 || parts[0] == "" {
		return errors.New("want NAME,ADDR/LEN[,mtu=N]")
	}
	spec := PortSpec{Name: parts[0], MTU: 1500}
	for i, part := range parts[1:] {
		if m, ok := strings.CutPrefix(part, "mtu="); ok {
			n, err := strconv.Atoi(m)
			if err != nil || n < 68 || n > 65535 {
				return fmt.Errorf("%q: want mtu=N with N in 68-65535", part)
			}
			spec.MTU = n
			continue
		}
		p, err := netip.ParsePrefix(part)
		if i > 0 || err != nil || !p.Addr().Is4() {
			return fmt.Errorf("%q: not an IPv4 address with a prefix length (10.0.1.1/24)", part)
		}
		spec.Addr = p
	}
	f.c.Ports = append(f.c.Ports, spec)
	return nil
}

type neighFlag struct{ c *Config }

func (f neighFlag) String() string { return "" }

// Set takes IP=MAC.
func (f neighFlag) Set(v string) error {
	ip, mac, ok := strings.Cut(v, "=")
	if !ok {
		return errors.New("want IP=MAC")
	}
	a, err := netip.ParseAddr(ip)
	if err != nil || !a.Is4() {
		return fmt.Errorf("%q: not an IPv4 address", ip)
	}
	hw, err := net.ParseMAC(mac)
	if err != nil || len(hw) != 6 {
		return fmt.Errorf("%q: not a MAC address", mac)
	}
	f.c.Neigh = append(f.c.Neigh, Neighbour{Addr: a, MAC: frame.MAC(hw)})
	return nil
}

type routeFlag struct{ c *Config }

func (f routeFlag) String() string { return "" }

// Set takes PREFIX,via=GATEWAY.
func (f routeFlag) Set(v string) error {
	pfx, gw, ok := strings.Cut(v, ",")
	gw, ok2 := strings.CutPrefix(gw, "via=")
	if !ok || !ok2 {
		return errors.New("want PREFIX,via=GATEWAY (0.0.0.0/0,via=10.0.2.254)")
	}
	p, err := netip.ParsePrefix(pfx)
	if err != nil || !p.Addr().Is4() {
		return fmt.Errorf("%q: not an IPv4 prefix", pfx)
	}
	if p.Masked() != p {
		return fmt.Errorf("%q has host bits set (%v?)", pfx, p.Masked())
	}
	a, err := netip.ParseAddr(gw)
	if err != nil || !a.Is4() {
		return fmt.Errorf("%q: not an IPv4 address", gw)
	}
	f.c.Routes = append(f.c.Routes, RouteSpec{Prefix: p, Via: a})
	return nil
}

// check validates the whole configuration.
func (c *Config) check() error {
	switch {
	case app.CheckIdleSpin(c.IdleSpin) != nil:
		return app.CheckIdleSpin(c.IdleSpin)
	case c.Workers < 1 || c.Workers > 64:
		return fmt.Errorf("-workers %d: want 1-64", c.Workers)
	case c.Batch < 1 || c.Batch > 1024:
		return fmt.Errorf("-batch %d: want 1-1024", c.Batch)
	case c.Duration < 0:
		return fmt.Errorf("-duration %v: want 0 (until Ctrl-C) or more", c.Duration)
	case c.Interval <= 0:
		return fmt.Errorf("-interval %v: want more than 0", c.Interval)
	case c.Rate < 0:
		return fmt.Errorf("-rate %d: want 0 or more", c.Rate)
	case c.Backend == app.Mem && c.Workers != 1:
		return errors.New("-workers: the in-memory network has one worker")
	}
	if err := c.OperatorFlags.Check(); err != nil {
		return err
	}
	if c.Backend != app.Mem && len(c.Ports) < 2 {
		return fmt.Errorf("-backend %s needs at least two -port flags", c.Backend)
	}
	names := map[string]bool{}
	for _, p := range c.Ports {
		if names[p.Name] {
			return fmt.Errorf("-port %s given twice", p.Name)
		}
		names[p.Name] = true
		if !p.Addr.IsValid() && !c.LinuxCP {
			return fmt.Errorf("-port %s: want NAME,ADDR/LEN[,mtu=N] (only -linuxcp takes the addresses from the kernel)", p.Name)
		}
	}
	if c.LinuxCP {
		switch {
		case c.Backend == app.Mem:
			return errors.New("-linuxcp needs -backend afpacket or afxdp")
		case len(c.Neigh)+len(c.Routes) > 0:
			return errors.New("-linuxcp: routes and neighbours are the kernel's (ip route, ip neigh on the TAPs), not -route or -neigh")
		case c.TapPrefix == "" || len(tapName(c.TapPrefix, len(c.Ports)-1)) > 15 || strings.ContainsAny(c.TapPrefix, "/ %:"):
			return fmt.Errorf("-tap-prefix %q: want a short interface name prefix (TAP names are at most 15 bytes)", c.TapPrefix)
		}
	}
	return nil
}

// hostNextHops are the next-hop indices the neighbour table gives hosts of connected subnets.
var hostNextHops = neigh.IndexRange{First: 1 << 15, Count: 1 << 14}

// parts is a router built from a Config: the forwarding stage, the neighbour table beside it, and
// the VLAN demux both send through.
type parts struct {
	router *fwd.Router
	table  *neigh.Table
	demux  *vlan.Demux
	routes *fib.Table
}

// build makes the router: interface i is port i, untagged, with next hop i for its connected
// subnet, whose hosts the neighbour table resolves by ARP (each gets a /32 route to a next hop of
// its own); -neigh entries are permanent; -route j goes to next hop ports+j, the gateway's, which the
// table resolves too.
func build(c Config, macs []frame.MAC, pool *frame.Pool) (*parts, error) {
	n := len(c.Ports)
	if pool == nil {
		var err error
		if pool, err = frame.NewPool(&frame.PoolConfig{Buffers: 1024}); err != nil {
			return nil, err
		}
	}
	demux := vlan.NewDemux(n, vlan.Parser{})
	ifaces := make([]fwd.Iface, n)
	nifs := make([]neigh.Iface, n)
	nh := new(fib.NextHops)
	routes := fib.New()
	for i, p := range c.Ports {
		if err := demux.Add(vlan.Interface{ID: uint16(i), Port: uint16(i)}); err != nil {
			return nil, err
		}
		ifaces[i] = fwd.Iface{Name: p.Name, MAC: macs[i], MTU: p.MTU, Addrs: []netip.Prefix{p.Addr}}
		nifs[i] = neigh.Iface{MAC: macs[i], Addrs: []netip.Prefix{p.Addr}}
	}
	table, err := neigh.New(&neigh.Config{Ifaces: nifs, NextHops: nh, Pool: pool, Hosts: neigh.FIBHosts(routes), HostNextHops: hostNextHops})
	if err != nil {
		return nil, err
	}
	portOf := func(a netip.Addr) int {
		for i, p := range c.Ports {
			if p.Addr.Contains(a) {
				return i
			}
		}
		return -1
	}
	for i, p := range c.Ports {
		if err := routes.Insert(p.Addr.Masked(), uint32(i)); err != nil {
			return nil, err
		}
		if err := table.AddSubnet(uint32(i), uint16(i)); err != nil {
			return nil, err
		}
	}
	seen := map[netip.Addr]bool{}
	for _, nb := range c.Neigh {
		port := portOf(nb.Addr)
		if port < 0 {
			return nil, fmt.Errorf("-neigh %v: on none of the ports' subnets", nb.Addr)
		}
		if seen[nb.Addr] {
			return nil, fmt.Errorf("-neigh %v given twice", nb.Addr)
		}
		seen[nb.Addr] = true
		if err := table.AddStatic(uint16(port), nb.Addr, nb.MAC); err != nil {
			return nil, fmt.Errorf("-neigh %v: %w", nb.Addr, err)
		}
	}
	for j, r := range c.Routes {
		port := portOf(r.Via)
		if port < 0 {
			return nil, fmt.Errorf("-route %v via %v: the gateway is on none of the ports' subnets", r.Prefix, r.Via)
		}
		idx := uint32(n + j)
		if err := table.AddNextHop(idx, uint16(port), r.Via); err != nil {
			return nil, fmt.Errorf("-route %v via %v: %w", r.Prefix, r.Via, err)
		}
		if err := routes.Insert(r.Prefix, idx); err != nil {
			return nil, err
		}
	}
	router, err := fwd.New(demux, &fwd.Config{Ifaces: ifaces, Routes: routes, NextHops: nh, Pool: pool, HoldUnresolved: true})
	if err != nil {
		return nil, err
	}
	return &parts{router: router, table: table, demux: demux, routes: routes}, nil
}
