//go:build !linux

package linuxcp

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/wirespeed/wirespeed/frame"
)

// TAP is a kernel TAP interface; it exists on Linux only.
type TAP struct{}

// OpenTAP returns an error wrapping errors.ErrUnsupported outside Linux.
func OpenTAP(name string, mac frame.MAC, mtu int) (*TAP, error) {
	return nil, fmt.Errorf("linuxcp: TAP %s: %w", name, errors.ErrUnsupported)
}

// Name returns "".
func (t *TAP) Name() string { return "" }

// Ifindex returns 0.
func (t *TAP) Ifindex() int { return 0 }

// Read returns errors.ErrUnsupported.
func (t *TAP) Read(bufs [][]byte, sizes []int) (int, error) { return 0, errors.ErrUnsupported }

// Write returns errors.ErrUnsupported.
func (t *TAP) Write(frames [][]byte) (int, error) { return 0, errors.ErrUnsupported }

// Addrs returns errors.ErrUnsupported.
func (t *TAP) Addrs() ([]netip.Prefix, error) { return nil, errors.ErrUnsupported }

// AddAddr returns errors.ErrUnsupported.
func (t *TAP) AddAddr(p netip.Prefix) error { return errors.ErrUnsupported }

// Close does nothing.
func (t *TAP) Close() error { return nil }
