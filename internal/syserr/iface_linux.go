package syserr

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Interface looks up the index and MTU of the interface name in the network namespace of the
// calling thread (ioctls on a datagram socket: no privilege needed). For a name that does not exist,
// or cannot (empty or longer than 15 bytes), the error wraps xmit.ErrNoInterface.
func Interface(name string) (index, mtu int, err error) {
	if name == "" || len(name) >= unix.IFNAMSIZ {
		return 0, 0, noInterface{fmt.Sprintf("interface name %q: not 1 to %d bytes", name, unix.IFNAMSIZ-1), unix.EINVAL}
	}
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return 0, 0, noInterface{fmt.Sprintf("interface name %q: %v", name, err), err}
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, 0, os.NewSyscallError("socket", err)
	}
	defer unix.Close(fd)
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFINDEX, ifr); err != nil {
		if err == unix.ENODEV {
			return 0, 0, NoInterface(err)
		}
		return 0, 0, os.NewSyscallError("ioctl(SIOCGIFINDEX)", err)
	}
	index = int(ifr.Uint32())
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFMTU, ifr); err != nil {
		return 0, 0, os.NewSyscallError("ioctl(SIOCGIFMTU)", err)
	}
	return index, int(ifr.Uint32()), nil
}

// Memlock explains an ENOBUFS or ENOMEM from pinning size bytes (what: "the UMEM") when the
// process is bound by RLIMIT_MEMLOCK, and is empty when it is not (CAP_IPC_LOCK, no limit).
func Memlock(what string, size int) string {
	var r unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_MEMLOCK, &r) != nil {
		return ""
	}
	missing, ok := Missing(IPCLock)
	return memlockHint(what, size, r.Cur, r.Cur == unix.RLIM_INFINITY, ok && len(missing) == 0)
}
