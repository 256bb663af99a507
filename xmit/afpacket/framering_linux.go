package afpacket

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/wirespeed/wirespeed/frame"
)

// The TPACKET_V2 receive ring (Config.FrameRing).
//
// The ring is an array of fixed-size slots, each a tpacket2_hdr followed by the frame. The kernel
// fills the slot at its head if that slot's tp_status is TP_STATUS_KERNEL (else it drops the frame
// and counts it in PACKET_STATISTICS), publishes it by setting TP_STATUS_USER (with flags) and wakes
// the socket's waiters; it then moves its head to the next slot. Recv reads the slots in the same
// order from its own position (Port.slot): while the slot there has TP_STATUS_USER it hands the
// frame out and marks the slot held (slotHeld, a status without the TP_STATUS_USER bit and never
// TP_STATUS_KERNEL), so that the walk stops at it when it comes round again while the consumer
// still holds it, and the kernel does not overwrite it. Release puts each slot back with a
// compare-and-swap from slotHeld to TP_STATUS_KERNEL (any other status: a double release); frames
// may so be released in any order. Port.held counts the slots handed out and not yet released.

// TPACKET_V2 header layout (struct tpacket2_hdr), offsets in bytes.
const (
	v2StatusOff   = 0
	v2LenOff      = 4
	v2SnaplenOff  = 8
	v2MacOff      = 12 // u16
	v2VlanTCIOff  = 24 // u16
	v2VlanTPIDOff = 26 // u16

	// slotHeld is the status of a slot whose frame user space holds: not TP_STATUS_KERNEL (so the
	// kernel leaves the slot alone) and without TP_STATUS_USER (so Recv does not hand it out again).
	// The kernel sets no status bit between 9 and 28.
	slotHeld = 1 << 16
)

var _ [v2HdrLen]struct{} = [unix.SizeofTpacket2Hdr]struct{}{}

// setupFrameRing sets the TPACKET_V2 PACKET_RX_RING (PACKET_VERSION is set already) and returns
// its size; the caller maps it.
func (p *Port) setupFrameRing(f FrameRing) (size int, err error) {
	g := frameGeometry(f, unix.Getpagesize())
	req := unix.TpacketReq{Block_size: uint32(g.blockSize), Block_nr: uint32(g.blocks),
		Frame_size: uint32(f.FrameSize), Frame_nr: uint32(g.slots)}
	if err = unix.SetsockoptTpacketReq(p.fd, unix.SOL_PACKET, unix.PACKET_RX_RING, &req); err != nil {
		return 0, sysErr("setsockopt(PACKET_RX_RING)", err)
	}
	p.setSlots(g, uint32(f.FrameSize))
	return g.blockSize * g.blocks, nil
}

// setSlots lays the slots out as the kernel does: slot i is in block i/perBlock, at (i%perBlock)
// slot sizes from its start.
func (p *Port) setSlots(g ringGeometry, slotSize uint32) {
	p.slotOff = make([]uint32, g.slots)
	for i := range p.slotOff {
		p.slotOff[i] = uint32(i/g.perBlock*g.blockSize + i%g.perBlock*int(slotSize))
	}
	p.slotSize = slotSize
}

// slotReady reports whether the slot at Recv's position holds a frame not yet handed out. Under rxMu.
func (p *Port) slotReady() bool {
	return atomic.LoadUint32(p.word(p.slotOff[p.slot]+v2StatusOff))&tpStatusUser != 0
}

// pollSlots is PollFD for a FrameRing when Recv has nothing. The kernel reports the socket readable
// while the slot before its head is not TP_STATUS_KERNEL; with nothing to read, its head is Recv's
// position, so while the consumer holds the frame of the slot before it the descriptor says nothing
// and pollSlots returns -1.
func (p *Port) pollSlots() (fd int, ready bool) {
	prev := p.slot - 1
	if p.slot == 0 {
		prev = uint32(len(p.slotOff)) - 1
	}
	if atomic.LoadUint32(p.word(p.slotOff[prev]+v2StatusOff)) != tpStatusKernel {
		return -1, false
	}
	return p.fd, false
}

// recvSlots fills fr from the slots the kernel has handed over, from Recv's position on. Under rxMu.
// Frames the kernel cut (tp_snaplen < tp_len: longer than a slot) or with a header that does not
// fit the slot are dropped and counted (bad), their slots given straight back.
func (p *Port) recvSlots(fr []frame.Frame) (n, bytes, bad, vlans, partial int) {
	ring, offs, size := p.ring, p.slotOff, p.slotSize
	slot, nslots := p.slot, uint32(len(p.slotOff))
	port := p.cfg.PortID
	for n < len(fr) {
		off := offs[slot]
		// A slot's header lies inside the ring (setSlots): one bounds check for all of it.
		h := (*[v2HdrLen]byte)(unsafe.Pointer(&ring[off]))
		w := (*uint32)(unsafe.Pointer(&h[v2StatusOff]))
		status := atomic.LoadUint32(w)
		if status&tpStatusUser == 0 {
			break // the kernel's (the ring is caught up) or still held (the kernel is stopped there)
		}
		wire, snap, mac := ne.Uint32(h[v2LenOff:]), ne.Uint32(h[v2SnaplenOff:]), uint32(ne.Uint16(h[v2MacOff:]))
		cur := slot
		if slot++; slot == nslots {
			slot = 0
		}
		if mac < v2HdrLen || uint64(mac)+uint64(snap) > uint64(size) || snap != wire || snap > 0xffff {
			bad++
			atomic.StoreUint32(w, tpStatusKernel)
			continue
		}
		*w = slotHeld // Release's compare-and-swap is ordered after this by the hand-over of the frame
		f := &fr[n]
		f.Off, f.Buf = off+mac, cur
		f.Len, f.Head, f.Tail = uint16(snap), uint16(mac-v2HdrLen), uint16(min(size-mac-snap, 0xffff))
		f.ClearMeta()
		f.Port = port
		if status&(tpStatusVLAN|tpStatusCsumPart) != 0 {
			if status&tpStatusVLAN != 0 {
				tpid := uint16(frame.TypeVLAN)
				if status&tpStatusVLANTPID != 0 {
					tpid = ne.Uint16(h[v2VlanTPIDOff:])
				}
				f.Flags = frame.FlagVLAN
				f.TPID, f.TCI = tpid, ne.Uint16(h[v2VlanTCIOff:])
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
	p.slot = slot
	if n > 0 {
		p.held.Add(int32(n))
	}
	return n, bytes, bad, vlans, partial
}

// releaseSlots is Release for a FrameRing: each frame's slot goes back to the kernel.
func (p *Port) releaseSlots(frames []frame.Frame) {
	if len(frames) == 0 {
		return
	}
	if p.unmapped.Load() {
		panic("afpacket: frames released after the ring was unmapped (double release or foreign frames)")
	}
	offs := p.slotOff
	for i := range frames {
		s := frames[i].Buf
		if s >= uint32(len(offs)) {
			panic(fmt.Sprintf("afpacket: released a frame of slot %d, the ring has %d (foreign frame)", s, len(offs)))
		}
		// The swap orders every read of the frame before it: the kernel may fill the slot again.
		if !atomic.CompareAndSwapUint32(p.word(offs[s]+v2StatusOff), slotHeld, tpStatusKernel) {
			panic(fmt.Sprintf("afpacket: frame of slot %d released but not handed out (double release or foreign frame)", s))
		}
	}
	if p.held.Add(-int32(len(frames))) == 0 && p.detached.Load() {
		p.unmap()
	}
}
