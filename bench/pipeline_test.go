package bench

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"

	"github.com/wirespeed/wirespeed/dsa"
	"github.com/wirespeed/wirespeed/fib"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/internal/benchutil"
	"github.com/wirespeed/wirespeed/lag"
	"github.com/wirespeed/wirespeed/vlan"
	"github.com/wirespeed/wirespeed/xmit"
)

// BenchmarkPipeline is issue 7's in-memory goal: the whole per-frame pipeline of examples/vlanrouter
// on one core, over the real table (901,899 prefixes) with random destinations, at most 40 ns per
// frame. It is built from the library's public pieces the way examples/internal/fwd assembles them
// (that package is internal to the examples and cannot be imported from this module, so its
// Worker.Forward is transcribed below, stage by stage, and extended by the LAG choice and the
// per-worker TxQueue the pipeline ends with).
//
// The topology is a router on a stick, the most work a frame can cost in vlanrouter: every frame
// arrives 802.1Q-tagged on the trunk (one of 20 VLANs), is routed, and leaves tagged on another
// VLAN of the trunk, which is a two-member aggregate (round-robin), or (next hop 0, 1/16 of the
// routes) untagged on the uplink. The stages are cumulative:
//
//	rx       Port.Recv from the in-memory ingress link (a Pipe)
//	parse    + vlan.Worker.ClassifyInPlace, IPv4 validation (EtherType, our MAC, header, checksum, TTL)
//	fib      + fib.Table.LookupBatch over the batch's destinations
//	rewrite  + next-hop resolution (fib.NextHops view), MTU/DF check, TTL decrement + checksum update
//	encap    + vlan.Worker.Apply: the next hop's prebuilt L2 header (MACs, egress tag) in place of the old one
//	lag      + lag.Selector.Select: a member of the aggregate for each frame
//	enqueue  + xmit.TxQueue.Route and Flush: one Send per egress port (two members, uplink)
//
// Stages before enqueue park the frames in a holding batch (a descriptor copy) instead of sending
// them. One op is one batch of 64 frames. The figures are ns/frame, cpu-ns/frame and Mpps from
// benchutil's Meter, which is paused while the ingress queue is refilled; go test's own ns/op
// includes the refill and is not the figure to quote. The ingress queue holds 8 batches (512 frames,
// whose headers stay in the CPU caches as they do right after a NIC has written them; PIPE_BATCHES
// changes it), refilled with fresh random destinations when empty. The refill does not stop the
// benchmark timer (b.StopTimer reads memory statistics, stopping the world, every 512 frames); the
// Meter's pause is enough.
func BenchmarkPipeline(b *testing.B) {
	rt, probes := realFIB(b)
	for _, st := range []stage{stageRx, stageParse, stageFIB, stageRewrite, stageEncap, stageLAG, stageEnqueue} {
		b.Run("stage="+st.String(), func(b *testing.B) {
			runPipeline(b, pipeConfig{routes: rt, probes: probes, upto: st, lag: "rr"})
		})
	}
	// lagrouter's composition: the trunk is the lag.Aggregate itself (an xmit.Port whose Send picks the
	// members and sends to each), not a Selector in front of a TxQueue.
	b.Run("stage=enqueue-aggregate", func(b *testing.B) {
		runPipeline(b, pipeConfig{routes: rt, probes: probes, upto: stageEnqueue, lag: "rr", aggregate: true})
	})
	// The whole pipeline where the route lookups hit the caches: the real table with only 1024
	// distinct destinations (a few busy flows), and vlanrouter's own 21-route table.
	b.Run("variant=hot1024/stage=+enqueue", func(b *testing.B) {
		runPipeline(b, pipeConfig{routes: rt, probes: probes[:1024], upto: stageEnqueue, lag: "rr"})
	})
	// Destinations uniform over the routed address space (rather than one random host per prefix).
	b.Run("variant=routed-uniform/stage=+fib", func(b *testing.B) {
		runPipeline(b, pipeConfig{routes: rt, probes: routedUniformProbes(b), upto: stageFIB, lag: "rr"})
	})
	b.Run("variant=routed-uniform/stage=+enqueue", func(b *testing.B) {
		runPipeline(b, pipeConfig{routes: rt, probes: routedUniformProbes(b), upto: stageEnqueue, lag: "rr"})
	})
	b.Run("variant=vlanrouter-table/stage=+enqueue", func(b *testing.B) {
		runPipeline(b, pipeConfig{routes: vlanrouterFIB(b), probes: vlanrouterProbes(), upto: stageEnqueue, lag: "rr"})
	})
}

// vlanrouterFIB is examples/vlanrouter's built-in table, mapped to this benchmark's next hops: a
// default route upstream (next hop 0) and 10.0.k.0/24 on VLAN k (k = 1..numNextHops-1).
func vlanrouterFIB(tb testing.TB) *fib.Table {
	t := fib.New()
	ch := []fib.Change{{Prefix: netip.MustParsePrefix("0.0.0.0/0"), NextHop: 0}}
	for k := 1; k < numNextHops; k++ {
		ch = append(ch, fib.Change{Prefix: netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 0, byte(k), 0}), 24), NextHop: uint32(k)})
	}
	if err := t.Apply(ch); err != nil {
		tb.Fatal(err)
	}
	return t
}

// vlanrouterProbes are destinations as examples/internal/trunkgen draws them: hosts of the VLAN
// subnets and of 198.18.0.0/15 upstream.
func vlanrouterProbes() []uint32 {
	rng := rand.New(rand.NewPCG(9, 10))
	ps := make([]uint32, 1<<16)
	for i := range ps {
		if rng.IntN(2) == 0 {
			ps[i] = 0xc6120000 | rng.Uint32()&0x1ffff
		} else {
			ps[i] = 0x0a000000 | uint32(1+rng.IntN(pipeVLANs))<<8 | uint32(2+rng.IntN(250))
		}
	}
	return ps
}

// stage is how far the pipeline runs.
type stage int

const (
	stageRx stage = iota
	stageParse
	stageFIB
	stageRewrite
	stageEncap
	stageLAG
	stageEnqueue
)

var stageNames = []string{"rx", "parse", "+fib", "+rewrite", "+encap", "+lag", "+enqueue"}

func (s stage) String() string { return stageNames[s] }

// The pipeline's address plan (as in examples/internal/trunkgen): interface 0 is the untagged uplink,
// interface i (1..pipeVLANs) VLAN 100+i on the trunk.
const (
	pipeVLANs          = 20
	pipeBatch          = 64
	pipeBatchesDefault = 8 // batches per refill: the warm working set
	portTrunk          = 0 // physical ports (vlan.Demux numbering; DSA: the switch ports)
	portUplink         = 1
	ifUplink           = 0
	frameLen           = 64 // tagged; untagged frames are 60
)

func pipeVID(i int) uint16 { return uint16(100 + i) }

func routerMAC(id int) frame.MAC { return frame.MAC{0x02, 0x77, 0x73, 0x00, byte(id >> 8), byte(id)} }
func hostMAC(i, h int) frame.MAC { return frame.MAC{0x02, 0x68, 0x6f, byte(i), 0x00, byte(h)} }

var gatewayMAC = frame.MAC{0x02, 0x67, 0x77, 0x00, 0x00, 0x01}

// nextHop is the entry for next-hop index k (the real table's routes use 0..numNextHops-1): 0 is the
// upstream gateway on the uplink, k the host .2 on VLAN k.
func nextHop(k uint32) fib.NextHop {
	if k == 0 {
		return fib.NextHop{Ifindex: ifUplink, DstMAC: gatewayMAC}
	}
	return fib.NextHop{Ifindex: uint16(k), DstMAC: hostMAC(int(k), 2)}
}

// lpm is what the pipeline needs of a route table (*fib.Table).
type lpm interface {
	LookupBatch(dst, nh []uint32) int
}

type pipeConfig struct {
	routes    lpm
	upto      stage
	lag       string // "" (the trunk is one port), "rr", or a bonding hash policy for balance-xor
	aggregate bool   // the trunk is a lag.Aggregate port (lagrouter) rather than Selector + TxQueue
	tagger    string // DSA: the trunk and the uplink are switch ports behind one conduit; "" none
	ptp       bool   // DSA: PTP receive timestamping on for the trunk's switch port
	probes    []uint32
}

// pipeline is one worker's state plus the in-memory links around it.
type pipeline struct {
	cfg   pipeConfig
	pool  *frame.Pool
	rx    *xmit.MemPort   // the router's ingress end
	feed  *xmit.MemPort   // its peer: where the refill sends
	sinks []*xmit.MemPort // peers of every egress end: drained by the refill
	ifMAC []frame.MAC     // router MAC by interface ID
	mtu   []int           // and MTU
	macs  []uint64        // the same MACs as mac48 reads them (fwd's pass 1)
	nhs   *fib.NextHops
	demux *vlan.Demux
	// fwd's per-worker adjacency cache: by next-hop index, built on first use from the next-hop
	// table version adjView, invalidated by a new version (adjGen).
	adjs    []pipeAdj
	adjView *fib.NextHopView
	adjGen  uint64
	vw      *vlan.Worker
	sel     *lag.Selector
	agg     *lag.Aggregate
	txq     *xmit.TxQueue
	egress  [2]uint16 // TxQueue egress by physical port (no LAG, no DSA)
	member  [256]uint16
	cond    *dsa.Conduit
	swside  *dsa.SwitchSide

	dst, nh []uint32
	port    []uint8 // physical egress port per frame (Encap's answer)
	mem     []uint8 // LAG member per frame
	hold    *frame.Batch
	fb      *frame.Batch

	drops, fwd uint64
	rng        *rand.Rand
	next       int // next probe
	id         uint16
}

// pipeAdj is fwd's adj: a next hop as the egress needs it.
type pipeAdj struct {
	rw  vlan.Rewrite
	mtu uint16
	ok  bool
	gen uint64
}

// mac48 is fwd's: the first 6 bytes of b as one integer.
func mac48(b []byte) uint64 {
	_ = b[5]
	return uint64(binary.LittleEndian.Uint32(b)) | uint64(binary.LittleEndian.Uint16(b[4:]))<<32
}

// buildAdj is fwd.Worker.buildAdj: the cache entry of next-hop index idx for version view.
func (p *pipeline) buildAdj(view *fib.NextHopView, idx uint32) *pipeAdj {
	if uint64(idx) >= uint64(view.Len()) {
		return &pipeAdj{} // NoRoute or an unknown index: drop (never taken in this benchmark)
	}
	if uint64(idx) >= uint64(len(p.adjs)) {
		p.adjs = append(p.adjs, make([]pipeAdj, view.Len()-len(p.adjs))...)
	}
	a := &p.adjs[idx]
	*a = pipeAdj{gen: p.adjGen}
	hop := view.At(idx)
	if hop == nil || hop.Flags&fib.NextHopDrop != 0 || int(hop.Ifindex) >= len(p.ifMAC) {
		return a
	}
	rw, err := p.demux.Rewrite(hop.Ifindex, hop.DstMAC, p.ifMAC[hop.Ifindex], frame.TypeIPv4)
	if err != nil || rw.Port() > portUplink {
		return a
	}
	a.rw, a.mtu, a.ok = rw, uint16(min(p.mtu[hop.Ifindex], 0xffff)), true
	return a
}

const noEgress = 0xffff // a TxQueue egress id that does not exist: Misrouted

func newPipeline(tb testing.TB, cfg pipeConfig) *pipeline {
	tb.Helper()
	pool, err := frame.NewPool(&frame.PoolConfig{Buffers: 8 * pipeBatch * pipeBatches})
	if err != nil {
		tb.Fatal(err)
	}
	p := &pipeline{cfg: cfg, pool: pool, rng: rand.New(rand.NewPCG(7, 8)),
		dst: make([]uint32, pipeBatch), nh: make([]uint32, pipeBatch),
		port: make([]uint8, pipeBatch), mem: make([]uint8, pipeBatch),
		hold: frame.NewBatch(pipeBatch * pipeBatches), fb: frame.NewBatch(pipeBatch),
		txq: xmit.NewTxQueue(pipeBatch)}
	depth := 2 * pipeBatch * pipeBatches
	link := func(name string) (r, h *xmit.MemPort) {
		return xmit.Pipe(pool, &xmit.PipeConfig{Names: [2]string{name, name + "-peer"}, Depth: depth})
	}
	p.rx, p.feed = link("trunk-in")

	demux := vlan.NewDemux(2, vlan.Parser{})
	must := func(err error) {
		if err != nil {
			tb.Fatal(err)
		}
	}
	must(demux.Add(vlan.Interface{ID: ifUplink, Port: portUplink}))
	p.ifMAC = []frame.MAC{routerMAC(ifUplink)}
	for i := 1; i <= pipeVLANs; i++ {
		must(demux.Add(vlan.Interface{ID: uint16(i), Port: portTrunk, Outer: vlan.C(pipeVID(i))}))
		p.ifMAC = append(p.ifMAC, routerMAC(i))
	}
	for _, m := range p.ifMAC {
		p.mtu = append(p.mtu, 1500)
		p.macs = append(p.macs, mac48(m[:]))
	}
	p.demux = demux
	p.vw = demux.NewWorker()
	p.nhs = new(fib.NextHops)
	for k := uint32(0); k < numNextHops; k++ {
		hop := nextHop(k)
		must(p.nhs.Set(k, hop))
	}
	for i := range p.member {
		p.member[i] = noEgress
	}

	switch {
	case cfg.tagger != "":
		// One conduit link carries both switch ports, both ways: frames leave by the port they came in.
		if cfg.lag != "" {
			tb.Fatal("pipeline: DSA and LAG together are not modelled")
		}
		tg, err := dsa.ByName(cfg.tagger)
		must(err)
		p.cond, err = dsa.NewConduit(dsa.Config{Tagger: tg, Ports: 2})
		must(err)
		p.swside, err = dsa.NewSwitchSide(tg)
		must(err)
		if cfg.ptp {
			must(p.cond.EnableTimestamps(portTrunk, true))
		}
		id, err := p.txq.Add(p.rx)
		must(err)
		p.egress = [2]uint16{id, id}
		p.sinks = append(p.sinks, p.feed)
	case cfg.lag == "":
		tr, th := link("trunk-out")
		up, uh := link("uplink")
		t, err := p.txq.Add(tr)
		must(err)
		u, err := p.txq.Add(up)
		must(err)
		p.egress = [2]uint16{t, u}
		p.sinks = append(p.sinks, th, uh)
	default:
		lc := &lag.Config{Name: "lag0", Mode: lag.RoundRobin}
		if cfg.lag != "rr" {
			pol, err := lag.ParsePolicy(cfg.lag)
			must(err)
			lc.Mode, lc.Policy = lag.XOR, pol
		}
		m0, h0 := link("lag0-m0")
		m1, h1 := link("lag0-m1")
		up, uh := link("uplink")
		p.sinks = append(p.sinks, h0, h1, uh)
		p.agg, err = lag.New([]xmit.Port{m0, m1}, lc)
		must(err)
		tb.Cleanup(func() { p.agg.Close() })
		p.sel = p.agg.NewSelector()
		if cfg.aggregate {
			t, err := p.txq.Add(p.agg)
			must(err)
			u, err := p.txq.Add(up)
			must(err)
			p.egress = [2]uint16{t, u}
			break
		}
		for m, port := range []xmit.Port{m0, m1} {
			id, err := p.txq.Add(port)
			must(err)
			p.member[m] = id
		}
		u, err := p.txq.Add(up)
		must(err)
		p.egress = [2]uint16{noEgress, u}
	}
	return p
}

// forward runs the configured stages over in (received on the trunk, or on the DSA conduit); in is
// empty afterwards.
func (p *pipeline) forward(in *frame.Batch) {
	upto := p.cfg.upto
	if upto == stageRx {
		p.park(in)
		return
	}
	if p.cond != nil {
		p.cond.Recv(in, nil) // tag stripped, Frame.Port = switch port
		p.vw.ClassifyInPlace(vlan.PerFramePort, in)
	} else {
		p.vw.ClassifyInPlace(portTrunk, in)
	}

	// Validate and gather destinations (fwd.Worker.Forward's pass 1): dropped frames move behind.
	fr := in.Frames
	mem := in.Mem
	macs := p.macs
	dst := p.dst[:len(fr)]
	k := 0
	for i := range fr {
		f := &fr[i]
		d := f.Data(mem)
		l3 := int(f.L3)
		if binary.BigEndian.Uint16(d[l3-2:]) != frame.TypeIPv4 {
			continue
		}
		if d[0]&1 == 0 && mac48(d) != macs[f.Port] {
			continue
		}
		ip, err := frame.ParseIPv4(d[l3:])
		if err != nil || !ip.ChecksumOK() || ip.TTL() <= 1 {
			continue
		}
		dst[k] = ip.Dst()
		if k != i {
			fr[k], fr[i] = fr[i], fr[k]
		}
		k++
	}
	p.drop(in, k)
	if upto == stageParse {
		p.park(in)
		return
	}

	nh := p.nh[:k]
	p.cfg.routes.LookupBatch(dst[:k], nh)
	if upto == stageFIB {
		p.park(in)
		return
	}

	// Resolve, check, rewrite (pass 3): kept frames stay in order at the front. The next hop comes
	// from the adjacency cache, checked against the next-hop table's version as fwd does.
	view := p.nhs.View()
	if view != p.adjView {
		p.adjView = view
		p.adjGen++
	}
	adjs, gen := p.adjs, p.adjGen
	fr = in.Frames
	port := p.port[:len(fr)]
	k = 0
	for i := range fr {
		f := &fr[i]
		var a *pipeAdj
		if idx := nh[i]; uint64(idx) < uint64(len(adjs)) && adjs[idx].gen == gen {
			a = &adjs[idx]
		} else {
			a = p.buildAdj(view, idx)
			adjs = p.adjs
		}
		if !a.ok {
			continue
		}
		ip := frame.IPv4(f.Data(mem)[f.L3:])
		if ip.TotalLen() > int(a.mtu) && ip.DontFragment() {
			continue
		}
		if upto >= stageEncap {
			if p.vw.Apply(in, i, &a.rw) != nil {
				continue
			}
			port[k] = uint8(a.rw.Port())
		}
		ip.DecTTL()
		if k != i {
			fr[k], fr[i] = fr[i], fr[k]
		}
		k++
	}
	p.drop(in, k)
	if upto < stageLAG || (p.cond != nil && upto < stageEnqueue) {
		p.park(in)
		return
	}

	if p.cond != nil {
		// The conduit tags every frame toward its switch port, then it leaves by the conduit link.
		for i := range in.Frames {
			in.Frames[i].Out = uint16(port[i])
		}
		p.cond.Send(in, nil)
		p.fwd += uint64(len(in.Frames))
		p.txq.Enqueue(p.egress[0], in)
		p.txq.Flush()
		return
	}

	fr = in.Frames
	if p.sel != nil && !p.cfg.aggregate {
		p.sel.Select(in, p.mem)
		if upto < stageEnqueue {
			p.park(in)
			return
		}
		eg := [2]uint16{0, p.egress[portUplink]}
		ms := p.mem[:len(fr)]
		for i := range fr {
			eg[portTrunk] = p.member[ms[i]]
			fr[i].Out = eg[port[i]&1]
		}
	} else {
		if upto < stageEnqueue {
			p.park(in)
			return
		}
		for i := range fr {
			fr[i].Out = p.egress[port[i]&1]
		}
	}
	p.fwd += uint64(len(fr))
	p.txq.Route(in)
	p.txq.Flush()
}

// drop releases in.Frames[k:] and keeps the first k.
func (p *pipeline) drop(in *frame.Batch, k int) {
	if k < len(in.Frames) {
		p.drops += uint64(len(in.Frames) - k)
		in.Owner.Release(in.Frames[k:])
		in.Frames = in.Frames[:k]
	}
}

// park moves in's frames to the holding batch (freed at the next refill), as if they had been sent.
func (p *pipeline) park(in *frame.Batch) {
	if len(p.hold.Frames) == 0 {
		p.hold.Adopt(in)
	}
	p.hold.Frames = append(p.hold.Frames, in.Frames...)
	p.fwd += uint64(len(in.Frames))
	in.Reset()
}

// writeFrame writes a 64-byte 802.1Q-tagged IPv4/UDP frame from host .2 of VLAN vl to dst, sent to
// the router's MAC on that VLAN, with the given TTL, IP ID and UDP ports.
func writeFrame(d []byte, vl int, dst uint32, ttl byte, id, sport, dport uint16) {
	e := frame.Ether(d)
	e.SetDst(routerMAC(vl))
	e.SetSrc(hostMAC(vl, 2))
	binary.BigEndian.PutUint16(d[12:], vlan.TPID8021Q)
	binary.BigEndian.PutUint16(d[14:], pipeVID(vl))
	binary.BigEndian.PutUint16(d[16:], frame.TypeIPv4)
	ip := d[18:64]
	clear(ip)
	ip[0], ip[8], ip[9] = 0x45, ttl, frame.ProtoUDP
	binary.BigEndian.PutUint16(ip[2:], 46)
	binary.BigEndian.PutUint16(ip[4:], id)
	binary.BigEndian.PutUint32(ip[12:], 0x0a000002|uint32(vl)<<8)
	binary.BigEndian.PutUint32(ip[16:], dst)
	frame.IPv4(ip).SetChecksum()
	binary.BigEndian.PutUint16(ip[20:], sport)
	binary.BigEndian.PutUint16(ip[22:], dport)
	binary.BigEndian.PutUint16(ip[24:], 26)
}

// drain frees what the egress links hold and the holding batch.
func (p *pipeline) drain() {
	for _, s := range p.sinks {
		for {
			if n, _ := s.Recv(p.fb); n == 0 {
				break
			}
			p.fb.Free()
		}
	}
	p.hold.Free()
}

// refill drains, then queues n batches of fresh frames (random VLAN, the next random destinations)
// on the ingress link.
func (p *pipeline) refill(tb testing.TB, n int) {
	p.drain()
	for j := 0; j < n; j++ {
		p.pool.Alloc(p.fb, pipeBatch)
		for i := range p.fb.Frames {
			f := &p.fb.Frames[i]
			f.Resize(frameLen)
			vl := 1 + p.rng.IntN(pipeVLANs)
			dst := p.cfg.probes[p.next]
			if p.next++; p.next == len(p.cfg.probes) {
				p.next = 0
			}
			p.id++
			r := p.rng.Uint32()
			writeFrame(p.fb.Bytes(i), vl, dst, 64, p.id, uint16(r), uint16(r>>16))
			if p.swside != nil {
				if err := p.swside.Encode(p.fb, i, dsa.Info{Port: portTrunk}); err != nil {
					tb.Fatal(err)
				}
			}
		}
		if got, _ := p.feed.Send(p.fb); got != pipeBatch {
			tb.Fatalf("refill queued %d of %d", got, pipeBatch)
		}
	}
}

// The real table as a fib.Table, with the intable probes (random hosts of random prefixes: every
// destination has a route) and the routed-uniform ones, built once for every benchmark of the package.
var realFIBOnce struct {
	once    sync.Once
	t       *fib.Table
	probes  []uint32
	uniform []uint32
}

func realFIB(tb testing.TB) (*fib.Table, []uint32) {
	rs := realRoutes(tb)
	realFIBOnce.once.Do(func() {
		realFIBOnce.t = buildWirespeed(rs)()
		realFIBOnce.probes = makeProbes(rs, "intable")
		realFIBOnce.uniform = routedUniform(realFIBOnce.t, len(realFIBOnce.probes))
	})
	return realFIBOnce.t, realFIBOnce.probes
}

// routedUniformProbes are n addresses drawn uniformly from the part of the IPv4 space the real table
// routes (uniform random addresses, those without a route redrawn): every destination has a route,
// and each prefix is hit in proportion to its size, not once per prefix as with the intable probes
// (which favour the many long prefixes, deep in the trie).
func routedUniformProbes(tb testing.TB) []uint32 {
	realFIB(tb)
	return realFIBOnce.uniform
}

func routedUniform(t *fib.Table, n int) []uint32 {
	rng := rand.New(rand.NewPCG(43, 44))
	ps := make([]uint32, 0, n)
	for len(ps) < n {
		a := rng.Uint32()
		if _, ok := t.LookupU32(a); ok {
			ps = append(ps, a)
		}
	}
	return ps
}

// runPipeline times the configured pipeline, one op per batch, refilling the ingress every
// pipeBatches batches with the Meter paused.
func runPipeline(b *testing.B, cfg pipeConfig) {
	p := newPipeline(b, cfg)
	p.refill(b, pipeBatches)
	in := frame.NewBatch(pipeBatch)
	runtime.GC() // the previous sub-benchmark's pool is garbage: collect it now, not in the timed loop
	b.ReportAllocs()
	b.ResetTimer()
	m := benchutil.Start(b)
	left := pipeBatches
	for i := 0; i < b.N; i++ {
		if left == 0 {
			m.Pause()
			p.refill(b, pipeBatches)
			left = pipeBatches
			m.Resume()
		}
		p.rx.Recv(in)
		p.forward(in)
		left--
	}
	m.Report(b, b.N*pipeBatch)
	b.StopTimer()
	if p.drops != 0 || p.fwd != uint64(b.N*pipeBatch) {
		b.Fatalf("forwarded %d, dropped %d of %d frames", p.fwd, p.drops, b.N*pipeBatch)
	}
	if st := p.txq.Stats(); st.Dropped+st.Misrouted != 0 {
		b.Fatalf("tx queue: %+v", st)
	}
	p.drain()
}

// String names a configuration in test output.
func (c pipeConfig) String() string {
	return fmt.Sprintf("upto=%v lag=%q aggregate=%v tagger=%q", c.upto, c.lag, c.aggregate, c.tagger)
}

var pipeBatches = envInt("PIPE_BATCHES", pipeBatchesDefault)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// loadavg is /proc/loadavg (empty elsewhere).
func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return string(b)
}
