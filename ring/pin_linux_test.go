package ring

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// cpuSetBits is how many CPU numbers a unix.CPUSet holds (CPU_SETSIZE).
const cpuSetBits = int(unsafe.Sizeof(unix.CPUSet{})) * 8

// allowedCPUs lists the CPU numbers set in s. CPU numbers are the kernel's
// (as taskset and /proc/cpuinfo name them), so they are scanned over the whole
// set: runtime.NumCPU counts the CPUs the process may use, which says nothing
// about their numbers (under taskset -c 1 it is 1 and the only CPU is 1).
func allowedCPUs(s *unix.CPUSet) []int {
	var cpus []int
	for c := range cpuSetBits {
		if s.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus
}

func TestPinToCPUSetsAffinity(t *testing.T) {
	done := make(chan string)
	go func() {
		var before unix.CPUSet
		if err := unix.SchedGetaffinity(0, &before); err != nil {
			done <- err.Error()
			return
		}
		cpus := allowedCPUs(&before)
		if len(cpus) == 0 {
			done <- "sched_getaffinity returned an empty mask"
			return
		}
		cpu := cpus[len(cpus)-1] // the last CPU we may use
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

// confinedChildEnv marks a test binary that TestPinToCPUConfined started, so
// that the child runs the pinning tests and starts no child of its own.
const confinedChildEnv = "WIRESPEED_RING_PIN_CONFINED"

// TestPinToCPUConfined runs the pinning tests in a copy of the test binary
// whose CPU mask holds one CPU other than 0, as `taskset -c N go test` does:
// the child inherits the mask of the thread that starts it.
func TestPinToCPUConfined(t *testing.T) {
	if os.Getenv(confinedChildEnv) != "" {
		t.Skip("already confined")
	}
	var mask unix.CPUSet
	if err := unix.SchedGetaffinity(0, &mask); err != nil {
		t.Fatal(err)
	}
	cpus := allowedCPUs(&mask)
	if len(cpus) == 0 || cpus[len(cpus)-1] == 0 {
		t.Skip("no CPU other than 0 to confine the child to")
	}
	cpu := cpus[len(cpus)-1]
	out := make(chan string)
	go func() {
		runtime.LockOSThread() // the thread ends with the goroutine: its mask is never reused
		var one unix.CPUSet
		one.Set(cpu)
		if err := unix.SchedSetaffinity(0, &one); err != nil {
			out <- "sched_setaffinity: " + err.Error()
			return
		}
		cmd := exec.Command(os.Args[0], "-test.run", "^TestPinToCPU(SetsAffinity)?$", "-test.count", "1", "-test.v")
		cmd.Env = append(os.Environ(), confinedChildEnv+"=1")
		b, err := cmd.CombinedOutput()
		if err != nil {
			out <- "child confined to CPU " + strconv.Itoa(cpu) + ": " + err.Error() + "\n" + string(b)
			return
		}
		out <- ""
	}()
	if msg := <-out; msg != "" {
		t.Fatal(msg)
	}
}
