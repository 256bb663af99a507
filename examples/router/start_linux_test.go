package main

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/examples/internal/app"
	"github.com/wirespeed/wirespeed/internal/nettest"
)

// running is a router started by startRouter in a namespace of its own.
type running struct {
	t      *testing.T
	cancel context.CancelFunc
	wg     sync.WaitGroup
	out    bytes.Buffer
	tally  app.Tally
	err    error
	done   bool
}

// startRouter runs the router with the command line args in ns until stop (or the test's end), and
// returns once its ports are open and its workers started.
func startRouter(t *testing.T, ns *nettest.NS, args ...string) *running {
	t.Helper()
	cfg, err := parseFlags(append([]string{"-interval", "1h"}, args...), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{t: t, cancel: cancel}
	started, finished := make(chan struct{}), make(chan struct{})
	cfg.ready = func() { close(started) }
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer close(finished)
		r.err = ns.Do(func() (err error) { r.tally, err = runReal(ctx, cfg, &r.out); return err })
	}()
	t.Cleanup(func() { r.stop() })
	select {
	case <-started:
	case <-finished:
		t.Fatalf("router stopped at once: %v\n%s", r.err, r.out.String())
	case <-time.After(10 * time.Second):
		t.Fatal("router did not start")
	}
	return r
}

// stop ends the router and returns its final counters and everything it printed; a run that ended
// in an error fails the test.
func (r *running) stop() (app.Tally, string) {
	if !r.done {
		r.done = true
		r.cancel()
		r.wg.Wait()
		if r.err != nil {
			r.t.Error(r.err)
		}
	}
	return r.tally, r.out.String()
}
