package ring_test

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// pinnableCPU returns the highest CPU number in the process's CPU mask, or -1
// when the mask cannot be read. CPU numbers are the kernel's, so the whole set
// is scanned: runtime.NumCPU()-1 is not a CPU number (under taskset -c 1,
// NumCPU is 1 and CPU 0 is not allowed).
func pinnableCPU() int {
	var s unix.CPUSet
	if unix.SchedGetaffinity(0, &s) != nil {
		return -1
	}
	cpu := -1
	for c := range int(unsafe.Sizeof(s)) * 8 {
		if s.IsSet(c) {
			cpu = c
		}
	}
	return cpu
}
