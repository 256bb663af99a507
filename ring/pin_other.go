//go:build !linux

package ring

import (
	"errors"
	"fmt"
)

// PinToCPU locks the calling goroutine to its OS thread and restricts the
// thread to one CPU. It is implemented on Linux only; here it returns an
// error wrapping errors.ErrUnsupported and changes nothing.
func PinToCPU(cpu int) (release func(), err error) {
	return nil, fmt.Errorf("ring: PinToCPU(%d): %w", cpu, errors.ErrUnsupported)
}
