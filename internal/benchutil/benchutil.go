// Package benchutil adds to wirespeed's benchmarks a figure that stays honest on a shared machine:
// the CPU time of the benchmark's own OS thread per frame ("cpu-ns/frame"), beside the wall-clock
// ns/frame that go test reports. When other processes compete for the cores, wall time grows with
// the time the thread spent waiting for a core; thread CPU time does not. Both are reported; neither
// replaces the other (cache and memory-bus contention still show in both).
package benchutil

import (
	"runtime"
	"testing"
	"time"
)

// Meter measures the calling goroutine's OS-thread CPU time between Start and Report.
type Meter struct {
	cpu0   time.Duration
	wall0  time.Time
	pcpu   time.Duration
	pwall  time.Time
	paused bool
}

// Pause stops counting (for untimed work such as refilling queues), as b.StopTimer does.
func (m *Meter) Pause() {
	if !m.paused {
		m.pcpu, m.pwall, m.paused = threadCPU(), time.Now(), true
	}
}

// Resume counts again after Pause.
func (m *Meter) Resume() {
	if m.paused {
		m.cpu0 += threadCPU() - m.pcpu
		m.wall0 = m.wall0.Add(time.Since(m.pwall))
		m.paused = false
	}
}

// Start locks the calling goroutine to its OS thread (until the benchmark ends) and starts the meter.
// Call it right before the timed loop, after setup.
func Start(b *testing.B) *Meter {
	runtime.LockOSThread()
	b.Cleanup(runtime.UnlockOSThread)
	return &Meter{cpu0: threadCPU(), wall0: time.Now()}
}

// Report adds cpu-ns/frame and ns/frame (wall) for frames frames processed since Start, and Mpps
// (wall). frames must be > 0.
func (m *Meter) Report(b *testing.B, frames int) {
	if frames <= 0 {
		return
	}
	cpu := threadCPU() - m.cpu0
	wall := time.Since(m.wall0)
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(frames), "cpu-ns/frame")
	b.ReportMetric(float64(wall.Nanoseconds())/float64(frames), "ns/frame")
	b.ReportMetric(float64(frames)/wall.Seconds()/1e6, "Mpps")
}
