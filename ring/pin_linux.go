package ring

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// PinToCPU locks the calling goroutine to its OS thread
// (runtime.LockOSThread) and restricts that thread to CPU cpu
// (sched_setaffinity).
//
// cpu is the kernel's CPU number, as taskset and /proc/cpuinfo name it, not an
// index into the CPUs the process may use: under `taskset -c 2,3`,
// runtime.NumCPU is 2 and the CPUs to pin to are 2 and 3. A negative cpu, or
// one at or past CPU_SETSIZE (1024), fails with an error wrapping
// unix.EINVAL before anything changes; so does, from sched_setaffinity, a
// CPU that is offline or outside the thread's cpuset.
//
// It is opt-in placement for a worker that owns a ring side or a queue: the
// goroutine then always runs on the same core, keeping its cache lines warm,
// and no other goroutine runs on its thread.
//
// Call release from the same goroutine to restore the thread's previous CPU
// mask and unlock it; if the mask cannot be restored the thread stays locked,
// so the runtime discards it when the goroutine exits rather than reuse a
// pinned thread. A goroutine that exits without calling release also takes
// its thread with it. Pinning helps only when there are at least as many
// cores as pinned workers and GOMAXPROCS allows them all to run; on a shared
// or small machine it can hurt, so measure.
//
// On systems other than Linux it returns an error wrapping
// errors.ErrUnsupported.
func PinToCPU(cpu int) (release func(), err error) {
	if cpu < 0 || cpu >= int(unsafe.Sizeof(unix.CPUSet{}))*8 {
		return nil, fmt.Errorf("ring: PinToCPU(%d): %w", cpu, unix.EINVAL)
	}
	runtime.LockOSThread()
	var old, set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("ring: sched_getaffinity: %w", err)
	}
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("ring: sched_setaffinity(cpu %d): %w", cpu, err)
	}
	released := false
	return func() {
		if released {
			return
		}
		released = true
		if unix.SchedSetaffinity(0, &old) == nil {
			runtime.UnlockOSThread()
		}
	}, nil
}
