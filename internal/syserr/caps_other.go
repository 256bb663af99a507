//go:build !linux

package syserr

func effective() (uint64, bool) { return 0, false }
