package fwd

import (
	"encoding/binary"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/vlan"
)

// buildClassifier fills w.ports, rxRun's tables: the router's address filter and the martian
// table, and the classification of the demux's interfaces as their rewrites describe them (port,
// tags), for every interface with an Iface entry and the vlan worker's counters: untagged ones, and
// those of one 802.1Q tag (PCP and DEI ignored, as the demux does). A frame it has no entry for is
// left to vlan.Worker.ClassifyInPlace, which is the definition: 802.1ad and QinQ interfaces,
// priority tags, out-of-band tags, and any frame to another MAC. An outer tag that QinQ interfaces
// share is left to it too, and so are untagged frames where the demux's Parser takes 0x0800 for a
// TPID (vlan.NewParser accepts any extra TPID).
func (w *Worker) buildClassifier() {
	d := w.r.demux
	np := d.Ports()
	nif := len(w.r.ifaces)
	w.ports = make([]portTab, np) // 104 KiB per port, of which a frame reads one slot
	for p := range w.ports {
		w.ports[p].filter, w.ports[p].martian = *w.r.local.filter, martian
	}
	w.rxc = make([]*vlan.Counters, nif)
	w.rxSlot = make([]slotRef, nif)
	for i := range w.rxSlot {
		w.rxSlot[i].port = -1
	}
	type slot struct{ port, j int }
	keys := map[slot]uint64{}
	shared := map[slot]bool{} // outer tags of QinQ interfaces
	untagged := false
	for _, id := range d.Interfaces() {
		c := w.vw.TxCounters(id)
		rw, err := d.Rewrite(id, frame.MAC{}, frame.MAC{}, frame.TypeIPv4)
		if int(id) >= nif || c == nil || err != nil || int(rw.Port()) >= np {
			continue
		}
		var m [8]byte
		copy(m[:], w.r.ifaces[id].MAC[:])
		key := macKey(binary.NativeEndian.Uint64(m[:])) | uint64(id) + 1
		hdr := rw.Header()
		port := int(rw.Port())
		switch {
		case len(hdr) == frame.EtherLen:
			keys[slot{port, clsUntagged}] = key
			untagged = true
		case binary.BigEndian.Uint16(hdr[12:]) != vlan.TPID8021Q:
		case len(hdr) == vlan.EthLen:
			keys[slot{port, int(binary.BigEndian.Uint16(hdr[14:]) & vlan.VIDMask)}] = key
		default:
			shared[slot{port, int(binary.BigEndian.Uint16(hdr[14:]) & vlan.VIDMask)}] = true
		}
		w.rxc[id] = c
	}
	ipv4TPID := untagged && w.r.ipv4IsTPID()
	for s, key := range keys {
		if !shared[s] && (s.j != clsUntagged || !ipv4TPID) {
			w.ports[s.port].cls[s.j] = key
			w.rxSlot[key&0xffff-1] = slotRef{s.port, s.j}
		}
	}
}

// slotRef is an interface's slot in Worker.ports (port -1: none).
type slotRef struct{ port, j int }

// flushRx adds the frames rxRun counted to the vlan worker's counters.
func (w *Worker) flushRx() {
	for id, c := range w.rxc {
		if s := w.rxSlot[id]; s.port >= 0 && c != nil {
			t := &w.ports[s.port]
			c.RxPackets += t.rxPackets[s.j]
			c.RxBytes += t.rxBytes[s.j]
			t.rxPackets[s.j], t.rxBytes[s.j] = 0, 0
		}
	}
}

// ipv4IsTPID reports whether the demux's Parser takes 0x0800 for a TPID, by the demux's own
// classification of a probe frame on a port with an untagged interface: untagged IPv4 (L3 14), or a
// priority tag (VID 0) before an ARP EtherType (L3 18, or more where 0x0806 is a TPID too). The probe
// goes through a vlan worker of the router's own, never flushed, so that it is counted nowhere.
func (r *Router) ipv4IsTPID() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.probed == 0 {
		vw := r.demux.NewWorker()
		for _, id := range r.demux.Interfaces() {
			rw, err := r.demux.Rewrite(id, frame.MAC{}, frame.MAC{}, frame.TypeIPv4)
			if err != nil || rw.Len() != frame.EtherLen {
				continue
			}
			b := &frame.Batch{Frames: []frame.Frame{{Len: frame.MinEthernetLen}}, Mem: make([]byte, frame.MinEthernetLen)}
			binary.BigEndian.PutUint16(b.Mem[12:], frame.TypeIPv4)
			binary.BigEndian.PutUint16(b.Mem[16:], frame.TypeARP)
			r.probed = 2
			if vw.ClassifyInPlace(rw.Port(), b) == 1 && b.Frames[0].L3 == frame.EtherLen {
				r.probed = 1
			}
			break
		}
	}
	return r.probed != 1 // (unprobed, without an untagged interface: no untagged entry needs it)
}

// setPort points rxRun at the classification of port (nil for a port the demux does not have:
// every frame left to vlan).
func (w *Worker) setPort(port uint16) {
	w.pt = nil
	if int(port) < len(w.ports) {
		w.pt = &w.ports[port]
	}
}

// portRun is the end of the run of frames from i on that share fr[i]'s Frame.Port (a batch of
// vlan.PerFramePort), after pointing rxRun at that port's classification.
func (w *Worker) portRun(fr []frame.Frame, i int) int {
	pt := fr[i].Port
	w.setPort(pt)
	j := i + 1
	for j < len(fr) && fr[j].Port == pt {
		j++
	}
	return j
}

// classifyOne classifies frame i of in, which rxRun left, by vlan's ClassifyInPlace, received on
// port: it reports whether the demux kept it (Frame.Port the interface, Frame.L3 its network
// header); a frame it drops is released and counted (DropVLAN).
func (w *Worker) classifyOne(port uint16, in *frame.Batch, i int) bool {
	o := &w.one
	o.Frames, o.Mem, o.Owner = in.Frames[i:i+1:i+1], in.Mem, in.Owner
	n := w.vw.ClassifyInPlace(port, o)
	o.Frames, o.Mem, o.Owner = nil, nil, nil
	if n == 0 {
		w.cnt[DropVLAN]++
		return false
	}
	return true
}
