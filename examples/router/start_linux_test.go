package main

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/wirespeed/wirespeed/examples/internal/app"
	"github.com/wirespeed/wirespeed/examples/internal/optest"
	"github.com/wirespeed/wirespeed/internal/nettest"
)

// startRouter runs the router with the command line args in ns until Stop (or the test's end), and
// returns once its ports are open and its workers started.
func startRouter(t *testing.T, ns *nettest.NS, args ...string) *optest.Running[app.Tally] {
	t.Helper()
	cfg, err := parseFlags(append([]string{"-interval", "1h"}, args...), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	return optest.Start(t, ns, func(ctx context.Context, ready func(), out io.Writer) (app.Tally, error) {
		cfg.ready = ready
		return runReal(ctx, cfg, out)
	})
}
