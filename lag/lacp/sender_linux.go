package lacp

import (
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/internal/syserr"
	"github.com/wirespeed/wirespeed/xmit"
)

// Sender is a send-only port for one member's PDUs (PortConfig.Tx) on Linux: an AF_PACKET socket
// bound to the interface with protocol 0, so it receives nothing and adds nothing to the
// receive path, used by the controller alone while the workers' ports carry the data. While it
// is open the interface also accepts the slow-protocols multicast address (PACKET_ADD_MEMBERSHIP,
// as bonding's dev_mc_add), so a NIC that filters multicast hands LACPDUs to the data sockets.
//
// It implements xmit.Port (Recv never has frames), xmit.LinkStater (IFF_UP and IFF_RUNNING) and
// MAC (the interface's address, the PDUs' default source). Send, LinkUp, Stats and Close may be
// called from any goroutine.
type Sender struct {
	name string
	fd   int
	mac  frame.MAC
	to   unix.SockaddrLinklayer

	mu     sync.Mutex // Send, LinkUp's ioctl buffer, Close
	ifr    *unix.Ifreq
	c      xmit.Counters
	closed atomic.Bool
}

// OpenSender opens a Sender on ifname in the network namespace of the calling thread. A missing
// interface wraps xmit.ErrNoInterface.
func OpenSender(ifname string) (*Sender, error) {
	s, err := openSender(ifname)
	if err != nil {
		return nil, fmt.Errorf("lacp: open sender %s: %w", ifname, err)
	}
	return s, nil
}

func openSender(ifname string) (_ *Sender, err error) {
	index, _, err := syserr.Interface(ifname)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	defer func() {
		if err != nil {
			unix.Close(fd)
		}
	}()
	s := &Sender{name: ifname, fd: fd, to: unix.SockaddrLinklayer{Ifindex: index, Protocol: htons(EtherType), Halen: 6}}
	copy(s.to.Addr[:], SlowProtocolsMAC[:])
	// Protocol 0 in bind too: the socket is tied to the interface and still receives nothing.
	if err = unix.Bind(fd, &unix.SockaddrLinklayer{Ifindex: index}); err != nil {
		return nil, os.NewSyscallError("bind", err)
	}
	mreq := unix.PacketMreq{Ifindex: int32(index), Type: unix.PACKET_MR_MULTICAST, Alen: 6}
	copy(mreq.Address[:], SlowProtocolsMAC[:])
	if err = unix.SetsockoptPacketMreq(fd, unix.SOL_PACKET, unix.PACKET_ADD_MEMBERSHIP, &mreq); err != nil {
		return nil, os.NewSyscallError("setsockopt(PACKET_ADD_MEMBERSHIP)", err)
	}
	if s.ifr, err = unix.NewIfreq(ifname); err != nil {
		return nil, err
	}
	ifc, err := net.InterfaceByIndex(index)
	if err != nil {
		return nil, err
	}
	copy(s.mac[:], ifc.HardwareAddr)
	return s, nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// Name is the interface name.
func (s *Sender) Name() string { return s.name }

// MAC is the interface's address.
func (s *Sender) MAC() frame.MAC { return s.mac }

// Recv never has frames (the socket receives nothing); after Close it returns xmit.ErrClosed.
func (s *Sender) Recv(b *frame.Batch) (int, error) {
	if len(b.Frames) != 0 {
		return 0, xmit.ErrNotEmpty
	}
	if s.closed.Load() {
		return 0, xmit.ErrClosed
	}
	return 0, nil
}

// Send transmits every frame of b, one sendto(2) each (a few PDUs a second), and releases them.
func (s *Sender) Send(b *frame.Batch) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer b.Free()
	if s.closed.Load() {
		s.c.TxDrop(len(b.Frames))
		return 0, xmit.ErrClosed
	}
	sent, bytes := 0, 0
	var first error
	for i := range b.Frames {
		d := b.Bytes(i)
		if err := unix.Sendto(s.fd, d, 0, &s.to); err != nil {
			s.c.Error()
			if first == nil {
				first = os.NewSyscallError("sendto", err)
			}
			continue
		}
		sent++
		bytes += len(d)
	}
	s.c.Tx(sent, bytes)
	if d := len(b.Frames) - sent; d > 0 {
		s.c.TxDrop(d)
	}
	return sent, first
}

// LinkUp reports whether the interface is up and running (carrier).
func (s *Sender) LinkUp() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() || unix.IoctlIfreq(s.fd, unix.SIOCGIFFLAGS, s.ifr) != nil {
		return false
	}
	fl := s.ifr.Uint16()
	return fl&unix.IFF_UP != 0 && fl&unix.IFF_RUNNING != 0
}

// Stats implements xmit.Port.
func (s *Sender) Stats() xmit.Stats { return s.c.Stats() }

// Close closes the socket (leaving the multicast group). Closing twice is harmless.
func (s *Sender) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Swap(true) {
		return nil
	}
	return unix.Close(s.fd)
}

var (
	_ xmit.Port       = (*Sender)(nil)
	_ xmit.LinkStater = (*Sender)(nil)
)
