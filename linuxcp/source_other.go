//go:build !linux

package linuxcp

import "errors"

// ErrUnsupported: the netlink mirror exists only on Linux (its Source, Mirror and their types are
// built only there).
var ErrUnsupported = errors.New("linuxcp: the netlink mirror is supported only on Linux")
