//go:build !linux

package ring_test

// pinnableCPU returns 0: PinToCPU is unsupported here whatever the CPU.
func pinnableCPU() int { return 0 }
