package vlan

import (
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/wirespeed/wirespeed/frame"
)

// Interface is a logical interface on a port: untagged (Outer.TPID == 0), one tag (Outer), or a
// QinQ pair (Outer and Inner). ID is the application's number for it (0-65534), written to
// Frame.Port by Classify and read from Frame.Out by Egress.
type Interface struct {
	ID    uint16
	Port  uint16
	Outer Tag // TPID 0: the port's untagged traffic; else the tag's TPID and VID (PCP/DEI ignored)
	Inner Tag // TPID 0: none; else the inner tag of a QinQ interface
}

// entry in a port's VID table: low 16 bits iface+1 (0: none), high 16 bits inner table+1 (0: none).
type entry uint32

// priorityEntry is the entry of VID 0 (a priority tag, never an interface's VID) in both halves of
// every port's table: its high half is non-zero, so the fast loops, which test for a QinQ entry
// (e > 0xffff) anyway, find a priority tag on that rarer branch and need no test of their own.
const priorityEntry entry = 0xffff << 16

type portTable struct {
	untagged uint16 // iface+1 of the untagged interface, 0 if none
	// By vidIndex: outer TPID 0x8100 in the first half, 0x88a8 or an extra TPID in the second.
	vids [2 * 4096]entry
	d    *Demux       // for its inner tables
	_    [64 - 8]byte // keep neighbours' hot lines apart
}

// vidIndex is the index in portTable.vids of an outer tag with TPID tpid and VID vid.
func vidIndex(tpid, vid uint16) int {
	if tpid != TPID8021Q {
		return 4096 + int(vid&VIDMask)
	}
	return int(vid & VIDMask)
}

type egress struct {
	port uint16
	n    uint8 // tags to push: 0, 1 or 2
	tags [2]Tag
}

// writeHeader writes the interface's L2 header into h (14 + 4*n bytes): dst, src, the tags, etype.
func (eg *egress) writeHeader(h []byte, dst, src frame.MAC, etype uint16) {
	_ = h[13]
	copy(h[0:6], dst[:])
	copy(h[6:12], src[:])
	off := macLen
	for j := 0; j < int(eg.n); j++ {
		binary.BigEndian.PutUint16(h[off:], eg.tags[j].TPID)
		binary.BigEndian.PutUint16(h[off+2:], uint16(eg.tags[j].TCI))
		off += HeaderLen
	}
	binary.BigEndian.PutUint16(h[off:], etype)
}

// Demux maps (port, outer tag[, inner tag]) to logical interfaces in one or two array loads, and
// logical interfaces back to their port and tags for transmit.
//
// Configure a Demux with Add before workers use it; it is then read-only and safe for any number of
// concurrent Workers. To reconfigure a running system build a new Demux and swap it in (for example
// through an atomic.Pointer) between batches.
type Demux struct {
	p      Parser
	ports  []portTable
	inner  [][4096]uint16 // QinQ inner VID → iface+1
	eg     []egress       // by iface ID
	known  []bool         // by iface ID
	mu     sync.Mutex
	worker []*Worker
}

// NewDemux returns a demux for ports 0..ports-1 whose frames p parses.
func NewDemux(ports int, p Parser) *Demux {
	d := &Demux{p: p, ports: make([]portTable, ports)}
	for i := range d.ports {
		d.ports[i].d = d
		d.ports[i].vids[vidIndex(TPID8021Q, VIDNone)] = priorityEntry
		d.ports[i].vids[vidIndex(TPID8021AD, VIDNone)] = priorityEntry
	}
	return d
}

func validVID(vid uint16) bool { return vid >= 1 && vid <= VIDMax }

// Add maps an interface. VIDs must be 1-4094 (Linux refuses 4095 with ERANGE; VID 0 marks
// priority-tagged frames, which belong to the untagged interface); TPIDs must be ones the demux's
// Parser knows.
func (d *Demux) Add(ifc Interface) error {
	if int(ifc.Port) >= len(d.ports) || ifc.ID == 0xffff {
		return ErrRange
	}
	if ifc.Outer.TPID == 0 && ifc.Inner.TPID != 0 {
		return fmt.Errorf("vlan: inner tag without an outer tag: %w", ErrRange)
	}
	for _, t := range []Tag{ifc.Outer, ifc.Inner} {
		if t.TPID != 0 && (!d.p.IsTPID(t.TPID) || !validVID(t.TCI.VID())) {
			if !d.p.IsTPID(t.TPID) {
				return fmt.Errorf("vlan: TPID %#04x unknown to the parser: %w", t.TPID, ErrRange)
			}
			return ErrReservedVID
		}
	}
	if int(ifc.ID) < len(d.known) && d.known[ifc.ID] {
		return fmt.Errorf("vlan: interface %d already added: %w", ifc.ID, ErrExists)
	}
	pt := &d.ports[ifc.Port]
	id1 := uint16(ifc.ID) + 1
	eg := egress{port: ifc.Port}
	switch {
	case ifc.Outer.TPID == 0:
		if pt.untagged != 0 {
			return ErrExists
		}
		pt.untagged = id1
	default:
		e := &pt.vids[vidIndex(ifc.Outer.TPID, ifc.Outer.TCI.VID())]
		if ifc.Inner.TPID == 0 {
			if *e&0xffff != 0 {
				return ErrExists
			}
			*e |= entry(id1)
			eg.n, eg.tags[0] = 1, ifc.Outer
		} else {
			if *e>>16 == 0 {
				d.inner = append(d.inner, [4096]uint16{})
				*e |= entry(len(d.inner)) << 16
			}
			in := &d.inner[*e>>16-1][ifc.Inner.TCI.VID()]
			if *in != 0 {
				return ErrExists
			}
			*in = id1
			eg.n, eg.tags = 2, [2]Tag{ifc.Outer, ifc.Inner}
		}
	}
	for int(ifc.ID) >= len(d.eg) {
		d.eg = append(d.eg, egress{})
		d.known = append(d.known, false)
	}
	d.eg[ifc.ID], d.known[ifc.ID] = eg, true
	return nil
}

// Counters of one logical interface (or, for Drops, of the demux as a whole).
type Counters struct {
	RxPackets, RxBytes, TxPackets, TxBytes uint64
}

// Drops counts frames Classify dropped, by reason.
type Drops struct {
	UnknownVLAN uint64 // tag (or untagged frame) with no interface on that port: Linux's PACKET_OTHERHOST
	Malformed   uint64 // frame ends inside its Ethernet header or a tag, or a tag cannot be removed (ErrHeadroomRange)
}

// Worker classifies and tags frames for one goroutine. Its counters are plain per-frame increments
// in memory no other worker writes; Flush publishes them for Stats. A Worker must not be used by two
// goroutines at once.
type Worker struct {
	d     *Demux
	local []Counters // by iface ID: only this worker reads and writes
	drops Drops
	pub   []pubCounters
	pubD  [2]atomic.Uint64
	_     [64]byte
}

type pubCounters struct {
	rxp, rxb, txp, txb atomic.Uint64
}

// NewWorker returns a worker bound to d. Create workers after the last Add.
func (d *Demux) NewWorker() *Worker {
	// Pad both ends so no other allocation shares a cache line with the hot counters.
	const pad = 4 // 4 x 32 bytes
	w := &Worker{d: d, local: make([]Counters, len(d.eg)+2*pad)[pad : pad+len(d.eg)], pub: make([]pubCounters, len(d.eg))}
	d.mu.Lock()
	d.worker = append(d.worker, w)
	d.mu.Unlock()
	return w
}

// Classify maps every frame of b, received on port, to its logical interface: it sets Frame.Port to
// the interface ID, pops the tags that selected it (an out-of-band tag included) and counts the frame.
// Frames of no interface, or malformed ones, are released and counted in Drops; the kept frames stay
// in order at the front of b. It returns the number kept.
//
// As Linux does (__netif_receive_skb_core), a priority tag (VID 0) is not a VLAN: it is removed and
// the frame classified by what follows (the untagged interface, or the next tag), however many
// priority tags are stacked.
func (w *Worker) Classify(port uint16, b *frame.Batch) int {
	d := w.d
	if int(port) >= len(d.ports) {
		w.drops.UnknownVLAN += uint64(len(b.Frames))
		b.Free()
		return 0
	}
	pt := &d.ports[port]
	fr := b.Frames
	k := 0
	for i := range fr {
		id1, bad := w.classify(pt, b, i)
		if id1 == 0 {
			if bad {
				w.drops.Malformed++
			} else {
				w.drops.UnknownVLAN++
			}
			continue
		}
		f := &fr[i]
		if f.Len < frame.MinEthernetLen {
			_ = f.Pad(b.Mem, frame.MinEthernetLen) // after all pops, as Pop would have
		}
		f.Port = id1 - 1
		if c := int(f.Port); c < len(w.local) {
			w.local[c].RxPackets++
			w.local[c].RxBytes += uint64(f.Len)
		}
		if k != i { // after a drop only: keep the dropped frame behind the kept ones
			fr[k], fr[i] = fr[i], fr[k]
		}
		k++
	}
	if k < len(fr) && b.Owner != nil {
		b.Owner.Release(fr[k:])
	}
	b.Frames = fr[:k]
	return k
}

// classify returns iface+1 of frame i (0: drop; bad: malformed) and pops the tags it consumed.
func (w *Worker) classify(pt *portTable, b *frame.Batch, i int) (id1 uint16, bad bool) {
	p := &w.d.p
	if b.Frames[i].Len < frame.EtherLen {
		return 0, true
	}
	for { // each round consumes a priority tag, so it ends
		outer, ok := p.Outer(b, i)
		if !ok {
			d := b.Frames[i].Data(b.Mem)
			if len(d) < frame.EtherLen || p.IsTPID(binary.BigEndian.Uint16(d[macLen:])) {
				return 0, true // no header, or a tag cut short
			}
			return pt.untagged, false
		}
		vid := outer.TCI.VID()
		if vid == VIDNone {
			if _, err := p.pop(b, i, false); err != nil {
				return 0, true
			}
			continue // priority tag: classify by what follows
		}
		e := pt.vids[vidIndex(outer.TPID, vid)]
		if e == 0 {
			return 0, false
		}
		if e>>16 != 0 {
			// QinQ candidate: the inner tag follows the outer one in the bytes (or is the first
			// in-band tag when the outer one was out of band).
			f := &b.Frames[i]
			d := f.Data(b.Mem)
			off := macLen + HeaderLen
			if f.Flags&frame.FlagVLAN != 0 {
				off = macLen
			}
			if len(d) >= off+HeaderLen+2 && p.IsTPID(binary.BigEndian.Uint16(d[off:])) {
				ivid := binary.BigEndian.Uint16(d[off+2:]) & VIDMask
				if in := w.d.inner[e>>16-1][ivid]; in != 0 {
					if _, err := p.pop(b, i, false); err != nil {
						return 0, true
					}
					if _, err := p.pop(b, i, false); err != nil {
						return 0, true
					}
					return in, false
				}
			}
		}
		if e&0xffff == 0 {
			return 0, false
		}
		if _, err := p.pop(b, i, false); err != nil {
			return 0, true
		}
		return uint16(e), false
	}
}

// Egress pushes the tags of interface Frame.Out onto frame i (none for an untagged interface) and
// counts it as transmitted on that interface. It returns the port to send it on, or ErrRange for an
// unknown interface and the push error (ErrNoHeadroom, ErrTruncated) otherwise; on error the caller
// drops the frame.
func (w *Worker) Egress(b *frame.Batch, i int) (port uint16, err error) {
	f := &b.Frames[i]
	id := int(f.Out)
	if id >= len(w.d.eg) || !w.d.known[id] {
		return 0, ErrRange
	}
	eg := &w.d.eg[id]
	for j := int(eg.n) - 1; j >= 0; j-- {
		if err := Push(b, i, eg.tags[j]); err != nil {
			return 0, err
		}
	}
	if id < len(w.local) {
		w.local[id].TxPackets++
		w.local[id].TxBytes += uint64(f.Len)
	}
	return eg.port, nil
}

// Drops returns this worker's drop counters (call from the worker's goroutine).
func (w *Worker) Drops() Drops { return w.drops }

// Flush publishes the worker's counters for Demux.Stats. Call it from the worker's goroutine at
// whatever cadence the application reads statistics (once per millisecond or per N batches is
// plenty for a rate display). It stores only the counters that changed since the last Flush (an
// atomic store is a locked instruction on amd64; a load is a plain one), so a Flush of a worker
// with many idle interfaces, or of an idle worker, costs a few loads per interface.
func (w *Worker) Flush() {
	for i := range w.local {
		c, p := &w.local[i], &w.pub[i]
		publish(&p.rxp, c.RxPackets)
		publish(&p.rxb, c.RxBytes)
		publish(&p.txp, c.TxPackets)
		publish(&p.txb, c.TxBytes)
	}
	publish(&w.pubD[0], w.drops.UnknownVLAN)
	publish(&w.pubD[1], w.drops.Malformed)
}

// publish stores v in a unless a holds it already. Only the owning worker stores to a.
func publish(a *atomic.Uint64, v uint64) {
	if a.Load() != v {
		a.Store(v)
	}
}

// Stats sums the published counters of every worker for interface id. Safe from any goroutine.
func (d *Demux) Stats(id uint16) Counters {
	var c Counters
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, w := range d.worker {
		if int(id) < len(w.pub) {
			p := &w.pub[id]
			c.RxPackets += p.rxp.Load()
			c.RxBytes += p.rxb.Load()
			c.TxPackets += p.txp.Load()
			c.TxBytes += p.txb.Load()
		}
	}
	return c
}

// DropStats sums the published drop counters of every worker. Safe from any goroutine.
func (d *Demux) DropStats() Drops {
	var s Drops
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, w := range d.worker {
		s.UnknownVLAN += w.pubD[0].Load()
		s.Malformed += w.pubD[1].Load()
	}
	return s
}

// Ports is the number of physical ports the demux was made for.
func (d *Demux) Ports() int { return len(d.ports) }

// Interfaces lists the IDs added, ascending.
func (d *Demux) Interfaces() []uint16 {
	var ids []uint16
	for i, k := range d.known {
		if k {
			ids = append(ids, uint16(i))
		}
	}
	return ids
}

// PerFramePort, as the port argument of ClassifyInPlace, means "each frame's Frame.Port".
const PerFramePort = 0xffff

// lookup classifies one frame without changing it: iface+1 (0: drop), the in-band L2 header length
// the classification consumed (tags up to and including the EtherType), and whether it was malformed.
func (w *Worker) lookup(pt *portTable, f *frame.Frame, d []byte) (id1 uint16, l2 int, bad bool) {
	p := &w.d.p
	if len(d) < frame.EtherLen {
		return 0, 0, true
	}
	off := macLen // position of the next type/TPID field in the bytes
	oob := f.Flags&frame.FlagVLAN != 0
	for { // each round consumes a priority tag (or the out-of-band one), so it ends
		var outer Tag
		switch {
		case oob:
			oob = false
			outer = Tag{f.TPID, TCI(f.TCI)}
			if outer.TPID == 0 {
				outer.TPID = TPID8021Q
			}
		case len(d) < off+2:
			return 0, 0, true
		default:
			tp := binary.BigEndian.Uint16(d[off:])
			if !p.IsTPID(tp) {
				return pt.untagged, off + 2, false
			}
			if len(d) < off+HeaderLen+2 {
				return 0, 0, true
			}
			outer = Tag{tp, TCI(binary.BigEndian.Uint16(d[off+2:]))}
			off += HeaderLen
		}
		vid := outer.TCI.VID()
		if vid == VIDNone {
			continue // priority tag: classify by what follows
		}
		e := pt.vids[vidIndex(outer.TPID, vid)]
		if e == 0 {
			return 0, 0, false
		}
		if len(d) < off+2 {
			return 0, 0, true
		}
		if e>>16 != 0 && len(d) >= off+HeaderLen+2 && p.IsTPID(binary.BigEndian.Uint16(d[off:])) {
			ivid := binary.BigEndian.Uint16(d[off+2:]) & VIDMask
			if in := w.d.inner[e>>16-1][ivid]; in != 0 {
				return in, off + HeaderLen + 2, false
			}
		}
		if e&0xffff == 0 {
			return 0, 0, false
		}
		return uint16(e), off + 2, false
	}
}

// Encap replaces frame i's L2 header, its first Frame.L3 bytes (14 when L3 is 0), with the header of
// egress interface Frame.Out: dst and src addresses, the interface's tags, and the EtherType the old
// header ended with. The frame's start moves by the difference in header length; the payload never
// moves and no MAC byte is copied, so tagged and untagged egress cost the same. An out-of-band tag
// belonged to the old header and is discarded. A frame left shorter than 60 bytes is padded when it
// has the tailroom. It returns the port to send on; on error (ErrRange for an unknown interface,
// ErrTruncated, ErrNoHeadroom, ErrHeadroomRange) the frame is unchanged and the caller drops it.
func (w *Worker) Encap(b *frame.Batch, i int, dst, src frame.MAC) (port uint16, err error) {
	f := &b.Frames[i]
	id := int(f.Out)
	if id >= len(w.d.eg) || !w.d.known[id] {
		return 0, ErrRange
	}
	old := int(f.L3)
	if old == 0 {
		old = frame.EtherLen
	}
	if old < frame.EtherLen || old > int(f.Len) {
		return 0, ErrTruncated
	}
	eg := &w.d.eg[id]
	etype := binary.BigEndian.Uint16(b.Mem[f.Off+uint32(old)-2:])
	nl := frame.EtherLen + HeaderLen*int(eg.n)
	switch delta := nl - old; {
	case delta > 0:
		if !f.PushHead(delta) {
			return 0, ErrNoHeadroom
		}
	case delta < 0:
		if !f.PullHead(-delta) { // old <= Len: only the headroom can overflow; nothing changed
			return 0, ErrHeadroomRange
		}
	}
	eg.writeHeader(b.Mem[f.Off:f.Off+uint32(nl)], dst, src, etype)
	f.L3 = uint16(nl)
	f.Flags &^= frame.FlagVLAN
	if f.Len < frame.MinEthernetLen {
		_ = f.Pad(b.Mem, frame.MinEthernetLen)
	}
	if id < len(w.local) {
		w.local[id].TxPackets++
		w.local[id].TxBytes += uint64(f.Len)
	}
	return eg.port, nil
}
