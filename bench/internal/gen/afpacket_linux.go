package gen

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mmsghdr is struct mmsghdr: a struct msghdr (unix.Msghdr, padded to 8 bytes) and the count the
// kernel writes back, padded again (64 bytes on 64-bit Linux).
type mmsghdr struct {
	hdr unix.Msghdr
	len uint32
	_   [4]byte
}

// afPacket sends batches with sendmmsg; the flows rotate through the batch's slots.
type afPacket struct {
	fd     int
	frames [][]byte
	iovs   []unix.Iovec
	msgs   []mmsghdr
	next   int // the flow the next batch starts with
}

func newAFPacket(ifindex int, c *Config, frames [][]byte) (engine, error) {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	if err = unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_QDISC_BYPASS, 1); err == nil {
		err = unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: 0, Ifindex: ifindex})
	}
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("gen: afpacket: %w", err)
	}
	e := &afPacket{fd: fd, frames: frames, iovs: make([]unix.Iovec, c.Batch), msgs: make([]mmsghdr, c.Batch)}
	for i := range e.msgs {
		e.msgs[i].hdr.Iov = &e.iovs[i]
		e.msgs[i].hdr.SetIovlen(1)
	}
	return e, nil
}

func (e *afPacket) send(n int) (int, error) {
	n = min(n, len(e.msgs))
	nf := len(e.frames)
	for i := range n {
		f := e.frames[(e.next+i)%nf]
		e.iovs[i].Base = &f[0]
		e.iovs[i].SetLen(len(f))
	}
	r, _, errno := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(e.fd), uintptr(unsafe.Pointer(&e.msgs[0])), uintptr(n), 0, 0, 0)
	if errno != 0 {
		return 0, os.NewSyscallError("sendmmsg", errno)
	}
	e.next = (e.next + int(r)) % nf
	return int(r), nil
}

func (e *afPacket) close() { unix.Close(e.fd) }
