package afpacket

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The kernel steps through a sendmmsg array by sizeof(struct mmsghdr) and reads msghdr and iovec
// with the C layout: ours must match (a flattened copy once packed msg_flags and msg_len into one
// word in the bench sender, which then sent one frame per call).
func TestSyscallLayouts(t *testing.T) {
	if unsafe.Sizeof(msghdr{}) != unsafe.Sizeof(unix.Msghdr{}) {
		t.Fatalf("sizeof(msghdr) = %d, C has %d", unsafe.Sizeof(msghdr{}), unsafe.Sizeof(unix.Msghdr{}))
	}
	if unsafe.Sizeof(iovec{}) != unsafe.Sizeof(unix.Iovec{}) {
		t.Fatalf("sizeof(iovec) = %d, C has %d", unsafe.Sizeof(iovec{}), unsafe.Sizeof(unix.Iovec{}))
	}
	want := unsafe.Sizeof(unix.Msghdr{}) + 4
	if a := unsafe.Alignof(unix.Msghdr{}); want%a != 0 {
		want += a - want%a
	}
	if unsafe.Sizeof(mmsghdr{}) != want {
		t.Fatalf("sizeof(mmsghdr) = %d, C has %d", unsafe.Sizeof(mmsghdr{}), want)
	}
	if unsafe.Offsetof(msghdr{}.flags) != unsafe.Offsetof(unix.Msghdr{}.Flags) {
		t.Fatal("msg_flags offset differs")
	}
}
