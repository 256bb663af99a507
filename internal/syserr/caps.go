// Package syserr makes the errors of wirespeed's back-ends say what is wrong and what to do: which
// Linux capabilities the process lacks for a call that answered "operation not permitted", that an
// interface does not exist, that RLIMIT_MEMLOCK is too small for a UMEM.
package syserr

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/wirespeed/wirespeed/xmit"
)

// NoInterface wraps err (ENODEV) for an interface that does not exist in the network namespace of
// the calling thread: errors.Is finds both xmit.ErrNoInterface and err.
func NoInterface(err error) error {
	return noInterface{"no such network interface in this network namespace", err}
}

type noInterface struct {
	msg string
	err error
}

func (e noInterface) Error() string   { return e.msg }
func (e noInterface) Unwrap() []error { return []error{xmit.ErrNoInterface, e.err} }

// WithHint returns err with the hint in parentheses after its text; errors.Is and errors.As see
// err.
func WithHint(err error, hint string) error { return hinted{err, hint} }

type hinted struct {
	err  error
	hint string
}

func (e hinted) Error() string { return e.err.Error() + " (" + e.hint + ")" }
func (e hinted) Unwrap() error { return e.err }

// IsPermission reports whether err is a refusal for want of privilege (EPERM, EACCES).
func IsPermission(err error) bool { return errors.Is(err, os.ErrPermission) }

// Cap is a Linux capability number (linux/capability.h).
type Cap uint8

// The capabilities the back-ends need.
const (
	NetAdmin Cap = 12 // CAP_NET_ADMIN: attach XDP programs, create XSKMAPs
	NetRaw   Cap = 13 // CAP_NET_RAW: AF_PACKET and AF_XDP sockets
	IPCLock  Cap = 14 // CAP_IPC_LOCK: pin memory beyond RLIMIT_MEMLOCK
	SysAdmin Cap = 21 // CAP_SYS_ADMIN: covers CAP_BPF (and is what kernels before 5.8 ask for)
	BPF      Cap = 39 // CAP_BPF: load BPF programs and maps (Linux 5.8+)
)

var names = map[Cap]string{NetAdmin: "CAP_NET_ADMIN", NetRaw: "CAP_NET_RAW", IPCLock: "CAP_IPC_LOCK", SysAdmin: "CAP_SYS_ADMIN", BPF: "CAP_BPF"}

func (c Cap) String() string {
	if n, ok := names[c]; ok {
		return n
	}
	return fmt.Sprintf("capability %d", uint8(c))
}

// Missing returns those of want that the calling thread lacks in its effective set (CAP_BPF counts
// as held with CAP_SYS_ADMIN), and false if it cannot tell.
func Missing(want ...Cap) ([]Cap, bool) {
	eff, ok := effective()
	if !ok {
		return nil, false
	}
	return missingFrom(eff, want), true
}

func missingFrom(eff uint64, want []Cap) []Cap {
	has := func(c Cap) bool { return eff&(1<<c) != 0 }
	var m []Cap
	for _, c := range want {
		if has(c) || c == BPF && has(SysAdmin) {
			continue
		}
		m = append(m, c)
	}
	return m
}

// Hint explains an EPERM from an operation that needs the capabilities want: which of them the
// process lacks and how to give them, or, when it has them all, that something else refuses (what
// then says where to look). It is written to follow the error in parentheses.
func Hint(what string, want []Cap, then string) string {
	missing, ok := Missing(want...)
	return hint(what, want, missing, ok, then)
}

func hint(what string, want, missing []Cap, known bool, then string) string {
	list := func(cs []Cap) string {
		s := make([]string, len(cs))
		for i, c := range cs {
			s[i] = c.String()
		}
		return strings.Join(s, ", ")
	}
	them := func(cs []Cap) string {
		if len(cs) == 1 {
			return "it"
		}
		return "them"
	}
	switch {
	case !known:
		return fmt.Sprintf("%s needs %s: run as root or grant %s", what, list(want), them(want))
	case len(missing) > 0:
		lower := make([]string, len(missing))
		for i, c := range missing {
			lower[i] = strings.ToLower(c.String())
		}
		lacks := "which this process lacks"
		if len(missing) < len(want) {
			lacks = "of which this process lacks " + list(missing)
		}
		return fmt.Sprintf("%s needs %s, %s: run it as root or grant %s, e.g. setcap %s+ep on its binary",
			what, list(want), lacks, them(missing), strings.Join(lower, ","))
	case then != "":
		return fmt.Sprintf("%s needs %s, which this process has: %s", what, list(want), then)
	}
	return fmt.Sprintf("%s needs %s, which this process has", what, list(want))
}

func memlockHint(what string, size int, limit uint64, infinite, ipcLock bool) string {
	if ipcLock || infinite {
		return ""
	}
	return fmt.Sprintf("%s pins %d KiB, which counts against RLIMIT_MEMLOCK (%d KiB, shared with everything the user has pinned) "+
		"unless the process has CAP_IPC_LOCK: raise the limit (ulimit -l, systemd LimitMEMLOCK=) or grant CAP_IPC_LOCK",
		what, size>>10, limit>>10)
}
