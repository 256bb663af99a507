package neigh

import (
	"encoding/binary"

	"github.com/wirespeed/wirespeed/frame"
)

// Input takes the ARP frames out of local (fwd's Output.Local: the L2 header as received,
// Frame.L3 its length, 0 meaning 14, Frame.Port the interface ID) and returns how many it took.
// Every other frame stays in local, in order. The ARP frames are released to local's owner once
// handled; answers to requests for our addresses are appended to out, a batch of the table's pool
// (or an empty one, which becomes one). A frame is ARP when its EtherType, the two bytes before
// Frame.L3, is 0x0806 and its L2 header is at least 14 bytes.
//
// Neighbours held frames were waiting for, and that this input resolves, hand those frames to the
// next Poll's ready batch: call Poll after an Input that returned more than 0.
func (t *Table) Input(local *frame.Batch, out *frame.Batch) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.now = t.clock()
	fr := local.Frames
	mem := local.Mem
	taken := t.arpTmp[:0]
	k := 0
	for i := range fr {
		f := &fr[i]
		d := f.Data(mem)
		l3 := int(f.L3)
		if l3 == 0 {
			l3 = frame.EtherLen
		}
		if l3 < frame.EtherLen || l3 > len(d) || binary.BigEndian.Uint16(d[l3-2:]) != frame.TypeARP {
			if k != i {
				fr[k] = *f
			}
			k++
			continue
		}
		t.arp(f.Port, d, l3)
		taken = append(taken, *f)
	}
	local.Frames = fr[:k]
	if len(taken) > 0 && local.Owner != nil {
		local.Owner.Release(taken)
	}
	t.arpTmp = taken[:0]
	t.finish(out)
	return len(taken)
}

// arp handles one ARP frame d, with its L2 header of l3 bytes, received on interface ifc.
//
// The rules are Linux's arp_process with arp_accept=0 and arp_ignore=0: a request for any of the
// router's addresses, on any interface, is answered from the receiving interface's MAC, and it
// creates or updates the sender's entry (STALE), when the sender is on one of the receiving
// interface's subnets; any other ARP from a sender the table knows updates that entry (a reply
// addressed to the interface's MAC confirms it REACHABLE; anything else, gratuitous ARP included,
// makes it STALE, keeping the state when the MAC is the same); ARP from senders the table does not
// know creates nothing. A request from 0.0.0.0 (an RFC 5227 probe) for one of our addresses is
// answered to the prober, as Linux does, and teaches nothing.
func (t *Table) arp(ifc uint16, d []byte, l3 int) {
	t.cnt.ARPIn++
	p, why := parseARP(d[l3:])
	if why != arpOK {
		t.cnt.Malformed++
		return
	}
	if int(ifc) >= len(t.ifaces) {
		t.cnt.NoIface++
		return
	}
	in := &t.ifaces[ifc]
	if isBadMAC(p.sha) {
		t.cnt.BadSender++
		return
	}
	if p.spa == 0 {
		switch {
		case p.op != arpOpRequest:
			t.cnt.BadSender++
		case t.isOwn(p.tpa):
			t.cnt.Requests++
			t.jobs = append(t.jobs, job{kind: jobProbeReply, dst: p.sha, iface: ifc,
				p: arpPacket{op: arpOpReply, spa: p.tpa, tha: p.sha}})
		default:
			t.cnt.Ignored++
		}
		return
	}
	if isBadSender(p.spa) {
		t.cnt.BadSender++
		return
	}
	if p.sha == in.mac {
		t.cnt.Looped++
		return
	}
	if t.isOwn(p.spa) {
		t.cnt.Conflicts++
		return
	}
	k := key{ifc, p.spa}
	i, known := t.byKey[k]
	if p.op == arpOpRequest && t.isOwn(p.tpa) {
		t.cnt.Requests++
		switch {
		case known:
			t.update(i, p.sha, false)
		case !t.onLink(int(ifc), p.spa):
			t.cnt.NotOnLink++
		default:
			if i, ok := t.create(k, false, false); ok {
				t.cnt.Learned++
				t.update(i, p.sha, false)
			} else {
				t.cnt.Refused++
			}
		}
		t.jobs = append(t.jobs, job{kind: jobReply, dst: p.sha, iface: ifc,
			p: arpPacket{op: arpOpReply, spa: p.tpa, tha: p.sha, tpa: p.spa}})
		return
	}
	if !known {
		t.cnt.Ignored++
		return
	}
	reach := false
	if p.op == arpOpReply {
		t.cnt.Replies++
		reach = frame.MAC(d[0:6]) == in.mac
	} else {
		t.cnt.Updates++
	}
	t.update(i, p.sha, reach)
}
