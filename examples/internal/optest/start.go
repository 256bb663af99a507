package optest

import (
	"bytes"
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/internal/nettest"
)

// Running is an example's job started by Start in a network namespace.
type Running[T any] struct {
	t      testing.TB
	cancel context.CancelFunc
	done   chan struct{}
	out    syncBuffer
	res    T
	err    error
	once   sync.Once
}

// Start runs job in ns until Stop (or the end of the test) and returns once job has called ready
// (its ports open and its workers started). job is the example's run with its Config's ready hook
// set to ready and its output to out. A job that ends before it is ready, or is not ready in 10 s,
// fails the test.
func Start[T any](t testing.TB, ns *nettest.NS, job func(ctx context.Context, ready func(), out io.Writer) (T, error)) *Running[T] {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &Running[T]{t: t, cancel: cancel, done: make(chan struct{})}
	started := make(chan struct{})
	var readyOnce sync.Once
	ready := func() { readyOnce.Do(func() { close(started) }) }
	go func() {
		defer close(r.done)
		r.err = ns.Do(func() (err error) { r.res, err = job(ctx, ready, &r.out); return err })
	}()
	t.Cleanup(func() { r.Stop() })
	select {
	case <-started:
	case <-r.done:
		t.Fatalf("router stopped at once: %v\n%s", r.err, r.out.String())
	case <-time.After(10 * time.Second):
		t.Fatal("router did not start")
	}
	return r
}

// Stop ends the job and waits for it, and returns its result and everything it printed; a job
// that ended in an error fails the test. Later calls return the same.
func (r *Running[T]) Stop() (T, string) {
	r.once.Do(func() {
		r.cancel()
		<-r.done
		if r.err != nil {
			r.t.Errorf("%v\n%s", r.err, r.out.String())
		}
	})
	return r.res, r.out.String()
}

// Output is what the job has printed so far.
func (r *Running[T]) Output() string { return r.out.String() }

// Done is closed when the job has ended.
func (r *Running[T]) Done() <-chan struct{} { return r.done }

// syncBuffer is a bytes.Buffer safe for a writer and readers in other goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Err is the error the job ended with (nil while it runs).
func (r *Running[T]) Err() error {
	select {
	case <-r.done:
		return r.err
	default:
		return nil
	}
}
