//go:build !linux

package afpacket

import (
	"errors"
	"fmt"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/xmit"
)

// Port is an AF_PACKET socket; AF_PACKET exists only on Linux, so Open fails here.
type Port struct{}

// Open returns an error wrapping errors.ErrUnsupported: AF_PACKET is Linux-only.
func Open(ifname string, cfg *Config) (*Port, error) {
	if _, err := cfg.withDefaults(4096); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("afpacket: open %s: %w", ifname, errors.ErrUnsupported)
}

func (p *Port) Name() string                     { return "" }
func (p *Port) Recv(b *frame.Batch) (int, error) { return 0, xmit.ErrClosed }
func (p *Port) Send(b *frame.Batch) (int, error) { b.Free(); return 0, xmit.ErrClosed }
func (p *Port) Stats() xmit.Stats                { return xmit.Stats{} }
func (p *Port) RingStats() RingStats             { return RingStats{} }
func (p *Port) Close() error                     { return nil }
func (p *Port) Wait(timeoutNs int64) error       { return xmit.ErrClosed }
func (p *Port) LinkUp() bool                     { return false }
func (p *Port) Release(frames []frame.Frame)     {}
