// Package gocmd runs the go command from a test, for the tests that check a package under other
// build tags (the portable builds of the unsafe fast paths, build-time switches) in the same
// suite as the default build.
package gocmd

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// Run runs the go command with args in the test's package directory, with GOFLAGS cleared (so
// that the caller's -race, -json or -count do not change the child) and env added to the
// environment, and returns its output. A failing command fails t with the output; a test run
// with -short skips instead (the child runs with -short, so it does not start another), as does
// one where no go command is found.
func Run(t testing.TB, env []string, args ...string) []byte {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the go command (skipped with -short)")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = filepath.Join(runtime.GOROOT(), "bin", "go")
		if _, serr := os.Stat(gobin); runtime.GOROOT() == "" || serr != nil {
			t.Skip("no go command:", err)
		}
	}
	cmd := exec.Command(gobin, args...)
	cmd.Env = append(append(os.Environ(), "GOFLAGS="), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %v: %v\n%s", args, err, out)
	}
	return out
}
