package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/wirespeed/wirespeed/examples/internal/app"
	"github.com/wirespeed/wirespeed/examples/internal/monitor"
	"github.com/wirespeed/wirespeed/examples/internal/trunkgen"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/fwd"
	"github.com/wirespeed/wirespeed/lag"
	"github.com/wirespeed/wirespeed/lag/lacp"
	"github.com/wirespeed/wirespeed/ops"
	"github.com/wirespeed/wirespeed/xmit"
)

// Physical ports of the router: the aggregate (a trunk of two members) and the uplink.
const (
	portTrunk  = 0
	portUplink = 1
	numPorts   = 2
	numMembers = 2
)

// Interface IDs: 0 is the uplink, 1..VLANs the VLAN sub-interfaces (VID 100+i, subnet 10.0.i.0/24).
const ifUplink = 0

// routerMAC is the router's address on interface id.
func routerMAC(id int) frame.MAC { return trunkgen.RouterMAC(id) }

// topology is the router and its ports, built for a config.
type topology struct {
	pool   *frame.Pool
	router *trunkgen.Router // the forwarding stage and the neighbour table beside it
	res    *app.Resolver    // the worker's neighbour resolver
	agg    *lag.Aggregate
	ports  []xmit.Port     // the router's ends, by physical port: the aggregate, the uplink
	hosts  []*xmit.MemPort // the far ends: member 0, member 1, uplink (the generator sends into them)
	mems   []*xmit.MemPort // the router's ends as MemPorts: member 0, member 1, uplink
	names  []string        // interface names by ID
	trace  *ops.Trace      // the packet trace of -metrics (nil: none)

	// With LACP: the router's controller, and the partner's (the switch the generator plays) with
	// its aggregate's members: far[m] sends on hosts[m] (the generator's frames and the partner's
	// PDUs), taps[m] receives from it, taking the router's PDUs out.
	ctl, partner *lacp.Controller
	far          []*sharedTx
	taps         []*slowTap
}

// Addresses of the in-memory LACP systems: the router's and its partner's (the far side's switch).
var (
	routerSystem  = frame.MAC{0x02, 0x77, 0x73, 0x00, 0x00, 0x01}
	partnerSystem = frame.MAC{0x02, 0x77, 0x73, 0x00, 0x00, 0x02}
)

// memberUplink indexes hosts and mems.
const memberUplink = numMembers

// lagConfig is the aggregate's configuration for cfg.
func lagConfig(cfg Config) (*lag.Config, error) {
	c := &lag.Config{Name: "lag0", Miimon: cfg.Miimon}
	switch cfg.LAG {
	case "rr":
		c.Mode = lag.RoundRobin
	case "xor", "802.3ad", "lacp":
		c.Mode = lag.XOR
		p, err := lag.ParsePolicy(cfg.Hash)
		if err != nil {
			return nil, fmt.Errorf("-hash: %w", err)
		}
		c.Policy = p
	default:
		return nil, fmt.Errorf("-lag %q: rr, xor or 802.3ad (lacp)", cfg.LAG)
	}
	return c, nil
}

// build makes the in-memory network: the router (trunkgen.BuildRouter: it resolves the gateway
// and every VLAN host by ARP, which the generator's hosts answer), the aggregate of two member links
// and the uplink.
func build(cfg Config, log *slog.Logger) (*topology, error) {
	if cfg.VLANs < 1 || cfg.VLANs > 200 {
		return nil, fmt.Errorf("-vlans %d out of range 1-200", cfg.VLANs)
	}
	pool, err := frame.NewPool(&frame.PoolConfig{Buffers: 16384})
	if err != nil {
		return nil, err
	}
	lc, err := lagConfig(cfg)
	if err != nil {
		return nil, err
	}
	t := &topology{pool: pool}
	for m := 0; m < numMembers; m++ {
		name := fmt.Sprintf("lag0-m%d", m)
		r, h := xmit.Pipe(pool, &xmit.PipeConfig{Names: [2]string{name, name + "-peer"}, Depth: 2048})
		t.mems = append(t.mems, r)
		t.hosts = append(t.hosts, h)
	}
	upR, upH := xmit.Pipe(pool, &xmit.PipeConfig{Names: [2]string{"uplink0", "uplink0-peer"}, Depth: 2048})
	t.mems = append(t.mems, upR)
	t.hosts = append(t.hosts, upH)
	members := []xmit.Port{t.mems[0], t.mems[1]}
	if cfg.usesLACP() {
		// The router's controller sends its PDUs on the members themselves, under the lock the
		// worker's sends take too; the partner's does so on the far ends, beside the generator.
		var mine, theirs []xmit.Port
		var macs, farMACs []frame.MAC
		for m := 0; m < numMembers; m++ {
			r, f := &sharedTx{Port: t.mems[m]}, &sharedTx{Port: t.hosts[m]}
			members[m] = r
			mine, theirs = append(mine, r), append(theirs, f)
			t.far = append(t.far, f)
			mac, farMAC := routerSystem, partnerSystem
			mac[5], farMAC[5] = byte(0x10+m), byte(0x20+m)
			macs, farMACs = append(macs, mac), append(farMACs, farMAC)
		}
		if t.ctl, err = lacp.New(cfg.lacpConfig(routerSystem, mine, macs, logLACP(log, lc.Name, []string{t.mems[0].Name(), t.mems[1].Name()}))); err != nil {
			return nil, err
		}
		// The partner is an active switch asking for the fast rate (so a passive router still
		// aggregates).
		pc := &Config{LACPRate: "fast", LACPActive: true}
		if t.partner, err = lacp.New(pc.lacpConfig(partnerSystem, theirs, farMACs, nil)); err != nil {
			return nil, err
		}
		for m, f := range t.far {
			t.taps = append(t.taps, &slowTap{Port: f, member: m, to: t.partner})
		}
		lc.SlowProtocols = t.ctl
		if cfg.onLACP != nil {
			cfg.onLACP(t.ctl)
		}
	}
	if cfg.onMems != nil {
		cfg.onMems(t.mems)
	}
	if t.agg, err = lag.New(members, lc); err != nil {
		return nil, err
	}
	if t.ctl != nil {
		t.ctl.Attach(t.agg)
	}
	t.ports = []xmit.Port{t.agg, upR}
	if t.router, err = trunkgen.BuildRouter(cfg.plan(pool), routerMAC, nil); err != nil {
		return nil, err
	}
	t.names = t.router.Names
	t.res = app.NewResolver(t.router.Table, t.router.Demux, cfg.Batch)
	return t, nil
}

// buildRouter makes the router's tables (trunkgen.BuildRouter, shared with the other VLAN-trunk
// example), its frames and held frames in pool (nil: their own).
func buildRouter(cfg Config, mac func(id int) frame.MAC, devNames map[string]uint32, pool *frame.Pool) (*trunkgen.Router, error) {
	return trunkgen.BuildRouter(cfg.plan(pool), mac, devNames)
}

// plan is what trunkgen.BuildRouter needs of cfg; the router generates its frames and holds those
// of unresolved neighbours in pool (nil: their own).
func (cfg Config) plan(pool *frame.Pool) trunkgen.Plan {
	return trunkgen.Plan{VLANs: cfg.VLANs, Neighbours: cfg.Neighbours, Gateway: cfg.Gateway, Routes: cfg.Routes, IPRoute: cfg.IPRoute, Pool: pool}
}

// worker polls the router's ports until ctx ends and then until they are drained; it returns the
// errors its Recv and Send calls got.
func (t *topology) worker(ctx context.Context, batch int, tap fwd.Tap, every int) app.PortErrors {
	waiters := make([]xmit.Waiter, len(t.mems))
	for i, m := range t.mems {
		waiters[i] = m
	}
	return trunkgen.PollTraced(ctx, t.router, t.res, t.trace, t.ports, waiters, batch, tap, every)
}

// Result is what a run counted, with what each member of the aggregate sent.
type Result struct {
	trunkgen.Result
	MemberTx, MemberTxDropped [numMembers]uint64 // what each member of the aggregate sent / dropped
	LACP, Partner             *lacp.Status       // -lag 802.3ad: the router's controller and its partner's at the end
	SlowFrames, RxInactive    uint64             // frames the aggregate took out of the receive path (lag.Aggregate)
}

func run(ctx context.Context, cfg Config, out io.Writer) (Result, error) {
	log := cfg.logger()
	t, err := build(cfg, log)
	if err != nil {
		return Result{}, err
	}
	var tap fwd.Tap
	var pcap *app.Pcap
	if cfg.Pcap != "" {
		if pcap, err = app.CreatePcap(cfg.Pcap, 0); err != nil {
			return Result{}, err
		}
		tap = pcap
	}
	mode := cfg.modeName()
	printf(out, "lagrouter: lag0 (%s over lag0-m0, lag0-m1) with %d VLANs (%s..%s) routed to uplink0; in-memory ports, synthetic traffic\n\n",
		mode, cfg.VLANs, t.names[1], t.names[cfg.VLANs])
	if cfg.FailAt > 0 {
		fail := time.AfterFunc(cfg.FailAt, func() {
			t.mems[1].SetLinkUp(false)
			printf(out, "lagrouter: lag0-m1 link down (after %v)\n\n", cfg.FailAt)
			if cfg.FailFor > 0 {
				time.Sleep(cfg.FailFor)
				t.mems[1].SetLinkUp(true)
				printf(out, "lagrouter: lag0-m1 link up again (after %v down)\n\n", cfg.FailFor)
			}
		})
		defer fail.Stop()
	}

	t.trace = cfg.NewTrace()
	op, err := startMetrics(cfg, t.router, []string{t.mems[0].Name(), t.mems[1].Name(), t.mems[memberUplink].Name()},
		[][]xmit.Port{{t.mems[0], t.mems[1], t.mems[memberUplink]}}, t.trace)
	if err != nil {
		return Result{}, err
	}
	defer stopMetrics(op)
	genCtx, stopGen := context.WithCancel(context.Background())
	routerCtx, stopRouter := context.WithCancel(context.Background())
	ctlCtx, stopCtl := context.WithCancel(context.Background())
	g := newGenerator(t, cfg)
	var wg, ctlWG sync.WaitGroup
	if t.ctl != nil {
		ctlWG.Add(2)
		go func() { defer ctlWG.Done(); t.ctl.Run(ctlCtx) }()
		go func() { defer ctlWG.Done(); t.partner.Run(ctlCtx) }()
	} else {
		ctlWG.Add(1)
		go func() {
			defer ctlWG.Done()
			watchMembers(ctlCtx, log, t.agg, []string{t.mems[0].Name(), t.mems[1].Name()}, cfg.Miimon)
		}()
	}
	wg.Add(2)
	go func() { defer wg.Done(); g.Run(genCtx) }()
	var perr app.PortErrors
	go func() { defer wg.Done(); perr = t.worker(routerCtx, cfg.Batch, tap, cfg.PcapSample) }()
	if cfg.ready != nil {
		cfg.ready()
	}

	stats := make([]func() xmit.Stats, len(t.mems))
	for i, m := range t.mems {
		stats[i] = m.Stats
	}
	mon := monitor.NewWith("lagrouter: rates", rateRows(t.agg.Stats, t.mems[0].Name(), t.mems[1].Name(), t.mems[memberUplink].Name(),
		stats, t.router.Router, t.names), cfg.MonitorOptions(t.router.Router))
	mon.PrintEvery(ctx, out, cfg.Interval)
	mon.Print(out) // the last (partial) interval

	// Stop the generator, let the router drain, then the sinks.
	stopGen()
	for !g.Stopped() {
		time.Sleep(time.Millisecond)
	}
	stopRouter()
	wg.Wait()
	stopCtl()
	ctlWG.Wait()
	g.Drain()
	t.agg.Close() // and its members
	t.mems[memberUplink].Close()
	for _, h := range t.hosts {
		h.Close()
	}

	var r Result
	for _, h := range t.hosts {
		s := h.Stats()
		r.Generated += s.TxPackets
		r.GenDropped += s.TxDropped
	}
	r.Sink = g.Sunk()
	r.Errors = perr
	var st *lacp.Status
	if t.ctl != nil {
		// The PDUs are not the router's traffic: the partner's are out of what the far ends
		// generated, the router's out of what its members queued and dropped, and the frames the
		// aggregate dropped on members not yet (or no longer) distributing never reached the router.
		s, ps := t.ctl.Status(), t.partner.Status()
		st, r.LACP, r.Partner = &s, &s, &ps
		r.SlowFrames, r.RxInactive = t.agg.SlowFrames(), t.agg.RxInactive()
		for m := 0; m < numMembers; m++ {
			r.Generated -= ps.Ports[m].Stats.LACPDUTx + ps.Ports[m].Stats.MarkerRespTx
			r.RouterTx -= s.Ports[m].Stats.LACPDUTx + s.Ports[m].Stats.MarkerRespTx
			r.TxDropped -= s.Ports[m].Stats.TxErrors
		}
		r.Generated -= t.agg.RxInactive()
	}
	// The aggregate's counters are its members' plus its own drops (no usable member).
	for _, s := range []xmit.Stats{t.agg.Stats(), t.mems[memberUplink].Stats()} {
		r.RouterRx += s.RxPackets
		r.RouterTx += s.TxPackets
		r.TxDropped += s.TxDropped
	}
	for m := 0; m < numMembers; m++ {
		r.MemberTx[m] = t.mems[m].Stats().TxPackets
		r.MemberTxDropped[m] = t.mems[m].Stats().TxDropped
	}
	r.AddRouter(t.router, t.res, t.pool.InUse())
	lines := []string{memberReport(t.agg.Name(), []string{t.mems[0].Name(), t.mems[1].Name()}, []xmit.Stats{t.mems[0].Stats(), t.mems[1].Stats()}, st)}
	if st != nil {
		lines = append(lines, slowReport(t.agg.Name(), []*lag.Aggregate{t.agg}, st, 0)+" (not in generated)")
	}
	r.Report(out, lines...)
	if pcap != nil {
		err = pcap.Close()
		printf(out, "  %s\n", pcap.Summary())
	}
	return r, err
}
