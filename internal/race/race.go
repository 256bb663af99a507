//go:build race

// Package race tells tests whether the race detector is on, so that long single-goroutine
// equivalence tests (which the detector cannot make more thorough) can run fewer rounds under it
// and keep the suite quick on CI's two cores.
package race

// Enabled is true when built with -race.
const Enabled = true
