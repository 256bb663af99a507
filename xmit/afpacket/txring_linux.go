package afpacket

import (
	"encoding/binary"
	"runtime"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/wirespeed/wirespeed/frame"
)

// The PACKET_TX_RING transmit path (Config.TxRing).
//
// The ring is an array of fixed-size slots, each a tpacket3_hdr followed by the frame. A slot is
// user space's while its tp_status is TP_STATUS_AVAILABLE; Send copies a frame in, writes tp_len and
// publishes the slot with an atomic store of TP_STATUS_SEND_REQUEST (the store orders the frame's
// bytes before the status). One send(fd, NULL, 0, MSG_DONTWAIT) then makes the kernel walk the ring
// from its own head: it builds an skb for every consecutive SEND_REQUEST slot (the bytes past the
// first 14 stay in the ring page), marks the slot TP_STATUS_SENDING and advances its head; the slot
// becomes AVAILABLE again when the skb is freed (on veth: once the peer has delivered it). A frame the
// device refuses (ENOBUFS) is set back to SEND_REQUEST and the kernel's head stays on it; one whose
// format it refuses is skipped (PACKET_LOSS, set at Open, so that no slot is ever left in
// TP_STATUS_WRONG_FORMAT with the kernel's head stuck on it).
//
// Invariant between calls to Send: no slot is SEND_REQUEST, and txHead (the next slot Send fills) is
// the kernel's head. Send keeps it by cancelling, after its retries, the slots the kernel did not
// take (always a run starting at the kernel's head): they go back to AVAILABLE, txHead moves back to
// the first of them, and their frames are counted as dropped. Only Send (under txMu) calls send(2) on
// the socket, so nothing else moves the kernel's head meanwhile.

const (
	txStatusOff  = 20 // tpacket3_hdr.tp_status
	txLenOff     = 16 // tp_len
	txSnaplenOff = 12 // tp_snaplen
	txNextOff    = 0  // tp_next_offset: 0, the kernel refuses variable-sized slots

	tpStatusAvailable   = unix.TP_STATUS_AVAILABLE
	tpStatusSendRequest = unix.TP_STATUS_SEND_REQUEST
	tpStatusWrongFormat = unix.TP_STATUS_WRONG_FORMAT

	etherHdrLen = 14 // dev->hard_header_len of an Ethernet device (veth included)
	vlanHdrLen  = 4
)

// txGeometry computes the tpacket_req3 for the TX ring: blocks of whole pages holding up to 64 KiB
// of slots (at least one slot), enough blocks for t.Frames slots.
func txGeometry(t TxRing, pageSize int) (req unix.TpacketReq3, fpb, slots int) {
	fs := t.FrameSize
	per := max(1, min(t.Frames, (64<<10)/fs))
	bs := (per*fs + pageSize - 1) / pageSize * pageSize
	fpb = bs / fs
	nb := (t.Frames + fpb - 1) / fpb
	slots = fpb * nb
	req = unix.TpacketReq3{Block_size: uint32(bs), Block_nr: uint32(nb), Frame_size: uint32(fs), Frame_nr: uint32(slots)}
	return req, fpb, slots
}

// setupTxRing sets PACKET_TX_RING (PACKET_LOSS, which the kernel takes only before any ring, is set
// earlier); the caller maps both rings with one mmap.
func (p *Port) setupTxRing(t TxRing) (size int, err error) {
	req, fpb, slots := txGeometry(t, unix.Getpagesize())
	if err = unix.SetsockoptTpacketReq3(p.fd, unix.SOL_PACKET, unix.PACKET_TX_RING, &req); err != nil {
		return 0, sysErr("setsockopt(PACKET_TX_RING)", err)
	}
	p.txOffs = make([]uint32, slots)
	for i := range p.txOffs {
		p.txOffs[i] = uint32(i/fpb)*req.Block_size + uint32(i%fpb)*req.Frame_size
	}
	p.txMax = t.FrameSize - TxSlotHeader
	return int(req.Block_size) * int(req.Block_nr), nil
}

func (p *Port) txStatus(slot uint32) *uint32 {
	return (*uint32)(unsafe.Pointer(&p.tx[p.txOffs[slot]+txStatusOff]))
}

// readMTU reads the interface's MTU (SIOCGIFMTU). Under txMu.
func (p *Port) readMTU() {
	if err := unix.IoctlIfreq(p.fd, unix.SIOCGIFMTU, p.txIfr); err != nil {
		p.c.Error()
		return
	}
	p.mtu = int(p.txIfr.Uint32())
}

// fits reports whether the kernel takes a frame of wire length n whose EtherType field (after the
// MACs) is et: tp_len <= MTU + 14, or + 18 with an 802.1Q tag (tpacket_snd's checks).
func (p *Port) fits(n int, et uint16) bool {
	lim := p.mtu + etherHdrLen
	if et == frame.TypeVLAN {
		lim += vlanHdrLen
	}
	return n <= lim
}

// sendRing is Send on the TX ring. Under txMu (released here), the port open.
func (p *Port) sendRing(b *frame.Batch) (int, error) {
	fr, mem := b.Frames, b.Mem
	tx, offs, nslots := p.tx, p.txOffs, uint32(len(p.txOffs))
	pad := !p.cfg.NoPad
	mtuChecked := false
	sent, bytes, dropped, copied := 0, 0, 0, 0
	var serr error
	p0, np := p.txHead, 0 // the slots filled since the last doorbell: p0 .. p0+np-1
	for i := 0; i < len(fr); i++ {
		f := &fr[i]
		ln := int(f.Len)
		if ln < frame.EtherLen || uint64(f.Off)+uint64(ln) > uint64(len(mem)) {
			dropped++ // not a frame, or not in b.Mem
			continue
		}
		src := mem[f.Off : int(f.Off)+ln]
		wl := ln
		et := binary.BigEndian.Uint16(src[12:14])
		if f.Flags&frame.FlagVLAN != 0 {
			wl += vlanHdrLen
			et = f.TPID
			if et == 0 {
				et = frame.TypeVLAN
			}
		}
		tl := wl
		if pad && tl < MinFrameLen {
			tl = MinFrameLen
		}
		if tl > p.txMax {
			dropped++ // does not fit a slot
			continue
		}
		if !p.fits(tl, et) {
			if !mtuChecked { // the MTU may have grown since it was read: once per batch
				p.readMTU()
				mtuChecked = true
			}
			if !p.fits(tl, et) {
				dropped++ // longer than the MTU, as sendmmsg's EMSGSIZE
				continue
			}
		}
		slot := p0 + uint32(np)
		if slot >= nslots {
			slot -= nslots
		}
		st := p.txStatus(slot)
		if np == int(nslots) || atomic.LoadUint32(st) != tpStatusAvailable {
			// The ring is full: transmit what is filled, then wait for the slot (TxRetries).
			s, sb, d, e := p.kick(p0, np, st)
			sent, bytes, dropped = sent+s, bytes+sb, dropped+d
			if e != nil && serr == nil {
				serr = e
			}
			p0, np = p.txHead, 0
			slot, st = p0, p.txStatus(p0)
			if atomic.LoadUint32(st) != tpStatusAvailable {
				dropped += len(fr) - i // back-pressure: the rest of the batch
				break
			}
		}
		off := offs[slot]
		d := tx[off+TxSlotHeader : off+TxSlotHeader+uint32(tl)]
		if f.Flags&frame.FlagVLAN != 0 {
			copy(d[:12], src[:12])
			binary.BigEndian.PutUint16(d[12:14], et)
			binary.BigEndian.PutUint16(d[14:16], f.TCI)
			copy(d[16:], src[12:])
		} else {
			copy(d, src)
		}
		if wl < tl {
			clear(d[wl:])
		}
		h := tx[off : off+TxSlotHeader]
		ne.PutUint32(h[txNextOff:], 0)
		ne.PutUint32(h[txLenOff:], uint32(tl))
		ne.PutUint32(h[txSnaplenOff:], uint32(tl))
		atomic.StoreUint32(st, tpStatusSendRequest) // publishes the bytes above
		np++
		copied++
	}
	if np > 0 {
		s, sb, d, e := p.kick(p0, np, nil)
		sent, bytes, dropped = sent+s, bytes+sb, dropped+d
		if e != nil && serr == nil {
			serr = e
		}
	}
	runtime.KeepAlive(mem)
	p.txMu.Unlock()
	b.Free()
	p.c.TxCopy(copied)
	p.c.Tx(sent, bytes)
	p.c.TxDrop(dropped)
	return sent, serr
}

// kick rings the doorbell for the np slots from p0 and retries (Config.TxRetries) until the kernel
// has taken them all and, when want is not nil, until that slot is AVAILABLE again (a full ring).
// The slots the kernel did not take are cancelled and counted as dropped, and txHead is left at the
// kernel's head. It returns the frames sent, their bytes, the frames dropped and a system error.
func (p *Port) kick(p0 uint32, np int, want *uint32) (sent, bytes, dropped int, serr error) {
	tx, offs, nslots := p.tx, p.txOffs, uint32(len(p.txOffs))
	done, retries := 0, 0
	// A call that succeeded returns the bytes of the frames it transmitted: fewer than the slots it
	// took hold means it skipped frames (PACKET_LOSS; the MTU shrank since Send checked).
	skipped := false
	for {
		var r int
		var e unix.Errno
		if done < np {
			r, e = sendKick(p.fd)
		}
		from, sum := done, 0
		for done < np {
			slot := p0 + uint32(done)
			if slot >= nslots {
				slot -= nslots
			}
			s := atomic.LoadUint32((*uint32)(unsafe.Pointer(&tx[offs[slot]+txStatusOff])))
			if s == tpStatusSendRequest || s&tpStatusWrongFormat != 0 {
				break // not taken: the kernel's head is here
			}
			sum += int(ne.Uint32(tx[offs[slot]+txLenOff:]))
			done++
		}
		bytes += sum
		if e == 0 && done > from && r != sum {
			skipped = true
		}
		if done == np && (want == nil || atomic.LoadUint32(want) == tpStatusAvailable) {
			break
		}
		if e == unix.EINTR {
			continue
		}
		if done < np {
			slot := p0 + uint32(done)
			if slot >= nslots {
				slot -= nslots
			}
			if atomic.LoadUint32(p.txStatus(slot))&tpStatusWrongFormat != 0 {
				break // refused for its format (not expected with PACKET_LOSS): no retry
			}
		}
		retryable := e == 0 || e == unix.EAGAIN || e == unix.ENOBUFS
		if !retryable || retries >= p.cfg.TxRetries {
			switch e {
			case 0, unix.EAGAIN, unix.ENOBUFS, unix.ENETDOWN, unix.ENXIO, unix.ENODEV:
			default:
				p.c.Error()
				serr = sysErr("send", e)
			}
			break
		}
		retries++
		if e == unix.ENOBUFS {
			runtime.Gosched() // the device dropped it: try again at once
		} else {
			// The socket's send buffer is full (EAGAIN) or the slot we need is still in flight:
			// POLLOUT comes when the slot at the kernel's head is free or the buffer drains.
			p.wfd[0].Revents = 0
			unix.Poll(p.wfd[:], 1)
		}
	}
	// Cancel what the kernel did not take (it is not in send(2): we hold txMu).
	for j := done; j < np; j++ {
		slot := p0 + uint32(j)
		if slot >= nslots {
			slot -= nslots
		}
		atomic.StoreUint32(p.txStatus(slot), tpStatusAvailable)
	}
	dropped = np - done
	sent = done
	h := p0 + uint32(done)
	if h >= nslots {
		h -= nslots
	}
	p.txHead = h
	if skipped {
		// The kernel skipped frames longer than the MTU it has now: find them by the same rule.
		p.readMTU()
		for j := 0; j < done; j++ {
			slot := p0 + uint32(j)
			if slot >= nslots {
				slot -= nslots
			}
			off := offs[slot]
			n := int(ne.Uint32(tx[off+txLenOff:]))
			if !p.fits(n, binary.BigEndian.Uint16(tx[off+TxSlotHeader+12:])) {
				sent--
				dropped++
				bytes -= n
			}
		}
	}
	return sent, bytes, dropped, serr
}

// sendKick makes the kernel transmit the TX ring's frames: a raw system call (never blocking with
// MSG_DONTWAIT; see sendmmsg).
func sendKick(fd int) (int, unix.Errno) {
	r, _, e := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
	return int(r), e
}
