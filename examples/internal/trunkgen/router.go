package trunkgen

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/wirespeed/wirespeed/examples/internal/app"
	"github.com/wirespeed/wirespeed/fib"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/fwd"
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
	VLANs      int            // VLAN sub-interfaces (1-200)
	Neighbours app.Neighbours // static neighbour MACs by interface name
	Routes     string         // a routes file instead of the built-in routes
	IPRoute    bool           // the routes file is `ip -4 route show` output
	Pool       *frame.Pool    // buffers for the frames the router generates (nil: its own)
}

// Errors of BuildRouter's checks, wrapped with the flag and the value at fault.
var (
	ErrNoInterface = errors.New("no such interface")
	ErrNoNextHop   = errors.New("no such next hop")
)

// UplinkAddr is the router's address on the uplink; VLAN i's is 10.0.i.1/24.
var UplinkAddr = netip.MustParsePrefix("192.0.2.1/24")

// BuildRouter makes the router's tables: the demux (uplink untagged on port 1, VLAN i with VID
// 100+i on the trunk, port 0), the interfaces with the MACs mac gives them, the next hops (0: the
// upstream gateway, i: host .2 on VLAN i, MACs from cfg.Neighbours or the in-memory defaults) and
// the routes (cfg.Routes, or 10.0.i.0/24 on VLAN i and a default route upstream). devNames maps
// more device names (the uplink's real interface name) to next hops, for an `ip route` file.
//
// It refuses, naming the flag: a VLAN count outside 1-200, a -nexthop name that is none of the
// interfaces (ErrNoInterface), and in a routes file what fib's parsers refuse (a prefix with host
// bits set among them: fib.ErrSyntax), a next hop beyond 0..VLANs (ErrNoNextHop) or a device that is
// none of the interfaces. In an `ip route` file, blackhole, unreachable and prohibit routes lead to
// a drop next hop (DropNextHop) and local routes are skipped (the router's own addresses are the
// interfaces' Addrs).
func BuildRouter(cfg Plan, mac func(id int) frame.MAC, devNames map[string]uint32) (*fwd.Router, []string, error) {
	if cfg.VLANs < 1 || cfg.VLANs > 200 {
		return nil, nil, fmt.Errorf("-vlans %d out of range 1-200", cfg.VLANs)
	}
	nb := cfg.Neighbours
	for name := range nb {
		if !neighbourName(name, cfg.VLANs) {
			return nil, nil, fmt.Errorf("-nexthop %s: %w (uplink, trunk for every VLAN, vlan%d..vlan%d)", name, ErrNoInterface, VID(1), VID(cfg.VLANs))
		}
	}
	demux := vlan.NewDemux(NumPorts, vlan.Parser{})
	ifaces := make([]fwd.Iface, cfg.VLANs+1)
	names := make([]string, cfg.VLANs+1)
	if err := demux.Add(vlan.Interface{ID: IfUplink, Port: PortUplink}); err != nil {
		return nil, nil, err
	}
	ifaces[IfUplink] = fwd.Iface{Name: "uplink", MAC: mac(IfUplink), Addrs: []netip.Prefix{UplinkAddr}}
	names[IfUplink] = "uplink"
	nexthops := new(fib.NextHops)
	var changes []fib.Change
	nexthops.Set(0, fib.NextHop{Ifindex: IfUplink, DstMAC: nb.Get("uplink", "", GatewayMAC)}) // nh 0: upstream
	nexthops.Set(DropNextHop(cfg.VLANs), fib.NextHop{Flags: fib.NextHopDrop})
	changes = append(changes, fib.Change{Prefix: netip.MustParsePrefix("0.0.0.0/0"), NextHop: 0})
	dev := map[string]uint32{"uplink": 0}
	for k, v := range devNames {
		dev[k] = v
	}
	for i := 1; i <= cfg.VLANs; i++ {
		if err := demux.Add(vlan.Interface{ID: uint16(i), Port: PortTrunk, Outer: vlan.C(VID(i))}); err != nil {
			return nil, nil, err
		}
		name := fmt.Sprintf("vlan%d", VID(i))
		ifaces[i] = fwd.Iface{Name: name, MAC: mac(i), Addrs: []netip.Prefix{netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 0, byte(i), 1}), 24)}}
		names[i] = name
		dev[name] = uint32(i)
		nexthops.Set(uint32(i), fib.NextHop{Ifindex: uint16(i), DstMAC: nb.Get(name, "trunk", HostMAC(i, 2))})
		changes = append(changes, fib.Change{Prefix: netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 0, byte(i), 0}), 24), NextHop: uint32(i)})
	}
	routes := fib.New()
	if cfg.Routes == "" {
		if err := routes.Apply(changes); err != nil {
			return nil, nil, err
		}
	} else {
		rs, err := loadRoutes(cfg, dev)
		if err != nil {
			return nil, nil, fmt.Errorf("-routes %s: %w", cfg.Routes, err)
		}
		if err := routes.Replace(rs); err != nil {
			return nil, nil, fmt.Errorf("-routes %s: %w", cfg.Routes, err)
		}
	}
	r, err := fwd.New(demux, &fwd.Config{Ifaces: ifaces, Routes: routes, NextHops: nexthops, Pool: cfg.Pool})
	return r, names, err
}

// DropNextHop is the next hop of blackhole, unreachable and prohibit routes: the one after the VLANs'.
func DropNextHop(vlans int) uint32 { return uint32(vlans) + 1 }

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
// cfg.IPRoute (devices looked up in dev), and checks every route: no host bits, a next hop that
// exists.
func loadRoutes(cfg Plan, dev map[string]uint32) ([]fib.Route, error) {
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
	var rs []fib.Route
	if cfg.IPRoute {
		rs, _, err = fib.ParseIPRoute(bytes.NewReader(data), func(h fib.IPRouteNextHop) (uint32, error) {
			switch h.Flags() {
			case fib.NextHopDrop:
				return DropNextHop(cfg.VLANs), nil
			case fib.NextHopLocal:
				return 0, fib.ErrSkipRoute
			}
			if i, ok := dev[h.Dev]; ok {
				return i, nil
			}
			return 0, fmt.Errorf("device %q: %w (uplink, vlan%d..vlan%d)", h.Dev, ErrNoInterface, VID(1), VID(cfg.VLANs))
		})
	} else {
		rs, _, err = fib.ParseRoutes(bytes.NewReader(data))
	}
	if err != nil {
		return nil, err
	}
	for _, r := range rs {
		if r.NextHop > uint32(cfg.VLANs) && !(cfg.IPRoute && r.NextHop == DropNextHop(cfg.VLANs)) {
			return nil, fmt.Errorf("%v to next hop %d: %w (0 is the upstream gateway, 1..%d the host on VLAN %d..%d)",
				r.Prefix, r.NextHop, ErrNoNextHop, cfg.VLANs, VID(1), VID(cfg.VLANs))
		}
	}
	return rs, nil
}

// Poll is the in-memory examples' worker: it polls ports, forwards every batch through r, and when
// idle waits briefly on one of waiters in turn; after ctx ends it keeps going until the ports stay
// empty for a few passes that all began after it saw ctx end (so nothing queued before is left
// behind). It returns the errors its Recv and Send calls got.
func Poll(ctx context.Context, r *fwd.Router, ports []xmit.Port, waiters []xmit.Waiter, batch int, tap fwd.Tap, every int) app.PortErrors {
	var errs app.PortErrors
	out := app.CountSends(ports, &errs)
	w := r.NewWorker(batch)
	if tap != nil {
		w.SetTap(tap, every)
	}
	in := frame.NewBatch(batch)
	idle, batches := 0, 0
	draining := false
	for {
		got := false
		for p, port := range ports {
			n, err := port.Recv(in)
			if err != nil {
				errs.RecvError(err)
			}
			if n > 0 {
				w.Forward(uint16(p), in, out)
				got = true
				batches++
			}
		}
		if batches&63 == 0 {
			w.Flush()
		}
		if got {
			idle = 0
			continue
		}
		w.Flush()
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
