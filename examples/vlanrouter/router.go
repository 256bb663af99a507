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
	"github.com/wirespeed/wirespeed/ops"
	"github.com/wirespeed/wirespeed/vlan"
	"github.com/wirespeed/wirespeed/xmit"
)

// Physical ports of the router.
const (
	portTrunk  = 0
	portUplink = 1
	numPorts   = 2
)

// Interface IDs: 0 is the uplink, 1..VLANs the VLAN sub-interfaces (VID 100+i, subnet 10.0.i.0/24).
const ifUplink = 0

func vidOf(i int) uint16 { return trunkgen.VID(i) }

// routerMAC is the router's address on interface id; hostMAC the address of host h on VLAN i;
// gatewayMAC the upstream router's.
func routerMAC(id int) frame.MAC { return trunkgen.RouterMAC(id) }
func hostMAC(i, h int) frame.MAC { return trunkgen.HostMAC(i, h) }

var gatewayMAC = trunkgen.GatewayMAC

// topology is the router and its ports, built for a config.
type topology struct {
	pool   *frame.Pool
	router *trunkgen.Router // the forwarding stage and the neighbour table beside it
	res    *app.Resolver    // the worker's neighbour resolver
	ports  []xmit.Port      // the router's ends, by physical port
	hosts  []*xmit.MemPort  // the far ends: what the generator sends into and sinks from
	mems   []*xmit.MemPort  // the router's ends as MemPorts
	names  []string         // interface names by ID
}

// build makes the in-memory network: the router (trunkgen.BuildRouter: it resolves the gateway
// and every VLAN host by ARP, which the generator's hosts answer) and its two links.
func build(cfg Config) (*topology, error) {
	if cfg.VLANs < 1 || cfg.VLANs > 200 {
		return nil, fmt.Errorf("-vlans %d out of range 1-200", cfg.VLANs)
	}
	pool, err := frame.NewPool(&frame.PoolConfig{Buffers: 16384})
	if err != nil {
		return nil, err
	}
	t := &topology{pool: pool}
	trunkR, trunkH := xmit.Pipe(pool, &xmit.PipeConfig{Names: [2]string{"trunk0", "trunk0-peer"}, Depth: 2048})
	upR, upH := xmit.Pipe(pool, &xmit.PipeConfig{Names: [2]string{"uplink0", "uplink0-peer"}, Depth: 2048})
	t.mems = []*xmit.MemPort{trunkR, upR}
	t.ports = []xmit.Port{trunkR, upR}
	t.hosts = []*xmit.MemPort{trunkH, upH}
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

// worker polls ports (the router's, or a pipeline's receive side of them) until ctx ends and then
// until they are drained; it returns the errors its Recv and Send calls got.
func (t *topology) worker(ctx context.Context, ports []xmit.Port, batch int, trace *ops.Trace, tap fwd.Tap, every int) app.PortErrors {
	return trunkgen.PollTraced(ctx, t.router, t.res, trace, ports, []xmit.Waiter{t.mems[portTrunk]}, batch, tap, every)
}

// operator wraps the router's ports so that the errors of their calls are counted and starts the
// operator view: the event log and, with -metrics, the endpoint.
func (t *topology) operator(cfg Config) (*app.Operator, *ops.Source, error) {
	wrapped, ports := app.PortSource([]string{t.mems[0].Name(), t.mems[1].Name()}, [][]xmit.Port{t.ports})
	t.ports = wrapped[0]
	src := t.router.Source(ports, cfg.NewTrace())
	log := cfg.Logger(cfg.logw)
	op, err := app.StartOperator(cfg.OperatorFlags, src, log)
	if err != nil {
		return nil, nil, err
	}
	log.Info("router started", append([]any{"backend", "mem", "mode", "in-memory links", "ports", len(t.ports), "vlans", cfg.VLANs, "workers", 1, "batch", cfg.Batch}, cfg.pipelineAttrs()...)...)
	logRoutes(log, cfg, t.router)
	return op, src, nil
}

// logRoutes logs the route table loaded.
func logRoutes(log *slog.Logger, cfg Config, r *trunkgen.Router) {
	from := "built-in"
	if cfg.Routes != "" {
		from = cfg.Routes
	}
	log.Info("routes loaded", "from", from, "routes", r.Routes.Len())
}

// pipelineAttrs are the log attributes of -pipeline (none without it).
func (cfg Config) pipelineAttrs() []any {
	if !cfg.Pipeline {
		return nil
	}
	return []any{"pipeline", true, "tx_workers", cfg.TxWorkers}
}

// workerMode says how the workers share the work, for the throughput line.
func (cfg Config) workerMode(rx int) string {
	if cfg.Pipeline {
		return fmt.Sprintf("pipeline: %d receive worker(s), %d transmit worker(s)", rx, cfg.TxWorkers)
	}
	return fmt.Sprintf("run to completion: %d worker(s)", rx)
}

// Result is what a run counted: the VLAN-trunk examples' end-to-end counts and, with -pipeline,
// the pipeline's (whose released frames the Result counts as egress dropped).
type Result struct {
	trunkgen.Result
	Pipeline *app.PipelineStats // nil: run to completion
	Ifaces   []vlan.Counters    // each interface's counters (by ID) at the end
}

// Balanced reports whether every frame is accounted for (trunkgen.Result.Balanced) and the
// pipeline's own counters balance.
func (r Result) Balanced() bool {
	return r.Result.Balanced() && (r.Pipeline == nil || r.Pipeline.Balanced())
}

// throughput is the report's line of the router's average packet rates from start to end.
func throughput(rx, tx uint64, d time.Duration, mode string) string {
	g := monitor.Group
	s := d.Seconds()
	if s <= 0 {
		return fmt.Sprintf("throughput: no time measured (%s)", mode)
	}
	return fmt.Sprintf("throughput: %s pkt/s received, %s pkt/s sent by the router, over %.2f s (%s)", g(float64(rx)/s), g(float64(tx)/s), s, mode)
}

func run(ctx context.Context, cfg Config, out io.Writer) (Result, error) {
	t, err := build(cfg)
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
	op, src, err := t.operator(cfg)
	if err != nil {
		return Result{}, err
	}
	printf(out, "vlanrouter: trunk0 with %d VLANs (%s..%s) routed to uplink0; in-memory ports, synthetic traffic\n\n",
		cfg.VLANs, t.names[1], t.names[cfg.VLANs])

	// With -pipeline the worker hands what it routes to the transmit workers, which own the ports'
	// Send.
	var pipe *app.Pipeline
	rxPorts := t.ports
	if cfg.Pipeline {
		if pipe, err = app.NewPipeline(app.PipelineConfig{RxWorkers: 1, TxPorts: t.ports, TxWorkers: cfg.TxWorkers, Batch: cfg.Batch}); err != nil {
			op.Close()
			if pcap != nil {
				pcap.Close()
			}
			return Result{}, err
		}
		rxPorts = pipe.RxPorts(0, t.ports)
	}

	genCtx, stopGen := context.WithCancel(context.Background())
	routerCtx, stopRouter := context.WithCancel(context.Background())
	g := newGenerator(t, cfg)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); g.Run(genCtx) }()
	var perr app.PortErrors
	go func() {
		defer wg.Done()
		perr = t.worker(routerCtx, rxPorts, cfg.Batch, src.Trace, tap, cfg.PcapSample)
		if pipe != nil {
			pipe.CloseRx(0)
		}
	}()
	txErrs := make([]app.PortErrors, cfg.TxWorkers)
	if pipe != nil {
		for i := range txErrs {
			wg.Add(1)
			go func() { defer wg.Done(); txErrs[i] = pipe.Transmit(i) }()
		}
	}
	if cfg.ready != nil {
		cfg.ready()
	}
	routerPkts := func() (rx, tx uint64) {
		for _, m := range t.mems {
			s := m.Stats()
			rx, tx = rx+s.RxPackets, tx+s.TxPackets
		}
		return rx, tx
	}
	start := time.Now()
	rx0, tx0 := routerPkts()

	var rows []monitor.Row
	for _, m := range t.mems {
		rows = append(rows, monitor.PortRow(m.Name(), m.Stats))
	}
	rows = append(rows, app.IfaceRows(t.router.Router, t.names)...)
	mon := monitor.NewWith("vlanrouter: rates", rows, cfg.MonitorOptions(t.router.Router))
	mon.PrintEvery(ctx, out, cfg.Interval)
	rx1, tx1 := routerPkts()
	rate := throughput(rx1-rx0, tx1-tx0, time.Since(start), cfg.workerMode(1))
	mon.Print(out) // the last (partial) interval

	// Stop the generator, let the router drain (and the transmit workers after it), then the sinks.
	stopGen()
	for !g.Stopped() {
		time.Sleep(time.Millisecond)
	}
	stopRouter()
	wg.Wait()
	for _, e := range txErrs {
		perr.Add(e)
	}
	app.LogStopped(op.Log, perr)
	op.Close()
	g.Drain()
	for _, m := range t.mems {
		m.Close()
	}
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
	for _, m := range t.mems {
		s := m.Stats()
		r.RouterRx += s.RxPackets
		r.RouterTx += s.TxPackets
		r.TxDropped += s.TxDropped
	}
	r.AddRouter(t.router, t.res, t.pool.InUse())
	for id := range t.names {
		r.Ifaces = append(r.Ifaces, t.router.IfaceStats(uint16(id)))
	}
	extra := []string{rate}
	if pipe != nil {
		ps := pipe.Stats()
		r.Pipeline = &ps
		r.TxDropped += ps.Released()
		extra = append(extra, ps.String())
	}
	r.Report(out, extra...)
	if r.Pipeline != nil && !r.Pipeline.Balanced() {
		printf(out, "accounting: MISMATCH in the pipeline's counters\n")
	}
	if pcap != nil {
		err = pcap.Close()
		printf(out, "  %s\n", pcap.Summary())
	}
	return r, err
}
