package afxdp

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ring is one of the four single-producer/single-consumer rings a socket shares with the kernel.
// User space produces on the fill and TX rings and consumes on the RX and completion rings. The
// kernel's index is read with atomic.LoadUint32 (an acquire: descriptors written before the kernel
// published it are visible) and ours is published with atomic.StoreUint32 (a release: the
// descriptors we wrote are visible to the kernel before the index), once per batch.
type ring struct {
	prod, cons, flags *uint32
	mask, size        uint32
	local             uint32         // our index: producer of fill/TX, consumer of RX/completion
	cached            uint32         // the kernel's index as last read
	addrs             []uint64       // fill and completion rings
	descs             []unix.XDPDesc // RX and TX rings
	mem               []byte
}

func (r *ring) unmap() {
	if r.mem != nil {
		unix.Munmap(r.mem)
		r.mem = nil
	}
}

// mapRing maps a ring of n entries of entSize bytes at the page offset pgoff.
func mapRing(fd int, off unix.XDPRingOffset, pgoff int64, n uint32, entSize uintptr, desc, producer bool) (ring, error) {
	size := int(off.Desc) + int(n)*int(entSize)
	mem, err := unix.Mmap(fd, pgoff, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return ring{}, fmt.Errorf("afxdp: mmap ring at %#x: %w", pgoff, err)
	}
	base := unsafe.Pointer(&mem[0])
	r := ring{
		prod:  (*uint32)(unsafe.Add(base, off.Producer)),
		cons:  (*uint32)(unsafe.Add(base, off.Consumer)),
		flags: (*uint32)(unsafe.Add(base, off.Flags)),
		mask:  n - 1,
		size:  n,
		mem:   mem,
	}
	if desc {
		r.descs = unsafe.Slice((*unix.XDPDesc)(unsafe.Add(base, off.Desc)), n)
	} else {
		r.addrs = unsafe.Slice((*uint64)(unsafe.Add(base, off.Desc)), n)
	}
	// Start from the indices in the ring (0 for a fresh one).
	if producer {
		r.local, r.cached = atomic.LoadUint32(r.prod), atomic.LoadUint32(r.cons)
	} else {
		r.local, r.cached = atomic.LoadUint32(r.cons), atomic.LoadUint32(r.prod)
	}
	return r, nil
}

// needWakeup reports whether the kernel asked to be kicked (XDP_RING_NEED_WAKEUP).
func (r *ring) needWakeup() bool {
	return atomic.LoadUint32(r.flags)&unix.XDP_RING_NEED_WAKEUP != 0
}

func setsockopt(fd, level, name int, p unsafe.Pointer, size uintptr) error {
	_, _, e := unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(fd), uintptr(level), uintptr(name), uintptr(p), size, 0)
	if e != 0 {
		return e
	}
	return nil
}

func getsockopt(fd, level, name int, p unsafe.Pointer, size uintptr) error {
	l := uint32(size)
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), uintptr(level), uintptr(name), uintptr(p), uintptr(unsafe.Pointer(&l)), 0)
	if e != 0 {
		return e
	}
	return nil
}
