package fwd

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/wirespeed/wirespeed/fib"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/vlan"
	"github.com/wirespeed/wirespeed/xmit"
)

// Output is where Worker.Process puts the frames of a batch. Every batch in it belongs to the
// caller until the next Process call, by which time the caller has emptied each one: sent it (Send
// takes ownership), moved its frames on, or freed it. Egress, Local and Unresolved hold frames of
// the input batch's arena; Generated holds frames of the router's pool.
type Output struct {
	Egress     []*frame.Batch // by physical port: forwarded frames, first fragments, echo replies
	Generated  []*frame.Batch // by physical port: ICMP errors and the other fragments
	Local      *frame.Batch   // frames for the router: Frame.Port is the ingress interface, Frame.L3 the network header's offset, the L2 header as received
	Unresolved *frame.Batch   // with Config.HoldUnresolved: frames for an unresolved next hop, as received, Frame.Meta its index
}

// Empty reports whether every batch of o is empty.
func (o *Output) Empty() bool {
	for i := range o.Egress {
		if len(o.Egress[i].Frames)+len(o.Generated[i].Frames) != 0 {
			return false
		}
	}
	return len(o.Local.Frames)+len(o.Unresolved.Frames) == 0
}

// Tap sees a sample of the frames a Worker handles (see Worker.SetTap): d is the frame's bytes as
// they leave (forwarded: rewritten and tagged) or as they were judged (dropped, local), valid only
// during the call. A Tap must not keep d, must not block and, to keep the forwarding path
// allocation-free, must not allocate. It is called from the worker's goroutine; a Tap shared by
// several workers must be safe for concurrent use.
type Tap interface {
	Capture(d []byte, verdict Reason)
}

// Worker forwards batches for one goroutine. Its counters are plain increments published by Flush.
type Worker struct {
	r    *Router
	vw   *vlan.Worker
	dst  []uint32
	nh   []uint32
	out  Output
	drop *frame.Batch // the batch's dropped frames, released at the end of Process
	cnt  [numCounters]uint64
	pub  [numCounters]atomic.Uint64
	macs []uint64 // per interface ID, the router's MAC as mac48 reads it
	ipid uint16

	ports  []portTab        // per physical port: rxRun's tables (buildClassifier)
	pt     *portTab         // the batch's (or run's) port's
	rxc    []*vlan.Counters // per interface ID: the vlan worker's counters (nil: none), for flushRx
	rxSlot []slotRef        // per interface ID: its slot in ports
	one    frame.Batch      // one frame of the input, for vlan's classification of what rxRun leaves
	slow   []int32          // pass 1: the positions of the frames special kept (pass 3 gives them forwardSlow)

	general bool // every frame takes the general paths (vlan's ClassifyInPlace, special, forwardSlow): a test's reference

	tap      Tap // nil: off (one predictable branch per frame)
	tapEvery uint32
	tapN     uint32

	// Per next-hop index, the egress decision and its prebuilt L2 header (vlan.Rewrite), built the
	// first time a version of the next-hop table sends a frame to that index: a per-worker
	// adjacency cache, so a frame's L2 rewrite is one fixed-size copy. rwView is the version the
	// entries with gen == rwGen were built from; a new version bumps rwGen and so invalidates them all.
	rw      []adj
	rwView  *fib.NextHopView
	rwGen   uint64     // 0 only before the first batch; never wraps
	cur     []txCursor // per physical port: txRun's place in Output.Egress[port]
	noRoute adj
	bcast   []adj // per interface, towards the Ethernet broadcast address (directed broadcast)
}

// What an adjacency does with a frame.
const (
	adjForward    = iota
	adjNoRoute    // DropNoRoute and ICMP network unreachable
	adjBlackhole  // DropBlackhole
	adjLocal      // Output.Local
	adjUnresolved // Output.Unresolved or DropUnresolved
	adjEgress     // DropEgress
	adjGroup      // an ECMP group: viaGroup picks the member
)

// adj is one next hop as the worker's egress needs it: the fields txRun reads first, in the first
// 64 bytes; adjSize bytes in all, so that an entry's address is a shift of its index.
type adj struct {
	adjFields
	_ [adjSize - unsafe.Sizeof(adjFields{})]byte
}

type adjFields struct {
	blk   [vlan.RewriteMax / 8]uint64 // rw's block (vlan.Rewrite.Block) as words
	txc   *vlan.Counters              // the vlan worker's counters of the egress interface (nil: lim is 0)
	cur   *txCursor                   // the egress port's cursor (nil: no egress batch)
	gen   uint64
	outL3 uint32 // Frame.Out and Frame.L3 after the rewrite, as they lie in a Frame
	lim   uint16 // the largest packet txRun forwards: mtu for a current ordinary next hop, else 0
	n     uint16 // rw's header length
	port  uint16 // rw's port
	mtu   uint16
	kind  uint8
	rw    vlan.Rewrite
}

const adjSize = 128

var _ [adjSize]struct{} = [unsafe.Sizeof(adj{})]struct{}{}

// setRewrite makes a an ordinary next hop through rw with the given MTU; its egress batch is
// Output.Egress[rw.Port()] (txRun requires one: without it, lim stays 0), through its cursor.
func (w *Worker) setRewrite(a *adj, rw vlan.Rewrite, mtu uint16, txc *vlan.Counters) {
	a.rw, a.mtu, a.kind, a.txc = rw, mtu, adjForward, txc
	a.blk[0] = binary.NativeEndian.Uint64(rw.Block()[0:8])
	a.blk[1] = binary.NativeEndian.Uint64(rw.Block()[8:16])
	a.blk[2] = binary.NativeEndian.Uint64(rw.Block()[16:24])
	var f frame.Frame
	f.Out, f.L3 = rw.Interface(), uint16(rw.Len())
	a.outL3 = *(*uint32)(unsafe.Pointer(&f.Out))
	a.n, a.port = uint16(rw.Len()), rw.Port()
	if int(a.port) < len(w.cur) {
		a.cur = &w.cur[a.port]
	}
	if txc != nil && rw.Valid() && a.cur != nil {
		a.lim = mtu
	}
}

// NewWorker returns a worker whose input batches hold at most batch frames.
func (r *Router) NewWorker(batch int) *Worker {
	if batch <= 0 {
		batch = frame.DefaultBatch
	}
	w := &Worker{r: r, vw: r.demux.NewWorker(), dst: make([]uint32, batch), nh: make([]uint32, batch),
		drop: frame.NewBatch(batch), slow: make([]int32, 0, batch)}
	w.noRoute = adj{adjFields: adjFields{kind: adjNoRoute}}
	for _, ifc := range r.ifaces {
		w.macs = append(w.macs, mac48(ifc.MAC[:]))
	}
	w.buildClassifier()
	w.bcast = make([]adj, len(r.ifaces))
	for i := range r.ifaces {
		w.bcast[i] = adj{adjFields: adjFields{kind: adjEgress}}
		rw, err := r.demux.Rewrite(uint16(i), frame.MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, r.ifaces[i].MAC, frame.TypeIPv4)
		if err == nil && int(rw.Port()) < r.ports {
			w.setRewrite(&w.bcast[i], rw, uint16(r.ifaces[i].MTU), nil)
		}
	}
	w.cur = make([]txCursor, r.ports)
	for i := 0; i < r.ports; i++ {
		w.out.Egress = append(w.out.Egress, frame.NewBatch(batch))
		g := frame.NewBatch(4 * batch)
		g.Mem, g.Owner = r.pool.Mem(), r.pool
		w.out.Generated = append(w.out.Generated, g)
	}
	w.out.Local, w.out.Unresolved = frame.NewBatch(batch), frame.NewBatch(batch)
	r.mu.Lock()
	r.workers = append(r.workers, w)
	r.mu.Unlock()
	return w
}

// SetTap makes the worker hand every nth frame it handles (n <= 1: every frame) to t; nil turns it
// off. Frames the VLAN demux drops are not seen. Call it from the worker's goroutine or before the
// worker starts.
func (w *Worker) SetTap(t Tap, n int) {
	w.tap, w.tapEvery, w.tapN = t, uint32(max(n, 1)), 0
}

func (w *Worker) capture(d []byte, verdict Reason) {
	if w.tapN++; w.tapN >= w.tapEvery {
		w.tapN = 0
		w.tap.Capture(d, verdict)
	}
}

// Forward is Process followed by the plain disposal of its output: each egress and generated batch
// is sent on ports[p] (indexed by physical port) and local and unresolved frames are released and
// counted as Discarded. in is empty afterwards.
func (w *Worker) Forward(port uint16, in *frame.Batch, ports []xmit.Port) {
	o := w.Process(port, in)
	for p := range o.Egress {
		if len(o.Egress[p].Frames) > 0 {
			ports[p].Send(o.Egress[p])
		}
		if len(o.Generated[p].Frames) > 0 {
			ports[p].Send(o.Generated[p])
		}
	}
	if n := len(o.Local.Frames) + len(o.Unresolved.Frames); n > 0 {
		w.cnt[cDiscarded] += uint64(n)
		o.Local.Free()
		o.Unresolved.Free()
	}
}

// Process routes every frame of in, received on physical port `port` (vlan.PerFramePort: each
// frame's Frame.Port), into the returned Output, which stays the worker's and is valid until the
// next call; in is empty afterwards. The caller must have emptied the previous Output (it panics
// otherwise: frames would be lost).
func (w *Worker) Process(port uint16, in *frame.Batch) *Output {
	w.checkEmpty()
	return w.route(port, in, true)
}

// Resume routes frames that an earlier Process handed out in Output.Unresolved (or any frames
// classified as Process classifies them: Frame.Port the ingress interface, Frame.L3 the network
// header's offset, the L2 header as received) as if they had just arrived: a neighbour resolver
// hands back what it held once the next hop resolves. Like Process, it returns the worker's Output,
// and in is empty afterwards.
func (w *Worker) Resume(in *frame.Batch) *Output {
	w.checkEmpty()
	return w.route(0, in, false)
}

// Unreachable answers every frame of in (classified as Resume takes them) with ICMP Destination
// Unreachable (host unreachable: a neighbour that did not resolve, RFC 1812 §5.2.7.1), where RFC
// 1812 allows one and the limiter a token, and releases the frames; in is empty afterwards. The
// frames were counted when Process held them; only the ICMP errors are counted here.
func (w *Worker) Unreachable(in *frame.Batch) *Output {
	w.checkEmpty()
	for i := range in.Frames {
		f := &in.Frames[i]
		d := f.Data(in.Mem)
		if int(f.Port) >= len(w.macs) || int(f.L3) < frame.EtherLen || int(f.L3) > len(d) {
			continue
		}
		if ip, err := frame.ParseIPv4(d[f.L3:]); err == nil {
			w.icmpError(in, f, ip, icmpUnreachable, icmpHostUnreach, 0)
		}
	}
	in.Free()
	return &w.out
}

func (w *Worker) checkEmpty() {
	if !w.out.Empty() {
		panic("fwd: Process called before the previous Output was emptied")
	}
}

// route is Process (classify set: in as received on port) and Resume (in classified).
func (w *Worker) route(port uint16, in *frame.Batch, classify bool) *Output {
	o := &w.out
	if len(in.Frames) > len(w.dst) {
		panic(fmt.Sprintf("fwd: batch of %d frames, larger than the worker's %d", len(in.Frames), len(w.dst)))
	}
	for _, e := range o.Egress {
		e.Adopt(in)
	}
	o.Local.Adopt(in)
	o.Unresolved.Adopt(in)
	w.drop.Adopt(in)

	// Pass 1: VLAN classification and the receive checks; gather destinations. rxRun classifies
	// and judges the common frame on a straight line and stops at any other, which vlan's
	// ClassifyInPlace classifies (no byte moves: the next hop's vlan.Rewrite replaces the whole L2
	// header below) and w.special judges by every check in order: it moves the frame out of the
	// batch or keeps it. Resume's frames come classified, and all take special.
	fr := in.Frames
	dst := w.dst[:len(fr)]
	fast := classify && !w.general
	perPort := port == vlan.PerFramePort // rxRun takes the frames by runs of one port
	if fast && !perPort {
		w.setPort(port)
	}
	if fast {
		prefetchFrames(unsafe.Pointer(unsafe.SliceData(in.Mem)), fr)
	}
	w.slow = w.slow[:0]
	k := 0
	for i := 0; i < len(fr); {
		if fast {
			end := len(fr)
			if perPort {
				end = w.portRun(fr, i)
			}
			if i, k = rxRun(fr[:end], in.Mem, w.pt, dst, i, k); i == end {
				continue
			}
		}
		if !classify || w.classifyOne(port, in, i) {
			if a, keep := w.special(in, i); keep {
				dst[k] = a
				if k != i {
					fr[k] = fr[i]
				}
				w.slow = append(w.slow, int32(k))
				k++
			}
		}
		i++
	}
	fr = fr[:k]

	// Pass 2: one lookup call for the whole batch.
	nh := w.nh[:k]
	w.r.routes.Load().r.LookupBatch(dst[:k], nh)
	nhs := w.r.nh.View()
	if nhs != w.rwView {
		w.rwView = nhs
		w.rwGen++
		for i := range w.rw {
			w.rw[i].lim = 0 // txRun reads no generation: every entry leaves its straight line
		}
	}

	// Pass 3: next hop, MTU, the next hop's prebuilt L2 header, TTL; sort by egress port. txRun
	// forwards the common frame of those rxRun kept on a straight line and stops at any other (and
	// at every frame while a Tap is set), which w.forwardSlow handles after the adjacency cache has
	// its entry; so do the frames special kept.
	forwarded := 0
	straight := w.tap == nil && !w.general
	s := 0 // the next of w.slow
	for i := 0; i < len(fr); i++ {
		end := len(fr) // the end of rxRun's frames from i on
		if s < len(w.slow) {
			end = int(w.slow[s])
		}
		if straight && i < end && w.openCursors(end-i) {
			i0 := i
			i = txRun(fr[:end], nh[:end], w.rw, in.Mem, i)
			w.closeCursors()
			forwarded += i - i0
			if i >= len(fr) {
				break
			}
		}
		if i == end {
			s++
		}
		idx := nh[i]
		a := w.adjFor(nhs, idx)
		w.forwardSlow(in, i, a, idx)
	}
	w.cnt[Forwarded] += uint64(forwarded)
	w.drop.Free()
	in.Reset()
	return o
}

// adjFor returns the adjacency cache's entry for next-hop index idx of version nhs, building it
// when it is missing.
func (w *Worker) adjFor(nhs *fib.NextHopView, idx uint32) *adj {
	if uint64(idx) < uint64(len(w.rw)) && w.rw[idx].gen == w.rwGen {
		return &w.rw[idx]
	}
	return w.buildAdj(nhs, idx)
}

// forwardSlow is pass 3 for frame i of in, with adjacency a (next-hop index idx), when the straight
// line does not apply: not an ordinary next hop, beyond the MTU, or a rewrite Apply handles apart.
func (w *Worker) forwardSlow(in *frame.Batch, i int, a *adj, idx uint32) {
	f := &in.Frames[i]
	ip := frame.IPv4(f.Data(in.Mem)[f.L3:])
	if a.kind != adjForward || ip.TotalLen() > int(a.mtu) {
		w.notForwarded(in, i, ip, a, idx)
		return
	}
	e := w.out.Egress[a.rw.Port()] // < len(egress): buildAdj checked it
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

// mac48 reads the first 6 bytes of b (a MAC address) as one integer.
func mac48(b []byte) uint64 {
	_ = b[5]
	return uint64(binary.LittleEndian.Uint32(b)) | uint64(binary.LittleEndian.Uint16(b[4:]))<<32
}

// dropFrame counts f under r and queues it for release.
func (w *Worker) dropFrame(in *frame.Batch, f *frame.Frame, r Reason) {
	w.cnt[r]++
	if w.tap != nil {
		w.capture(f.Data(in.Mem), r)
	}
	w.drop.Append(*f)
}

// toLocal hands f to Output.Local.
func (w *Worker) toLocal(in *frame.Batch, f *frame.Frame) {
	w.cnt[Local]++
	if w.tap != nil {
		w.capture(f.Data(in.Mem), Local)
	}
	w.out.Local.Append(*f)
}

// special judges frame i of in, which the fast checks of pass 1 did not pass: it moves the frame
// out of the batch (a drop, local delivery, an echo reply) or returns its destination to route it.
func (w *Worker) special(in *frame.Batch, i int) (dst uint32, keep bool) {
	f := &in.Frames[i]
	d := f.Data(in.Mem)
	l3 := int(f.L3)
	ifc := int(f.Port)
	if ifc >= len(w.macs) { // an interface the demux gained after New: no Iface for it
		w.dropFrame(in, f, DropVLAN)
		return 0, false
	}
	l2multi := d[0]&1 != 0
	if !l2multi && mac48(d) != w.macs[ifc] {
		w.dropFrame(in, f, DropNotForUs)
		return 0, false
	}
	if binary.BigEndian.Uint16(d[l3-2:]) != frame.TypeIPv4 {
		w.toLocal(in, f) // ARP, and whatever else the router's host may want
		return 0, false
	}
	ip, err := frame.ParseIPv4(d[l3:])
	if err != nil {
		w.dropFrame(in, f, DropMalformed)
		return 0, false
	}
	if !ip.ChecksumOK() {
		w.dropFrame(in, f, DropChecksum)
		return 0, false
	}
	dst, src := ip.Dst(), ip.Src()
	sc := srcClass[src>>24]
	switch dc := dstClass[dst>>24]; {
	case dst == limitedBroadcast || dst&0xffffff00 == 0xe0000000:
		if sc != classNormal && src != 0 {
			w.dropFrame(in, f, DropMartianSrc)
		} else {
			w.toLocal(in, f)
		}
		return 0, false
	case dc == classMulticast:
		w.dropFrame(in, f, DropMulticast)
		return 0, false
	case dc != classNormal:
		w.dropFrame(in, f, DropMartianDst)
		return 0, false
	case sc != classNormal:
		w.dropFrame(in, f, DropMartianSrc)
		return 0, false
	}
	if e, ok := w.r.local.find(dst); ok {
		switch {
		case e.kind == kindOwn:
			w.deliver(in, i, ip, l2multi)
		case int(e.iface) == ifc: // the ingress subnet's broadcast address
			w.toLocal(in, f)
		case !w.r.cfg.DirectedBroadcast:
			w.dropFrame(in, f, DropDirectedBroadcast)
		default:
			w.directedBroadcast(in, i, ip, int(e.iface), l2multi)
		}
		return 0, false
	}
	if l2multi {
		w.dropFrame(in, f, DropL2Broadcast)
		return 0, false
	}
	if ip.TTL() <= 1 {
		w.icmpError(in, f, ip, icmpTimeExceeded, 0, 0)
		w.dropFrame(in, f, DropTTL)
		return 0, false
	}
	return dst, true
}

// deliver takes frame i, an IPv4 packet for one of the router's addresses: an echo request is
// answered in place, anything else goes to Output.Local.
func (w *Worker) deliver(in *frame.Batch, i int, ip frame.IPv4, l2multi bool) {
	f := &in.Frames[i]
	if w.r.cfg.NoEcho || l2multi || ip[0] != 0x45 || ip.Protocol() != frame.ProtoICMP || ip.IsFragment() {
		w.toLocal(in, f)
		return
	}
	m := ip[frame.IPv4MinLen:]
	if len(m) < 8 || m[0] != icmpEchoRequest || m[1] != 0 || frame.Checksum(m) != 0 {
		w.toLocal(in, f)
		return
	}
	d := f.Data(in.Mem)
	if d[6]&1 != 0 { // a multicast source MAC: nowhere to answer
		w.dropFrame(in, f, DropMartianSrc)
		return
	}
	rw, err := w.r.demux.Rewrite(f.Port, frame.MAC(d[6:12]), w.r.ifaces[f.Port].MAC, frame.TypeIPv4)
	if err != nil || int(rw.Port()) >= len(w.out.Egress) {
		w.dropFrame(in, f, DropEgress)
		return
	}
	// The reply: addresses swapped, type 0, a fresh TTL; the ICMP checksum follows the type's change.
	src, dst := ip.Src(), ip.Dst()
	binary.BigEndian.PutUint32(ip[12:], dst)
	binary.BigEndian.PutUint32(ip[16:], src)
	ip[8] = 64
	m[0] = icmpEchoReply
	binary.BigEndian.PutUint16(m[2:], frame.Update16(binary.BigEndian.Uint16(m[2:]), uint16(icmpEchoRequest)<<8, uint16(icmpEchoReply)<<8))
	ip.SetChecksum()
	f.Resize(int(f.L3) + len(ip)) // without the Ethernet padding the request had
	if w.vw.Apply(in, i, &rw) != nil {
		w.dropFrame(in, f, DropEgress)
		return
	}
	w.cnt[Echoed]++
	if w.tap != nil {
		w.capture(f.Data(in.Mem), Echoed)
	}
	w.out.Egress[rw.Port()].Append(*f)
}

// directedBroadcast forwards frame i to the Ethernet broadcast address of interface ifc's subnet.
func (w *Worker) directedBroadcast(in *frame.Batch, i int, ip frame.IPv4, ifc int, l2multi bool) {
	f := &in.Frames[i]
	a := &w.bcast[ifc]
	switch {
	case l2multi:
		w.dropFrame(in, f, DropL2Broadcast)
	case ip.TTL() <= 1:
		w.icmpError(in, f, ip, icmpTimeExceeded, 0, 0)
		w.dropFrame(in, f, DropTTL)
	case a.kind != adjForward:
		w.dropFrame(in, f, DropEgress)
	case ip.TotalLen() > int(a.mtu):
		w.dropFrame(in, f, DropTooBig) // a broadcast gets no ICMP error, and is not fragmented here
	default:
		p := a.rw.Port()
		if w.vw.Apply(in, i, &a.rw) != nil {
			w.dropFrame(in, f, DropEgress)
			return
		}
		ip.DecTTL()
		w.cnt[Forwarded]++
		if w.tap != nil {
			w.capture(f.Data(in.Mem), Forwarded)
		}
		w.out.Egress[p].Append(*f)
	}
}

// notForwarded handles frame i of pass 3 that is not forwarded as it is: its next hop is not an
// ordinary one, or the packet exceeds the egress MTU.
func (w *Worker) notForwarded(in *frame.Batch, i int, ip frame.IPv4, a *adj, idx uint32) {
	f := &in.Frames[i]
	switch a.kind {
	case adjNoRoute:
		w.icmpError(in, f, ip, icmpUnreachable, icmpNetUnreachable, 0)
		w.dropFrame(in, f, DropNoRoute)
	case adjBlackhole:
		w.dropFrame(in, f, DropBlackhole)
	case adjLocal:
		ip, _ = frame.ParseIPv4(ip) // cut to its total length, as pass 1 validated it
		w.deliver(in, i, ip, false)
	case adjUnresolved:
		if !w.r.cfg.HoldUnresolved {
			w.dropFrame(in, f, DropUnresolved)
			return
		}
		f.Meta = idx
		w.cnt[Held]++
		if w.tap != nil {
			w.capture(f.Data(in.Mem), Held)
		}
		w.out.Unresolved.Append(*f)
	case adjEgress:
		w.dropFrame(in, f, DropEgress)
	case adjGroup:
		w.viaGroup(in, i, ip, idx)
	default: // too big for the egress MTU
		if ip.DontFragment() {
			w.icmpError(in, f, ip, icmpUnreachable, icmpFragNeeded, a.mtu)
			w.dropFrame(in, f, DropTooBig)
			return
		}
		w.fragment(in, i, ip, a)
	}
}

// buildAdj builds the worker's egress entry for next-hop index idx of version nhs: Process's
// adjacency cache had no entry of this version for it.
func (w *Worker) buildAdj(nhs *fib.NextHopView, idx uint32) *adj {
	if uint64(idx) >= uint64(len(w.rw)) {
		if uint64(idx) >= uint64(nhs.Len()) {
			// NoRoute, or an index this version never had: the shared entry.
			return &w.noRoute
		}
		w.rw = append(w.rw, make([]adj, nhs.Len()-len(w.rw))...) // on a table change only
	}
	a := &w.rw[idx]
	*a = adj{adjFields: adjFields{kind: adjNoRoute, gen: w.rwGen}}
	hop := nhs.At(idx)
	ifaces := w.r.ifaces
	switch {
	case hop == nil:
		return a
	case hop.Flags&fib.NextHopGroup != 0:
		a.kind = adjGroup
		return a
	case hop.Flags&fib.NextHopDrop != 0:
		a.kind = adjBlackhole
		return a
	case hop.Flags&fib.NextHopLocal != 0:
		a.kind = adjLocal
		return a
	case hop.Flags&fib.NextHopUnresolved != 0:
		a.kind = adjUnresolved
		return a
	case int(hop.Ifindex) >= len(ifaces):
		a.kind = adjEgress
		return a
	}
	rw, err := w.r.demux.Rewrite(hop.Ifindex, hop.DstMAC, ifaces[hop.Ifindex].MAC, frame.TypeIPv4)
	if err != nil || int(rw.Port()) >= len(w.out.Egress) {
		a.kind = adjEgress
		return a
	}
	w.setRewrite(a, rw, uint16(ifaces[hop.Ifindex].MTU), w.vw.TxCounters(rw.Interface()))
	return a
}

// Flush publishes the worker's counters (and its vlan worker's). Call it from the worker's goroutine
// every few milliseconds. It stores only the counters that changed since the last Flush (an
// atomic store is a locked instruction on amd64, a load a plain one): an idle worker's Flush is
// loads.
func (w *Worker) Flush() {
	for i := range w.cnt {
		if w.pub[i].Load() != w.cnt[i] {
			w.pub[i].Store(w.cnt[i])
		}
	}
	w.flushRx()
	w.vw.Flush()
}
