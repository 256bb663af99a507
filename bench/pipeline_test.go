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
	"github.com/wirespeed/wirespeed/fwd"
	"github.com/wirespeed/wirespeed/internal/benchutil"
	"github.com/wirespeed/wirespeed/lag"
	"github.com/wirespeed/wirespeed/vlan"
	"github.com/wirespeed/wirespeed/xmit"
)

// BenchmarkPipeline measures the whole per-frame work of examples/vlanrouter on one core, in
// memory, over the real table (901,899 prefixes) with random destinations (the goal: at most 40 ns
// per frame). The forwarding is the public stage itself (fwd.Worker.Process), followed by the LAG
// choice (lag.Selector) and the per-worker transmit queue (xmit.TxQueue).
//
// The topology is a router on a stick, the most work a frame can cost in vlanrouter: every frame
// arrives 802.1Q-tagged on the trunk (one of 20 VLANs), is routed, and leaves tagged on another
// VLAN of the trunk, which is a two-member aggregate (round-robin), or (next hop 0, 1/16 of the
// routes) untagged on the uplink. The stages are cumulative:
//
//	rx       Port.Recv from the in-memory ingress link (a Pipe)
//	+fwd     + fwd.Worker.Process: VLAN classification, RFC 1812 receive checks, the batch's route
//	         lookups, next hop, MTU, the next hop's L2 header, TTL and checksum, sorted by egress port
//	+lag     + lag.Selector.Select: a member of the aggregate for each frame of the trunk's batch
//	+enqueue + xmit.TxQueue.Route (Frame.Out: the trunk's frames by member, the uplink's), Flush:
//	         one Send per egress port (two members, uplink)
//
// Stages before +enqueue park the frames in a holding batch (a descriptor copy) instead of sending
// them. One op is one batch of 64 frames. The figures are ns/frame, cpu-ns/frame and Mpps from
// benchutil's Meter, which is paused while the ingress queue is refilled; go test's own ns/op
// includes the refill and is not the figure to quote. The ingress queue holds 8 batches (512 frames,
// whose headers stay in the CPU caches as they do right after a NIC has written them; PIPE_BATCHES
// changes it), refilled with fresh random destinations when empty. The refill does not stop the
// benchmark timer (b.StopTimer reads memory statistics, stopping the world, every 512 frames); the
// Meter's pause is enough. Every frame must be forwarded: a drop, a local delivery or a generated
// frame fails the benchmark.
func BenchmarkPipeline(b *testing.B) {
	withReal := func(b *testing.B, cfg pipeConfig) pipeConfig { // the real table, loaded by the first sub-benchmark that needs it
		cfg.routes, cfg.probes = realFIB(b)
		return cfg
	}
	for _, st := range []stage{stageRx, stageFwd, stageLAG, stageEnqueue} {
		b.Run("stage="+st.String(), func(b *testing.B) {
			runPipeline(b, withReal(b, pipeConfig{upto: st, lag: "rr"}))
		})
	}
	// lagrouter's composition: the trunk is the lag.Aggregate itself (an xmit.Port whose Send picks the
	// members and sends to each), not a Selector in front of a TxQueue.
	b.Run("stage=enqueue-aggregate", func(b *testing.B) {
		runPipeline(b, withReal(b, pipeConfig{upto: stageEnqueue, lag: "rr", aggregate: true}))
	})
	// The whole pipeline where the route lookups hit the caches: the real table with only 1024
	// distinct destinations (a few busy flows), and vlanrouter's own 21-route table.
	b.Run("variant=hot1024/stage=+enqueue", func(b *testing.B) {
		c := withReal(b, pipeConfig{upto: stageEnqueue, lag: "rr"})
		c.probes = c.probes[:1024]
		runPipeline(b, c)
	})
	// Destinations uniform over the routed address space (rather than one random host per prefix).
	for _, st := range []stage{stageFwd, stageEnqueue} {
		b.Run("variant=routed-uniform/stage="+st.String(), func(b *testing.B) {
			c := withReal(b, pipeConfig{upto: st, lag: "rr"})
			c.probes = routedUniformProbes(b)
			runPipeline(b, c)
		})
	}
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
// subnets (neither the router's .1 nor the broadcast address) and of 198.18.0.0/15 upstream.
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
	stageFwd
	stageLAG
	stageEnqueue
)

var stageNames = []string{"rx", "+fwd", "+lag", "+enqueue"}

func (s stage) String() string { return stageNames[s] }

// The pipeline's address plan (as in examples/internal/trunkgen): interface 0 is the untagged uplink
// (192.0.2.1/24), interface i (1..pipeVLANs) VLAN 100+i on the trunk (10.0.i.1/24).
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

// routerAddr is the router's address on interface id (192.0.2.1/24 upstream, 10.0.id.1/24 on a VLAN).
func routerAddr(id int) netip.Prefix {
	if id == ifUplink {
		return netip.MustParsePrefix("192.0.2.1/24")
	}
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 0, byte(id), 1}), 24)
}

var gatewayMAC = frame.MAC{0x02, 0x67, 0x77, 0x00, 0x00, 0x01}

// nextHop is the entry for next-hop index k (the real table's routes use 0..numNextHops-1): 0 is the
// upstream gateway on the uplink, k the host .2 on VLAN k.
func nextHop(k uint32) fib.NextHop {
	if k == 0 {
		return fib.NextHop{Ifindex: ifUplink, DstMAC: gatewayMAC}
	}
	return fib.NextHop{Ifindex: uint16(k), DstMAC: hostMAC(int(k), 2)}
}

type pipeConfig struct {
	routes    fwd.Routes
	upto      stage
	lag       string // "" (the trunk is one port), "rr", or a bonding hash policy for balance-xor
	aggregate bool   // the trunk is a lag.Aggregate port (lagrouter) rather than Selector + TxQueue
	tagger    string // DSA: the trunk and the uplink are switch ports behind one conduit; "" none
	ptp       bool   // DSA: PTP receive timestamping on for the trunk's switch port
	icmpBurst int    // fwd.Config.ICMPBurst (0: the default)
	probes    []uint32
}

// pipeline is one worker's state plus the in-memory links around it.
type pipeline struct {
	cfg    pipeConfig
	pool   *frame.Pool
	rx     *xmit.MemPort   // the router's ingress end
	feed   *xmit.MemPort   // its peer: where the refill sends
	sinks  []*xmit.MemPort // peers of every egress end: drained by the refill
	router *fwd.Router
	w      *fwd.Worker
	sel    *lag.Selector
	agg    *lag.Aggregate
	txq    *xmit.TxQueue
	egress [2]uint16 // TxQueue egress by physical port (LAG: the trunk's members are in member)
	member [256]uint16
	cond   *dsa.Conduit
	swside *dsa.SwitchSide

	mem  []uint8 // LAG member per frame
	hold *frame.Batch
	fb   *frame.Batch

	// What left the stage: frames forwarded (egress batches, echo replies included), frames it
	// generated (ICMP errors, fragments), local and held frames (released here), and the rest of
	// the frames received, which the stage dropped.
	recv, fwd, gen, local, drops uint64
	rng                          *rand.Rand
	next                         int // next probe
	id                           uint16
}

const noEgress = 0xffff // a TxQueue egress id that does not exist: Misrouted

func newPipeline(tb testing.TB, cfg pipeConfig) *pipeline {
	tb.Helper()
	pool, err := frame.NewPool(&frame.PoolConfig{Buffers: 8 * pipeBatch * pipeBatches})
	if err != nil {
		tb.Fatal(err)
	}
	p := &pipeline{cfg: cfg, pool: pool, rng: rand.New(rand.NewPCG(7, 8)),
		mem:  make([]uint8, pipeBatch),
		hold: frame.NewBatch(4 * pipeBatch * pipeBatches), fb: frame.NewBatch(pipeBatch),
		txq: xmit.NewTxQueue(pipeBatch)}
	depth := 2 * pipeBatch * pipeBatches
	link := func(name string) (r, h *xmit.MemPort) {
		return xmit.Pipe(pool, &xmit.PipeConfig{Names: [2]string{name, name + "-peer"}, Depth: depth})
	}
	p.rx, p.feed = link("trunk-in")

	demux := vlan.NewDemux(2, vlan.Parser{})
	must := func(err error) {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
	}
	must(demux.Add(vlan.Interface{ID: ifUplink, Port: portUplink}))
	ifaces := []fwd.Iface{{Name: "uplink", MAC: routerMAC(ifUplink), Addrs: []netip.Prefix{routerAddr(ifUplink)}}}
	for i := 1; i <= pipeVLANs; i++ {
		must(demux.Add(vlan.Interface{ID: uint16(i), Port: portTrunk, Outer: vlan.C(pipeVID(i))}))
		ifaces = append(ifaces, fwd.Iface{Name: fmt.Sprintf("vlan%d", pipeVID(i)), MAC: routerMAC(i), Addrs: []netip.Prefix{routerAddr(i)}})
	}
	nhs := new(fib.NextHops)
	for k := uint32(0); k < numNextHops; k++ {
		must(nhs.Set(k, nextHop(k)))
	}
	// The stage's generated frames come from the ingress pool: one arena for everything it outputs.
	p.router, err = fwd.New(demux, &fwd.Config{Ifaces: ifaces, Routes: cfg.routes, NextHops: nhs, Pool: pool, ICMPBurst: cfg.icmpBurst})
	must(err)
	p.w = p.router.NewWorker(pipeBatch)
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
	p.recv += uint64(len(in.Frames))
	if upto == stageRx {
		p.fwd += uint64(len(in.Frames))
		p.park(in)
		return
	}
	n := len(in.Frames)
	port := uint16(portTrunk)
	if p.cond != nil {
		p.cond.Recv(in, nil) // tag stripped, Frame.Port = switch port
		port = vlan.PerFramePort
	}
	o := p.w.Process(port, in)

	// Account for the output, and release what the router itself would take.
	out := len(o.Local.Frames) + len(o.Unresolved.Frames)
	p.local += uint64(out)
	for i := range o.Egress {
		e, g := len(o.Egress[i].Frames), len(o.Generated[i].Frames)
		p.fwd += uint64(e)
		p.gen += uint64(g)
		out += e
	}
	p.drops += uint64(n - out)
	o.Local.Free()
	o.Unresolved.Free()

	if upto == stageFwd {
		for i := range o.Egress {
			p.park(o.Egress[i])
			p.park(o.Generated[i])
		}
		return
	}
	if p.cond != nil {
		// The conduit tags every frame toward its switch port, then all leave by the conduit link.
		for sw := range o.Egress {
			for _, b := range [2]*frame.Batch{o.Egress[sw], o.Generated[sw]} {
				if len(b.Frames) == 0 {
					continue
				}
				if upto < stageEnqueue {
					p.park(b)
					continue
				}
				for i := range b.Frames {
					b.Frames[i].Out = uint16(sw)
				}
				p.cond.Send(b, nil)
				p.txq.Enqueue(p.egress[0], b)
			}
		}
		if upto >= stageEnqueue {
			p.txq.Flush()
		}
		return
	}
	for _, b := range [2]*frame.Batch{o.Egress[portTrunk], o.Generated[portTrunk]} {
		if len(b.Frames) == 0 {
			continue
		}
		switch {
		case p.sel != nil && !p.cfg.aggregate:
			p.sel.Select(b, p.mem)
			if upto < stageEnqueue {
				p.park(b)
				continue
			}
			fr := b.Frames
			ms := p.mem[:len(fr)]
			for i := range fr {
				fr[i].Out = p.member[ms[i]]
			}
			p.txq.Route(b)
		case upto < stageEnqueue:
			p.park(b)
		default:
			p.route(b, p.egress[portTrunk])
		}
	}
	for _, b := range [2]*frame.Batch{o.Egress[portUplink], o.Generated[portUplink]} {
		if upto < stageEnqueue {
			p.park(b)
		} else if len(b.Frames) > 0 {
			p.route(b, p.egress[portUplink])
		}
	}
	if upto >= stageEnqueue {
		p.txq.Flush()
	}
}

// route hands b to the TxQueue's egress out. Route with Frame.Out set is the TxQueue's fast path
// (TxQueue.Enqueue calls put for every frame).
func (p *pipeline) route(b *frame.Batch, out uint16) {
	fr := b.Frames
	for i := range fr {
		fr[i].Out = out
	}
	p.txq.Route(b)
}

// park moves b's frames to the holding batch (freed at the next refill), as if they had been sent.
func (p *pipeline) park(b *frame.Batch) {
	if len(b.Frames) == 0 {
		return
	}
	if len(p.hold.Frames) == 0 {
		p.hold.Adopt(b)
	}
	p.hold.Frames = append(p.hold.Frames, b.Frames...)
	b.Reset()
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

// checkForwarded fails tb unless p received frames frames since it was made, forwarded every one
// and lost none on the way out.
func (p *pipeline) checkForwarded(tb testing.TB, frames uint64) {
	tb.Helper()
	if p.recv != frames || p.fwd != frames || p.drops+p.local+p.gen != 0 {
		p.w.Flush()
		tb.Fatalf("%v: forwarded %d of %d frames, dropped %d, local %d, generated %d; router: %+v",
			p.cfg, p.fwd, frames, p.drops, p.local, p.gen, p.router.Counters())
	}
	if st := p.txq.Stats(); st.Dropped+st.Misrouted != 0 {
		tb.Fatalf("%v: tx queue: %+v", p.cfg, st)
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
	p.checkForwarded(b, uint64(b.N*pipeBatch))
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
