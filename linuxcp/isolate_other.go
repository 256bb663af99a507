//go:build !linux

package linuxcp

import (
	"errors"
	"fmt"
)

// IsolatePhysical returns an error wrapping errors.ErrUnsupported outside Linux.
func IsolatePhysical(ifname string) (restore func() error, err error) {
	return nil, fmt.Errorf("linuxcp: isolate %s: %w", ifname, errors.ErrUnsupported)
}
