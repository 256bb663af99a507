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
	// frame plus ~100 bytes of header; the ring is BlockSize*BlockCount bytes (at most 4 GiB). With
	// FrameRing these four fields are not used.
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

	// FrameRing, when not nil, makes the receive ring a TPACKET_V2 ring of fixed-size frame slots
	// instead of TPACKET_V3 blocks: the kernel hands each frame over (and wakes Wait) as soon as it
	// is written, so a frame waits for no block to fill or retire (RetireTimeout). See the package
	// documentation for what it costs. It cannot be combined with TxRing (whose slots have the
	// TPACKET_V3 layout).
	FrameRing *FrameRing

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

// FrameRing is the geometry of the TPACKET_V2 receive ring (Config.FrameRing). Zero fields mean
// defaults.
type FrameRing struct {
	// Frames is the number of slots: how many frames the ring holds, whatever their size (default:
	// as many as fit in DefaultFrameRingBytes, 8192 of the default FrameSize; rounded up to fill
	// the last ring block; at most 1<<20). A consumer that holds a slot stops the kernel there: what
	// arrives meanwhile is dropped and counted.
	Frames int
	// FrameSize is the size of one slot, a multiple of 16 (default DefaultFrameRingSize). A slot
	// holds a FrameSlotOverhead-byte header and headroom, then Config.Headroom, then the frame:
	// frames longer than FrameSize-FrameSlotOverhead-Headroom are cut by the kernel, and Recv drops
	// and counts them (Stats().RxDropped). Jumbo frames need a larger FrameSize.
	FrameSize int
}

// FrameRing defaults and layout.
const (
	DefaultFrameRingSize  = 2048     // holds a 1518-byte frame with 464 bytes to spare
	DefaultFrameRingBytes = 16 << 20 // the default ring's size, that of the default TPACKET_V3 ring
	// FrameSlotOverhead is where a frame starts in a FrameRing slot without PACKET_RESERVE: the
	// 32-byte tpacket2_hdr, then RingHeadroom bytes (the sockaddr_ll and alignment) that are the
	// frame's headroom.
	FrameSlotOverhead = v2HdrLen + RingHeadroom
)

// v2HdrLen is sizeof(struct tpacket2_hdr), already TPACKET_ALIGNed.
const v2HdrLen = 32

// ringGeometry is the layout of a FrameRing: blocks of blockSize bytes (a power-of-two number of
// pages, as the kernel allocates them), each holding perBlock slots of f.FrameSize bytes.
type ringGeometry struct {
	blockSize, blocks, perBlock, slots int
}

// frameGeometry lays out a FrameRing: the smallest block (from one page up to 128 KiB) that wastes at
// most a sixteenth of itself after its last slot, else the least wasteful of them; enough blocks for
// f.Frames slots.
func frameGeometry(f FrameRing, pageSize int) ringGeometry {
	best, bestWaste := 0, 1.0
	for bs := pageSize; bs <= max(128<<10, pageSize); bs *= 2 {
		if bs < f.FrameSize {
			continue
		}
		waste := float64(bs%f.FrameSize) / float64(bs)
		if waste < bestWaste {
			best, bestWaste = bs, waste
		}
		if waste <= 1.0/16 {
			break
		}
	}
	if best == 0 { // a slot larger than 128 KiB (a page size above 64 KiB): one slot a block
		best = (f.FrameSize + pageSize - 1) / pageSize * pageSize
	}
	per := best / f.FrameSize
	n := (f.Frames + per - 1) / per
	return ringGeometry{blockSize: best, blocks: n, perBlock: per, slots: n * per}
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
	v3 := r.FrameRing == nil // the block geometry applies to the TPACKET_V3 ring only
	switch {
	case r.Headroom > 4096:
		return r, fmt.Errorf("%w: Headroom %d (at most 4096)", ErrConfig, r.Headroom)
	case !v3:
	case r.BlockSize <= 0 || r.BlockSize%pageSize != 0:
		return r, fmt.Errorf("%w: BlockSize %d is not a positive multiple of the page size %d", ErrConfig, r.BlockSize, pageSize)
	case r.BlockCount <= 0:
		return r, fmt.Errorf("%w: BlockCount %d", ErrConfig, r.BlockCount)
	case r.FrameSize <= 0 || r.FrameSize%16 != 0 || r.BlockSize%r.FrameSize != 0:
		return r, fmt.Errorf("%w: FrameSize %d must be a multiple of 16 dividing BlockSize", ErrConfig, r.FrameSize)
	case uint64(r.BlockSize)*uint64(r.BlockCount) > 1<<32-1:
		return r, fmt.Errorf("%w: ring of %d x %d bytes exceeds 4 GiB", ErrConfig, r.BlockCount, r.BlockSize)
	case r.Headroom+256 > r.FrameSize:
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
	if r.FrameRing != nil {
		f := *r.FrameRing // a copy, as for TxRing
		if f.FrameSize == 0 {
			f.FrameSize = DefaultFrameRingSize
		}
		minSize := FrameSlotOverhead + r.Headroom + MinFrameLen
		switch {
		case f.FrameSize%16 != 0 || f.FrameSize < minSize || f.FrameSize > 1<<17:
			return r, fmt.Errorf("%w: FrameRing.FrameSize %d must be a multiple of 16 from %d (with Headroom %d) to %d",
				ErrConfig, f.FrameSize, minSize, r.Headroom, 1<<17)
		case f.Frames < 0 || f.Frames > 1<<20:
			return r, fmt.Errorf("%w: FrameRing.Frames %d (1 to %d)", ErrConfig, f.Frames, 1<<20)
		case r.TxRing != nil:
			return r, fmt.Errorf("%w: FrameRing (TPACKET_V2) and TxRing (TPACKET_V3 slots) cannot be combined: the socket has one ring version", ErrConfig)
		}
		if f.Frames == 0 {
			f.Frames = max(DefaultFrameRingBytes/f.FrameSize, 64)
		}
		if g := frameGeometry(f, pageSize); uint64(g.blockSize)*uint64(g.blocks) > 1<<32-1 {
			return r, fmt.Errorf("%w: FrameRing of %d x %d bytes exceeds 4 GiB", ErrConfig, f.Frames, f.FrameSize)
		}
		r.FrameRing = &f
	}
	return r, nil
}

// RingStats are the kernel's own counters for the socket (PACKET_STATISTICS), accumulated since Open.
type RingStats struct {
	Packets uint64 // frames the kernel passed to the socket's ring or dropped for it
	Drops   uint64 // frames dropped because the ring had no free block or slot (also in Stats().RxDropped)
	Freezes uint64 // times the ring froze because user space held every block (TPACKET_V3 only)
}
