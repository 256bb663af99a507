package xmit

// Poller is implemented by ports whose input readiness a file descriptor signals, so that a worker
// with several ports can block on all of them at once (MultiWait) instead of on one at a time.
type Poller interface {
	// PollFD returns the descriptor that polls readable (POLLIN) when Recv may have frames, and
	// whether Recv has frames now. fd < 0 means the port cannot be polled at the moment (for
	// instance a ring whose next block the caller still holds): MultiWait then does not block.
	PollFD() (fd int, ready bool)
}
