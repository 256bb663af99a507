//go:build !linux

package sender

import (
	"errors"
	"fmt"
	"time"
)

// Sender transmits until Stop; AF_PACKET exists only on Linux.
type Sender struct{}

// Open fails with errors.ErrUnsupported outside Linux.
func Open(ifname string, cfg *Config) (*Sender, error) {
	return nil, fmt.Errorf("sender: %w", errors.ErrUnsupported)
}

func (s *Sender) Start()               {}
func (s *Sender) Sent() uint64         { return 0 }
func (s *Sender) Errors() uint64       { return 0 }
func (s *Sender) Stop() uint64         { return 0 }
func (s *Sender) SendN(n uint64) error { return errors.ErrUnsupported }
func (s *Sender) CPU() time.Duration   { return 0 }
