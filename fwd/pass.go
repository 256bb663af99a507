package fwd

import (
	"encoding/binary"
	"math/bits"
	"unsafe"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/vlan"
)

// The straight lines of passes 1 and 3: leaf loops (no call, so nothing is spilled per frame) that
// handle the common frame and stop at the first other one, which the caller hands to the general
// path and resumes after.

// typeIPv4LE is frame.TypeIPv4 as binary.LittleEndian reads its wire bytes.
const typeIPv4LE = frame.TypeIPv4>>8 | frame.TypeIPv4&0xff<<8

// rxRun is pass 1's straight line from frame i of fr on, k frames kept so far (k <= i): it keeps
// every frame that is a unicast IPv4 packet to the router's MAC on its ingress interface (macs,
// by interface), without options, with a valid header and checksum, from and to ordinary
// addresses (dstClass and srcClass), with a TTL above 1 and a destination whose bit is clear in
// the router's address filter: it stores the destination in dst[k] and moves the frame to
// position k. It returns the index of the first frame it did not keep (len(fr) when none) and the
// new k. It reads a frame's bytes only once its descriptor puts them inside mem.
func rxRun(fr []frame.Frame, mem []byte, macs []uint64, filter *[1 << 10]uint64, dst []uint32, i, k int) (int, int) {
	if len(dst) < len(fr) || i < 0 || k < 0 || k > i {
		return i, k
	}
	mp := unsafe.Pointer(unsafe.SliceData(mem))
	memLen := uint64(len(mem))
	dp := unsafe.Pointer(unsafe.SliceData(dst))
	for ; i < len(fr); i++ {
		f := &fr[i]
		off, ln, l3, ifc := uint64(f.Off), int(f.Len), int(f.L3), int(f.Port)
		if off+uint64(ln) > memLen || l3 < frame.EtherLen || l3+frame.IPv4MinLen > ln || ifc >= len(macs) {
			break
		}
		// In bounds: the frame lies inside mem, its network header's 20 bytes inside the frame.
		p := unsafe.Add(mp, off)
		h := (*[frame.IPv4MinLen]byte)(unsafe.Add(p, l3))
		w0 := binary.LittleEndian.Uint64(h[0:8])   // version/IHL, TOS, total length, ID, fragment
		w1 := binary.LittleEndian.Uint64(h[8:16])  // TTL, protocol, checksum, source
		w2 := binary.LittleEndian.Uint32(h[16:20]) // destination
		tl := int(bits.ReverseBytes16(uint16(w0 >> 16)))
		if binary.LittleEndian.Uint16((*[2]byte)(unsafe.Add(p, l3-2))[:]) != typeIPv4LE ||
			binary.LittleEndian.Uint64((*[8]byte)(p)[:])&(1<<48-1) != macs[ifc] ||
			uint8(w0) != 0x45 || uint(tl-frame.IPv4MinLen) > uint(ln-l3-frame.IPv4MinLen) ||
			!headerSumOK(w0, w1, w2) || dstClass[uint8(w2)]|srcClass[uint8(w1>>32)] != 0 || uint8(w1) <= 1 {
			break
		}
		a := bits.ReverseBytes32(w2)
		if hb := filterBit(a); filter[(hb>>6)&(1<<10-1)]&(1<<(hb&63)) != 0 { // maybe one of the router's addresses
			break
		}
		*(*uint32)(unsafe.Add(dp, uintptr(k)*4)) = a // dst[k]: k <= i < len(fr) <= len(dst)
		if k != i {
			fr[k] = *f
		}
		k++
	}
	return i, k
}

// headerSumOK reports whether a 20-byte IPv4 header, read as little-endian words (w0: bytes 0-7,
// w1: 8-15, w2: 16-19), has a correct checksum: the ones'-complement sum commutes with byte
// swapping (RFC 1071), and a correct header sums to 0xffff either way. Two 64-bit adds with carry,
// the end-around carry, then the fold to 16 bits by rotation: x + rot(x) holds the end-around-carry
// sum of x's two halves in its high half.
func headerSumOK(w0, w1 uint64, w2 uint32) bool {
	s, c := bits.Add64(w0, w1, 0)
	s, c = bits.Add64(s, uint64(w2), c)
	s += c // no carry out: a carry above means s < 2^32 here
	x := uint32((s + bits.RotateLeft64(s, 32)) >> 32)
	return (x+bits.RotateLeft32(x, 16))>>16 == 0xffff
}

// txRun is pass 3's straight line from frame i of fr on (nh: the frames' next-hop indexes): a frame
// whose adjacency (rw, entries of generation gen) is an ordinary next hop within its MTU (adj.lim),
// with headroom for the whole rewrite block and a length of 60 bytes or more after it, gets the
// next hop's L2 header (what vlan.Worker.Apply's common case does: the block copied to end at the
// network header, the descriptor's start, length, headroom, Out and L3 updated, the out-of-band tag
// flag cleared, the vlan worker's TX counters), TTL - 1 and the checksum after it, and goes to the
// egress batch of its port. It returns the index of the first frame it did not forward (len(fr)
// when none) and the number forwarded. Every frame of fr passed pass 1: it lies inside mem, and its
// network header's 20 bytes inside it, with a TTL above 1.
func txRun(fr []frame.Frame, nh []uint32, rw []adj, gen uint64, egress []*frame.Batch, mem []byte, i int) (int, int) {
	if len(nh) < len(fr) || i < 0 {
		return i, 0
	}
	mp := unsafe.Pointer(unsafe.SliceData(mem))
	n0 := i
	for ; i < len(fr); i++ {
		f := &fr[i]
		idx := nh[i]
		if uint64(idx) >= uint64(len(rw)) {
			break
		}
		a := &rw[idx]
		l3 := int(f.L3)
		abs := int(f.Off) + l3 // the network header's offset in mem
		h := (*[frame.IPv4MinLen]byte)(unsafe.Add(mp, abs))
		n := a.rw.Len()
		front := int(f.Head) + l3 // bytes in front of the network header that belong to the frame
		ln := int(f.Len) - l3 + n // the length after the rewrite
		if a.gen != gen || int(binary.BigEndian.Uint16(h[2:4])) > int(a.lim) || min(front, abs) < vlan.RewriteMax ||
			uint(ln-frame.MinEthernetLen) > 0xffff-frame.MinEthernetLen || front-n > 0xffff {
			break
		}
		blk := a.rw.Block()
		to := (*[vlan.RewriteMax]byte)(unsafe.Add(mp, abs-vlan.RewriteMax))
		binary.LittleEndian.PutUint64(to[0:8], binary.LittleEndian.Uint64(blk[0:8]))
		binary.LittleEndian.PutUint64(to[8:16], binary.LittleEndian.Uint64(blk[8:16]))
		binary.LittleEndian.PutUint64(to[16:24], binary.LittleEndian.Uint64(blk[16:24]))
		// The descriptor goes to its egress batch whole and the copy is updated: updating it in
		// place and then copying it would read back fields just stored one by one (a
		// store-forwarding stall per frame). The batch has room: it holds at most len(in).
		e := egress[a.rw.Port()] // < len(egress): buildAdj checked it
		j := len(e.Frames)
		e.Frames = e.Frames[:j+1]
		g := &e.Frames[j]
		*g = *f
		g.Off = uint32(abs - n)
		g.Len, g.Head = uint16(ln), uint16(front-n)
		g.Out, g.L3 = a.rw.Interface(), uint16(n)
		g.Flags &^= frame.FlagVLAN
		c := a.txc
		c.TxPackets++
		c.TxBytes += uint64(ln)
		// TTL - 1, and the checksum after it (RFC 1624): the TTL is the high byte of a 16-bit word,
		// so the checksum rises by 0x100 with the end-around carry; 0xffff becomes 0x0000, as
		// frame.IPv4.DecTTL does.
		h[8]--
		ck := uint32(binary.BigEndian.Uint16(h[10:12])) + 0x100
		ck += (ck + 1) >> 16
		binary.BigEndian.PutUint16(h[10:12], uint16(ck))
	}
	return i, i - n0
}
