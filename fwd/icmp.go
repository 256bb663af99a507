package fwd

import (
	"encoding/binary"

	"github.com/wirespeed/wirespeed/frame"
)

// ICMP types and codes the stage sends or answers.
const (
	icmpEchoReply      = 0
	icmpUnreachable    = 3
	icmpEchoRequest    = 8
	icmpTimeExceeded   = 11
	icmpNetUnreachable = 0
	icmpHostUnreach    = 1
	icmpFragNeeded     = 4
)

// icmpMaxLen is the largest ICMP error datagram (RFC 1812 §4.3.2.3: at most 576 bytes in all).
const icmpMaxLen = 576

// isICMPError reports whether an ICMP type is an error message (RFC 792, RFC 1812 §4.3.2.7): no
// error is sent about one. Unknown types count as errors, as Linux's icmp_pointers do not
// mark them informational.
func isICMPError(t uint8) bool {
	switch t {
	case 0, 8, 9, 10, 13, 14, 15, 16, 17, 18: // echo, router advertisement/solicitation, timestamp, information, address mask
		return false
	}
	return true
}

// icmpError sends an ICMP error about frame f (still in the batch: its bytes are only read) back
// out its ingress interface, if RFC 1812 allows one and the limiter has a token. mtu is the
// next-hop MTU of a Fragmentation Needed message.
func (w *Worker) icmpError(in *frame.Batch, f *frame.Frame, ip frame.IPv4, typ, code uint8, mtu uint16) {
	d := f.Data(in.Mem)
	hl := ip.HeaderLen()
	tl := min(ip.TotalLen(), len(ip))
	switch {
	case ip.FragOff() != 0, // not the first fragment
		d[0]&1 != 0 || d[6]&1 != 0, // an Ethernet broadcast or multicast, or a bogus source
		dstClass[ip.Dst()>>24] == classMulticast || ip.Dst() == limitedBroadcast,
		srcClass[ip.Src()>>24] != classNormal:
		return
	case ip.Protocol() == frame.ProtoICMP && (tl <= hl || isICMPError(ip[hl])):
		return
	}
	ifc := f.Port
	src := w.r.icmpSrc[ifc]
	if src == 0 { // the router has no address at all
		w.cnt[cICMPNoAddress]++
		return
	}
	if !w.r.limit.allow() {
		return
	}
	rw, err := w.r.demux.Rewrite(ifc, frame.MAC(d[6:12]), w.r.ifaces[ifc].MAC, frame.TypeIPv4)
	if err != nil || int(rw.Port()) >= len(w.out.Generated) {
		w.cnt[cICMPNoBuffer]++
		return
	}
	g := w.out.Generated[rw.Port()]
	if n, _ := w.r.pool.Alloc(g, 1); n == 0 {
		w.cnt[cICMPNoBuffer]++
		return
	}
	j := len(g.Frames) - 1
	nf := &g.Frames[j]
	quote := min(tl, icmpMaxLen-frame.IPv4MinLen-8)
	n := frame.IPv4MinLen + 8 + quote
	if !nf.Resize(frame.EtherLen + n) {
		w.r.pool.Release(g.Frames[j:])
		g.Frames = g.Frames[:j]
		w.cnt[cICMPNoBuffer]++
		return
	}
	b := nf.Data(g.Mem)[frame.EtherLen:]
	w.ipid++
	h := frame.IPv4(b[:frame.IPv4MinLen])
	h[0], h[1] = 0x45, 0xc0 // precedence: internetwork control, as Linux's ICMP errors
	binary.BigEndian.PutUint16(h[2:], uint16(n))
	binary.BigEndian.PutUint16(h[4:], w.ipid)
	h[6], h[7], h[8], h[9] = 0, 0, 64, frame.ProtoICMP
	binary.BigEndian.PutUint32(h[12:], src)
	binary.BigEndian.PutUint32(h[16:], ip.Src())
	h.SetChecksum()
	m := b[frame.IPv4MinLen:n]
	m[0], m[1], m[2], m[3] = typ, code, 0, 0
	binary.BigEndian.PutUint32(m[4:], uint32(mtu)) // unused, or the next-hop MTU (RFC 1191)
	copy(m[8:], ip[:quote])
	binary.BigEndian.PutUint16(m[2:], frame.Checksum(m))
	nf.L3 = frame.EtherLen
	if w.vw.Apply(g, j, &rw) != nil {
		w.r.pool.Release(g.Frames[j:])
		g.Frames = g.Frames[:j]
		w.cnt[cICMPNoBuffer]++
		return
	}
	w.cnt[cICMPErrors]++
}
