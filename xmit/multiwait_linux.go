package xmit

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// MultiWait blocks until any of several ports may have frames: one ppoll(2) over their
// descriptors. It belongs to one worker goroutine (the one that calls the ports' Recv).
type MultiWait struct {
	ports []Poller
	pfd   []unix.PollFd
	ts    unix.Timespec
}

// NewMultiWait returns a MultiWait over ports, or nil when a port is not a Poller (or on systems
// without poll(2)); the caller then waits on the ports one at a time (Waiter).
func NewMultiWait(ports []Port) *MultiWait {
	m := &MultiWait{ports: make([]Poller, len(ports)), pfd: make([]unix.PollFd, len(ports))}
	for i, p := range ports {
		pp, ok := p.(Poller)
		if !ok {
			return nil
		}
		m.ports[i] = pp
	}
	if len(ports) == 0 {
		return nil
	}
	return m
}

// Wait returns when a port may have frames, when timeoutNs (< 0: none) passes, or at once when a
// port has frames already. A port that cannot be polled at the moment is left out of the poll,
// and the wait then lasts at most timeoutNs, or 1 ms if there is none. It allocates nothing.
func (m *MultiWait) Wait(timeoutNs int64) error {
	for i, p := range m.ports {
		fd, ready := p.PollFD()
		if ready {
			return nil
		}
		if fd < 0 {
			m.pfd[i] = unix.PollFd{Fd: -1} // poll(2) ignores a negative descriptor
			if timeoutNs < 0 {
				timeoutNs = 1_000_000
			}
			continue
		}
		m.pfd[i] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
	}
	var ts *unix.Timespec
	if timeoutNs >= 0 {
		m.ts = unix.NsecToTimespec(timeoutNs)
		ts = &m.ts
	}
	if _, err := unix.Ppoll(m.pfd, ts, nil); err != nil && err != unix.EINTR {
		return fmt.Errorf("xmit: ppoll: %w", err)
	}
	return nil
}
