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
)

// worker polls the conduit until ctx ends and then until it is drained.
func (t *topology) worker(ctx context.Context, batch int) {
	d := t.newDataPlane(batch)
	in := frame.NewBatch(batch)
	idle, batches := 0, 0
	draining := false
	for {
		if n, _ := t.eth0.Recv(in); n > 0 {
			d.step(in)
			if batches++; batches&63 == 0 {
				d.flush()
			}
			idle = 0
			continue
		}
		d.flush()
		if !draining && ctx.Err() != nil {
			draining = true
		}
		idle++
		if draining && idle > 3 {
			return
		}
		if idle > 16 {
			t.eth0.Wait(int64(50 * time.Microsecond))
		}
	}
}

// Result is what a run counted.
type Result struct {
	Generated, GenDropped uint64 // frames the switch queued toward the CPU / could not queue
	ConduitRx             uint64 // frames eth0 received
	DSADrops              [dsa.NumReasons]uint64
	Demuxed               uint64 // frames the conduit handed on with a switch port
	PortRx                [numSwPorts]uint64
	Routing               fwd.Counters
	BridgeDrops           [numBridgeReasons]uint64
	Tagged                uint64 // frames tagged toward a switch port
	TagDrops              [dsa.NumReasons]uint64
	ConduitTx, TxDropped  uint64 // queued by eth0 / dropped by it
	Delivered             [numSwPorts]uint64
	Misdelivered          uint64 // frames the switch received for the wrong port, MAC, VLAN, TTL or checksum
	PTP                   [numSwPorts]uint64
	PTPSent               uint64
	Learnt                int
	Leaked                int // pool buffers not returned at the end
}

func sum(a []uint64) uint64 {
	var s uint64
	for _, v := range a {
		s += v
	}
	return s
}

// Balanced reports whether every frame is accounted for, stage by stage.
func (r Result) Balanced() bool {
	return r.Generated == r.ConduitRx &&
		r.ConduitRx == sum(r.DSADrops[:])+r.Demuxed &&
		r.Demuxed == r.Routing.Received() &&
		app.Sent(r.Routing) == sum(r.BridgeDrops[:])+r.Tagged+sum(r.TagDrops[:]) &&
		r.Tagged == r.ConduitTx+r.TxDropped &&
		sum(r.Delivered[:])+r.Misdelivered == r.ConduitTx &&
		r.Misdelivered == 0 && r.Leaked == 0
}

func run(ctx context.Context, cfg Config, out io.Writer) (Result, error) {
	t, err := build(cfg)
	if err != nil {
		return Result{}, err
	}
	ptp := "off"
	if len(cfg.PTP) > 0 {
		ptp = "on for " + strings.Join(cfg.PTP, ",")
	}
	fmt.Fprintf(out, "dsarouter: eth0 conduit, %s tags; br-lan = lan1-lan4 (192.168.1.0/24), %s = WAN (default route); PTP timestamping %s\n",
		t.tagger.Name(), wanIfName(cfg), ptp)
	fmt.Fprintf(out, "in-memory link, synthetic switch and hosts\n\n")

	genCtx, stopGen := context.WithCancel(context.Background())
	routerCtx, stopRouter := context.WithCancel(context.Background())
	g := newGenerator(t, cfg)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); t.worker(routerCtx, cfg.Batch) }()
	go func() { defer wg.Done(); g.run(genCtx) }()

	rows := []monitor.Row{{Name: "eth0",
		Rx: func() uint64 { return t.eth0.Stats().RxPackets },
		Tx: func() uint64 { return t.eth0.Stats().TxPackets }}}
	for u, name := range swNames {
		rows = append(rows, monitor.Row{Name: "  " + name,
			Rx: func() uint64 { return t.conduit.Stats(u).RxFrames },
			Tx: func() uint64 { return t.conduit.Stats(u).TxFrames }})
	}
	for id, ifc := range t.router.Ifaces() {
		rows = append(rows, monitor.Row{Name: ifc.Name,
			Rx: func() uint64 { return t.router.IfaceStats(uint16(id)).RxPackets },
			Tx: func() uint64 { return t.router.IfaceStats(uint16(id)).TxPackets }})
	}
	mon := monitor.New("dsarouter: packets per second (eth0, its switch ports, the L3 interfaces)", rows)
	tick := time.NewTicker(cfg.Interval)
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
		case <-tick.C:
			mon.Print(out)
		}
	}
	tick.Stop()
	mon.Print(out) // the last (partial) interval

	// Stop the generator, let the router drain, then the switch's queue.
	stopGen()
	for !g.stopped.Load() {
		time.Sleep(time.Millisecond)
	}
	stopRouter()
	wg.Wait()
	g.drain()
	t.eth0.Close()
	t.swEnd.Close()

	var r Result
	s := t.swEnd.Stats()
	r.Generated, r.GenDropped = s.TxPackets, s.TxDropped
	s = t.eth0.Stats()
	r.ConduitRx, r.ConduitTx, r.TxDropped = s.RxPackets, s.TxPackets, s.TxDropped
	for reason := range dsa.NumReasons {
		r.DSADrops[reason] = t.conduit.RxDrops(reason)
		r.TagDrops[reason] = t.conduit.TxDrops(reason)
	}
	for u := range numSwPorts {
		ps := t.conduit.Stats(u)
		r.Demuxed += ps.RxFrames
		r.PortRx[u] = ps.RxFrames
		r.Tagged += ps.TxFrames
		r.PTP[u] = ps.RxPTP
		r.Delivered[u] = g.delivered[u].Load()
	}
	r.Routing = t.router.Counters()
	r.BridgeDrops, r.Learnt = t.bridgeDrops()
	r.Misdelivered = g.misdelivery.Load()
	r.PTPSent = g.ptpSent.Load()
	r.Leaked = t.pool.InUse()
	report(out, r, cfg)
	return r, nil
}

func report(out io.Writer, r Result, cfg Config) {
	g := func(v uint64) string { return monitor.Group(float64(v)) }
	p := func(format string, a ...any) { fmt.Fprintf(out, format, a...) }
	p("final counters\n")
	p("  switch sent to eth0     %14s  (could not queue: %s)\n", g(r.Generated), g(r.GenDropped))
	p("  eth0 received           %14s\n", g(r.ConduitRx))
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
	p("  routed                  %14s\n", g(r.Routing.Forwarded))
	for reason, v := range r.Routing.Drops {
		if v > 0 {
			p("    fwd dropped %-12s %10s\n", fwd.Reason(reason).String()+":", g(v))
		}
	}
	for reason, v := range r.BridgeDrops {
		if v > 0 {
			p("    bridge dropped %-9s %10s\n", bridgeReasonNames[reason]+":", g(v))
		}
	}
	p("  tagged toward a port    %14s\n", g(r.Tagged))
	for reason, v := range r.TagDrops {
		if v > 0 {
			p("    dsa tx dropped %-9s %10s\n", dsa.Reason(reason).String()+":", g(v))
		}
	}
	p("  eth0 sent               %14s  (dropped: %s)\n", g(r.ConduitTx), g(r.TxDropped))
	p("  switch delivered       ")
	for u, name := range swNames {
		p(" %s %s", name, g(r.Delivered[u]))
	}
	p("; wrong: %s\n", g(r.Misdelivered))
	if len(cfg.PTP) > 0 {
		p("  PTP event frames sent %s; classified on", g(r.PTPSent))
		for u, name := range swNames {
			if r.PTP[u] > 0 {
				p(" %s %s", name, g(r.PTP[u]))
			}
		}
		p("\n")
	}
	p("  LAN bridge learnt %d MAC addresses; pool buffers still out %d\n", r.Learnt, r.Leaked)
	if r.Balanced() {
		p("accounting: ok (eth0 rx = dsa drops + demuxed = dsa drops + routed + fwd drops; routed = bridge drops + tagged + tag drops; tagged = eth0 tx + tx drops = delivered; nothing leaked)\n")
	} else {
		p("accounting: MISMATCH %+v\n", r)
	}
}
