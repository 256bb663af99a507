//go:build !linux

package main

import (
	"errors"
	"log/slog"
)

// startMirror: the netlink mirror exists on Linux only.
func startMirror(c *cpRouter, pr *parts, log *slog.Logger) error {
	return errors.New("linux-cp: the netlink mirror needs Linux")
}
