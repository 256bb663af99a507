package vlan

import (
	"encoding/binary"
	"fmt"

	"github.com/wirespeed/wirespeed/frame"
)

// rewriteMax is the largest L2 header a Rewrite holds (two tags: 22 bytes), rounded up so that
// Apply lays it down with one 16-byte and one 8-byte store.
const rewriteMax = 24

// Rewrite is the complete L2 header of one logical interface towards one neighbour: destination and
// source addresses, the interface's tags and the EtherType, built once by Demux.Rewrite and laid over
// the L2 header of any number of frames by Worker.Apply. It is VPP's adjacency rewrite string, or the
// hardware header a Linux neighbour caches: per frame, rewriting costs one fixed-size copy whatever
// the tags, instead of assembling addresses and tags field by field (Worker.Encap).
//
// A Rewrite is an immutable value without pointers: copy it, keep arrays of them (one per next hop),
// share them between workers.
type Rewrite struct {
	_     [0]uint32        // 4-byte aligned, for Apply's load of iface and l3 as one word
	hdr   [rewriteMax]byte // right-aligned: the header is the last n bytes
	iface uint16           // iface and l3 are Frame.Out and Frame.L3 as Apply sets them: adjacent,
	l3    uint16           // in that order, so that Apply copies them with one 4-byte store
	n     uint8            // header length: 14, 18 or 22
	ok    bool             // built by Demux.Rewrite
	port  uint16
}

// Rewrite builds the header of interface iface towards the neighbour with address dst, sent from
// src, for payloads of type etype (frame.TypeIPv4 for a router's IPv4 traffic). It returns ErrRange
// for an interface that was never added.
func (d *Demux) Rewrite(iface uint16, dst, src frame.MAC, etype uint16) (Rewrite, error) {
	var rw Rewrite
	if int(iface) >= len(d.eg) || !d.known[iface] {
		return rw, fmt.Errorf("vlan: no interface %d: %w", iface, ErrRange)
	}
	eg := &d.eg[iface]
	n := frame.EtherLen + HeaderLen*int(eg.n)
	eg.writeHeader(rw.hdr[rewriteMax-n:], dst, src, etype)
	rw.n, rw.l3, rw.ok, rw.iface, rw.port = uint8(n), uint16(n), true, iface, eg.port
	return rw, nil
}

// Port returns the port the rewrite's interface sends on.
func (rw *Rewrite) Port() uint16 { return rw.port }

// Interface returns the logical interface the rewrite belongs to.
func (rw *Rewrite) Interface() uint16 { return rw.iface }

// Len returns the length of the header: 14, 18 or 22 bytes.
func (rw *Rewrite) Len() int { return int(rw.n) }

// RewriteMax is the size of the block Rewrite.Block returns: the largest L2 header, two tags, rounded
// up to a multiple of 8 bytes.
const RewriteMax = rewriteMax

// Block returns the header right-aligned in RewriteMax bytes, the bytes before it unspecified: what
// Apply lays down in its common case, a copy of the whole block that ends at the frame's network
// header (when the frame owns RewriteMax bytes in front of it), for a stage that rewrites frames in
// a loop of its own. The block belongs to rw: the caller must not modify it.
func (rw *Rewrite) Block() *[RewriteMax]byte { return &rw.hdr }

// Valid reports whether rw was built by Demux.Rewrite (the zero Rewrite is not).
func (rw *Rewrite) Valid() bool { return rw.ok }

// TxCounters returns the worker's counters for interface iface, where Apply counts each frame it
// rewrites (TxPackets, and TxBytes the frame's length after the rewrite), for a stage that applies a
// Rewrite in its own loop and counts as Apply does; nil when the worker has none for iface (an
// interface added after the worker). The counters are the worker's: use them from its goroutine.
func (w *Worker) TxCounters(iface uint16) *Counters {
	if int(iface) >= len(w.local) {
		return nil
	}
	return &w.local[iface]
}

// Header returns a copy of the header bytes.
func (rw *Rewrite) Header() []byte { return append([]byte(nil), rw.hdr[rewriteMax-int(rw.n):]...) }

// Apply replaces frame i's L2 header, its first Frame.L3 bytes (14 when L3 is 0), with rw, sets
// Frame.Out to rw's interface and counts the frame as transmitted on it. The payload never moves: the
// frame's start moves by the difference in header length. An out-of-band tag belonged to the old
// header and is discarded. A frame left shorter than 60 bytes is padded when it has the tailroom.
//
// On error (ErrRange for a zero Rewrite, ErrTruncated when L3 lies beyond the frame, ErrNoHeadroom,
// ErrHeadroomRange when a shorter header would leave more than 65535 bytes of headroom) the frame is
// unchanged and the caller drops it.
//
// Apply writes rewriteMax bytes ending at the network header when the frame owns that many bytes in
// front of it (the bytes before the new header are headroom), else exactly the header.
//
// Apply is a leaf function (no call, so no stack check or frame set-up) whose common case (a
// Rewrite, headroom for 24 bytes, a result of 60 bytes or more) is one branch-light path.
func (w *Worker) Apply(b *frame.Batch, i int, rw *Rewrite) error {
	f := &b.Frames[i]
	old := int(f.L3)
	if old == 0 {
		old = frame.EtherLen
	}
	n := int(rw.n)
	front := int(f.Head) + old // bytes in front of the network header that belong to the frame
	l3 := int(f.Off) + old
	ln := int(f.Len) - old + n // the new length
	// The common case. A new length of 60 or more implies old <= Len (n is at most 22).
	if rw.ok && old >= frame.EtherLen && front >= rewriteMax && l3 <= len(b.Mem) &&
		uint(ln-frame.MinEthernetLen) <= 0xffff-frame.MinEthernetLen && front-n <= 0xffff {
		*(*[rewriteMax]byte)(b.Mem[l3-rewriteMax : l3]) = rw.hdr
		f.Off = uint32(l3 - n)
		f.Len, f.Head = uint16(ln), uint16(front-n)
		if fastMem {
			*word32(&f.Out) = *word32(&rw.iface) // Out, L3 = iface, n
		} else {
			f.Out, f.L3 = rw.iface, rw.l3
		}
		f.Flags &^= frame.FlagVLAN
		if id := int(rw.iface); id < len(w.local) {
			c := &w.local[id]
			c.TxPackets++
			c.TxBytes += uint64(ln)
		}
		return nil
	}
	switch {
	case !rw.ok:
		return ErrRange
	case old < frame.EtherLen || old > int(f.Len) || l3 > len(b.Mem):
		return ErrTruncated
	case front < n || ln > 0xffff:
		return ErrNoHeadroom
	case front-n > 0xffff:
		return ErrHeadroomRange
	case front >= rewriteMax:
		*(*[rewriteMax]byte)(b.Mem[l3-rewriteMax : l3]) = rw.hdr
	default: // exactly the header, as three 8-byte copies (no call: Apply stays a leaf)
		h, src := b.Mem[l3-n:l3], rw.hdr[rewriteMax-n:]
		m := min(8, n-8)
		x0, x1, x2 := binary.LittleEndian.Uint64(src), binary.LittleEndian.Uint64(src[m:]), binary.LittleEndian.Uint64(src[n-8:])
		binary.LittleEndian.PutUint64(h, x0)
		binary.LittleEndian.PutUint64(h[m:], x1)
		binary.LittleEndian.PutUint64(h[n-8:], x2)
	}
	f.Off = uint32(l3 - n)
	f.Head = uint16(front - n)
	f.Len = uint16(ln)
	f.L3 = uint16(n)
	f.Out = rw.iface
	f.Flags &^= frame.FlagVLAN
	if ln < frame.MinEthernetLen && ln+int(f.Tail) >= frame.MinEthernetLen {
		// Pad to 60 bytes from the tailroom (frame.Pad, without its call to clear).
		end := int(f.Off) + ln
		for z := b.Mem[end : end+frame.MinEthernetLen-ln]; len(z) > 0; z = z[1:] {
			z[0] = 0 // (a byte loop: a clear() would be a call)
		}
		f.Tail -= uint16(frame.MinEthernetLen - ln)
		f.Len = frame.MinEthernetLen
		ln = frame.MinEthernetLen
	}
	if id := int(rw.iface); id < len(w.local) {
		c := &w.local[id]
		c.TxPackets++
		c.TxBytes += uint64(ln)
	}
	return nil
}
