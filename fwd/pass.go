package fwd

import (
	"math/bits"
	"unsafe"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/vlan"
)

// The straight lines of passes 1 and 3: leaf loops (no call, so nothing is spilled for a call) that
// handle the common frame and stop at the first other one, which the caller hands to the general
// path and resumes after. They walk the descriptors by byte offset and read the bytes through
// unsafe pointers, each read preceded by the bounds check that puts it inside the arena. The loops
// (rxLoop, txLoop) have two forms, the Go one here and the assembly of pass_amd64.s, which does the
// same tests in the same order (TestLoopForms and FuzzLoopForms compare them).

const frameSize = unsafe.Sizeof(frame.Frame{})

var _ [32]struct{} = [frameSize]struct{}{} // rxRun and txRun divide by it with shifts

// portTab is what rxRun reads besides the frames, for the frames of one physical port (see
// Worker.buildClassifier), behind one pointer: the loop reads its invariants from here where they
// are used rather than holding them in registers it lacks.
type portTab struct {
	mp     unsafe.Pointer // the arena (rxRun sets the first three for each run)
	memLim uint64         // the arena's length - rxSlack
	de     unsafe.Pointer // &dst[len(fr)-1]
	// An entry per 802.1Q VID, then (at clsUntagged) the untagged frames': macKey of the
	// interface's MAC with the interface ID + 1 in its low 16 bits, or 0 where the straight line
	// leaves the frame to vlan's classification.
	cls [clsSlots]uint64
	// Per slot of cls, the frames rxRun received and their bytes, since the last flushRx (the vlan
	// worker's RxPackets and RxBytes).
	rxPackets, rxBytes [clsSlots]uint64
	filter             [1 << 10]uint64 // the router's address filter (addrSet.filter)
	martian            [256]uint8
}

const (
	clsSlots    = 4097 // VIDs, then the untagged frames
	clsUntagged = 4096
)

// rxRun is pass 1's straight line from frame i of fr on, k frames kept so far (k <= i), for frames
// received on t's port: it classifies and keeps every frame that is, untagged or with one 802.1Q
// tag whose VID has an entry (no out-of-band tag), an IPv4 packet without options to the MAC of
// that interface, with a total length within the frame and a correct header checksum, from and to
// ordinary addresses (the martian table), with a TTL above 1, a checksum ttlWord updates and a
// destination whose bit is clear in the router's address filter: it sets Frame.Port to the interface and Frame.L3 to 14 or 18, counts
// the frame in the interface's received frames and bytes (as vlan.Worker.ClassifyInPlace does),
// stores the destination in dst[k] and moves the frame to position k. It returns the index of the
// first frame it did not keep (len(fr) when none) and the new k. What it keeps, ClassifyInPlace and
// special would keep too, with the same interface, L3 and destination.
func rxRun(fr []frame.Frame, mem []byte, t *portTab, dst []uint32, i, k int) (int, int) {
	if len(dst) < len(fr) || uint(k) > uint(i) || i >= len(fr) || len(mem) < rxSlack || t == nil {
		return i, k
	}
	// The descriptors and dst are walked by offsets from their last elements, up to 0 (p for the
	// frame judged, q for the next kept), so that the loop's end is the sign of p.
	l := len(fr) - 1
	t.mp, t.memLim, t.de = unsafe.Pointer(unsafe.SliceData(mem)), uint64(len(mem))-rxSlack, unsafe.Pointer(&dst[l])
	p, q := rxLoop(unsafe.Pointer(&fr[l]), -int(frameSize)*(l-i), -int(frameSize)*(l-k), t)
	return l + p>>5, l + q>>5 // p/frameSize, q/frameSize
}

// rxSlack is the room rxRun needs after a frame in the arena: it reads the bytes up to the end of an
// IPv4 header after two tags (42) before it knows the frame holds them.
const rxSlack = 48

// rxLoop (pass_amd64.s on amd64, else rxLoopGo) is rxRun's loop, from the frame at fe+p (p <= 0,
// a multiple of frameSize: fe is the last frame) on, the next kept frame's slot at fe+q and its
// destination's at t.de+q/8; the frames must end rxSlack bytes or more before the arena does. It
// returns p and q where it stopped.

// rxLoopGo is rxLoop in Go.
func rxLoopGo(fe unsafe.Pointer, p, q int, t *portTab) (int, int) {
	for ; p <= 0; p += int(frameSize) {
		f := (*frame.Frame)(unsafe.Add(fe, p)) // &fr[l+p/frameSize]
		off, ln := uint64(f.Off), uint64(f.Len)
		if off+ln > t.memLim || *(*uint8)(unsafe.Pointer(&f.Flags))&uint8(frame.FlagVLAN) != 0 {
			break
		}
		// In bounds: the frame and the rxSlack bytes after it lie inside the arena. Each test reads
		// what it needs (no call: a helper would leave an inline mark per read), so that few
		// values are live at once.
		d := unsafe.Add(t.mp, off)
		x := be32at(unsafe.Add(d, 12)) // the TPID and TCI, or the EtherType
		j, l3 := uint64(clsUntagged), uint64(frame.EtherLen)
		if x>>16 == uint32(vlan.TPID8021Q) {
			j, l3 = uint64(x&vlan.VIDMask), vlan.EthLen
		}
		id := macKey(*(*uint64)(d)) ^ t.cls[j] - 1 // the entry's interface when the MAC is its own
		h := unsafe.Add(d, l3)
		w0, w1, w2 := *(*uint64)(h), *(*uint64)(unsafe.Add(h, 8)), *(*uint32)(unsafe.Add(h, 16))
		// The EtherType IPv4, version 4 and IHL 5, the martian classes of both addresses, TTL > 1
		// and a checksum ttlWord updates, each zero when right, in one test; 20 <= total length <= the frame's rest; the
		// checksum (the ones'-complement sum is the same in either byte order).
		if id >= 0xffff || *(*uint32)(unsafe.Add(h, -2))&etVerMask^etVerIPv4|
			uint32(t.martian[*(*uint8)(unsafe.Add(h, 12))])|uint32(t.martian[*(*uint8)(unsafe.Add(h, 16))])|
			(uint32(ttlOf(w1))-2)>>31|ttlBad(word8(w1)) != 0 ||
			uint64(uint32(*(*uint8)(unsafe.Add(h, 2)))<<8|uint32(*(*uint8)(unsafe.Add(h, 3)))-frame.IPv4MinLen)+l3+frame.IPv4MinLen > ln ||
			headerSumBad(w0, w1, w2) {
			break
		}
		a := beWord32(w2)
		if hb := filterHash(a); t.filter[hb>>22]&(1<<(hb&63)) != 0 { // maybe one of the router's addresses
			break
		}
		f.Port, f.L3 = uint16(id), uint16(l3)
		t.rxPackets[j]++
		t.rxBytes[j] += ln
		*(*uint32)(unsafe.Add(t.de, q>>3)) = a // dst[k] (q>>3 = q/frameSize*4): k <= i < len(fr) <= len(dst)
		if q != p {
			*(*frame.Frame)(unsafe.Add(fe, q)) = *f
		}
		q += int(frameSize)
	}
	return p, q
}

// headerSumBad is non-zero when a 20-byte IPv4 header, read as words in either byte order (w0:
// bytes 0-7, w1: 8-15, w2: 16-19), has a wrong checksum. The header is right when the sum of its
// 16-bit words is a non-zero multiple of 0xffff (RFC 1071: its ones'-complement sum is 0xffff),
// whatever their byte order. Each word is its 16-bit words' sum modulo 0xffff (2^16 is 1 there, and
// 2^64 too, so the carry out of the 64-bit adds is added back in), so the header is right when
// w0 + w1 + w2, with the end-around carry, is a multiple of 0xffff: one multiply by the inverse and a
// compare. It is not zero: rxRun checked the version byte first.
func headerSumBad(w0, w1 uint64, w2 uint32) bool {
	s, c := bits.Add64(w0, w1, 0)
	s, c = bits.Add64(s, uint64(w2), c)
	s += c // no carry out: a carry above means s < 2^32 here
	return s%0xffff != 0
}

// txCursor is where txRun puts the next frame for one egress port: a slot of that port's egress
// batch, inside its capacity (see Worker.openCursors).
type txCursor struct {
	base unsafe.Pointer // the batch's frames
	off  uintptr        // the next one's offset from base
}

// txRun is pass 3's straight line over frames i to len(fr)-1 of fr (nh: the frames' next-hop
// indexes), every one of which rxRun kept: a frame whose adjacency (rw) is a current ordinary next
// hop within its MTU (adj.lim), with vlan.RewriteMax bytes of its own in front of the network
// header, a length of 60 to 65535 bytes after the rewrite and a headroom below 65536 (as
// vlan.Worker.Apply's common case requires; the headroom checked as if the header were 14 bytes:
// a frame with 65522 bytes or more of headroom goes to Apply), gets the next hop's L2 header (what Apply's common case does: the block
// copied to end at the network header; the descriptor's start, length, headroom, Out and L3
// updated; the vlan worker's TX counters), TTL - 1 and the checksum after it, and goes to its egress
// port's cursor (adj.cur), which has room for every frame from i on. It returns the index of the
// first frame it did not forward (len(fr) when none). What rxRun checked stands: the frame lies
// inside mem, its network header's 20 bytes inside it, L3 is 14 or 18, there is no out-of-band tag,
// the TTL is above 1 and ttlWord updates the checksum.
func txRun(fr []frame.Frame, nh []uint32, rw []adj, mem []byte, i int) int {
	if len(nh) < len(fr) || uint(i) >= uint(len(fr)) {
		return i
	}
	// The descriptors and next hops are walked by an offset from their last elements, up to 0, so
	// that the loop's end is the sign of p.
	l := len(fr) - 1
	p := txLoop(unsafe.Pointer(&fr[l]), unsafe.Pointer(&nh[l]), -int(frameSize)*(l-i),
		unsafe.Pointer(unsafe.SliceData(rw)), uint64(len(rw)), unsafe.Pointer(unsafe.SliceData(mem)))
	return l + p>>5 // p/frameSize
}

// txLoop (pass_amd64.s on amd64, else txLoopGo) is txRun's loop, from the frame at fe+p (p <= 0,
// a multiple of frameSize: fe is the last frame) on, its next-hop index at ne+p/8, over the
// adjacencies at ab (na of them) and the arena at mp. It returns p where it stopped.

// txLoopGo is txLoop in Go.
func txLoopGo(fe, ne unsafe.Pointer, p int, ab unsafe.Pointer, na uint64, mp unsafe.Pointer) int {
	for ; p <= 0; p += int(frameSize) {
		idx := uint64(*(*uint32)(unsafe.Add(ne, p>>3))) // nh[l+p/frameSize]
		if idx >= na {
			break
		}
		a := (*adj)(unsafe.Add(ab, idx*adjSize)) // &rw[idx]
		f := (*frame.Frame)(unsafe.Add(fe, p))
		l3 := uint(f.L3)
		abs := uint(f.Off) + l3 // the network header's offset in mem
		h := unsafe.Add(mp, abs)
		n := uint(a.n)
		front := uint(f.Head) + l3 // bytes in front of the network header that belong to the frame
		ln := uint(f.Len) - l3 + n // the length after the rewrite
		x := (*uint32)(unsafe.Add(h, 8))
		if uint16(*(*uint8)(unsafe.Add(h, 2)))<<8|uint16(*(*uint8)(unsafe.Add(h, 3))) > a.lim || ln-frame.MinEthernetLen > 0xffff-frame.MinEthernetLen ||
			front-vlan.RewriteMax > 0xffff+frame.EtherLen-vlan.RewriteMax || abs < vlan.RewriteMax {
			break
		}
		to := unsafe.Add(h, -vlan.RewriteMax)
		*(*[2]uint64)(to) = *(*[2]uint64)(unsafe.Pointer(&a.blk))
		*(*uint64)(unsafe.Add(to, 16)) = a.blk[2]
		// The descriptor goes to its egress batch whole and the copy is updated: updating it in
		// place and then copying it would read back fields just stored one by one (a
		// store-forwarding stall per frame).
		c := a.cur
		g := (*frame.Frame)(unsafe.Add(c.base, c.off))
		c.off += frameSize
		*g = *f
		g.Off = uint32(abs - n)
		g.Len, g.Head = uint16(ln), uint16(front-n)
		*(*uint32)(unsafe.Pointer(&g.Out)) = a.outL3 // Out, L3
		t := a.txc
		t.TxPackets++
		t.TxBytes += uint64(ln)
		*x = ttlWord(*x) // TTL - 1 and the checksum after it
	}
	return p
}

// openCursors points the egress cursors at the end of each egress batch and reports whether each
// has room for n frames more.
func (w *Worker) openCursors(n int) bool {
	if len(w.out.Egress) != len(w.cur) {
		return false
	}
	for p, e := range w.out.Egress {
		j := len(e.Frames)
		if cap(e.Frames)-j < n {
			return false
		}
		w.cur[p] = txCursor{unsafe.Pointer(unsafe.SliceData(e.Frames)), uintptr(j) * frameSize}
	}
	return true
}

// closeCursors sets each egress batch's length from its cursor.
func (w *Worker) closeCursors() {
	for p, e := range w.out.Egress {
		e.Frames = e.Frames[:w.cur[p].off/frameSize]
	}
}
