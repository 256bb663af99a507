package benchutil

import (
	"runtime"
	"testing"
	"time"
)

func TestThreadCPUAdvancesWithWork(t *testing.T) {
	runtime.LockOSThread() // the clock is per thread: stay on one
	defer runtime.UnlockOSThread()
	t0 := threadCPU()
	x := 0
	for i := 0; i < 50_000_000; i++ {
		x += i ^ x>>3
	}
	if x == 42 {
		t.Log(x)
	}
	if d := threadCPU() - t0; d <= 0 || d > 30*time.Second {
		t.Fatalf("thread CPU advanced by %v over a busy loop", d)
	}
	// Sleeping costs no CPU.
	t1 := threadCPU()
	time.Sleep(50 * time.Millisecond)
	if d := threadCPU() - t1; d > 20*time.Millisecond {
		t.Fatalf("thread CPU advanced by %v while sleeping", d)
	}
}

func BenchmarkMeter(b *testing.B) {
	m := Start(b)
	x := 0
	for i := 0; i < b.N; i++ {
		x += i
	}
	m.Report(b, b.N)
	_ = x
}
