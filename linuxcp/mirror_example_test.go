//go:build linux

package linuxcp_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"github.com/wirespeed/wirespeed/fib"
	"github.com/wirespeed/wirespeed/linuxcp"
	"golang.org/x/sys/unix"
)

// recorded is a Source that replays one dump and no updates (a NetlinkSource reads the kernel).
type recorded struct{ snap linuxcp.Snapshot }

func (r *recorded) Subscribe(done <-chan struct{}) (*linuxcp.Subscription, error) {
	return &linuxcp.Subscription{}, nil // no channels: no updates
}

func (r *recorded) Dump() (*linuxcp.Snapshot, error) { return &r.snap, nil }

// A Mirror of the kernel's routes and neighbours: a route through a gateway whose neighbour entry
// is REACHABLE becomes a FIB route to a next hop with the gateway's MAC.
func ExampleMirror() {
	_, dst, _ := net.ParseCIDR("198.18.0.0/16")
	src := &recorded{linuxcp.Snapshot{
		Routes: []netlink.Route{{Family: netlink.FAMILY_V4, Table: unix.RT_TABLE_MAIN, Type: unix.RTN_UNICAST,
			Dst: dst, Gw: net.ParseIP("10.0.1.2").To4(), LinkIndex: 2}},
		Neighs: []netlink.Neigh{{Family: netlink.FAMILY_V4, LinkIndex: 2, State: unix.NUD_REACHABLE,
			IP: net.ParseIP("10.0.1.2").To4(), HardwareAddr: net.HardwareAddr{2, 0, 0, 0, 1, 2}}},
	}}
	routes, nhs := fib.New(), new(fib.NextHops)
	m, err := linuxcp.NewMirror(&linuxcp.MirrorConfig{
		Source:   src,                  // nil: the kernel of this network namespace
		Ifaces:   map[int]uint16{2: 0}, // kernel ifindex 2 is the router's interface 0
		Routes:   routes,               // fwd.Config.Routes
		NextHops: nhs,                  // fwd.Config.NextHops
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go m.Run(ctx)
	<-m.Synced()
	idx, _ := routes.Lookup(netip.MustParseAddr("198.18.7.7"))
	hop, _ := nhs.Get(idx)
	fmt.Printf("interface %d, MAC %v\n", hop.Ifindex, net.HardwareAddr(hop.DstMAC[:]))
	// Output: interface 0, MAC 02:00:00:00:01:02
}
