package afpacket

import (
	"encoding/binary"
	"unsafe"

	"golang.org/x/sys/unix"
)

// C layouts the socket calls use. Addresses are uintptr on purpose: iovecs point into mmap'd rings
// that may be unmapped later, and a Go pointer to unmapped memory left in a heap object can crash the
// garbage collector; the memory is kept alive by the caller (runtime.KeepAlive) for the call.

type iovec struct {
	base uintptr
	len  uintptr
}

type msghdr struct {
	name       uintptr
	namelen    uint32
	iov        uintptr
	iovlen     uintptr
	control    uintptr
	controllen uintptr
	flags      int32
}

type mmsghdr struct {
	hdr msghdr
	len uint32
}

// TPACKET_V3 layouts (linux/if_packet.h), offsets in bytes.
const (
	blkStatusOff   = 8  // tpacket_block_desc.hdr.bh1.block_status
	blkNumPktsOff  = 12 // num_pkts
	blkFirstOff    = 16 // offset_to_first_pkt
	blkLenOff      = 20 // blk_len: bytes of the block in use, from its start
	blkDescLen     = 48 // sizeof(struct tpacket_block_desc)
	pktNextOff     = 0  // tpacket3_hdr.tp_next_offset
	pktSnaplenOff  = 12 // tp_snaplen
	pktLenOff      = 16 // tp_len
	pktStatusOff   = 20 // tp_status
	pktMacOff      = 24 // tp_mac (u16)
	pktVlanTCIOff  = 32 // hv1.tp_vlan_tci
	pktVlanTPIDOff = 36 // hv1.tp_vlan_tpid (u16)
	pktHdrLen      = 48 // sizeof(struct tpacket3_hdr), already TPACKET_ALIGNed

	tpStatusKernel   = unix.TP_STATUS_KERNEL
	tpStatusUser     = unix.TP_STATUS_USER
	tpStatusVLAN     = unix.TP_STATUS_VLAN_VALID
	tpStatusVLANTPID = unix.TP_STATUS_VLAN_TPID_VALID
	tpStatusCsumPart = unix.TP_STATUS_CSUMNOTREADY
)

var _ [pktHdrLen]struct{} = [unix.SizeofTpacket3Hdr]struct{}{}

// sendmmsg is sendmmsg(2) as a raw system call, which the Go scheduler does not see: called with
// MSG_DONTWAIT it never blocks, but a batch takes longer than the scheduler monitor's 20 µs tick,
// and as an ordinary system call its P would be handed to another thread meanwhile and the worker
// would wait for a thread switch to get it back, once per batch. Without MSG_DONTWAIT use an
// ordinary system call.
func sendmmsg(fd int, msgs []mmsghdr, flags int) (int, unix.Errno) {
	if flags&unix.MSG_DONTWAIT == 0 {
		r, _, e := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(msgs))),
			uintptr(len(msgs)), uintptr(flags), 0, 0)
		return int(r), e
	}
	r, _, e := unix.RawSyscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(msgs))),
		uintptr(len(msgs)), uintptr(flags), 0, 0)
	return int(r), e
}

func htons(v uint16) uint16 {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], v)
	return binary.NativeEndian.Uint16(b[:])
}
