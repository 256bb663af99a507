//go:build tools

// Package deps pins module dependencies that are used by tests and build-tagged files before other code
// imports them, so that every package author works against one go.mod.
package deps

import (
	_ "github.com/gopacket/gopacket/layers"
	_ "golang.org/x/sys/unix"
)
