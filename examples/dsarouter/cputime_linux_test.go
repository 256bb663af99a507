package main

import "golang.org/x/sys/unix"

// threadCPU returns the CPU time (ns) the calling OS thread has used (CLOCK_THREAD_CPUTIME_ID):
// on a shared machine it does not count the time the thread waited for a core, which wall time
// does. The caller locks its goroutine to the thread (runtime.LockOSThread).
func threadCPU() int64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return ts.Nano()
}
