package linuxcp

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// DefaultReceiveBuffer is NetlinkSource's receive buffer per subscription socket when none is given:
// 32 MiB, room for about 200,000 route notifications between two reads.
const DefaultReceiveBuffer = 32 << 20

// NetlinkSource is the kernel's rtnetlink, in the network namespace NS (0: the caller's), read through
// github.com/vishvananda/netlink: four multicast subscriptions (links, IPv4 addresses, routes and
// neighbours; each its own socket) and dumps.
//
// Every subscription socket gets a receive buffer of ReceiveBuffer bytes (0: DefaultReceiveBuffer; a
// negative value leaves the kernel's default), set with SO_RCVBUFFORCE, which passes
// net.core.rmem_max but needs CAP_NET_ADMIN (without it, SO_RCVBUF is used and the kernel caps it at
// rmem_max). A full buffer makes the kernel drop notifications and report ENOBUFS on the next read;
// the subscription then ends with that error on Errors.
type NetlinkSource struct {
	NS            netns.NsHandle
	ReceiveBuffer int

	queue int // route updates parsed ahead of the Mirror (0: 1024)
}

func (s *NetlinkSource) ns() netns.NsHandle {
	if s.NS == 0 {
		return netns.None()
	}
	return s.NS
}

// Subscribe implements Source.
func (s *NetlinkSource) Subscribe(done <-chan struct{}) (*Subscription, error) {
	q := s.queue
	if q == 0 {
		q = 1024
	}
	links := make(chan netlink.LinkUpdate, 64)
	addrs := make(chan netlink.AddrUpdate, 64)
	routes := make(chan netlink.RouteUpdate, q)
	neighs := make(chan netlink.NeighUpdate, 256)
	errs := make(chan error, 8)
	report := func(what string) func(error) {
		return func(err error) {
			select {
			case errs <- fmt.Errorf("linuxcp: %s subscription: %w", what, err):
			default: // one report is enough to start over
			}
		}
	}
	buf, force := s.ReceiveBuffer, true
	switch {
	case buf == 0:
		buf = DefaultReceiveBuffer
	case buf < 0:
		buf = 0
	}
	ns := s.ns()
	for attempt := 0; ; attempt++ {
		err := subscribe(ns, done, links, addrs, routes, neighs, report, buf, force)
		if err == nil {
			break
		}
		if force && errors.Is(err, unix.EPERM) && attempt == 0 {
			force = false // no CAP_NET_ADMIN: SO_RCVBUF, capped at rmem_max
			links, addrs = make(chan netlink.LinkUpdate, 64), make(chan netlink.AddrUpdate, 64)
			routes, neighs = make(chan netlink.RouteUpdate, q), make(chan netlink.NeighUpdate, 256)
			continue
		}
		return nil, err
	}
	return &Subscription{Links: links, Addrs: addrs, Routes: routes, Neighs: neighs, Errors: errs}, nil
}

func subscribe(ns netns.NsHandle, done <-chan struct{}, links chan netlink.LinkUpdate, addrs chan netlink.AddrUpdate,
	routes chan netlink.RouteUpdate, neighs chan netlink.NeighUpdate, report func(string) func(error), buf int, force bool) error {
	// The library closes a subscription's socket when done is closed; one that failed to open is
	// closed through its own done channel, so the ones opened before it are not left behind.
	if err := netlink.LinkSubscribeWithOptions(links, done, netlink.LinkSubscribeOptions{
		Namespace: &ns, ErrorCallback: report("link"), ReceiveBufferSize: buf, ReceiveBufferForceSize: force}); err != nil {
		return fmt.Errorf("linuxcp: link subscription: %w", err)
	}
	if err := netlink.AddrSubscribeWithOptions(addrs, done, netlink.AddrSubscribeOptions{
		Namespace: &ns, ErrorCallback: report("address"), ReceiveBufferSize: buf, ReceiveBufferForceSize: force}); err != nil {
		return fmt.Errorf("linuxcp: address subscription: %w", err)
	}
	if err := netlink.RouteSubscribeWithOptions(routes, done, netlink.RouteSubscribeOptions{
		Namespace: &ns, ErrorCallback: report("route"), ReceiveBufferSize: buf, ReceiveBufferForceSize: force}); err != nil {
		return fmt.Errorf("linuxcp: route subscription: %w", err)
	}
	if err := netlink.NeighSubscribeWithOptions(neighs, done, netlink.NeighSubscribeOptions{
		Namespace: &ns, ErrorCallback: report("neighbour"), ReceiveBufferSize: buf, ReceiveBufferForceSize: force}); err != nil {
		return fmt.Errorf("linuxcp: neighbour subscription: %w", err)
	}
	return nil
}

// Dump implements Source. A dump the kernel reports interrupted (the table changed while it was
// read: NLM_F_DUMP_INTR) is taken again, up to 10 times.
func (s *NetlinkSource) Dump() (*Snapshot, error) {
	h, err := netlink.NewHandleAt(s.ns(), unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("linuxcp: netlink handle: %w", err)
	}
	defer h.Close()
	var snap Snapshot
	for attempt := 0; ; attempt++ {
		snap, err = dumpOnce(h)
		if err == nil || !errors.Is(err, netlink.ErrDumpInterrupted) || attempt == 9 {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	return &snap, nil
}

func dumpOnce(h *netlink.Handle) (Snapshot, error) {
	var s Snapshot
	var err error
	if s.Links, err = h.LinkList(); err != nil {
		return s, fmt.Errorf("linuxcp: link dump: %w", err)
	}
	if s.Addrs, err = h.AddrList(nil, netlink.FAMILY_V4); err != nil {
		return s, fmt.Errorf("linuxcp: address dump: %w", err)
	}
	if s.Routes, err = h.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: unix.RT_TABLE_UNSPEC}, netlink.RT_FILTER_TABLE); err != nil {
		return s, fmt.Errorf("linuxcp: route dump: %w", err)
	}
	if s.Neighs, err = h.NeighList(0, netlink.FAMILY_V4); err != nil {
		return s, fmt.Errorf("linuxcp: neighbour dump: %w", err)
	}
	return s, nil
}

// Resolve implements Resolver: it asks the kernel to resolve addr on link (RTM_NEWNEIGH with
// NTF_USE, creating the entry if needed), as a packet to it would.
func (s *NetlinkSource) Resolve(link int, addr netip.Addr) error {
	h, err := netlink.NewHandleAt(s.ns(), unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("linuxcp: netlink handle: %w", err)
	}
	defer h.Close()
	if err := h.NeighSet(&netlink.Neigh{LinkIndex: link, Family: netlink.FAMILY_V4, IP: addr.AsSlice(), Flags: netlink.NTF_USE}); err != nil {
		return fmt.Errorf("linuxcp: resolve %v: %w", addr, err)
	}
	return nil
}
