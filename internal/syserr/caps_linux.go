package syserr

import "golang.org/x/sys/unix"

// effective reads the calling thread's effective capability set (capget(2)).
func effective() (uint64, bool) {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if unix.Capget(&hdr, &data[0]) != nil {
		return 0, false
	}
	return uint64(data[0].Effective) | uint64(data[1].Effective)<<32, true
}
