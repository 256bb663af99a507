package afpacket

import (
	"errors"
	"fmt"
	"time"
)

// Defaults for a nil or zero Config.
const (
	DefaultBlockSize = 128 << 10 // bytes per RX ring block (~900 frames of 60 bytes)
	// DefaultBlockCount is the number of RX ring blocks (16 MiB in all). With a short RetireTimeout
	// the kernel hands blocks over part-full, so the ring holds BlockCount x RetireTimeout of traffic
	// at most whatever its size: 128 blocks bear a consumer stalled for ~100 ms at 1 Mpps (16 blocks
	// would drop frames after a 16 ms stall; see bench/notes/rx.md).
	DefaultBlockCount    = 128
	DefaultFrameSize     = 2048 // nominal tp_frame_size (TPACKET_V3 places frames back to back)
	DefaultRetireTimeout = time.Millisecond
	// RingHeadroom is the headroom every received frame has with no PACKET_RESERVE: the TPACKET_V3
	// layout puts the frame 34 bytes after its 48-byte header (the sockaddr_ll and alignment), and
	// those bytes are the frame's to overwrite. Enough for a VLAN, QinQ or DSA tag push without a copy.
	RingHeadroom = 34
	// MinFrameLen is the length Send pads shorter frames to (ETH_ZLEN), unless Config.NoPad.
	MinFrameLen = 60
)

// FanoutMode is a PACKET_FANOUT distribution mode.
type FanoutMode uint16

// Fanout modes (linux/if_packet.h PACKET_FANOUT_*).
const (
	FanoutHash     FanoutMode = 0 // by the flow hash of the frame (symmetric): a flow stays on one socket
	FanoutLB       FanoutMode = 1 // round robin
	FanoutCPU      FanoutMode = 2 // by the CPU the frame arrived on
	FanoutRollover FanoutMode = 3 // fill one socket, then the next
	FanoutRandom   FanoutMode = 4
	FanoutQM       FanoutMode = 5 // by the NIC's RX queue (skb queue mapping)
)

// Fanout joins the socket to a PACKET_FANOUT group: every socket of the group (same interface, same
// Group id, same mode) receives a disjoint share of the interface's frames. Open the interface once per
// worker with the same Fanout to spread receive work across workers.
type Fanout struct {
	Group    uint16
	Mode     FanoutMode
	Rollover bool // PACKET_FANOUT_FLAG_ROLLOVER: when a socket's ring is full, try the next one
	Defrag   bool // PACKET_FANOUT_FLAG_DEFRAG: reassemble IP fragments before hashing
}

// Config configures a Port. The zero value (or a nil *Config) means defaults for every field.
type Config struct {
	// RX ring geometry (TPACKET_V3). BlockSize must be a multiple of the page size and hold the largest
	// frame plus ~100 bytes of header; the ring is BlockSize*BlockCount bytes (at most 4 GiB).
	BlockSize  int
	BlockCount int
	FrameSize  int

	// RetireTimeout is how long the kernel fills a block before handing it over anyway (tp_retire_blk_tov,
	// 1 ms granularity). It bounds the latency at low rates; the kernel's own default is 8 ms or more and
	// other libraries use 64 ms.
	RetireTimeout time.Duration

	// Headroom is extra PACKET_RESERVE space in front of every received frame, on top of the
	// RingHeadroom bytes it always has (at most 4096; default 0, negative means 0). Every byte of it
	// also costs a byte of ring per frame, so add only what tag pushes beyond 34 bytes need.
	Headroom int

	// ReinsertVLAN puts the VLAN tag the kernel took out of a received frame back into its bytes (using
	// the headroom) instead of reporting it out of band with frame.FlagVLAN.
	ReinsertVLAN bool

	// ReceiveOutgoing also delivers frames other sockets send on the interface. By default they are
	// ignored (PACKET_IGNORE_OUTGOING), so a port never receives what a forwarder transmits.
	ReceiveOutgoing bool

	// Promiscuous puts the interface in promiscuous mode for as long as the port is open.
	Promiscuous bool

	// Fanout, when not nil, joins a PACKET_FANOUT group.
	Fanout *Fanout

	// QdiscBypass sends with PACKET_QDISC_BYPASS: straight to the driver, skipping the qdisc layer (and
	// so tc shaping and the device's queue accounting).
	QdiscBypass bool

	// TxRetries is how many times Send retries a frame the kernel refused for lack of room (EAGAIN:
	// socket send buffer full; ENOBUFS: the device dropped it, e.g. a veth's full backlog), yielding the
	// processor between attempts, before it counts the rest of the batch in TxDropped. 0 means no retry:
	// drop and count at once, which is what a forwarder under overload wants. A negative value is 0.
	TxRetries int

	// NoPad sends frames shorter than 60 bytes as they are. By default Send pads them with zeros (from a
	// separate buffer, without touching the frame) as a NIC would.
	NoPad bool

	// PortID is stamped into frame.Frame.Port of every received frame.
	PortID uint16

	// Filter, when not empty, is a classic BPF program the kernel runs on every frame before it
	// reaches the ring (SO_ATTACH_FILTER): a frame it returns 0 for never reaches the socket (nor
	// its counters). It is attached before the socket is bound, so no frame passes unfiltered.
	Filter []BPF

	// TxRing, when not nil, makes Send transmit through a PACKET_TX_RING (mapped together with the
	// receive ring) instead of sendmmsg(2): every frame is copied into a ring slot (counted in
	// Stats().TxCopied) and one send(2) per batch rings the doorbell. See the package documentation
	// for which is faster.
	TxRing *TxRing
}

// BPF is one classic BPF instruction (struct sock_filter).
type BPF struct {
	Code   uint16
	Jt, Jf uint8
	K      uint32
}

// TxRing is the geometry of the PACKET_TX_RING transmit path. Zero fields mean defaults.
type TxRing struct {
	// Frames is the number of slots (default DefaultTxFrames; rounded up to fill the last ring block).
	// A batch larger than the free slots waits for the kernel (Config.TxRetries) or is partly dropped
	// and counted.
	Frames int
	// FrameSize is the size of one slot, a multiple of 16 including the TxSlotHeader-byte header
	// (default DefaultTxFrameSize). Frames longer than FrameSize-TxSlotHeader (after the VLAN tag is
	// put in band) are dropped and counted; jumbo frames need a larger FrameSize.
	FrameSize int
}

// TX ring defaults and layout.
const (
	DefaultTxFrames    = 1024
	DefaultTxFrameSize = 2048 // frames up to 2000 bytes
	// TxSlotHeader is where the frame starts in a TX ring slot: the TPACKET_V3 header (tpacket3_hdr,
	// 48 bytes) that carries the slot's status and length.
	TxSlotHeader = 48
)

// ErrConfig is wrapped by Open's errors for an invalid Config.
var ErrConfig = errors.New("afpacket: invalid config")

func (c *Config) withDefaults(pageSize int) (Config, error) {
	var r Config
	if c != nil {
		r = *c
	}
	if r.BlockSize == 0 {
		r.BlockSize = DefaultBlockSize
	}
	if r.BlockCount == 0 {
		r.BlockCount = DefaultBlockCount
	}
	if r.FrameSize == 0 {
		r.FrameSize = DefaultFrameSize
	}
	if r.RetireTimeout == 0 {
		r.RetireTimeout = DefaultRetireTimeout
	}
	if r.Headroom < 0 {
		r.Headroom = 0
	}
	if r.TxRetries < 0 {
		r.TxRetries = 0
	}
	switch {
	case r.BlockSize <= 0 || r.BlockSize%pageSize != 0:
		return r, fmt.Errorf("%w: BlockSize %d is not a positive multiple of the page size %d", ErrConfig, r.BlockSize, pageSize)
	case r.BlockCount <= 0:
		return r, fmt.Errorf("%w: BlockCount %d", ErrConfig, r.BlockCount)
	case r.FrameSize <= 0 || r.FrameSize%16 != 0 || r.BlockSize%r.FrameSize != 0:
		return r, fmt.Errorf("%w: FrameSize %d must be a multiple of 16 dividing BlockSize", ErrConfig, r.FrameSize)
	case uint64(r.BlockSize)*uint64(r.BlockCount) > 1<<32-1:
		return r, fmt.Errorf("%w: ring of %d x %d bytes exceeds 4 GiB", ErrConfig, r.BlockCount, r.BlockSize)
	case r.Headroom > 4096 || r.Headroom+256 > r.FrameSize:
		return r, fmt.Errorf("%w: Headroom %d too large for FrameSize %d", ErrConfig, r.Headroom, r.FrameSize)
	case r.RetireTimeout < 0 || r.RetireTimeout > time.Hour:
		return r, fmt.Errorf("%w: RetireTimeout %v", ErrConfig, r.RetireTimeout)
	}
	if r.TxRing != nil {
		t := *r.TxRing // a copy: the caller's TxRing is not modified
		if t.Frames == 0 {
			t.Frames = DefaultTxFrames
		}
		if t.FrameSize == 0 {
			t.FrameSize = DefaultTxFrameSize
		}
		switch {
		case t.Frames < 0 || t.Frames > 1<<20:
			return r, fmt.Errorf("%w: TxRing.Frames %d (1 to %d)", ErrConfig, t.Frames, 1<<20)
		case t.FrameSize%16 != 0 || t.FrameSize < TxSlotHeader+MinFrameLen+r.Headroom || t.FrameSize > 1<<17:
			return r, fmt.Errorf("%w: TxRing.FrameSize %d must be a multiple of 16 from %d to %d", ErrConfig,
				t.FrameSize, TxSlotHeader+MinFrameLen+r.Headroom, 1<<17)
		}
		r.TxRing = &t
	}
	return r, nil
}

// RingStats are the kernel's own counters for the socket (PACKET_STATISTICS), accumulated since Open.
type RingStats struct {
	Packets uint64 // frames the kernel passed to the socket's ring or dropped for it
	Drops   uint64 // frames dropped because the ring had no free block (also in Stats().RxDropped)
	Freezes uint64 // times the ring froze because user space held every block
}
