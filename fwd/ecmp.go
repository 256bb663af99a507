package fwd

import (
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/lag"
)

// viaGroup forwards frame i of pass 3, routed to next-hop index idx, an ECMP group
// (fib.NextHopGroup): the flow's member is chosen by lag's layer3+4 hash of the IPv4 header (and
// its ports), weighted (fib.NextHopView.Pick), and the frame then goes to that member as if routed
// there. A member that is itself a group, or a group left empty, sends nothing (DropEgress).
func (w *Worker) viaGroup(in *frame.Batch, i int, ip frame.IPv4, idx uint32) {
	f := &in.Frames[i]
	d := f.Data(in.Mem)
	l3 := int(f.L3)
	// The hash reads an Ethernet header's EtherType and then the network header: the 14 bytes
	// before the IPv4 header stand for it (the VLAN tags of the ingress do not take part).
	h := lag.HashBytes(lag.Layer34, d[l3-frame.EtherLen:], false, 0)
	m := w.rwView.Pick(idx, h)
	var a *adj
	if uint64(m) < uint64(len(w.rw)) && w.rw[m].gen == w.rwGen {
		a = &w.rw[m]
	} else {
		a = w.buildAdj(w.rwView, m)
	}
	if a.kind == adjGroup || m == NoRoute {
		w.dropFrame(in, f, DropEgress)
		return
	}
	if a.kind != adjForward || ip.TotalLen() > int(a.mtu) {
		w.notForwarded(in, i, ip, a, m)
		return
	}
	e := w.out.Egress[a.rw.Port()]
	j := len(e.Frames)
	e.Frames = e.Frames[:j+1]
	e.Frames[j] = *f
	if w.vw.Apply(e, j, &a.rw) != nil {
		e.Frames = e.Frames[:j]
		w.dropFrame(in, f, DropEgress)
		return
	}
	ip.DecTTL()
	w.cnt[Forwarded]++
	if w.tap != nil {
		w.capture(e.Frames[j].Data(in.Mem), Forwarded)
	}
}
