package app

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Exit statuses of the examples' commands.
const (
	ExitOK         = 0
	ExitError      = 1 // the job failed (its error is printed)
	ExitUsage      = 2 // a bad command line (the reason and the usage are printed)
	ExitUnbalanced = 3 // the job ran, but its accounting check failed
)

// Main runs an example's job and exits: job gets a context that ends on Ctrl-C or SIGTERM, or
// after d (0: no limit), and reports whether the final accounting balanced. A job error is
// printed after name and exits ExitError; an unbalanced account exits ExitUnbalanced.
func Main(name string, d time.Duration, job func(ctx context.Context) (balanced bool, err error)) {
	os.Exit(runMain(name, d, job))
}

func runMain(name string, d time.Duration, job func(ctx context.Context) (bool, error)) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	balanced, err := job(ctx)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		return ExitError
	}
	if !balanced {
		return ExitUnbalanced
	}
	return ExitOK
}
