package linuxcp

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/vishvananda/netlink"
)

// IsolatePhysical makes the kernel's network stack ignore the traffic of the physical interface
// ifname (in the calling thread's network namespace), so that a router reading the interface
// through AF_PACKET (which sees every frame before the stack does, and keeps seeing them) is the
// only one to handle its frames, and the kernel takes part only through the TAPs:
//
//   - its IPv4 and IPv6 addresses are removed (with them their connected routes): nothing routes
//     out of it;
//   - ARP is off on it (IFF_NOARP): the kernel neither answers nor sends ARP there;
//   - IPv6 is disabled on it (disable_ipv6): no link-local address, neighbour discovery or MLD;
//   - IPv4 packets arriving on it are dropped by the kernel: strict reverse-path filtering
//     (rp_filter 1) rejects every source, since no route points back out of the interface, and
//     forwarding is off for packets that come in on it (forwarding 0).
//
// The router's own addresses live on the TAPs; with the weak host model a packet for them that
// came in on the physical interface would otherwise be answered by the kernel directly, beside the
// router. It returns restore, which puts back the addresses, the ARP flag and the settings as they
// were. An effective rp_filter of 2 (net.ipv4.conf.all.rp_filter=2, loose) would let packets
// through: IsolatePhysical refuses it with an error rather than change the namespace-wide setting.
//
// On an AF_XDP queue the kernel sees none of the frames the XDP program redirects to the socket,
// so there is nothing to isolate for them; frames on other queues, and frames the program passes,
// reach the stack, and IsolatePhysical covers those as well.
func IsolatePhysical(ifname string) (restore func() error, err error) {
	// The netlink socket and the sysctl files are opened now, in this thread's namespace, and
	// restore uses them: it works from any thread.
	h, err := netlink.NewHandle()
	if err != nil {
		return nil, fmt.Errorf("linuxcp: isolate %s: netlink: %w", ifname, err)
	}
	link, err := h.LinkByName(ifname)
	if err != nil {
		h.Close()
		return nil, fmt.Errorf("linuxcp: isolate %s: %w", ifname, err)
	}
	if all, err := os.ReadFile("/proc/sys/net/ipv4/conf/all/rp_filter"); err == nil && strings.TrimSpace(string(all)) == "2" {
		h.Close()
		return nil, fmt.Errorf("linuxcp: isolate %s: net.ipv4.conf.all.rp_filter is 2 (loose), which overrides the interface's strict setting: set it to 0 or 1", ifname)
	}
	var undo []func() error
	restore = func() error {
		var first error
		for i := len(undo) - 1; i >= 0; i-- {
			if err := undo[i](); err != nil && first == nil {
				first = err
			}
		}
		undo = nil
		if h != nil {
			h.Close()
			h = nil
		}
		return first
	}
	fail := func(err error) (func() error, error) {
		restore()
		return nil, fmt.Errorf("linuxcp: isolate %s: %w", ifname, err)
	}

	addrs, err := h.AddrList(link, netlink.FAMILY_ALL)
	if err != nil {
		return fail(fmt.Errorf("list addresses: %w", err))
	}
	for _, a := range addrs {
		if a.IP.IsLinkLocalUnicast() && a.IP.To4() == nil {
			continue // an IPv6 link-local address: it goes with disable_ipv6, and comes back with it
		}
		a := a
		if err := h.AddrDel(link, &a); err != nil {
			return fail(fmt.Errorf("remove address %s: %w", a.IPNet, err))
		}
		undo = append(undo, func() error {
			b := a
			b.Label = ""
			if err := h.AddrAdd(link, &b); err != nil {
				return fmt.Errorf("linuxcp: restore %s on %s: %w", a.IPNet, ifname, err)
			}
			return nil
		})
	}

	for _, s := range []struct{ key, val string }{
		{"ipv4/conf/" + ifname + "/rp_filter", "1"},
		{"ipv4/conf/" + ifname + "/forwarding", "0"},
		{"ipv4/conf/" + ifname + "/accept_local", "0"},
		{"ipv4/conf/" + ifname + "/arp_ignore", "8"},
		{"ipv6/conf/" + ifname + "/disable_ipv6", "1"},
	} {
		f, err := os.OpenFile("/proc/sys/net/"+s.key, os.O_RDWR, 0)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) && strings.HasPrefix(s.key, "ipv6/") {
				continue // no IPv6 in this kernel
			}
			return fail(err)
		}
		old, err := readSysctl(f)
		if err == nil && old != s.val {
			err = writeSysctl(f, s.val)
		}
		if err != nil || old == s.val {
			f.Close()
			if err != nil {
				return fail(err)
			}
			continue
		}
		undo = append(undo, func() error {
			defer f.Close()
			return writeSysctl(f, old)
		})
	}

	if link.Attrs().RawFlags&uint32(1<<7) == 0 { // IFF_NOARP
		if err := h.LinkSetARPOff(link); err != nil {
			return fail(fmt.Errorf("arp off: %w", err))
		}
		undo = append(undo, func() error {
			if err := h.LinkSetARPOn(link); err != nil {
				return fmt.Errorf("linuxcp: restore arp on %s: %w", ifname, err)
			}
			return nil
		})
	}
	return restore, nil
}

func readSysctl(f *os.File) (string, error) {
	b := make([]byte, 64)
	n, err := f.ReadAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read %s: %w", f.Name(), err)
	}
	return strings.TrimSpace(string(b[:n])), nil
}

func writeSysctl(f *os.File, val string) error {
	if _, err := f.WriteAt([]byte(val), 0); err != nil {
		return fmt.Errorf("write %s=%s: %w", f.Name(), val, err)
	}
	return nil
}
