package afpacket

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/internal/ifstats"
	"github.com/wirespeed/wirespeed/internal/syserr"
	"github.com/wirespeed/wirespeed/xmit"
)

var ne = binary.NativeEndian

// blockRef counts the frames of one ring block that user space still holds. While a block is owned by
// user space its count is (frames not yet released) + 1; the release that brings it to 1 gives the
// block back to the kernel and sets it to 0. Padded to a cache line: the receiving goroutine and the
// goroutines that release frames touch different blocks.
type blockRef struct {
	pending atomic.Int32
	_       [60]byte
}

// Port is one AF_PACKET socket bound to an interface: a TPACKET_V3 receive ring (or, with
// Config.FrameRing, a TPACKET_V2 one) read in place and a sendmmsg transmit path. It implements xmit.Port, xmit.Waiter, xmit.LinkStater and frame.Owner.
//
// # Concurrency
//
// As xmit.Port: one goroutine at a time in Recv/Wait, one (possibly another) in Send. Stats, RingStats,
// LinkUp and Close may be called from any goroutine; Release (frame.Owner) from any goroutine, at the
// same time as Recv. Recv and Send each take their own uncontended mutex once per batch; Release costs
// one atomic add per run of frames from the same ring block. Close wakes a goroutine blocked in Wait.
//
// # Ownership of received frames
//
// Recv hands out frames that point into the mmap'd ring itself (b.Mem is the ring, b.Owner the Port):
// nothing is copied. A ring block goes back to the kernel only when every frame handed out from it has
// been released (by b.Free, by Release, or by any port's Send, which releases what it sent). Frames may
// be released in any order and from any goroutine. A consumer that holds frames holds their whole
// block: if it holds frames of every block, the ring is full, the kernel freezes it and drops what
// arrives (counted by PACKET_STATISTICS: Stats().RxDropped, RingStats). With Config.FrameRing each frame
// has a slot of its own, which goes back to the kernel when that frame is released; the kernel fills
// the slots in turn and stops at one the consumer still holds (dropping and counting what arrives until
// it is released), and so does Recv. Releasing a frame twice panics, as frame.Pool does. After Close the
// ring stays mapped until the last frame handed out is released.
type Port struct {
	_       [0]sync.Mutex
	name    string
	ifindex int
	cfg     Config
	fd      int
	efd     int // eventfd: Close wakes Wait

	ring      []byte // the receive ring (b.Mem of received frames)
	mapped    []byte // the whole mapping: the receive ring, then the TX ring if any
	blockSize uint32
	nblocks   uint32
	blocks    []blockRef
	held      atomic.Int32 // blocks (a FrameRing: slots) owned by user space
	closed    atomic.Bool  // Close has begun: Recv, Wait and Send refuse
	detached  atomic.Bool  // Close is done with the ring: whoever returns the last held block unmaps it
	unmapped  atomic.Bool

	// Receive side (Recv and Wait), under rxMu.
	rxMu   sync.Mutex
	cur    uint32 // block being walked, or the next to open
	left   uint32 // packets of cur not yet handed out (0: cur is not open)
	next   uint32 // ring offset of the next packet header in cur
	blkEnd uint32 // ring offset of cur's end
	warm   uint32 // ring offset up to which Recv has read cur's cache lines ahead of the walk (max: none to read)
	used   uint32 // ring offset of the end of cur's frames (blk_len)
	wsink  byte   // what warmAhead read, so that its loads are not optimised away
	// The TPACKET_V2 ring (Config.FrameRing; nil slotOff: TPACKET_V3), see framering_linux.go.
	slotOff  []uint32 // slot → ring offset of its header
	slotSize uint32
	slot     uint32 // the next slot Recv reads
	pfd      [2]unix.PollFd
	_        [64]byte

	// Transmit side (Send), under txMu.
	txMu  sync.Mutex
	msgs  []mmsghdr
	iovs  []iovec
	tags  []uint32 // out-of-band tags put in band, in wire order, one per frame
	zeros [MinFrameLen]byte
	wfd   [1]unix.PollFd
	// The TX ring (Config.TxRing; nil tx: sendmmsg), see txring_linux.go.
	tx     []byte
	txOffs []uint32 // slot → offset in tx
	txHead uint32   // next slot to fill; the kernel's head between calls to Send
	txMax  int      // largest frame a slot holds
	mtu    int
	txIfr  *unix.Ifreq
	// Send's view of the carrier (see carrier): read at most every linkEvery.
	linkIfr   *unix.Ifreq
	linkAt    int64 // nanotime of the last reading
	linkEvery int64
	linkUp    bool
	_         [64]byte

	// Control (Stats, RingStats, LinkUp, Close), under ctlMu.
	ctlMu    sync.Mutex
	fdClosed bool
	ifr      *unix.Ifreq
	rstats   RingStats
	ks       *ifstats.Tracker // the interface's kernel counters (nil if they cannot be read)

	c xmit.Counters
}

func sysErr(name string, err error) error { return os.NewSyscallError(name, err) }

// Open opens an AF_PACKET socket on the interface ifname (in the network namespace of the calling
// thread), maps its receive ring and binds it. A nil cfg means defaults.
//
// Its errors name the interface. A missing interface wraps xmit.ErrNoInterface; a socket refused
// for want of privilege (errors.Is(err, os.ErrPermission)) says that it needs CAP_NET_RAW and
// whether the process lacks it.
func Open(ifname string, cfg *Config) (*Port, error) {
	c, err := cfg.withDefaults(unix.Getpagesize())
	if err != nil {
		return nil, err
	}
	p, err := open(ifname, c)
	if err != nil {
		return nil, fmt.Errorf("afpacket: open %s: %w", ifname, err)
	}
	return p, nil
}

func open(ifname string, c Config) (_ *Port, err error) {
	p := &Port{name: ifname, cfg: c, fd: -1, efd: -1}
	defer func() {
		if err != nil {
			if p.mapped != nil {
				unix.Munmap(p.mapped)
			}
			if p.fd >= 0 {
				unix.Close(p.fd)
			}
			if p.efd >= 0 {
				unix.Close(p.efd)
			}
		}
	}()
	// The interface first, with no privilege needed, so that a missing one is reported as such.
	if p.ifindex, _, err = syserr.Interface(ifname); err != nil {
		return nil, err
	}
	// Protocol 0: the socket receives nothing until bind, so no frame of another interface slips in.
	p.fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		err = sysErr("socket", err)
		if syserr.IsPermission(err) {
			err = syserr.WithHint(err, syserr.Hint("an AF_PACKET socket", []syserr.Cap{syserr.NetRaw},
				"a security policy (seccomp, SELinux, AppArmor) or a user namespace that does not own the network namespace refuses it"))
		}
		return nil, err
	}
	if p.ifr, err = unix.NewIfreq(ifname); err != nil {
		return nil, err
	}
	if len(c.Filter) > 0 {
		prog := make([]unix.SockFilter, len(c.Filter))
		for i, in := range c.Filter {
			prog[i] = unix.SockFilter{Code: in.Code, Jt: in.Jt, Jf: in.Jf, K: in.K}
		}
		fp := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
		if err = unix.SetsockoptSockFprog(p.fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &fp); err != nil {
			return nil, sysErr("setsockopt(SO_ATTACH_FILTER)", err)
		}
	}
	version := unix.TPACKET_V3
	if c.FrameRing != nil {
		version = unix.TPACKET_V2
	}
	if err = unix.SetsockoptInt(p.fd, unix.SOL_PACKET, unix.PACKET_VERSION, version); err != nil {
		return nil, sysErr("setsockopt(PACKET_VERSION)", err)
	}
	if c.Headroom > 0 {
		if err = unix.SetsockoptInt(p.fd, unix.SOL_PACKET, unix.PACKET_RESERVE, c.Headroom); err != nil {
			return nil, sysErr("setsockopt(PACKET_RESERVE)", err)
		}
	}
	if !c.ReceiveOutgoing {
		if err = unix.SetsockoptInt(p.fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1); err != nil {
			return nil, sysErr("setsockopt(PACKET_IGNORE_OUTGOING)", err)
		}
	}
	if c.QdiscBypass {
		if err = unix.SetsockoptInt(p.fd, unix.SOL_PACKET, unix.PACKET_QDISC_BYPASS, 1); err != nil {
			return nil, sysErr("setsockopt(PACKET_QDISC_BYPASS)", err)
		}
	}
	if c.TxRing != nil {
		// The TX ring skips a frame the kernel refuses instead of stopping on it (see txring_linux.go).
		// Taken only before any ring is set up.
		if err = unix.SetsockoptInt(p.fd, unix.SOL_PACKET, unix.PACKET_LOSS, 1); err != nil {
			return nil, sysErr("setsockopt(PACKET_LOSS)", err)
		}
	}
	var rxSize, txSize int
	if c.FrameRing != nil {
		if rxSize, err = p.setupFrameRing(*c.FrameRing); err != nil {
			return nil, err
		}
	} else {
		tov := uint32((c.RetireTimeout + time.Millisecond - 1) / time.Millisecond)
		req := unix.TpacketReq3{
			Block_size:     uint32(c.BlockSize),
			Block_nr:       uint32(c.BlockCount),
			Frame_size:     uint32(c.FrameSize),
			Frame_nr:       uint32(c.BlockSize / c.FrameSize * c.BlockCount),
			Retire_blk_tov: max(tov, 1),
		}
		if err = unix.SetsockoptTpacketReq3(p.fd, unix.SOL_PACKET, unix.PACKET_RX_RING, &req); err != nil {
			return nil, sysErr("setsockopt(PACKET_RX_RING)", err)
		}
		rxSize = c.BlockSize * c.BlockCount
		p.blockSize, p.nblocks = uint32(c.BlockSize), uint32(c.BlockCount)
		p.blocks = make([]blockRef, c.BlockCount)
	}
	if c.TxRing != nil {
		if txSize, err = p.setupTxRing(*c.TxRing); err != nil {
			return nil, err
		}
		if p.txIfr, err = unix.NewIfreq(ifname); err != nil {
			return nil, err
		}
	}
	// One mapping for both rings, as the kernel requires: the receive ring, then the TX ring.
	p.mapped, err = unix.Mmap(p.fd, 0, rxSize+txSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		p.mapped = nil
		return nil, sysErr("mmap", err)
	}
	p.ring = p.mapped[:rxSize:rxSize]
	if txSize > 0 {
		p.tx = p.mapped[rxSize:]
	}
	sa := &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: p.ifindex}
	if err = unix.Bind(p.fd, sa); err != nil {
		return nil, sysErr("bind", err)
	}
	if f := c.Fanout; f != nil {
		// The C int: group id in the low 16 bits, mode and flags in the high 16 (the defrag flag is
		// the sign bit, so build it as a uint32 to stay portable to 32-bit int).
		v := uint32(f.Group) | uint32(f.Mode)<<16
		if f.Rollover {
			v |= unix.PACKET_FANOUT_FLAG_ROLLOVER << 16
		}
		if f.Defrag {
			v |= unix.PACKET_FANOUT_FLAG_DEFRAG << 16
		}
		if !c.ReceiveOutgoing {
			v |= unix.PACKET_FANOUT_FLAG_IGNORE_OUTGOING << 16
		}
		if err = unix.SetsockoptInt(p.fd, unix.SOL_PACKET, unix.PACKET_FANOUT, int(int32(v))); err != nil {
			return nil, sysErr("setsockopt(PACKET_FANOUT)", err)
		}
	}
	if c.Promiscuous {
		mr := unix.PacketMreq{Ifindex: int32(p.ifindex), Type: unix.PACKET_MR_PROMISC}
		if err = unix.SetsockoptPacketMreq(p.fd, unix.SOL_PACKET, unix.PACKET_ADD_MEMBERSHIP, &mr); err != nil {
			return nil, sysErr("setsockopt(PACKET_ADD_MEMBERSHIP)", err)
		}
	}
	if p.efd, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err != nil {
		p.efd = -1
		return nil, sysErr("eventfd", err)
	}
	p.pfd = [2]unix.PollFd{{Fd: int32(p.fd), Events: unix.POLLIN}, {Fd: int32(p.efd), Events: unix.POLLIN}}
	p.wfd = [1]unix.PollFd{{Fd: int32(p.fd), Events: unix.POLLOUT}}
	p.growTx(frame.DefaultBatch * 4)
	if p.tx != nil {
		p.readMTU()
	}
	if p.linkIfr, err = unix.NewIfreq(ifname); err != nil {
		return nil, err
	}
	p.linkEvery, p.linkAt = int64(carrierEvery), nanotime()
	p.linkUp = p.readLink(p.linkIfr)
	if p.ks, err = ifstats.Track(p.ifindex, kernelStatsEvery); err != nil {
		p.ks, err = nil, nil // the port works without them; Stats().Errors says they are missing
		p.c.Error()
	}
	return p, nil
}

// How often Send reads the interface's carrier, and Stats the interface's kernel counters.
const (
	carrierEvery     = time.Millisecond
	kernelStatsEvery = 100 * time.Millisecond
)

// readLink reads the interface's flags (SIOCGIFFLAGS on the port's socket, so in the port's network
// namespace) and reports whether it is up with a carrier: IFF_UP and IFF_RUNNING (the operational
// state the kernel derives from the carrier). The socket must be open.
func (p *Port) readLink(ifr *unix.Ifreq) bool {
	if err := unix.IoctlIfreq(p.fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return false
	}
	fl := ifr.Uint16()
	return fl&unix.IFF_UP != 0 && fl&unix.IFF_RUNNING != 0
}

// carrier is Send's view of LinkUp, read again when the last reading is carrierEvery old: one ioctl
// a millisecond at most, not one per batch. Under txMu, the port open.
func (p *Port) carrier() bool {
	if now := nanotime(); now-p.linkAt >= p.linkEvery {
		p.linkAt = now
		p.linkUp = p.readLink(p.linkIfr)
	}
	return p.linkUp
}

// Name is the interface name.
func (p *Port) Name() string { return p.name }

// Ifindex is the interface index (in the port's network namespace).
func (p *Port) Ifindex() int { return p.ifindex }

// Config is the port's configuration with defaults filled in.
func (p *Port) Config() Config { return p.cfg }

func (p *Port) word(off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&p.ring[off])) }

// openBlock makes the next block current if the kernel has handed it over and user space no longer
// holds frames of it from the previous lap.
func (p *Port) openBlock() bool {
	for range p.nblocks {
		cur := p.cur
		br := &p.blocks[cur]
		if br.pending.Load() != 0 {
			return false // still held from the previous lap (a slow consumer): the ring waits
		}
		base := cur * p.blockSize
		if atomic.LoadUint32(p.word(base+blkStatusOff))&tpStatusUser == 0 {
			return false
		}
		b := p.ring[base : base+blkDescLen]
		num, first := ne.Uint32(b[blkNumPktsOff:]), ne.Uint32(b[blkFirstOff:])
		if num == 0 || num > p.blockSize/16 || first < blkDescLen || first > p.blockSize-pktHdrLen {
			// Empty or malformed: give it straight back.
			if num != 0 {
				p.c.RxDrop(int(min(num, p.blockSize)))
				p.c.Error()
			}
			atomic.StoreUint32(p.word(base+blkStatusOff), tpStatusKernel)
			p.advance()
			continue
		}
		br.pending.Store(int32(num) + 1)
		p.held.Add(1)
		p.left, p.next, p.blkEnd = num, base+first, base+p.blockSize
		used := ne.Uint32(b[blkLenOff:])
		if used < first || used > p.blockSize {
			used = p.blockSize
		}
		p.used, p.warm = base+used, base+first&^63
		if (used-first)/num > warmMaxStride {
			p.warm = ^uint32(0) // large frames: reading every line ahead would fetch far more than the walk needs
		}
		return true
	}
	return false
}

// warmDist is how far ahead of the walk Recv reads the ring's cache lines (see warmAhead), and
// warmMaxStride the largest average ring bytes per frame of a block for which it does: with larger
// frames it would read many lines no one needs (the walk reads a frame's header, a consumer its
// first bytes), so those blocks are walked without it.
const (
	warmDist      = 2048
	warmMaxStride = 512
)

// Why Recv's walk left its loop.
const (
	faultChain = 1 + iota // a tp_next_offset points outside the block
	faultFrame            // a malformed frame
)

// warmAhead reads one byte of every cache line from the walk's position off to warmDist bytes ahead
// (within cur's frames). The loads do not depend on each other, so the lines arrive in parallel; the
// walk itself is a chain (each header gives the next one's offset) and, left to itself, waits for one
// line after another.
//
//go:noinline
func (p *Port) warmAhead(off, warm uint32) uint32 {
	start := max(warm, off&^63)
	ring := p.ring
	end := uint32(min(uint64(off)+warmDist, uint64(p.used), uint64(len(ring))))
	var s0, s1 byte
	o := start
	for ; o+64 < end; o += 128 {
		s0 ^= ring[o]
		s1 ^= ring[o+64]
	}
	if o < end {
		s0 ^= ring[o]
	}
	p.wsink ^= s0 ^ s1
	if end >= p.used {
		return ^uint32(0)
	}
	return end
}

func (p *Port) advance() {
	p.cur++
	if p.cur == p.nblocks {
		p.cur = 0
	}
}

// PollFD implements xmit.Poller for the worker that calls Recv. The kernel reports the socket
// readable while the block before the one it fills is still the consumer's, so while that block is
// held (its frames not all released) the descriptor says nothing and PollFD returns -1. With
// Config.FrameRing the same holds of the slot before Recv's position.
func (p *Port) PollFD() (fd int, ready bool) {
	if p.closed.Load() {
		return -1, false
	}
	if p.ready() {
		return p.fd, true
	}
	if p.slotOff != nil {
		return p.pollSlots()
	}
	prev := p.cur - 1
	if p.cur == 0 {
		prev = p.nblocks - 1
	}
	if p.blocks[prev].pending.Load() != 0 || atomic.LoadUint32(p.word(prev*p.blockSize+blkStatusOff))&tpStatusUser != 0 {
		return -1, false
	}
	return p.fd, false
}

// ready reports whether Recv would return frames. Under rxMu.
func (p *Port) ready() bool {
	if p.slotOff != nil {
		return p.slotReady()
	}
	if p.left > 0 {
		return true
	}
	if p.blocks[p.cur].pending.Load() != 0 {
		return false
	}
	return atomic.LoadUint32(p.word(p.cur*p.blockSize+blkStatusOff))&tpStatusUser != 0
}

// Recv implements xmit.Port: it fills b with up to b.Cap() frames from the ring, without copying
// (see the type's documentation on ownership). It never blocks; see Wait. In TPACKET_V3 blocks of small frames
// it reads the ring's cache lines up to 2 KiB ahead of its walk, so that the frames' lines (headers
// and first bytes) arrive in parallel rather than one frame after another (bench/notes/rx.md).
func (p *Port) Recv(b *frame.Batch) (int, error) {
	if len(b.Frames) != 0 {
		return 0, xmit.ErrNotEmpty
	}
	p.rxMu.Lock()
	if p.closed.Load() {
		p.rxMu.Unlock()
		return 0, xmit.ErrClosed
	}
	fr := b.Frames[:cap(b.Frames)]
	ring := p.ring
	n, bytes, bad, vlans, partial := 0, 0, 0, 0, 0
	port := p.cfg.PortID
	if p.slotOff != nil {
		n, bytes, bad, vlans, partial = p.recvSlots(fr)
		fr = fr[:0] // the walk of blocks below has nothing to do
	}
	for n < len(fr) {
		if p.left == 0 && !p.openBlock() {
			break
		}
		// Walk the open block in chunks: read the cache lines of the next warmDist bytes ahead
		// (warmAhead), then walk the frames of the first half of them with the walk's state in
		// locals and no call in the loop; the rare cases leave the loop and are handled below it.
		off, left, blkEnd, cur, warm := p.next, p.left, p.blkEnd, p.cur, p.warm
		if uint64(off)+warmDist/2 >= uint64(warm) {
			warm = p.warmAhead(off, warm)
		}
		stop := warm - warmDist/2 // > off: the loop below takes at least one frame
		fault := 0
		for left > 0 && n < len(fr) && off < stop {
			h := (*[pktHdrLen]byte)(ring[off : off+pktHdrLen])
			nextOff, snap, wire := ne.Uint32(h[pktNextOff:]), ne.Uint32(h[pktSnaplenOff:]), ne.Uint32(h[pktLenOff:])
			status, mac := ne.Uint32(h[pktStatusOff:]), uint32(ne.Uint16(h[pktMacOff:]))
			left--
			limit := blkEnd // where this frame's tailroom ends
			if left > 0 {
				if nextOff < pktHdrLen || uint64(off)+uint64(nextOff) > uint64(blkEnd)-pktHdrLen {
					fault = faultChain
					break
				}
				limit = off + nextOff
			}
			start := uint64(off) + uint64(mac)
			end := start + uint64(snap)
			off = limit
			if mac < pktHdrLen || end > uint64(limit) || snap != wire || snap > 0xffff {
				fault = faultFrame
				break
			}
			// Field by field, not a composite literal: the compiler builds a literal on the stack
			// and copies it with 16-byte loads that cannot be forwarded from the narrower stores.
			f := &fr[n]
			f.Off, f.Buf = uint32(start), cur
			f.Len, f.Head, f.Tail = uint16(snap), uint16(mac-pktHdrLen), uint16(min(limit-uint32(end), 0xffff))
			f.ClearMeta()
			f.Port = port
			if status&(tpStatusVLAN|tpStatusCsumPart) != 0 {
				if status&tpStatusVLAN != 0 {
					tpid := uint16(frame.TypeVLAN)
					if status&tpStatusVLANTPID != 0 {
						tpid = ne.Uint16(h[pktVlanTPIDOff:])
					}
					f.Flags = frame.FlagVLAN
					f.TPID, f.TCI = tpid, uint16(ne.Uint32(h[pktVlanTCIOff:]))
					vlans++
				}
				if status&tpStatusCsumPart != 0 {
					f.Flags |= frame.FlagCsumPartial
					partial++
				}
			}
			n++
			bytes += int(snap)
		}
		switch fault {
		case faultChain: // cannot walk further: drop this frame and the rest of the block
			bad += int(left) + 1
			p.releaseRun(cur, left+1)
			left = 0
		case faultFrame: // truncated (larger than a block or 64 KiB) or malformed: drop it
			bad++
			p.releaseRun(cur, 1)
		}
		p.next, p.left, p.warm = off, left, warm
		if left == 0 {
			p.advance()
		}
	}
	p.rxMu.Unlock()
	b.Frames, b.Mem, b.Owner = b.Frames[:n], ring, p
	if partial > 0 {
		// Sent on this host (a veth peer's stack) with the checksum left to the hardware: fill it
		// in, as the NIC would have (an out-of-band tag is not in the bytes, so the L3 header
		// follows the addresses either way).
		for i := range b.Frames {
			if f := &b.Frames[i]; f.Flags&frame.FlagCsumPartial != 0 && frame.CompleteL4Checksum(f.Data(ring)) {
				f.Flags &^= frame.FlagCsumPartial
			}
		}
	}
	if vlans > 0 && p.cfg.ReinsertVLAN {
		for i := range b.Frames {
			if b.Frames[i].Flags&frame.FlagVLAN != 0 && b.ReinsertVLAN(i) == nil {
				bytes += frame.VLANLen
			}
		}
	}
	if bad > 0 {
		p.c.RxDrop(bad)
		p.c.Error()
	}
	p.c.Rx(n, bytes)
	return n, nil
}

// Release implements frame.Owner: it takes back frames Recv handed out. It may be called from any
// goroutine; frames of other owners or frames released twice make it panic.
func (p *Port) Release(frames []frame.Frame) {
	if p.slotOff != nil {
		p.releaseSlots(frames)
		return
	}
	for i := 0; i < len(frames); {
		blk := frames[i].Buf
		j := i + 1
		for j < len(frames) && frames[j].Buf == blk {
			j++
		}
		if blk >= p.nblocks {
			panic(fmt.Sprintf("afpacket: released a frame of block %d, the ring has %d (foreign frame)", blk, p.nblocks))
		}
		p.releaseRun(blk, uint32(j-i))
		i = j
	}
}

func (p *Port) releaseRun(blk, k uint32) {
	br := &p.blocks[blk]
	v := br.pending.Add(-int32(k))
	if v > 1 {
		return
	}
	if v < 1 {
		panic(fmt.Sprintf("afpacket: %d frames of block %d released but not handed out (double release or foreign frame)", k, blk))
	}
	// The last frame of the block: the kernel may fill it again. The store orders every read of the
	// block's frames before it (atomic stores are sequentially consistent).
	atomic.StoreUint32(p.word(blk*p.blockSize+blkStatusOff), tpStatusKernel)
	br.pending.Store(0)
	if p.held.Add(-1) == 0 && p.detached.Load() {
		p.unmap()
	}
}

func (p *Port) unmap() {
	if p.unmapped.CompareAndSwap(false, true) {
		unix.Munmap(p.mapped)
	}
}

// Wait implements xmit.Waiter: it blocks in poll(2) until Recv has frames, timeoutNs passes (< 0: no
// timeout) or the port is closed (ErrClosed). Call it from the receiving goroutine. A link going down
// wakes it (it returns nil; Recv then finds nothing).
func (p *Port) Wait(timeoutNs int64) error {
	p.rxMu.Lock()
	defer p.rxMu.Unlock()
	var deadline int64
	if timeoutNs >= 0 {
		deadline = nanotime() + timeoutNs
	}
	for {
		if p.closed.Load() {
			return xmit.ErrClosed
		}
		if p.ready() {
			return nil
		}
		var ts *unix.Timespec
		var t unix.Timespec
		if timeoutNs >= 0 {
			left := deadline - nanotime()
			if left <= 0 {
				return nil
			}
			t = unix.NsecToTimespec(left)
			ts = &t
		}
		p.pfd[0].Revents, p.pfd[1].Revents = 0, 0
		_, err := unix.Ppoll(p.pfd[:], ts, nil)
		if err != nil && err != unix.EINTR {
			p.c.Error()
			return sysErr("ppoll", err)
		}
		if p.pfd[1].Revents != 0 {
			return xmit.ErrClosed
		}
		re := p.pfd[0].Revents
		if re&unix.POLLERR != 0 {
			// A pending socket error (ENETDOWN when the link goes down): read it to clear it.
			unix.GetsockoptInt(p.fd, unix.SOL_SOCKET, unix.SO_ERROR)
			return nil
		}
		if re&unix.POLLIN != 0 && !p.ready() {
			// The kernel's readiness looks at the block it retired last, which a consumer may still
			// hold while the next one fills: sleep a little on the close event alone, not spin.
			p.pfd[1].Revents = 0
			ms := 1
			unix.Poll(p.pfd[1:], ms)
			if p.pfd[1].Revents != 0 {
				return xmit.ErrClosed
			}
		}
	}
}

var epoch = time.Now()

func nanotime() int64 { return int64(time.Since(epoch)) }

func (p *Port) growTx(n int) {
	if n <= len(p.msgs) {
		return
	}
	p.msgs = make([]mmsghdr, n)
	p.iovs = make([]iovec, 4*n)
	p.tags = make([]uint32, n)
}

// Send implements xmit.Port. It takes ownership of every frame of b and transmits the batch with one
// sendmmsg(2) call (more only after a partial send), with iovecs pointing into the frames' own memory
// (any arena: a Pool, this or another port's ring), so nothing is copied in user space. A frame with
// frame.FlagVLAN goes out with its tag in band (an iovec of its own: the frame is not modified);
// frames shorter than 60 bytes are padded with zeros unless Config.NoPad. Every frame the kernel does
// not take (too big for the MTU, link down, no room after Config.TxRetries, port closed) is counted in
// Stats().TxDropped. While the interface is down or without a carrier (LinkUp false; Send reads it
// at most once a millisecond) Send drops and counts the whole batch without a system call: the
// kernel would drop the frames after reporting them sent (a veth whose peer is down). The frames
// are released to b.Owner once the call returns: the kernel has copied them into its own buffers.
//
// With Config.TxRing, Send copies each frame (its tag in band, padded) into a slot of the TX ring
// (Stats().TxCopied) and rings the doorbell with one send(2) per batch; a frame longer than a slot
// or the MTU is dropped and counted, and when every slot is still in flight the rest of the batch
// waits (Config.TxRetries) or is dropped and counted. The frames are released before Send returns.
func (p *Port) Send(b *frame.Batch) (int, error) {
	fr := b.Frames
	if len(fr) == 0 {
		return 0, nil
	}
	p.txMu.Lock()
	if p.closed.Load() {
		p.txMu.Unlock()
		p.c.TxDrop(len(fr))
		b.Free()
		return 0, xmit.ErrClosed
	}
	if !p.carrier() {
		// Down or without a carrier: the kernel would drop the frames after reporting them sent
		// (a veth whose peer is down), so they are dropped and counted here.
		p.txMu.Unlock()
		p.c.TxDrop(len(fr))
		b.Free()
		return 0, nil
	}
	if p.tx != nil {
		return p.sendRing(b)
	}
	if len(fr) > len(p.msgs) {
		p.growTx(len(fr)) // once per larger batch size: not in the steady state
	}
	mem := b.Mem
	base := uintptr(unsafe.Pointer(unsafe.SliceData(mem)))
	msgs, iovs, tags := p.msgs, p.iovs, p.tags
	zeros := uintptr(unsafe.Pointer(&p.zeros[0]))
	pad := !p.cfg.NoPad
	k, iv, dropped := 0, 0, 0
	for i := range fr {
		f := &fr[i]
		ln := uintptr(f.Len)
		if f.Len < frame.EtherLen || uint64(f.Off)+uint64(f.Len) > uint64(len(mem)) {
			dropped++ // not a frame, or not in b.Mem
			continue
		}
		at := base + uintptr(f.Off)
		first := iv
		if f.Flags&frame.FlagVLAN != 0 {
			tpid := f.TPID
			if tpid == 0 {
				tpid = frame.TypeVLAN
			}
			t := (*[4]byte)(unsafe.Pointer(&tags[k]))
			binary.BigEndian.PutUint16(t[0:2], tpid)
			binary.BigEndian.PutUint16(t[2:4], f.TCI)
			iovs[iv] = iovec{at, 12}
			iovs[iv+1] = iovec{uintptr(unsafe.Pointer(t)), 4}
			iovs[iv+2] = iovec{at + 12, ln - 12}
			iv += 3
			ln += 4
		} else {
			iovs[iv] = iovec{at, ln}
			iv++
		}
		if pad && ln < MinFrameLen {
			iovs[iv] = iovec{zeros, MinFrameLen - ln}
			iv++
		}
		msgs[k] = mmsghdr{hdr: msghdr{iov: uintptr(unsafe.Pointer(&iovs[first])), iovlen: uintptr(iv - first)}}
		k++
	}
	sent, bytes, retries := 0, 0, 0
	var serr error
	downSeen := false
	for start := 0; start < k; {
		r, e := sendmmsg(p.fd, msgs[start:k], unix.MSG_DONTWAIT)
		if e == 0 {
			for i := start; i < start+r; i++ {
				bytes += int(msgs[i].len)
			}
			sent += r
			start += r
			retries = 0
			continue
		}
		switch e {
		case unix.EINTR:
			continue
		case unix.EAGAIN, unix.ENOBUFS:
			// No room: the socket's send buffer (EAGAIN) or the device's queue (ENOBUFS: dropped).
			if retries < p.cfg.TxRetries {
				retries++
				if e == unix.EAGAIN {
					p.wfd[0].Revents = 0
					unix.Poll(p.wfd[:], 1)
				} else {
					runtime.Gosched()
				}
				continue
			}
			dropped += k - start
			start = k
		case unix.ENETDOWN, unix.ENXIO, unix.ENODEV:
			// The kernel reports a link going down as a pending socket error at the next call,
			// even once the link is back (packet_notifier's sk_err): the first such error is
			// consumed and the call tried again; a second one is the link down now.
			if !downSeen {
				downSeen = true
				continue
			}
			dropped += k - start // link down
			start = k
		case unix.EMSGSIZE:
			dropped++ // longer than the MTU: this frame only
			start++
		default:
			dropped++
			start++
			p.c.Error()
			if serr == nil {
				serr = sysErr("sendmmsg", e)
			}
		}
	}
	runtime.KeepAlive(mem)
	p.txMu.Unlock()
	b.Free()
	p.c.Tx(sent, bytes)
	p.c.TxDrop(dropped)
	return sent, serr
}

// pollStats folds the kernel's PACKET_STATISTICS (which reading resets) into the counters. Under ctlMu.
func (p *Port) pollStats() {
	if p.fdClosed {
		return
	}
	if p.slotOff != nil {
		st, err := unix.GetsockoptTpacketStats(p.fd, unix.SOL_PACKET, unix.PACKET_STATISTICS)
		if err != nil {
			p.c.Error()
			return
		}
		p.rstats.Packets += uint64(st.Packets)
		p.rstats.Drops += uint64(st.Drops)
		p.c.RxDrop(int(st.Drops))
		return
	}
	st, err := unix.GetsockoptTpacketStatsV3(p.fd, unix.SOL_PACKET, unix.PACKET_STATISTICS)
	if err != nil {
		p.c.Error()
		return
	}
	p.rstats.Packets += uint64(st.Packets)
	p.rstats.Drops += uint64(st.Drops)
	p.rstats.Freezes += uint64(st.Freeze_q_cnt)
	p.c.RxDrop(int(st.Drops))
}

// Stats implements xmit.Port. Each call also reads the kernel's drop counter (one getsockopt), so
// RxDropped includes the frames the kernel dropped for want of a free ring block. The Kernel*
// fields are the interface's own counters (see xmit.Stats), read over rtnetlink at most every
// 100 ms and a last time at Close.
func (p *Port) Stats() xmit.Stats {
	p.ctlMu.Lock()
	p.pollStats()
	p.ctlMu.Unlock()
	var k ifstats.Counters
	if p.ks != nil {
		var err error
		if k, _, err = p.ks.Counters(); err != nil {
			p.c.Error()
		}
	}
	s := p.c.Stats()
	k.AddTo(&s)
	return s
}

// RingStats returns the kernel's counters for the socket, accumulated since Open.
func (p *Port) RingStats() RingStats {
	p.ctlMu.Lock()
	p.pollStats()
	r := p.rstats
	p.ctlMu.Unlock()
	return r
}

// LinkUp implements xmit.LinkStater: the interface is up and has carrier (IFF_UP and IFF_RUNNING,
// read with one ioctl on the socket, so it answers for the port's own network namespace).
func (p *Port) LinkUp() bool {
	p.ctlMu.Lock()
	defer p.ctlMu.Unlock()
	if p.fdClosed {
		return false
	}
	return p.readLink(p.ifr)
}

// Close implements xmit.Port: it wakes a goroutine blocked in Wait, closes the socket and, once every
// frame handed out is released, unmaps the ring. Closing twice is harmless.
func (p *Port) Close() error {
	if !p.closed.CompareAndSwap(false, true) {
		return nil
	}
	var one [8]byte
	ne.PutUint64(one[:], 1)
	unix.Write(p.efd, one[:])
	p.rxMu.Lock()
	p.txMu.Lock()
	p.ctlMu.Lock()
	p.pollStats()
	if p.left > 0 { // the rest of the open block was never handed out
		p.releaseRun(p.cur, p.left)
		p.left = 0
	}
	err := unix.Close(p.fd)
	unix.Close(p.efd)
	p.fdClosed = true
	p.detached.Store(true)
	if p.held.Load() == 0 {
		p.unmap()
	}
	p.ctlMu.Unlock()
	p.txMu.Unlock()
	p.rxMu.Unlock()
	if p.ks != nil {
		p.ks.Close() // the final reading of the interface's counters
	}
	if err != nil {
		return fmt.Errorf("afpacket: %s: %w", p.name, sysErr("close", err))
	}
	return nil
}

var (
	_ xmit.Port       = (*Port)(nil)
	_ xmit.Waiter     = (*Port)(nil)
	_ xmit.LinkStater = (*Port)(nil)
	_ frame.Owner     = (*Port)(nil)
)
