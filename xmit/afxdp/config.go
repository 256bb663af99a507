package afxdp

import (
	"errors"
	"fmt"
)

// Sentinel errors.
var (
	// ErrUnsupported is returned by Open on systems without AF_XDP.
	ErrUnsupported = errors.ErrUnsupported
	// ErrZeroCopy is returned when Config.Mode is ModeZeroCopy and the driver cannot do it.
	ErrZeroCopy = errors.New("afxdp: zero-copy not supported by the driver")
	// ErrUMEMInUse is returned when a UMEM is closed while ports still use it.
	ErrUMEMInUse = errors.New("afxdp: UMEM still used by open ports")
)

// Mode is how the socket moves frames between the driver and the UMEM.
type Mode uint8

const (
	ModeAuto     Mode = iota // zero-copy if the driver has it, else copy
	ModeCopy                 // XDP_COPY: the kernel copies frames into and out of the UMEM
	ModeZeroCopy             // XDP_ZEROCOPY: the driver DMAs into the UMEM
)

func (m Mode) String() string {
	switch m {
	case ModeAuto:
		return "auto"
	case ModeCopy:
		return "copy"
	case ModeZeroCopy:
		return "zero-copy"
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// Attach is how the XDP program is attached to the interface.
type Attach uint8

const (
	AttachAuto    Attach = iota // native if the driver has it, else generic
	AttachNative                // XDP_FLAGS_DRV_MODE
	AttachGeneric               // XDP_FLAGS_SKB_MODE
)

func (a Attach) String() string {
	switch a {
	case AttachAuto:
		return "auto"
	case AttachNative:
		return "native"
	case AttachGeneric:
		return "generic"
	}
	return fmt.Sprintf("Attach(%d)", uint8(a))
}

// UMEMConfig sizes a UMEM. The zero value gives 4096 chunks of 2048 bytes.
type UMEMConfig struct {
	// Frames is the number of chunks (default 4096; rounded up to a power of two).
	Frames int
	// FrameSize is the chunk size, 2048 or 4096 (default 2048). In copy mode the kernel places a
	// received frame 256 bytes (XDP_PACKET_HEADROOM) plus Headroom into its chunk, so the largest
	// frame received is FrameSize-256-Headroom.
	FrameSize int
	// Headroom is extra space the kernel leaves in front of every received frame (default 0: the
	// 256 bytes of XDP headroom are already there for tag pushes).
	Headroom int
}

// Config configures a Port. The zero value (or a nil *Config) is usable.
type Config struct {
	Mode   Mode   // copy or zero-copy (default: auto)
	Attach Attach // how the XDP program attaches (default: auto)

	// RingSize is the number of descriptors of each of the four rings (default 2048; a power of
	// two). The fill ring starts with min(RingSize, UMEM frames/2) chunks.
	RingSize int

	// BusyPoll, when above 0, turns on the kernel's preferred busy polling for the socket
	// (SO_PREFER_BUSY_POLL, SO_BUSY_POLL of BusyPollMicros, SO_BUSY_POLL_BUDGET of BusyPoll frames;
	// Linux 5.11+, and CAP_NET_ADMIN above net.core.busy_poll), as DPDK's net_af_xdp does by
	// default: Recv, finding the RX ring empty, kicks the socket with recvfrom, and that and Send's
	// sendto let the kernel busy-poll the socket's receive NAPI on the calling CPU. Whether it helps
	// depends on the driver (on veth it does not; bench/notes/e2e.md).
	BusyPoll int
	// BusyPollMicros is SO_BUSY_POLL with BusyPoll set (default 20).
	BusyPollMicros int

	// NoNeedWakeup disables XDP_USE_NEED_WAKEUP: the port then kicks the kernel on every Send.
	NoNeedWakeup bool

	// UMEM, if set, is shared with other ports (XDP_SHARED_UMEM): frames received on one port can be
	// sent on another without copying. If nil the port makes its own UMEM from UMEMConfig.
	UMEM       *UMEM
	UMEMConfig UMEMConfig

	// NoProgram skips loading the XDP program: the caller redirects the queue into the socket
	// itself (see Port.FD).
	NoProgram bool

	// PassEtherType, when not zero, makes the XDP program hand untagged frames of this EtherType
	// to the kernel (XDP_PASS) instead of the socket: 0x8809 keeps the slow protocols (LACP) out of
	// the data path, for an AF_PACKET socket bound to that EtherType to read. Every port of the
	// process on an interface shares its program, so they must agree on it.
	PassEtherType uint16
}

// Accounting is where a UMEM's chunks are. The fields always add up to Total.
type Accounting struct {
	Total  int // chunks in the UMEM
	Free   int // on the free list
	Fill   int // posted to fill rings and not yet received back: fill rings, the kernel, RX rings
	User   int // handed to callers by Recv (or taken for a copy) and not yet released or sent
	TX     int // posted to TX rings and not yet completed: TX rings, the kernel, completion rings
	Closed int // held by closed sockets whose chunks have not yet been reclaimed (0 when settled)
}

// Sum is the number of chunks accounted for.
func (a Accounting) Sum() int { return a.Free + a.Fill + a.User + a.TX + a.Closed }

// XDPStats are the kernel's counters for one AF_XDP socket (XDP_STATISTICS).
type XDPStats struct {
	RxDropped            uint64 // frames dropped for other reasons than a full RX ring (e.g. too big, no fill chunk)
	RxInvalidDescs       uint64 // invalid fill descriptors
	TxInvalidDescs       uint64 // invalid TX descriptors
	RxRingFull           uint64 // frames dropped because the RX ring was full
	RxFillRingEmptyDescs uint64 // times the kernel found the fill ring empty
	TxRingEmptyDescs     uint64 // times the kernel found the TX ring empty
}
