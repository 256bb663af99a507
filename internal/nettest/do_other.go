//go:build !linux

package nettest

import "errors"

// Do is Linux-only: network namespaces do not exist elsewhere.
func (n *NS) Do(fn func() error) error { return errors.ErrUnsupported }
