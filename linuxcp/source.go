//go:build linux

package linuxcp

import "github.com/vishvananda/netlink"

// Source is where a Mirror reads the kernel's state: a subscription to link, address, route and
// neighbour notifications, and dumps of the same four tables. NetlinkSource is the kernel's (rtnetlink
// through github.com/vishvananda/netlink); tests drive a Mirror with their own Source and recorded or
// synthesised netlink messages.
//
// A Mirror calls Subscribe first and Dump after it, so that nothing that changes between the two is
// missed: an update that arrives before the dump is applied after it, and being a whole object
// (netlink's are), it leaves the state the kernel has once it is applied.
type Source interface {
	// Subscribe opens the four subscriptions. Updates arrive on the Subscription's channels until
	// done is closed. A lost message (ENOBUFS: the kernel dropped notifications because the socket's
	// receive buffer was full) or any other failure of a subscription is reported on Errors, or by
	// the closing of one of the update channels; the Mirror then closes done and starts over with
	// Subscribe and Dump.
	Subscribe(done <-chan struct{}) (*Subscription, error)
	// Dump returns the kernel's IPv4 addresses, routes of every table and neighbours, and its links.
	Dump() (*Snapshot, error)
}

// Subscription is an open subscription of a Source (see Source.Subscribe).
type Subscription struct {
	Links  <-chan netlink.LinkUpdate
	Addrs  <-chan netlink.AddrUpdate
	Routes <-chan netlink.RouteUpdate
	Neighs <-chan netlink.NeighUpdate
	Errors <-chan error
}

// Snapshot is the kernel's state as a Source dumps it.
type Snapshot struct {
	Links  []netlink.Link
	Addrs  []netlink.Addr
	Routes []netlink.Route
	Neighs []netlink.Neigh
}
