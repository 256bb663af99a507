package vlan

import (
	"github.com/wirespeed/wirespeed/frame"
)

// ClassifyInPlace is Classify for a stage that will replace the whole L2 header on the way out (a
// router, with Encap or Apply): it maps every frame to its interface (Frame.Port) and records the
// length of its in-band L2 header, tags included, in Frame.L3, but moves no byte. An out-of-band tag
// is consumed (the flag cleared). Frames of no interface, or malformed ones, are released and
// counted as in Classify. It returns the number kept.
//
// With port == PerFramePort each frame's own Frame.Port is its physical port: a batch from a DSA
// conduit, whose tagger set Frame.Port to the switch port each frame came in on.
func (w *Worker) ClassifyInPlace(port uint16, b *frame.Batch) int {
	return w.classifyInPlace(port, b, w.d.p.n != 0)
}

// classifyInPlace is ClassifyInPlace; with general set (extra TPIDs, or a test's reference) every
// frame takes inPlaceFrame.
func (w *Worker) classifyInPlace(port uint16, b *frame.Batch, general bool) int {
	d := w.d
	if port != PerFramePort && int(port) >= len(d.ports) {
		w.drops.UnknownVLAN += uint64(len(b.Frames))
		b.Free()
		return 0
	}
	fr := b.Frames
	var fixed *portTable // the port's table when all frames come from one port
	if port != PerFramePort {
		fixed = &d.ports[port]
	}
	k := 0
	if general || len(w.local) < len(d.eg) { // (a worker made before the last Add: no fast loop)
		// Extra TPIDs: the fast loops know only the standard two; every frame takes lookup.
		for i := range fr {
			k = w.inPlaceFrame(fixed, b, i, k)
		}
	} else {
		// The common frames (no out-of-band tag, at least 22 bytes, untagged or with a
		// standard outer tag that is not a priority tag) in a loop without a call; the loop
		// stops at any other frame, which inPlaceFrame classifies, and resumes after it.
		// From one port, the loop without QinQ first; once it stops, the one with QinQ for the
		// rest of the batch (it costs a few instructions more per frame).
		qinq := fixed == nil
		for i := 0; ; {
			i0, k0 := i, k
			switch {
			case !qinq:
				i, k = w.inPlaceRun(fixed, fr, b.Mem, i, k)
			case fixed != nil:
				i, k = w.inPlaceRunQinQ(fixed, fr, b.Mem, i, k)
			default:
				i, k = w.inPlaceRunPorts(fr, b.Mem, i, k)
			}
			w.drops.UnknownVLAN += uint64(i - i0 - (k - k0)) // the run's drops: see inPlaceRun
			if i >= len(fr) {
				break
			}
			if !qinq {
				qinq = true
				continue
			}
			k = w.inPlaceFrame(fixed, b, i, k)
			i++
		}
	}
	if k < len(fr) && b.Owner != nil {
		b.Owner.Release(fr[k:])
	}
	b.Frames = fr[:k]
	return k
}

// inPlaceFrame is ClassifyInPlace's general path for frame i of b, k frames kept so far (k <= i):
// it classifies the frame with lookup, counts it (kept or dropped by reason), moves a kept frame to
// position k (swapping it with the dropped frame there) and returns the new k. fixed is the port's
// table, or nil for each frame's own Frame.Port.
//
//go:noinline
func (w *Worker) inPlaceFrame(fixed *portTable, b *frame.Batch, i, k int) int {
	d := w.d
	fr := b.Frames
	f := &fr[i]
	pt := fixed
	if pt == nil {
		if int(f.Port) >= len(d.ports) {
			w.drops.UnknownVLAN++
			return k
		}
		pt = &d.ports[f.Port]
	}
	id1, l2, bad := w.lookup(pt, f, f.Data(b.Mem))
	if id1 == 0 {
		if bad {
			w.drops.Malformed++
		} else {
			w.drops.UnknownVLAN++
		}
		return k
	}
	f.Port, f.L3 = id1-1, uint16(l2)
	f.Flags &^= frame.FlagVLAN
	if c := int(f.Port); c < len(w.local) {
		w.local[c].RxPackets++
		w.local[c].RxBytes += uint64(f.Len)
	}
	if k != i {
		fr[k], fr[i] = fr[i], fr[k]
	}
	return k + 1
}

// inPlaceMin is the length a frame needs for the fast loops: room for an outer and an inner tag
// and the EtherType after them, so that every byte lookup would read is there.
const inPlaceMin = EthLen + HeaderLen

// The fast loops below classify what lookup classifies, for frames without an out-of-band tag, of
// at least inPlaceMin bytes, inside mem, with the standard TPIDs: untagged (the port's untagged
// interface, L3 = 14); one tag (the entry of its TPID and VID; L3 = 18); a QinQ pair (when the
// outer entry has an inner table, the next TPID is a standard one and the inner VID has an
// interface; L3 = 22; else the outer entry's own interface). A priority tag (VID 0) stops the loop,
// which hands the frame to inPlaceFrame; so does any frame outside those conditions.
//
// They walk the descriptors by byte offset p < len(fr)*frameSize and take &fr[p/frameSize] with
// frameAt: the same element the index would give, always inside fr, in fewer loop instructions
// than an index (which needs an increment, a compare, a copy and a shift by 5 for the 32-byte
// stride). The line that takes it also loads the first field through a second frameAt, which the
// compiler merges with the first: the load is an instruction of that line, so the inlined call
// leaves no NOP (see mem.go). They read the TPID and TCI as one big-endian word. A run from frame
// i to frame j (where it stopped) with k kept before and k' after dropped j-i-(k'-k) frames for
// want of an interface: the loops do not count them. Kept frames are counted and moved to position k as inPlaceFrame does; the counters are
// reached without a bounds check (the caller checked once per batch that w.local has an entry for
// every interface of the demux, and the tables hold no other IDs). Nothing in the loops is a call,
// so nothing is spilled per frame.

// inPlaceRun is the fast loop for a batch from one port (table pt), from frame i on with k frames
// kept so far, for every frame but QinQ ones (and rare ones). It returns the index of the frame it
// stopped at (len(fr) when none) and the frames kept.
//
//go:noinline
func (w *Worker) inPlaceRun(pt *portTable, fr []frame.Frame, mem []byte, i, k int) (int, int) {
	if i >= len(fr) || len(mem) < inPlaceMin {
		return i, k
	}
	vids := &pt.vids
	lim := int64(len(mem)) - inPlaceMin // a frame's bytes read here are inside mem iff Off <= lim
	local := w.local
	end := uintptr(len(fr)) * frameSize
	p, q := uintptr(i)*frameSize, uintptr(k)*frameSize
	for ; p < end; p += frameSize {
		f, o := frameAt(fr, p), int64(frameAt(fr, p).Off)
		ln := f.Len
		if f.Flags&frame.FlagVLAN != 0 || ln < inPlaceMin || o > lim {
			break
		}
		h := mem[o : o+inPlaceMin : o+inPlaceMin]
		x := be32(h[12], h[13], h[14], h[15]) // TPID (or EtherType) and TCI
		var e entry
		l2 := uint16(EthLen)
		switch uint16(x >> 16) {
		case TPID8021Q:
			e = vids[x&VIDMask]
		case TPID8021AD:
			e = vids[4096+x&VIDMask]
		default:
			e, l2 = entry(pt.untagged), frame.EtherLen
		}
		if e-1 >= 0xffff { // one compare for both rare cases
			if e == 0 {
				continue // no interface: counted by the caller
			}
			break // QinQ below, or a priority tag: see inPlaceRunQinQ
		}
		id1 := uint16(e)
		f.Port, f.L3 = id1-1, l2
		counterAt(local, id1-1).RxPackets++
		counterAt(local, id1-1).RxBytes += uint64(ln)
		if q != p { // after a drop only: keep the dropped frame behind the kept ones
			*f, *frameAt(fr, q) = *frameAt(fr, q), *f
		}
		q += frameSize
	}
	return int(p / frameSize), int(q / frameSize)
}

// inPlaceRunQinQ is inPlaceRun that also classifies QinQ frames (an outer entry with an inner
// table): the loop ClassifyInPlace switches to for the rest of a batch once inPlaceRun stopped.
//
//go:noinline
func (w *Worker) inPlaceRunQinQ(pt *portTable, fr []frame.Frame, mem []byte, i, k int) (int, int) {
	if i >= len(fr) || len(mem) < inPlaceMin {
		return i, k
	}
	vids := &pt.vids
	lim := int64(len(mem)) - inPlaceMin // a frame's bytes read here are inside mem iff Off <= lim
	local := w.local
	end := uintptr(len(fr)) * frameSize
	p, q := uintptr(i)*frameSize, uintptr(k)*frameSize
	for ; p < end; p += frameSize {
		f, o := frameAt(fr, p), int64(frameAt(fr, p).Off)
		ln := f.Len
		if f.Flags&frame.FlagVLAN != 0 || ln < inPlaceMin || o > lim {
			break
		}
		h := mem[o : o+inPlaceMin : o+inPlaceMin]
		x := be32(h[12], h[13], h[14], h[15]) // TPID (or EtherType) and TCI
		var e entry
		l2 := uint16(EthLen)
		switch uint16(x >> 16) {
		case TPID8021Q:
			e = vids[x&VIDMask]
		case TPID8021AD:
			e = vids[4096+x&VIDMask]
		default:
			e, l2 = entry(pt.untagged), frame.EtherLen
		}
		if e > 0xffff { // QinQ below, or a priority tag
			if x&VIDMask == VIDNone {
				break
			}
			e, l2 = pt.inner(e, l2, be32(h[16], h[17], h[18], h[19]))
		}
		if e == 0 {
			continue // no interface: counted by the caller
		}
		id1 := uint16(e)
		f.Port, f.L3 = id1-1, l2
		counterAt(local, id1-1).RxPackets++
		counterAt(local, id1-1).RxBytes += uint64(ln)
		if q != p { // after a drop only: keep the dropped frame behind the kept ones
			*f, *frameAt(fr, q) = *frameAt(fr, q), *f
		}
		q += frameSize
	}
	return int(p / frameSize), int(q / frameSize)
}

// inPlaceRunPorts is inPlaceRun for a batch whose frames carry their physical port in Frame.Port
// (PerFramePort); a frame of a port the demux does not have is dropped as of no interface.
//
//go:noinline
func (w *Worker) inPlaceRunPorts(fr []frame.Frame, mem []byte, i, k int) (int, int) {
	if i >= len(fr) || len(mem) < inPlaceMin {
		return i, k
	}
	ports := w.d.ports
	lim := int64(len(mem)) - inPlaceMin
	local := w.local
	end := uintptr(len(fr)) * frameSize
	p, q := uintptr(i)*frameSize, uintptr(k)*frameSize
	for ; p < end; p += frameSize {
		f, pn := frameAt(fr, p), uint(frameAt(fr, p).Port)
		if pn >= uint(len(ports)) {
			continue // no such port: counted by the caller as of no interface
		}
		pt := &ports[pn]
		vids := &pt.vids
		o := int64(f.Off)
		ln := f.Len
		if f.Flags&frame.FlagVLAN != 0 || ln < inPlaceMin || o > lim {
			break
		}
		h := mem[o : o+inPlaceMin : o+inPlaceMin]
		x := be32(h[12], h[13], h[14], h[15]) // TPID (or EtherType) and TCI
		var e entry
		l2 := uint16(EthLen)
		switch uint16(x >> 16) {
		case TPID8021Q:
			e = vids[x&VIDMask]
		case TPID8021AD:
			e = vids[4096+x&VIDMask]
		default:
			e, l2 = entry(pt.untagged), frame.EtherLen
		}
		if e > 0xffff { // QinQ below, or a priority tag
			if x&VIDMask == VIDNone {
				break
			}
			e, l2 = pt.inner(e, l2, be32(h[16], h[17], h[18], h[19]))
		}
		if e == 0 {
			continue // no interface: counted by the caller
		}
		id1 := uint16(e)
		f.Port, f.L3 = id1-1, l2
		counterAt(local, id1-1).RxPackets++
		counterAt(local, id1-1).RxBytes += uint64(ln)
		if q != p { // after a drop only: keep the dropped frame behind the kept ones
			*f, *frameAt(fr, q) = *frameAt(fr, q), *f
		}
		q += frameSize
	}
	return int(p / frameSize), int(q / frameSize)
}

// inner is the fast loops' QinQ step for an outer entry e with an inner table (e > 0xffff): the
// inner tag's interface when x2 (bytes 16-19) is a standard tag whose VID has one (L2 length 22),
// else the outer entry's own interface with the outer tag's l2.
func (pt *portTable) inner(e entry, l2 uint16, x2 uint32) (entry, uint16) {
	if t := uint16(x2 >> 16); t == TPID8021Q || t == TPID8021AD {
		if in := pt.d.inner[e>>16-1][x2&VIDMask]; in != 0 {
			return entry(in), EthLen + HeaderLen
		}
	}
	return e & 0xffff, l2
}

// be32 assembles four bytes big-endian (one load and a byte swap).
func be32(b0, b1, b2, b3 byte) uint32 {
	return uint32(b0)<<24 | uint32(b1)<<16 | uint32(b2)<<8 | uint32(b3)
}
