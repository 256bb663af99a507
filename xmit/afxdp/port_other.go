//go:build !linux

package afxdp

import (
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/xmit"
)

// UMEM is AF_XDP memory; on this system there is none (NewUMEM returns ErrUnsupported).
type UMEM struct{}

// NewUMEM returns ErrUnsupported: AF_XDP is Linux-only.
func NewUMEM(cfg *UMEMConfig) (*UMEM, error) { return nil, ErrUnsupported }

func (u *UMEM) Mem() []byte                  { return nil }
func (u *UMEM) Frames() int                  { return 0 }
func (u *UMEM) FrameSize() int               { return 0 }
func (u *UMEM) Release(frames []frame.Frame) {}
func (u *UMEM) Accounting() Accounting       { return Accounting{} }
func (u *UMEM) Verify() error                { return nil }
func (u *UMEM) Close() error                 { return nil }

// Port is an AF_XDP port; on this system Open returns ErrUnsupported.
type Port struct{}

// Open returns ErrUnsupported: AF_XDP is Linux-only.
func Open(ifname string, queue int, cfg *Config) (*Port, error) { return nil, ErrUnsupported }

func (p *Port) Name() string                     { return "" }
func (p *Port) Queue() int                       { return 0 }
func (p *Port) FD() int                          { return -1 }
func (p *Port) UMEM() *UMEM                      { return nil }
func (p *Port) Mode() Mode                       { return ModeAuto }
func (p *Port) AttachMode() Attach               { return AttachAuto }
func (p *Port) Recv(b *frame.Batch) (int, error) { return 0, ErrUnsupported }
func (p *Port) Send(b *frame.Batch) (int, error) { b.Free(); return 0, ErrUnsupported }
func (p *Port) Wait(timeoutNs int64) error       { return ErrUnsupported }
func (p *Port) LinkUp() bool                     { return false }
func (p *Port) XDPStats() (XDPStats, error)      { return XDPStats{}, ErrUnsupported }
func (p *Port) Stats() xmit.Stats                { return xmit.Stats{} }
func (p *Port) Close() error                     { return nil }

var (
	_ xmit.Port       = (*Port)(nil)
	_ xmit.Waiter     = (*Port)(nil)
	_ xmit.LinkStater = (*Port)(nil)
)
