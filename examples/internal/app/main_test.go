package app

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestRunMain: the exit status follows the job's result, and a duration bounds the job's context.
func TestRunMain(t *testing.T) {
	for _, c := range []struct {
		balanced bool
		err      error
		want     int
	}{{true, nil, ExitOK}, {false, nil, ExitUnbalanced}, {true, errors.New("no such interface"), ExitError}} {
		if got := runMain("test", 0, func(ctx context.Context) (bool, error) { return c.balanced, c.err }); got != c.want {
			t.Errorf("balanced %v, err %v: exit %d, want %d", c.balanced, c.err, got, c.want)
		}
	}
	var deadline, none bool
	runMain("test", time.Hour, func(ctx context.Context) (bool, error) { _, deadline = ctx.Deadline(); return true, nil })
	runMain("test", 0, func(ctx context.Context) (bool, error) { _, none = ctx.Deadline(); return true, nil })
	if !deadline || none {
		t.Errorf("deadline with a duration: %v; without: %v", deadline, none)
	}
}
