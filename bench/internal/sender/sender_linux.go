package sender

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

type iovec struct{ base, len uintptr }

// mmsghdr is struct mmsghdr: a struct msghdr, then msg_len; Go pads it to the alignment of msghdr as
// C does (64 bytes on 64-bit). Packing msg_flags and msg_len into one word (56 bytes) would make the
// kernel read every message but the first at the wrong offset.
type mmsghdr struct {
	hdr unix.Msghdr
	len uint32
}

// Sender transmits until Stop. Start, Stop and Sent may be called from any goroutine.
type Sender struct {
	cfg    Config
	fd     int
	frames [][]byte
	iovs   []iovec
	msgs   []mmsghdr

	sent    atomic.Uint64
	cpuNs   atomic.Int64 // the sending thread's CPU time, published when it stops
	errs    atomic.Uint64
	stop    atomic.Bool
	running sync.WaitGroup
	once    sync.Once
}

// Open opens the socket on ifname, in the network namespace of the calling thread.
func Open(ifname string, cfg *Config) (*Sender, error) {
	c, err := cfg.defaults()
	if err != nil {
		return nil, err
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	ifr, err := unix.NewIfreq(ifname)
	if err == nil {
		err = unix.IoctlIfreq(fd, unix.SIOCGIFINDEX, ifr)
	}
	if err == nil {
		err = unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_QDISC_BYPASS, 1)
	}
	if err == nil {
		err = unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: 0, Ifindex: int(ifr.Uint32())})
	}
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("sender: %s: %w", ifname, err)
	}
	s := &Sender{cfg: c, fd: fd}
	for i := range c.Flows {
		s.frames = append(s.frames, Frame(i, c.Size))
	}
	// One message per frame slot; the flows rotate through the batch.
	s.iovs = make([]iovec, c.Batch)
	s.msgs = make([]mmsghdr, c.Batch)
	for i := range s.msgs {
		f := s.frames[i%len(s.frames)]
		s.iovs[i] = iovec{uintptr(unsafe.Pointer(&f[0])), uintptr(len(f))}
		s.msgs[i].hdr.Iov = (*unix.Iovec)(unsafe.Pointer(&s.iovs[i]))
		s.msgs[i].hdr.SetIovlen(1)
	}
	return s, nil
}

// Start starts the sending goroutine.
func (s *Sender) Start() {
	s.running.Add(1)
	go s.run()
}

func (s *Sender) run() {
	defer s.running.Done()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if s.cfg.CPU >= 0 {
		var set unix.CPUSet
		set.Set(s.cfg.CPU)
		unix.SchedSetaffinity(0, &set) // best effort: unpinned if it fails
	}
	var ru unix.Rusage
	var cpu0 int64
	if unix.Getrusage(unix.RUSAGE_THREAD, &ru) == nil {
		cpu0 = ru.Utime.Nano() + ru.Stime.Nano()
	}
	nf := len(s.frames)
	rot := 0
	for !s.stop.Load() {
		r, _, e := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(s.fd), uintptr(unsafe.Pointer(&s.msgs[0])),
			uintptr(len(s.msgs)), 0, 0, 0)
		if e != 0 {
			s.errs.Add(1)
			runtime.Gosched()
			continue
		}
		s.sent.Add(uint64(r))
		if nf > 1 && nf != len(s.msgs) {
			// Rotate which flows fill the batch so every flow gets its share.
			rot = (rot + len(s.msgs)) % nf
			for i := range s.iovs {
				f := s.frames[(rot+i)%nf]
				s.iovs[i].base = uintptr(unsafe.Pointer(&f[0]))
			}
		}
	}
	runtime.KeepAlive(s.frames)
	if unix.Getrusage(unix.RUSAGE_THREAD, &ru) == nil {
		s.cpuNs.Store(ru.Utime.Nano() + ru.Stime.Nano() - cpu0)
	}
}

// SendN sends exactly n frames from the calling goroutine, on a thread pinned to the configured CPU
// for the duration of the call (its affinity is restored before it returns), and returns when the
// kernel has accepted them all. It is the fill phase of a drain benchmark: it must not run while the
// sending goroutine of Start does. Frames the kernel accepts count in Sent.
func (s *Sender) SendN(n uint64) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if s.cfg.CPU >= 0 {
		var old, set unix.CPUSet
		if unix.SchedGetaffinity(0, &old) == nil {
			set.Set(s.cfg.CPU)
			if unix.SchedSetaffinity(0, &set) == nil {
				defer unix.SchedSetaffinity(0, &old)
			}
		}
	}
	fails := 0
	for n > 0 {
		vlen := min(uint64(len(s.msgs)), n)
		r, _, e := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(s.fd), uintptr(unsafe.Pointer(&s.msgs[0])),
			uintptr(vlen), 0, 0, 0)
		if e != 0 {
			s.errs.Add(1)
			if fails++; fails > 1000 {
				return fmt.Errorf("sender: sendmmsg: %w", e)
			}
			runtime.Gosched()
			continue
		}
		fails = 0
		s.sent.Add(uint64(r))
		n -= uint64(r)
	}
	runtime.KeepAlive(s.frames)
	return nil
}

// CPU is the sending thread's CPU time (user and system, the kernel's transmit path included), known
// after Stop.
func (s *Sender) CPU() time.Duration { return time.Duration(s.cpuNs.Load()) }

// Sent is the number of frames the kernel accepted so far.
func (s *Sender) Sent() uint64 { return s.sent.Load() }

// Errors is the number of failed sendmmsg calls.
func (s *Sender) Errors() uint64 { return s.errs.Load() }

// Stop stops the goroutine, closes the socket and returns the frames sent.
func (s *Sender) Stop() uint64 {
	s.once.Do(func() {
		s.stop.Store(true)
		s.running.Wait()
		unix.Close(s.fd)
	})
	return s.sent.Load()
}
