package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/wirespeed/wirespeed/dsa"
	"github.com/wirespeed/wirespeed/examples/internal/app"
	"github.com/wirespeed/wirespeed/examples/internal/monitor"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/fwd"
	"github.com/wirespeed/wirespeed/neigh"
	"github.com/wirespeed/wirespeed/ops"
	"github.com/wirespeed/wirespeed/xmit"
)

// drainBatches bounds what a worker still takes from its port once told to stop: a real conduit
// may keep receiving.
const drainBatches = 1024

// run polls port with d until ctx ends, then until the port is idle (at most drainBatches more
// batches), and publishes the counters. It announces the router's addresses first (gratuitous ARP,
// flooded on the LAN), and runs the neighbour table's timers once a millisecond and whenever idle.
func (d *dataPlane) run(ctx context.Context, port xmit.Port, batch int) {
	in := frame.NewBatch(batch)
	wt, _ := port.(xmit.Waiter)
	idle, batches, drained := 0, 0, 0
	draining := false
	d.res.Announce(d.ports)
	d.lastPoll = time.Now()
	for {
		d.trace.Poll()                    // one atomic load while the trace's state is unchanged
		if n, _ := port.Recv(in); n > 0 { // an error is counted by the port (app.PortSource)
			d.trace.Ingress(0)
			d.step(in)
			d.trace.Ingress(-1)
			if batches++; batches&63 == 0 {
				d.flush()
			}
			if batches&15 == 0 {
				if now := time.Now(); now.Sub(d.lastPoll) >= time.Millisecond {
					d.poll()
					d.lastPoll = now
				}
			}
			idle = 0
			if draining {
				if drained++; drained >= drainBatches {
					d.flush()
					return
				}
			}
			continue
		}
		d.poll()
		d.lastPoll = time.Now()
		d.flush()
		if !draining && ctx.Err() != nil {
			draining = true
		}
		idle++
		if draining && idle > 3 {
			return
		}
		if idle > 16 && wt != nil {
			wt.Wait(int64(50 * time.Microsecond))
		}
	}
}

// Result is what a run counted.
type Result struct {
	Mem                  bool   // an in-memory run: the generator's side is counted too
	Generated            uint64 // mem: frames the switch queued toward the CPU
	GenDropped           uint64 // mem: frames it could not queue
	ConduitRx            uint64 // frames eth0 received
	ConduitRxDropped     uint64 // frames the port (the kernel) dropped before the router saw them
	DSADrops             [dsa.NumReasons]uint64
	Demuxed              uint64 // frames the conduit handed on with a switch port
	PortRx               [numSwPorts]uint64
	Routing              fwd.Counters
	Neigh                neigh.Counters // the neighbour table's
	HeldLeft             uint64         // frames the neighbour table still held at the end
	ARPDrops             uint64         // ARP frames the resolvers could not give their interface's header
	LocalReleased        uint64         // frames for the router itself other than ARP, released: no local stack
	BridgeDrops          [numBridgeReasons]uint64
	Flooded              uint64 // copies the LAN bridge made of broadcasts (ARP requests, announcements) for lan2-lan4
	Tagged               uint64 // frames tagged toward a switch port
	TagDrops             [dsa.NumReasons]uint64
	ConduitTx, TxDropped uint64 // queued by eth0 / dropped by it
	TxCopied             uint64 // of those queued, copied from another arena (the router's pool)
	Delivered            [numSwPorts]uint64
	Misdelivered         uint64    // mem: frames the switch received for the wrong port, or wrong in any checked field
	ICMPSunk             [2]uint64 // mem: ICMP errors (time exceeded, host unreachable) the LAN hosts [0] and the gateway [1] received
	EchoSunk             [2]uint64 // mem: echo replies they received
	ARPSunk              uint64    // mem: ARP frames from the router the switch delivered (requests, probes, replies, announcements)
	ARPReplies           uint64    // mem: the hosts' and the gateway's answers to the router's requests
	PTP                  [numSwPorts]uint64
	PTPSent              uint64
	Learnt               int
	Leaked               int // pool buffers not returned at the end
}

func sum(a []uint64) uint64 {
	var s uint64
	for _, v := range a {
		s += v
	}
	return s
}

// Balanced reports whether every frame is accounted for, stage by stage: what eth0 received was
// dropped by the conduit or demultiplexed; every demultiplexed frame got exactly one verdict from
// fwd (a frame held for a neighbour and resumed once it resolved got two); local frames were ARP
// for the neighbour table or released; every frame held was resumed, answered with host
// unreachable, pushed out of its queue or is still held; what fwd and the neighbour table sent
// (forwarded, echo replies, ICMP errors, fragments, ARP), with the bridge's flood copies, was
// dropped by the bridge, tagged or dropped by the tagger; what was tagged was queued or dropped by
// eth0; no buffer leaked besides the held frames'. In memory it also checks the switch's side: what
// it sent (its hosts' ARP replies included) was received, what eth0 queued was delivered by the
// right port and right in every field, and when nothing was dropped after routing, every ICMP
// error, echo reply and ARP frame the router made reached the host it was for (a flooded one every
// LAN port).
func (r Result) Balanced() bool {
	n := &r.Neigh
	holdDrops := n.HoldNoNeighbour + n.HoldNoHost + n.HoldTooBig + n.HoldNoBuffer
	arp := app.ARPSent(*n) - r.ARPDrops
	ok := r.ConduitRx == sum(r.DSADrops[:])+r.Demuxed &&
		r.Demuxed+n.Ready == r.Routing.Received() &&
		app.Sent(r.Routing)+arp+r.Flooded == sum(r.BridgeDrops[:])+r.Tagged+sum(r.TagDrops[:]) &&
		r.Routing.Local == n.ARPIn+r.LocalReleased && r.Routing.Held == n.HoldIn && n.HoldIn == n.Held+holdDrops &&
		n.Held == n.Ready+n.Failed+n.QueueOverflow+n.BacklogOverflow+r.HeldLeft &&
		r.Tagged == r.ConduitTx+r.TxDropped &&
		r.Leaked == 0
	if !r.Mem {
		return ok
	}
	icmp, echo := r.ICMPSunk[0]+r.ICMPSunk[1], r.EchoSunk[0]+r.EchoSunk[1]
	lost := sum(r.BridgeDrops[:]) + sum(r.TagDrops[:]) + r.TxDropped
	return ok && r.Generated == r.ConduitRx &&
		sum(r.Delivered[:])+r.Misdelivered == r.ConduitTx && r.Misdelivered == 0 &&
		icmp <= r.Routing.ICMPErrors && echo <= r.Routing.Echoed && r.ARPSunk <= arp+r.Flooded &&
		(lost > 0 || icmp == r.Routing.ICMPErrors && echo == r.Routing.Echoed && r.ARPSunk == arp+r.Flooded)
}

// collect fills the router's side of r from t's counters and eth0's; call it once every worker
// has stopped.
func (t *topology) collect(r *Result, eth0 xmit.Stats) {
	r.ConduitRx, r.ConduitRxDropped = eth0.RxPackets, eth0.RxDropped
	r.ConduitTx, r.TxDropped, r.TxCopied = eth0.TxPackets, eth0.TxDropped, eth0.TxCopied
	r.DSADrops, r.TagDrops = t.conduitDrops()
	for u := range numSwPorts {
		ps := t.portStats(u)
		r.Demuxed += ps.RxFrames
		r.PortRx[u] = ps.RxFrames
		r.Tagged += ps.TxFrames
		r.PTP[u] = ps.RxPTP
	}
	r.Routing, r.Neigh = t.router.Counters(), t.table.Counters()
	pc := t.planeCounts()
	r.BridgeDrops, r.LocalReleased, r.Flooded, r.ARPDrops = pc.drops, pc.local, pc.flooded, pc.arpDrops
	r.Learnt = t.fdb.len()
	r.HeldLeft = 0
	for _, e := range t.table.Entries() {
		r.HeldLeft += uint64(e.Held)
	}
	r.Leaked += t.pool.InUse() - int(r.HeldLeft) // the held frames keep their buffers
}

// monitorRows are the rate table's rows: the conduit's (eth0), its switch ports, the L3 interfaces.
func (t *topology) monitorRows(eth0 []monitor.Row) []monitor.Row {
	rows := eth0
	for u, name := range swNames {
		rows = append(rows, monitor.Row{Name: name, Detail: true, NoDrops: true, Counts: func() monitor.Counts {
			s := t.portStats(u)
			return monitor.Counts{RxPackets: s.RxFrames, TxPackets: s.TxFrames, RxBytes: s.RxBytes, TxBytes: s.TxBytes}
		}})
	}
	var names []string
	for _, ifc := range t.router.Ifaces() {
		names = append(names, ifc.Name)
	}
	return append(rows, app.IfaceRows(t.router, names)...)
}

// operator starts the operator view of the router whose conduit is opened as queues (one per
// worker): the conduit's queues wrapped so that the errors of their calls are counted, the event
// log and, with -metrics, the endpoint.
func (t *topology) operator(cfg Config, name string, queues [][]xmit.Port) (*app.Operator, *ops.Source, [][]xmit.Port, error) {
	wrapped, ports := app.PortSource([]string{name}, queues)
	src := &ops.Source{Ports: ports, Stage: t.router, Neigh: t.table, Routes: t.routes, Trace: cfg.NewTrace()}
	log := cfg.Logger(cfg.logw)
	op, err := app.StartOperator(cfg.OperatorFlags, src, log)
	if err != nil {
		return nil, nil, nil, err
	}
	log.Info("router started", "backend", cfg.Backend, "conduit", name, "tagger", t.tagger.Name(), "wan", wanIfName(cfg),
		"ptp", ptpNote(cfg), "workers", len(queues), "batch", cfg.Batch)
	if cfg.Backend != app.Mem {
		app.LogPorts(log, []string{name}, queues)
	}
	log.Info("routes loaded", "from", "built-in", "routes", t.routes.Len())
	return op, src, wrapped, nil
}

// run checks cfg and runs the router on its back-end until ctx ends.
func run(ctx context.Context, cfg Config, out io.Writer) (Result, error) {
	if _, err := cfg.check(); err != nil {
		return Result{}, err
	}
	if cfg.Backend == app.Mem {
		return runMem(ctx, cfg, out)
	}
	return runReal(ctx, cfg, out)
}

// memLink is the in-memory world: the link between eth0 and the switch, and its pool.
type memLink struct {
	pool        *frame.Pool
	eth0, swEnd *xmit.MemPort
}

// buildMem makes the router on an in-memory conduit.
func buildMem(cfg Config) (*topology, *memLink, error) {
	pool, err := frame.NewPool(&frame.PoolConfig{Buffers: 8192})
	if err != nil {
		return nil, nil, err
	}
	rpool := pool
	if cfg.ownPool {
		if rpool, err = frame.NewPool(&frame.PoolConfig{Buffers: 1024}); err != nil {
			return nil, nil, err
		}
	}
	t, err := build(cfg, lanMAC, wanMAC, rpool)
	if err != nil {
		return nil, nil, err
	}
	l := &memLink{pool: pool}
	l.eth0, l.swEnd = xmit.Pipe(pool, &xmit.PipeConfig{Names: [2]string{"eth0", "switch-cpu"}, Depth: 4096})
	return t, l, nil
}

func ptpNote(cfg Config) string {
	if len(cfg.PTP) == 0 {
		return "off"
	}
	return "on for " + strings.Join(cfg.PTP, ",")
}

func runMem(ctx context.Context, cfg Config, out io.Writer) (Result, error) {
	t, l, err := buildMem(cfg)
	if err != nil {
		return Result{}, err
	}
	fmt.Fprintf(out, "dsarouter: eth0 conduit, %s tags; br-lan = lan1-lan4 (192.168.1.1/24), %s = WAN (203.0.113.2/24, default route); PTP timestamping %s\n",
		t.tagger.Name(), wanIfName(cfg), ptpNote(cfg))
	fmt.Fprintf(out, "in-memory link, synthetic switch and hosts\n\n")
	op, src, wrapped, err := t.operator(cfg, l.eth0.Name(), [][]xmit.Port{{l.eth0}})
	if err != nil {
		return Result{}, err
	}
	eth0 := wrapped[0][0]
	d, err := t.newDataPlane(cfg.Batch, eth0)
	if err != nil {
		return Result{}, err
	}
	d.trace = src.Trace.Hook(0, d.fw, nil, 1)

	genCtx, stopGen := context.WithCancel(context.Background())
	routerCtx, stopRouter := context.WithCancel(context.Background())
	g := newGenerator(t, l, cfg)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); d.run(routerCtx, eth0, cfg.Batch) }()
	go func() { defer wg.Done(); g.run(genCtx) }()
	if cfg.ready != nil {
		cfg.ready()
	}

	mon := monitor.NewWith("dsarouter: rates (eth0, its switch ports, the L3 interfaces)",
		t.monitorRows([]monitor.Row{monitor.PortRow("eth0", l.eth0.Stats)}), cfg.MonitorOptions(t.router))
	var tick <-chan time.Time
	if cfg.Interval > 0 {
		tk := time.NewTicker(cfg.Interval)
		defer tk.Stop()
		tick = tk.C
	}
	enough := func() bool {
		return g.delivered[swWAN].Load() >= cfg.minDelivered && g.delivered[swLAN1+3].Load() >= cfg.minDelivered
	}
	hardStop := time.After(60 * time.Second)
loop:
	for {
		select {
		case <-ctx.Done():
			if enough() {
				break loop
			}
			select {
			case <-hardStop:
				break loop
			case <-time.After(5 * time.Millisecond):
			}
		case <-tick:
			mon.Print(out)
		}
	}
	if cfg.Interval > 0 {
		mon.Print(out) // the last (partial) interval
	}

	// Stop the generator, let the router drain, then the switch's queue.
	stopGen()
	for !g.stopped.Load() {
		time.Sleep(time.Millisecond)
	}
	stopRouter()
	wg.Wait()
	app.LogStopped(op.Log, app.ErrorsOf(src))
	op.Close()
	g.drain()
	l.eth0.Close()
	l.swEnd.Close()

	r := memResult(t, l, g)
	report(out, r, cfg)
	return r, nil
}

// memResult is what an in-memory run counted, on both sides of the link.
func memResult(t *topology, l *memLink, g *generator) Result {
	r := Result{Mem: true}
	s := l.swEnd.Stats()
	r.Generated, r.GenDropped = s.TxPackets, s.TxDropped
	t.collect(&r, l.eth0.Stats())
	for u := range numSwPorts {
		r.Delivered[u] = g.delivered[u].Load()
	}
	for i := range r.ICMPSunk {
		r.ICMPSunk[i], r.EchoSunk[i] = g.icmpSunk[i].Load(), g.echoSunk[i].Load()
	}
	r.Misdelivered = g.misdelivery.Load()
	r.ARPSunk, r.ARPReplies = g.arpSunk.Load(), g.arpReplies.Load()
	r.PTPSent = g.ptpSent.Load()
	if t.pool != l.pool {
		r.Leaked += l.pool.InUse()
	}
	return r
}

func report(out io.Writer, r Result, cfg Config) {
	g := func(v uint64) string { return monitor.Group(float64(v)) }
	p := func(format string, a ...any) { fmt.Fprintf(out, format, a...) }
	c := &r.Routing
	p("final counters\n")
	if r.Mem {
		p("  switch sent to eth0     %14s  (could not queue: %s)\n", g(r.Generated), g(r.GenDropped))
	}
	p("  eth0 received           %14s  (dropped before the router: %s)\n", g(r.ConduitRx), g(r.ConduitRxDropped))
	for reason, v := range r.DSADrops {
		if v > 0 {
			p("    dsa dropped %-12s %10s\n", dsa.Reason(reason).String()+":", g(v))
		}
	}
	p("  demultiplexed           %14s  (", g(r.Demuxed))
	for u, name := range swNames {
		p(" %s %s", name, g(r.PortRx[u]))
	}
	p(" )\n")
	p("  routed                  %14s\n", g(c.Forwarded))
	p("  echo requests answered  %14s\n", g(c.Echoed))
	if c.Fragmented > 0 {
		p("  fragmented              %14s  (into %s)\n", g(c.Fragmented), g(c.Fragments))
	}
	p("  local (ARP, ...)        %14s  (ARP to the neighbour table %s; the rest released, no local stack here: %s)\n", g(c.Local), g(r.Neigh.ARPIn), g(r.LocalReleased))
	n := &r.Neigh
	p("  neighbours: ARP sent %s (requests %s, probes %s, replies %s, announcements %s); held %s, resumed %s, failed %s (ICMP host unreachable), dropped while held %s, still held %s; hosts resolved %s\n",
		g(app.ARPSent(*n)-r.ARPDrops), g(n.RequestsSent), g(n.ProbesSent), g(n.RepliesSent), g(n.AnnouncesSent), g(n.Held), g(n.Ready), g(n.Failed),
		g(n.QueueOverflow+n.BacklogOverflow+n.HoldNoNeighbour+n.HoldNoHost+n.HoldTooBig+n.HoldNoBuffer), g(r.HeldLeft), g(n.Hosts))
	for reason, v := range c.Drops {
		if v > 0 {
			p("    fwd dropped %-12s %10s\n", fwd.Reason(reason).String()+":", g(v))
		}
	}
	p("  ICMP errors sent        %14s  (rate-limited %s, no buffer %s)\n", g(c.ICMPErrors), g(c.ICMPRateLimited), g(c.ICMPNoBuffer))
	for reason, v := range r.BridgeDrops {
		if v > 0 {
			p("    bridge dropped %-9s %10s\n", bridgeReasonNames[reason]+":", g(v))
		}
	}
	p("  tagged toward a port    %14s  (of which LAN broadcast copies for lan2-lan4: %s)\n", g(r.Tagged), g(r.Flooded))
	for reason, v := range r.TagDrops {
		if v > 0 {
			p("    dsa tx dropped %-9s %10s\n", dsa.Reason(reason).String()+":", g(v))
		}
	}
	p("  eth0 sent               %14s  (dropped: %s; copied from the router's pool: %s)\n", g(r.ConduitTx), g(r.TxDropped), g(r.TxCopied))
	if r.Mem {
		p("  switch delivered       ")
		for u, name := range swNames {
			p(" %s %s", name, g(r.Delivered[u]))
		}
		p("; wrong: %s\n", g(r.Misdelivered))
		p("    of which ICMP errors: LAN hosts %s, gateway %s; echo replies: LAN hosts %s, gateway %s; ARP %s (answered %s)\n",
			g(r.ICMPSunk[0]), g(r.ICMPSunk[1]), g(r.EchoSunk[0]), g(r.EchoSunk[1]), g(r.ARPSunk), g(r.ARPReplies))
	}
	if len(cfg.PTP) > 0 {
		if r.Mem {
			p("  PTP event frames sent %s;", g(r.PTPSent))
		} else {
			p(" ")
		}
		p(" classified on")
		for u, name := range swNames {
			if r.PTP[u] > 0 {
				p(" %s %s", name, g(r.PTP[u]))
			}
		}
		p("\n")
	}
	p("  LAN bridge learnt %d MAC addresses; pool buffers still out %d\n", r.Learnt, r.Leaked)
	if r.Balanced() {
		p("accounting: ok (eth0 rx = dsa drops + demuxed; demuxed + resumed = fwd verdicts; local = ARP in + released; held = resumed + failed + pushed out + still held; fwd sent (routed, echo replies, ICMP errors, fragments) + ARP + flood copies = bridge drops + tagged + tag drops; tagged = eth0 tx + tx drops")
		if r.Mem {
			p(" = delivered, each checked")
		}
		p("; nothing leaked)\n")
	} else {
		p("accounting: MISMATCH %+v\n", r)
	}
}
