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
// unsafe pointers, each read preceded by the bounds check that puts it inside the arena.

const frameSize = unsafe.Sizeof(frame.Frame{})

var _ [32]struct{} = [frameSize]struct{}{} // rxRun and txRun divide by it with shifts

// rxRun is pass 1's straight line from frame i of fr on, k frames kept so far (k <= i): it keeps
// every frame that is an IPv4 packet (EtherType at Frame.L3-2, L3 at least 14) to the router's MAC
// on its ingress interface (macs: per interface, macKey of the MAC's 6 bytes read as a word),
// without options, with a total length within the frame and a correct header checksum, from and
// to ordinary addresses (the martian table), with a TTL above 1 and a destination whose bit is
// clear in the router's address filter: it stores the destination in dst[k] and moves the frame
// to position k. It returns the index of the first frame it did not keep (len(fr) when none) and
// the new k. What it keeps, special would keep too, with the same destination.
func rxRun(fr []frame.Frame, mem []byte, macs []uint64, filter *[1 << 10]uint64, dst []uint32, i, k int) (int, int) {
	if len(dst) < len(fr) || uint(k) > uint(i) || i >= len(fr) || filter == nil {
		return i, k
	}
	mp := unsafe.Pointer(unsafe.SliceData(mem))
	memLen := uint64(len(mem))
	mb := unsafe.Pointer(unsafe.SliceData(macs))
	nm := uint64(len(macs))
	// The descriptors and dst are walked by offsets from their last elements, up to 0 (p for the
	// frame judged, q for the next kept), so that the loop's end is the sign of p.
	l := len(fr) - 1
	fe := unsafe.Pointer(&fr[l])
	de := unsafe.Pointer(&dst[l])
	p, q := -int(frameSize)*(l-i), -int(frameSize)*(l-k)
	for ; p <= 0; p += int(frameSize) {
		f := (*frame.Frame)(unsafe.Add(fe, p)) // &fr[l+p/frameSize]
		off, ln, l3, ifc := uint64(f.Off), uint64(f.Len), uint64(f.L3), uint64(f.Port)
		rest := int64(ln) - int64(l3) - frame.IPv4MinLen // the bytes after the network header's first 20
		if off+ln > memLen || l3 < frame.EtherLen || rest < 0 || ifc >= nm {
			break
		}
		// In bounds: the frame lies inside mem, its network header's 20 bytes inside the frame.
		// Each test reads what it needs, in the machine's byte order (no call: a helper would
		// leave an inline mark per read), so that few values are live at once.
		d := unsafe.Add(mp, off)
		h := unsafe.Add(d, l3)
		if *(*uint32)(unsafe.Add(h, -2))&etVerMask != etVerIPv4 || // EtherType IPv4, version 4, IHL 5
			macKey(*(*uint64)(d)) != *(*uint64)(unsafe.Add(mb, ifc*8)) { // macs[ifc]
			break
		}
		// 20 <= total length <= the frame's rest; the checksum (the ones'-complement sum is the
		// same in either byte order); the martian classes of both addresses; TTL > 1.
		if tl := uint64(*(*uint8)(unsafe.Add(h, 2)))<<8 | uint64(*(*uint8)(unsafe.Add(h, 3))); tl-frame.IPv4MinLen > uint64(rest) ||
			headerSumBad(*(*uint64)(h), *(*uint64)(unsafe.Add(h, 8)), *(*uint32)(unsafe.Add(h, 16))) ||
			martian[*(*uint8)(unsafe.Add(h, 12))]|martian[*(*uint8)(unsafe.Add(h, 16))] != 0 ||
			*(*uint8)(unsafe.Add(h, 8)) <= 1 {
			break
		}
		a := be32at(unsafe.Add(h, 16))
		if hb := filterHash(a); filter[hb>>22]&(1<<(hb&63)) != 0 { // maybe one of the router's addresses
			break
		}
		*(*uint32)(unsafe.Add(de, q>>3)) = a // dst[k] (q>>3 = q/frameSize*4): k <= i < len(fr) <= len(dst)
		if q != p {
			*(*frame.Frame)(unsafe.Add(fe, q)) = *f
		}
		q += int(frameSize)
	}
	return l + p>>5, l + q>>5 // p/frameSize, q/frameSize
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

// txRun is pass 3's straight line from frame i of fr on (nh: the frames' next-hop indexes): a frame
// whose adjacency (rw) is a current ordinary next hop within its MTU (adj.lim), with an L2 header of
// 14 bytes or more, headroom for the whole rewrite block and a length of 60 bytes or more after it
// (as vlan.Worker.Apply's common case requires, and a checksum other than 0xfeff and 0xffff: see
// ttlWord), gets the next hop's L2 header
// (what vlan.Worker.Apply's common case does: the block copied to end at the network header; the
// descriptor's start, length, headroom, Out and L3 updated; the out-of-band tag flag cleared; the
// vlan worker's TX counters), TTL - 1 and the checksum after it, and goes to the egress batch of its
// port. It returns the index of the first frame it did not forward (len(fr) when none). Every frame
// of fr passed pass 1: it lies inside mem, and its network header's 20 bytes inside it, with a TTL
// above 1.
func txRun(fr []frame.Frame, nh []uint32, rw []adj, mem []byte, i int) int {
	if len(nh) < len(fr) || uint(i) >= uint(len(fr)) {
		return i
	}
	mp := unsafe.Pointer(unsafe.SliceData(mem))
	ab := unsafe.Pointer(unsafe.SliceData(rw))
	na := uint64(len(rw))
	// The descriptors and next hops are walked by an offset from their last elements, up to 0, so
	// that the loop's end is the sign of p.
	l := len(fr) - 1
	fe := unsafe.Pointer(&fr[l])
	ne := unsafe.Pointer(&nh[l])
	p := -int(frameSize) * (l - i)
	for ; p <= 0; p += int(frameSize) {
		idx := uint64(*(*uint32)(unsafe.Add(ne, p>>3))) // nh[l+p/frameSize]
		if idx >= na {
			break
		}
		a := (*adj)(unsafe.Add(ab, idx*adjSize)) // &rw[idx]
		f := (*frame.Frame)(unsafe.Add(fe, p))
		l3 := int(f.L3)
		abs := int(f.Off) + l3 // the network header's offset in mem
		h := unsafe.Add(mp, abs)
		n := int(a.n)
		front := int(f.Head) + l3 // bytes in front of the network header that belong to the frame
		ln := int(f.Len) - l3 + n // the length after the rewrite
		ttl, ok := ttlWord(*(*uint32)(unsafe.Add(h, 8)))
		if uint16(*(*uint8)(unsafe.Add(h, 2)))<<8|uint16(*(*uint8)(unsafe.Add(h, 3))) > a.lim || min(front, abs) < vlan.RewriteMax || l3 < frame.EtherLen ||
			uint(ln-frame.MinEthernetLen) > 0xffff-frame.MinEthernetLen || front-n > 0xffff || !ok {
			break
		}
		to := unsafe.Add(h, -vlan.RewriteMax)
		*(*uint64)(to) = a.blk[0]
		*(*uint64)(unsafe.Add(to, 8)) = a.blk[1]
		*(*uint64)(unsafe.Add(to, 16)) = a.blk[2]
		// The descriptor goes to its egress batch whole and the copy is updated: updating it in
		// place and then copying it would read back fields just stored one by one (a
		// store-forwarding stall per frame). The batch has room: it holds at most len(in).
		e := a.eb
		j := len(e.Frames)
		e.Frames = e.Frames[:j+1]
		g := (*frame.Frame)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(e.Frames)), uintptr(j)*frameSize)) // &e.Frames[j]
		*g = *f
		g.Off = uint32(abs - n)
		g.Len, g.Head = uint16(ln), uint16(front-n)
		*(*uint32)(unsafe.Pointer(&g.Out)) = a.outL3 // Out, L3
		g.Flags &^= frame.FlagVLAN
		c := a.txc
		c.TxPackets++
		c.TxBytes += uint64(ln)
		*(*uint32)(unsafe.Add(h, 8)) = ttl // TTL - 1 and the checksum after it
	}
	return l + p>>5 // p/frameSize
}
