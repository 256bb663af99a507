package trunkgen

import (
	"context"
	"fmt"
	"net/netip"
	"os"
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

// UplinkAddr is the router's address on the uplink; VLAN i's is 10.0.i.1/24.
var UplinkAddr = netip.MustParsePrefix("192.0.2.1/24")

// BuildRouter makes the router's tables: the demux (uplink untagged on port 1, VLAN i with VID
// 100+i on the trunk, port 0), the interfaces with the MACs mac gives them, the next hops (0: the
// upstream gateway, i: host .2 on VLAN i, MACs from cfg.Neighbours or the in-memory defaults) and
// the routes (cfg.Routes, or 10.0.i.0/24 on VLAN i and a default route upstream). uplinkDev is the
// uplink's real interface name, which an `ip route` file may use as a device name.
func BuildRouter(cfg Plan, mac func(id int) frame.MAC, devNames map[string]uint32) (*fwd.Router, []string, error) {
	if cfg.VLANs < 1 || cfg.VLANs > 200 {
		return nil, nil, fmt.Errorf("-vlans %d out of range 1-200", cfg.VLANs)
	}
	nb := cfg.Neighbours
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
	switch {
	case cfg.Routes == "":
		if err := routes.Apply(changes); err != nil {
			return nil, nil, err
		}
	default:
		f, err := os.Open(cfg.Routes)
		if err != nil {
			return nil, nil, err
		}
		defer f.Close()
		if cfg.IPRoute {
			_, err = routes.LoadIPRoute(f, func(h fib.IPRouteNextHop) (uint32, error) {
				if i, ok := dev[h.Dev]; ok {
					return i, nil
				}
				return 0, fmt.Errorf("device %q is none of the router's interfaces (uplink, vlan%d..vlan%d)", h.Dev, VID(1), VID(cfg.VLANs))
			})
		} else {
			_, err = routes.Load(f)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("-routes %s: %w", cfg.Routes, err)
		}
	}
	r, err := fwd.New(demux, &fwd.Config{Ifaces: ifaces, Routes: routes, NextHops: nexthops, Pool: cfg.Pool})
	return r, names, err
}

// Poll is the in-memory examples' worker: it polls ports, forwards every batch through r, and when
// idle waits briefly on one of waiters in turn; after ctx ends it keeps going until the ports stay
// empty (so nothing already queued is left behind).
func Poll(ctx context.Context, r *fwd.Router, ports []xmit.Port, waiters []xmit.Waiter, batch int, tap fwd.Tap, every int) {
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
			if n, _ := port.Recv(in); n > 0 {
				w.Forward(uint16(p), in, ports)
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
			draining = true
		}
		idle++
		if draining && idle > 3 {
			return
		}
		if idle > 16 && len(waiters) > 0 {
			waiters[idle%len(waiters)].Wait(int64(50 * time.Microsecond))
		}
	}
}
