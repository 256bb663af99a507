package nettest

import (
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// Do runs fn on an OS thread switched into the namespace, so that sockets fn opens belong to it (a
// socket keeps its namespace after the thread leaves). The thread is switched back afterwards.
func (n *NS) Do(fn func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	self, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		return err
	}
	defer self.Close()
	target, err := os.Open("/var/run/netns/" + n.Name)
	if err != nil {
		return err
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("setns %s: %w", n.Name, err)
	}
	ferr := fn()
	if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
		// The thread is stuck in the wrong namespace: do not let the runtime reuse it.
		runtime.LockOSThread()
		return fmt.Errorf("setns back: %w", err)
	}
	return ferr
}
