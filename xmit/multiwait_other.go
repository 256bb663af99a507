//go:build !linux

package xmit

// MultiWait blocks until any of several ports may have frames (Linux only).
type MultiWait struct{}

// NewMultiWait returns nil here: the caller waits on the ports one at a time (Waiter).
func NewMultiWait(ports []Port) *MultiWait { return nil }

// Wait returns at once.
func (m *MultiWait) Wait(timeoutNs int64) error { return nil }
