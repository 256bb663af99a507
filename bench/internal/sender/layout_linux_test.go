package sender

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The kernel steps through the array by sizeof(struct mmsghdr): ours must be the same.
func TestMmsghdrLayout(t *testing.T) {
	want := unsafe.Sizeof(unix.Msghdr{}) + unsafe.Sizeof(uint32(0))
	if a := unsafe.Alignof(unix.Msghdr{}); want%a != 0 {
		want += a - want%a
	}
	if got := unsafe.Sizeof(mmsghdr{}); got != want {
		t.Fatalf("sizeof(mmsghdr) = %d, C has %d", got, want)
	}
	if unsafe.Sizeof(uintptr(0)) == 8 && unsafe.Sizeof(mmsghdr{}) != 64 {
		t.Fatalf("sizeof(mmsghdr) = %d on 64-bit, want 64", unsafe.Sizeof(mmsghdr{}))
	}
}
