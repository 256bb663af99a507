package xmit

import (
	"encoding/binary"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/wirespeed/wirespeed/frame"
)

// ErrTooManyEgress is returned by TxQueue.Add past 65535 egresses, or for an egress with no port.
var ErrTooManyEgress = errors.New("xmit: too many egress interfaces or no port")

// TxQueue is one worker's transmit side (the kernel's xmit_more idea): frames routed to it are sorted
// by egress into one pending batch per egress port, and each port gets one Send per batch, when the
// batch is full or at Flush, so the syscall or ring doorbell is paid once per batch, not per frame.
//
// An egress (registered with Add, addressed by frame.Frame.Out) is one Port or several ports of the
// same device (for instance one socket per worker, or per hardware queue); with several, the port is
// chosen by the frame's flow hash (FlowHash, Pick), so a flow always leaves through the same queue and
// stays in order.
//
// Concurrency: a TxQueue belongs to one worker goroutine. It takes no lock and shares nothing with
// other workers: give each worker its own TxQueue and its own ports (Port allows one goroutine in Send
// at a time). Stats may be read from any goroutine; the counters behind it are published once per
// Flush (atomic stores on the queue's own cache line), never per frame.
//
// Ownership: Route and Enqueue take every frame of the batch they are given (the batch is left empty).
// A frame is either sent, or released to its owner and counted: Dropped (the port refused it:
// back-pressure, link down, too big) or Misrouted (no such egress). None is lost silently.
type TxQueue struct {
	_      [0]sync.Mutex
	batch  int
	egress []txEgress
	s      TxQueueStats // the owner's counters
	gen    uint64       // counts Route calls (see txEgress.gen)
	pub    txPub
}

type txEgress struct {
	ports []Port
	pend  []*frame.Batch
	gen   uint64 // == TxQueue.gen: single port, and pend[0] holds frames of the batch being routed
}

// TxQueueStats counts a TxQueue's work since it was made.
type TxQueueStats struct {
	Frames    uint64 // frames routed to a known egress
	Sent      uint64 // frames the ports queued for transmission
	Dropped   uint64 // frames the ports refused (back-pressure, link down, too big, closed)
	Misrouted uint64 // frames whose Out named no egress: released
	Sends     uint64 // Send calls (syscalls or doorbells)
	Early     uint64 // Send calls forced before a batch was full by frames of another arena
}

type txPub struct {
	_                                              [64]byte
	frames, sent, dropped, misrouted, sends, early atomic.Uint64
	_                                              [16]byte
}

// NewTxQueue returns an empty queue sending batches of up to batch frames (frame.DefaultBatch if
// batch <= 0).
func NewTxQueue(batch int) *TxQueue {
	if batch <= 0 {
		batch = frame.DefaultBatch
	}
	return &TxQueue{batch: batch}
}

// Add registers an egress made of one or more ports of the same device and returns its id, the value
// frame.Frame.Out must hold to reach it (ids count from 0 in the order of Add). Call it before the
// worker starts; it allocates the pending batches.
func (q *TxQueue) Add(ports ...Port) (uint16, error) {
	if len(ports) == 0 || len(q.egress) > 0xffff {
		return 0, ErrTooManyEgress
	}
	e := txEgress{ports: append([]Port(nil), ports...)}
	for range ports {
		e.pend = append(e.pend, frame.NewBatch(q.batch))
	}
	q.egress = append(q.egress, e)
	return uint16(len(q.egress) - 1), nil
}

// Route moves every frame of b to the pending batch of its egress (frame.Frame.Out), sending each
// pending batch that fills up. b is left empty (its arena and owner kept).
func (q *TxQueue) Route(b *frame.Batch) {
	fr := b.Frames
	eg := q.egress
	mis := 0
	q.gen++
	for i := range fr {
		f := &fr[i]
		out := int(f.Out)
		if out >= len(eg) {
			mis++
			continue
		}
		e := &eg[out]
		if e.gen == q.gen {
			// The common case inline: one port, and its pending batch already holds frames of b's
			// arena from this call (not empty: a Send in between may have reset it), with room for
			// two more (the last one takes put's path, which sends the full batch).
			p := e.pend[0]
			if n := len(p.Frames); n > 0 && n+1 < cap(p.Frames) {
				p.Frames = p.Frames[:n+1]
				p.Frames[n] = *f
				continue
			}
		}
		k := 0
		if len(e.ports) > 1 {
			k = Pick(FlowHash(f.Data(b.Mem)), len(e.ports))
		}
		q.put(e, k, b, f)
		if len(e.ports) == 1 && len(e.pend[0].Frames) > 0 {
			e.gen = q.gen // e.pend[0] now holds b's arena
		}
	}
	q.s.Frames += uint64(len(fr) - mis)
	if mis > 0 {
		// Release the misrouted frames together, once per batch.
		k := 0
		for i := range fr {
			if int(fr[i].Out) >= len(q.egress) {
				fr[k] = fr[i]
				k++
			}
		}
		if b.Owner != nil {
			b.Owner.Release(fr[:k])
		}
		q.s.Misrouted += uint64(mis)
	}
	b.Frames = fr[:0]
}

// Enqueue moves every frame of b to the egress out, whatever their Out field (a batch already sorted
// by egress). Frames are released and counted as Misrouted if out names no egress.
func (q *TxQueue) Enqueue(out uint16, b *frame.Batch) {
	fr := b.Frames
	if int(out) >= len(q.egress) {
		if len(fr) > 0 {
			q.s.Misrouted += uint64(len(fr))
			b.Free()
		}
		return
	}
	e := &q.egress[out]
	for i := range fr {
		k := 0
		if len(e.ports) > 1 {
			k = Pick(FlowHash(fr[i].Data(b.Mem)), len(e.ports))
		}
		q.put(e, k, b, &fr[i])
	}
	q.s.Frames += uint64(len(fr))
	b.Frames = fr[:0]
}

func (q *TxQueue) put(e *txEgress, k int, src *frame.Batch, f *frame.Frame) {
	p := e.pend[k]
	if len(p.Frames) > 0 && !p.SameArena(src) {
		q.s.Early++
		q.send(e.ports[k], p)
	}
	if len(p.Frames) == 0 {
		p.Mem, p.Owner = src.Mem, src.Owner
	}
	p.Frames = append(p.Frames, *f) // within capacity: sent when full
	if len(p.Frames) == cap(p.Frames) {
		q.send(e.ports[k], p)
	}
}

func (q *TxQueue) send(port Port, p *frame.Batch) {
	n := len(p.Frames)
	sent, _ := port.Send(p) // Send owns the batch and counts its own errors
	q.s.Sends++
	q.s.Sent += uint64(sent)
	q.s.Dropped += uint64(n - sent)
	p.Frames = p.Frames[:0]
}

// Flush sends every non-empty pending batch (one Send per port) and publishes the counters. Call it
// at the end of each burst of work (after the batch a worker received is routed), so frames never
// wait for more traffic.
func (q *TxQueue) Flush() {
	for i := range q.egress {
		e := &q.egress[i]
		for k, p := range e.pend {
			if len(p.Frames) > 0 {
				q.send(e.ports[k], p)
			}
		}
	}
	q.publish()
}

func (q *TxQueue) publish() {
	q.pub.frames.Store(q.s.Frames)
	q.pub.sent.Store(q.s.Sent)
	q.pub.dropped.Store(q.s.Dropped)
	q.pub.misrouted.Store(q.s.Misrouted)
	q.pub.sends.Store(q.s.Sends)
	q.pub.early.Store(q.s.Early)
}

// Stats returns the counters as of the last Flush. Any goroutine may call it.
func (q *TxQueue) Stats() TxQueueStats {
	return TxQueueStats{
		Frames: q.pub.frames.Load(), Sent: q.pub.sent.Load(), Dropped: q.pub.dropped.Load(),
		Misrouted: q.pub.misrouted.Load(), Sends: q.pub.sends.Load(), Early: q.pub.early.Load(),
	}
}

// Pick maps a 32-bit hash onto one of n queues (n > 0) with a multiply and a shift, as the kernel's
// reciprocal_scale does: uniform for a uniform hash, no division.
func Pick(hash uint32, n int) int { return int(uint64(hash) * uint64(n) >> 32) }

// FlowHash hashes the flow an Ethernet frame belongs to: for IPv4 the addresses, the protocol and (in
// unfragmented TCP, UDP, SCTP and UDP-Lite) the ports; for anything else the MAC addresses and the
// EtherType. VLAN tags in the bytes are skipped (an out-of-band tag is not part of the data). Frames
// of one flow hash alike, so a flow keeps its order across queues chosen with Pick. It never reads
// past the slice and allocates nothing.
func FlowHash(d []byte) uint32 {
	if len(d) < frame.EtherLen {
		return 0
	}
	off := 12
	et := binary.BigEndian.Uint16(d[off:])
	for (et == frame.TypeVLAN || et == frame.TypeQinQ) && len(d) >= off+6 {
		off += 4
		et = binary.BigEndian.Uint16(d[off:])
	}
	off += 2
	if et == frame.TypeIPv4 && len(d) >= off+20 {
		ip := d[off:]
		ihl := int(ip[0]&15) * 4
		proto := ip[9]
		h := uint64(binary.BigEndian.Uint32(ip[12:16]))<<32 | uint64(binary.BigEndian.Uint32(ip[16:20]))
		var ports uint32
		frag := binary.BigEndian.Uint16(ip[6:8])&0x3fff != 0
		if !frag && ihl >= 20 && len(ip) >= ihl+4 && (proto == 6 || proto == 17 || proto == 132 || proto == 136) {
			ports = binary.BigEndian.Uint32(ip[ihl:])
		}
		return mix(h ^ mix64(uint64(ports)<<8|uint64(proto)))
	}
	a := binary.BigEndian.Uint64(d[0:8])
	b := uint64(binary.BigEndian.Uint32(d[8:12]))<<16 | uint64(et)
	return mix(a ^ mix64(b))
}

func mix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

func mix(x uint64) uint32 { return uint32(mix64(x) >> 32) }
