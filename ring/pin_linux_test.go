package ring

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

func TestPinToCPUSetsAffinity(t *testing.T) {
	done := make(chan string)
	go func() {
		var before unix.CPUSet
		if err := unix.SchedGetaffinity(0, &before); err != nil {
			done <- err.Error()
			return
		}
		cpu := -1
		for c := range runtime.NumCPU() {
			if before.IsSet(c) {
				cpu = c // the last CPU we may use
			}
		}
		release, err := PinToCPU(cpu)
		if err != nil {
			done <- err.Error()
			return
		}
		var during, after unix.CPUSet
		unix.SchedGetaffinity(0, &during)
		release()
		unix.SchedGetaffinity(0, &after)
		switch {
		case during.Count() != 1 || !during.IsSet(cpu):
			done <- "pinned thread's mask is not exactly the chosen CPU"
		case after != before:
			done <- "release did not restore the mask"
		default:
			done <- ""
		}
	}()
	if msg := <-done; msg != "" {
		t.Fatal(msg)
	}
}
