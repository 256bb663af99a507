package lacp

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

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
	rx     atomic.Uint64 // Receive's frames
	rfd    int           // Listen's socket, -1: none
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
	s := &Sender{name: ifname, fd: fd, rfd: -1, to: unix.SockaddrLinklayer{Ifindex: index, Protocol: htons(EtherType), Halen: 6}}
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

// Listen opens the Sender's receiving socket, bound to EtherType 0x8809 on the interface (the
// kernel gives it only slow-protocols frames), in the network namespace of the calling thread;
// frames queue there until Receive reads them. Receive calls it if it has not been called.
func (s *Sender) Listen() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rfd >= 0 {
		return nil
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(EtherType)))
	if err != nil {
		return fmt.Errorf("lacp: listen on %s: %w", s.name, os.NewSyscallError("socket", err))
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(EtherType), Ifindex: s.to.Ifindex}); err != nil {
		unix.Close(fd)
		return fmt.Errorf("lacp: listen on %s: %w", s.name, os.NewSyscallError("bind", err))
	}
	// A timeout, so that Receive sees its context end and Close within 100 ms.
	tv := unix.NsecToTimeval(int64(100 * time.Millisecond))
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		unix.Close(fd)
		return fmt.Errorf("lacp: listen on %s: %w", s.name, os.NewSyscallError("setsockopt(SO_RCVTIMEO)", err))
	}
	s.rfd = fd
	return nil
}

// Receive hands the slow-protocols frames the interface receives to h (a Controller's
// HandleSlow) as member, until ctx ends or the Sender is closed: for data paths whose sockets do
// not get them (NoSlowFilter), so that the workers never look for them. It reads the socket
// Listen opened. Call it once, on a goroutine of its own. A link going down is reported to the
// socket as an error, which Receive reads past.
func (s *Sender) Receive(ctx context.Context, h interface{ HandleSlow(int, []byte) }, member int) error {
	if err := s.Listen(); err != nil {
		return err
	}
	s.mu.Lock()
	fd := s.rfd
	s.mu.Unlock()
	buf := make([]byte, 2048)
	for ctx.Err() == nil && !s.closed.Load() {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		switch err {
		case nil:
			if n > 0 {
				s.rx.Add(1)
				h.HandleSlow(member, buf[:n])
			}
		case unix.EAGAIN, unix.EINTR, unix.ENETDOWN, unix.ENXIO:
		default:
			if s.closed.Load() {
				return nil
			}
			return fmt.Errorf("lacp: receive on %s: %w", s.name, os.NewSyscallError("recvfrom", err))
		}
	}
	return nil
}

// Received counts the frames Receive handed over.
func (s *Sender) Received() uint64 { return s.rx.Load() }

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
	if s.rfd >= 0 {
		// Receive may be in recvfrom: it sees closed within its 100 ms timeout, and an error
		// from a closed descriptor after that is not reported.
		unix.Close(s.rfd)
	}
	return unix.Close(s.fd)
}

var (
	_ xmit.Port       = (*Sender)(nil)
	_ xmit.LinkStater = (*Sender)(nil)
)
