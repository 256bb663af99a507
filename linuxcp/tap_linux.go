package linuxcp

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/wirespeed/wirespeed/frame"
)

// TAP is a kernel TAP interface (IFF_TAP, IFF_NO_PI: whole Ethernet frames, no packet-information
// header) opened by this process: what the process writes to it the kernel receives on the
// interface, and what the kernel sends on the interface the process reads.
//
// Concurrency: one goroutine at a time calls Read and one at a time calls Write (they may be two
// different goroutines); Name, Ifindex and Close may be called from any goroutine. Close makes a
// blocked Read or Write return.
type TAP struct {
	name    string
	ifindex int
	file    *os.File
	rc      syscall.RawConn
	nl      *netlink.Handle // opened in the TAP's namespace, for Addrs and AddAddr

	// The state of the Read in progress, kept here so that RawConn.Read gets a method value made
	// once (a closure per call would allocate).
	rbufs  [][]byte
	rsizes []int
	rn     int
	rerr   error
	readFn func(fd uintptr) bool

	wbufs   [][]byte
	wn      int
	wfailed int
	werr    error
	writeFn func(fd uintptr) bool
}

// OpenTAP creates the TAP interface name (or attaches to a persistent one of that name) in the
// calling thread's network namespace (the TAP's methods work in that namespace from any thread), gives it the address mac and the MTU mtu (0: leave it) and
// sets it up. The interface lives as long as the TAP is open (unless it was made persistent
// elsewhere). Attributes are set through rtnetlink (github.com/vishvananda/netlink).
func OpenTAP(name string, mac frame.MAC, mtu int) (*TAP, error) {
	if name == "" || len(name) >= unix.IFNAMSIZ {
		return nil, fmt.Errorf("linuxcp: TAP name %q: want 1-%d bytes", name, unix.IFNAMSIZ-1)
	}
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("linuxcp: open /dev/net/tun: %w", err)
	}
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("linuxcp: TAP name %q: %w", name, err)
	}
	ifr.SetUint16(unix.IFF_TAP | unix.IFF_NO_PI)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("linuxcp: ioctl TUNSETIFF %s: %w", name, err)
	}
	t := &TAP{name: ifr.Name(), file: os.NewFile(uintptr(fd), "/dev/net/tun:"+ifr.Name())}
	if t.rc, err = t.file.SyscallConn(); err != nil {
		t.file.Close()
		return nil, fmt.Errorf("linuxcp: TAP %s: %w", t.name, err)
	}
	t.readFn, t.writeFn = t.readSome, t.writeAll
	if t.nl, err = netlink.NewHandle(); err != nil {
		t.file.Close()
		return nil, fmt.Errorf("linuxcp: TAP %s: netlink: %w", t.name, err)
	}
	if err := t.setLink(mac, mtu); err != nil {
		t.nl.Close()
		t.file.Close()
		return nil, err
	}
	return t, nil
}

func (t *TAP) setLink(mac frame.MAC, mtu int) error {
	link, err := t.nl.LinkByName(t.name)
	if err != nil {
		return fmt.Errorf("linuxcp: TAP %s: netlink: %w", t.name, err)
	}
	if mac != (frame.MAC{}) && !bytes.Equal(link.Attrs().HardwareAddr, mac[:]) {
		if err := t.nl.LinkSetHardwareAddr(link, net.HardwareAddr(mac[:])); err != nil {
			return fmt.Errorf("linuxcp: TAP %s: set address %s: %w", t.name, mac, err)
		}
	}
	if mtu > 0 && link.Attrs().MTU != mtu {
		if err := t.nl.LinkSetMTU(link, mtu); err != nil {
			return fmt.Errorf("linuxcp: TAP %s: set MTU %d: %w", t.name, mtu, err)
		}
	}
	if err := t.nl.LinkSetUp(link); err != nil {
		return fmt.Errorf("linuxcp: TAP %s: set up: %w", t.name, err)
	}
	t.ifindex = link.Attrs().Index
	return nil
}

// Name returns the interface's name.
func (t *TAP) Name() string { return t.name }

// Ifindex returns the interface's index in its network namespace.
func (t *TAP) Ifindex() int { return t.ifindex }

// Read waits until the kernel has sent at least one frame on the interface, then reads as many as
// are queued, up to len(bufs), without waiting again: frame i lands in bufs[i] and its length in
// sizes[i]. A frame larger than its buffer is cut to it, and sizes[i] is then the frame's whole
// length, larger than len(bufs[i]) (read(2) on a TAP returns it): give buffers larger than the
// MTU's frames, and check. It returns
// the number of frames read; the error is the first read(2) error (the frames before it are read),
// or os.ErrClosed wrapped after Close.
func (t *TAP) Read(bufs [][]byte, sizes []int) (int, error) {
	if len(bufs) == 0 {
		return 0, nil
	}
	t.rbufs, t.rsizes, t.rn, t.rerr = bufs, sizes[:len(bufs)], 0, nil
	err := t.rc.Read(t.readFn)
	n, rerr := t.rn, t.rerr
	t.rbufs, t.rsizes = nil, nil
	if err != nil {
		return n, fmt.Errorf("linuxcp: TAP %s: read: %w", t.name, err)
	}
	if rerr != nil {
		return n, fmt.Errorf("linuxcp: TAP %s: read: %w", t.name, rerr)
	}
	return n, nil
}

// readSome reads frames until the queue is empty or bufs are full; it returns false (wait for the
// descriptor to be readable) only when it read nothing.
func (t *TAP) readSome(fd uintptr) bool {
	for t.rn < len(t.rbufs) {
		m, err := unix.Read(int(fd), t.rbufs[t.rn])
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return t.rn > 0
		case err != nil:
			t.rerr = err
			return true
		}
		t.rsizes[t.rn] = m
		t.rn++
	}
	return true
}

// Write hands every frame of frames to the kernel, one write(2) each (a TAP takes one frame per
// write), and returns how many the kernel took. A frame the kernel refuses (the interface is down,
// the frame is malformed) is skipped, and the first such error is returned after the others are
// written; a write that would block waits for room.
func (t *TAP) Write(frames [][]byte) (int, error) {
	if len(frames) == 0 {
		return 0, nil
	}
	t.wbufs, t.wn, t.wfailed, t.werr = frames, 0, 0, nil
	err := t.rc.Write(t.writeFn)
	n, werr := t.wn, t.werr
	t.wbufs = nil
	if err != nil {
		return n, fmt.Errorf("linuxcp: TAP %s: write: %w", t.name, err)
	}
	if werr != nil {
		return n, fmt.Errorf("linuxcp: TAP %s: write: %w", t.name, werr)
	}
	return n, nil
}

func (t *TAP) writeAll(fd uintptr) bool {
	for t.wn+t.wfailed < len(t.wbufs) {
		_, err := unix.Write(int(fd), t.wbufs[t.wn+t.wfailed])
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return false
		case err != nil:
			if t.werr == nil {
				t.werr = err
			}
			t.wfailed++
			continue
		}
		t.wn++
	}
	return true
}

// Addrs returns the interface's IPv4 addresses with their prefix lengths, as the kernel has them
// now (ip -4 addr show dev NAME).
func (t *TAP) Addrs() ([]netip.Prefix, error) {
	link, err := t.nl.LinkByIndex(t.ifindex)
	if err != nil {
		return nil, fmt.Errorf("linuxcp: TAP %s: %w", t.name, err)
	}
	as, err := t.nl.AddrList(link, netlink.FAMILY_V4)
	if err != nil {
		return nil, fmt.Errorf("linuxcp: TAP %s: list addresses: %w", t.name, err)
	}
	var out []netip.Prefix
	for _, a := range as {
		ip, ok := netip.AddrFromSlice(a.IP.To4())
		if !ok || a.IPNet == nil {
			continue
		}
		bits, _ := a.IPNet.Mask.Size()
		out = append(out, netip.PrefixFrom(ip, bits))
	}
	return out, nil
}

// AddAddr gives the interface the address p (10.0.1.1/24), with its connected route; an address it
// already has is not an error.
func (t *TAP) AddAddr(p netip.Prefix) error {
	link, err := t.nl.LinkByIndex(t.ifindex)
	if err != nil {
		return fmt.Errorf("linuxcp: TAP %s: %w", t.name, err)
	}
	a := &netlink.Addr{IPNet: &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}}
	if err := t.nl.AddrReplace(link, a); err != nil {
		return fmt.Errorf("linuxcp: TAP %s: add address %v: %w", t.name, p, err)
	}
	return nil
}

// SetWriteDeadline makes Write return, with an error wrapping os.ErrDeadlineExceeded, once it
// would wait past at (the zero time: no deadline).
func (t *TAP) SetWriteDeadline(at time.Time) error { return t.file.SetWriteDeadline(at) }

// Close closes the TAP; the interface goes away unless it is persistent.
func (t *TAP) Close() error {
	t.nl.Close()
	if err := t.file.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return fmt.Errorf("linuxcp: TAP %s: close: %w", t.name, err)
	}
	return nil
}
