//go:build !linux

package lacp

import (
	"context"
	"errors"
	"fmt"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/xmit"
)

// Sender is Linux's send-only AF_PACKET port; elsewhere OpenSender fails with
// errors.ErrUnsupported.
type Sender struct{}

// OpenSender is not supported outside Linux.
func OpenSender(ifname string) (*Sender, error) {
	return nil, fmt.Errorf("lacp: open sender %s: %w", ifname, errors.ErrUnsupported)
}

func (s *Sender) Name() string                     { return "" }
func (s *Sender) MAC() frame.MAC                   { return frame.MAC{} }
func (s *Sender) Recv(b *frame.Batch) (int, error) { return 0, xmit.ErrClosed }
func (s *Sender) Send(b *frame.Batch) (int, error) { b.Free(); return 0, xmit.ErrClosed }
func (s *Sender) LinkUp() bool                     { return false }
func (s *Sender) Stats() xmit.Stats                { return xmit.Stats{} }
func (s *Sender) Close() error                     { return nil }

// Listen is not supported outside Linux.
func (s *Sender) Listen() error { return errors.ErrUnsupported }

// Receive is not supported outside Linux.
func (s *Sender) Receive(ctx context.Context, h interface{ HandleSlow(int, []byte) }, member int) error {
	return errors.ErrUnsupported
}

// Received is 0 outside Linux.
func (s *Sender) Received() uint64 { return 0 }
