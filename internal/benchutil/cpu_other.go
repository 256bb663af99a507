//go:build !linux

package benchutil

import "time"

var t0 = time.Now()

// threadCPU falls back to wall time where no per-thread CPU clock is available.
func threadCPU() time.Duration { return time.Since(t0) }
