//go:build !unix

package ring_test

import "time"

// cpuTime is not measured here; the cpu-ns/item metric reads 0.
func cpuTime() time.Duration { return 0 }
