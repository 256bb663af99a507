package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"sync"
	"time"

	"github.com/wirespeed/wirespeed/examples/internal/app"
	"github.com/wirespeed/wirespeed/examples/internal/monitor"
	"github.com/wirespeed/wirespeed/examples/internal/trunkgen"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/fwd"
	"github.com/wirespeed/wirespeed/xmit"
)

// runReal forwards between two real interfaces (cfg.Trunk carrying the VLANs, cfg.Uplink untagged)
// with cfg.Workers workers, each with its own socket (AF_PACKET, one PACKET_FANOUT group per
// interface) or queue (AF_XDP) on both interfaces, until ctx ends; then every worker drains what it
// was handed and the final counters are checked: rx = forwarded + dropped by reason.
//
// The router answers to the interfaces' own MAC addresses (every VLAN uses the trunk's, as Linux
// VLAN devices do) and resolves its neighbours by ARP (tagged on the VLANs): the gateway (-gateway),
// the VLAN hosts traffic goes to, the gateways of an `ip route` file; an interface with a -nexthop
// MAC has no ARP, everything routed out of it goes to that MAC. Each worker has its own resolver
// (app.Resolver); they share one neighbour table, which the final report prints as `ip neigh` does.
func runReal(ctx context.Context, cfg Config, out io.Writer) (app.Tally, error) {
	if cfg.Trunk == "" || cfg.Uplink == "" {
		return app.Tally{}, fmt.Errorf("-backend %s needs -trunk and -uplink", cfg.Backend)
	}
	trunkMAC, err := app.IfaceMAC(cfg.Trunk)
	if err != nil {
		return app.Tally{}, err
	}
	upMAC, err := app.IfaceMAC(cfg.Uplink)
	if err != nil {
		return app.Tally{}, err
	}
	mac := func(id int) frame.MAC {
		if id == ifUplink {
			return upMAC
		}
		return trunkMAC
	}
	pool, err := frame.NewPool(&frame.PoolConfig{Buffers: 4096})
	if err != nil {
		return app.Tally{}, err
	}
	router, err := buildRouter(cfg, mac, cfg.devNames(), pool)
	if err != nil {
		return app.Tally{}, err
	}
	names := router.Names
	ports, err := app.Open(app.OpenConfig{Backend: cfg.Backend, Ifnames: []string{cfg.Trunk, cfg.Uplink}, Workers: cfg.Workers, BusyPoll: cfg.BusyPoll})
	if err != nil {
		return app.Tally{}, err
	}
	defer ports.Close()
	ifnames := []string{cfg.Trunk, cfg.Uplink}
	byWorker, opsPorts := app.PortSource(ifnames, ports.ByWorker)
	src := router.Source(opsPorts, cfg.NewTrace())
	log := cfg.Logger(cfg.logw)
	op, err := app.StartOperator(cfg.OperatorFlags, src, log)
	if err != nil {
		return app.Tally{}, err
	}
	log.Info("router started", append([]any{"backend", cfg.Backend, "ports", 2, "vlans", cfg.VLANs, "workers", len(ports.ByWorker), "batch", cfg.Batch}, cfg.pipelineAttrs()...)...)
	app.LogPorts(log, ifnames, ports.ByWorker)
	logRoutes(log, cfg, router)
	var pcap *app.Pcap
	if cfg.Pcap != "" {
		if pcap, err = app.CreatePcap(cfg.Pcap, 0); err != nil {
			return app.Tally{}, err
		}
		defer pcap.Close()
	}
	printf(out, "vlanrouter: %s (%d VLANs, %s..%s, router MAC %s) routed to %s (MAC %s, gateway %v); %s, %s\n\n",
		cfg.Trunk, cfg.VLANs, names[1], names[cfg.VLANs], trunkMAC, cfg.Uplink, upMAC, cfg.Gateway, cfg.Backend, cfg.workerMode(len(ports.ByWorker)))

	// With -pipeline the workers hand what they route to the transmit workers, which send on
	// worker 0's queue of each interface (an AF_XDP socket sends frames of the other workers'
	// UMEMs by copying them).
	var pipe *app.Pipeline
	if cfg.Pipeline {
		if pipe, err = app.NewPipeline(app.PipelineConfig{RxWorkers: len(byWorker), TxPorts: byWorker[0], TxWorkers: cfg.TxWorkers, Batch: cfg.Batch}); err != nil {
			op.Close()
			return app.Tally{}, err
		}
	}

	wctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); router.FlushEvery(wctx, time.Millisecond) }() // the hosts' routes
	// The errors of every worker's port calls: the receive workers', then the transmit workers'.
	errs := make([]app.PortErrors, len(ports.ByWorker))
	if pipe != nil {
		errs = make([]app.PortErrors, len(ports.ByWorker)+cfg.TxWorkers)
	}
	for i, wp := range byWorker {
		w := router.NewWorker(cfg.Batch)
		var tap fwd.Tap
		if pcap != nil {
			tap = pcap
		}
		hook := src.Trace.Hook(i, w, tap, cfg.PcapSample)
		res := app.NewResolver(router.Table, router.Demux, cfg.Batch)
		wg.Add(1)
		if pipe != nil {
			wp = pipe.RxPorts(i, wp)
		}
		go func(wp []xmit.Port) {
			defer wg.Done()
			runtime.LockOSThread()
			errs[i] = app.RunWith(wctx, w, res, hook, wp, cfg.Batch, 1024, app.Options{Spin: cfg.Spin, IdleSpin: cfg.IdleSpin})
			if pipe != nil {
				pipe.CloseRx(i)
			}
		}(wp)
	}
	if pipe != nil {
		for i := 0; i < cfg.TxWorkers; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				runtime.LockOSThread()
				errs[len(ports.ByWorker)+i] = pipe.Transmit(i)
			}()
		}
	}

	if cfg.ready != nil {
		cfg.ready()
	}
	rows := append(ports.Rows(ifnames), app.IfaceRows(router.Router, names)...)
	mon := monitor.NewWith("vlanrouter: rates", rows, cfg.MonitorOptions(router.Router))
	mon.PrintEvery(ctx, out, cfg.Interval)
	stop()
	wg.Wait()
	var perr app.PortErrors
	for _, e := range errs {
		perr.Add(e)
	}
	app.LogStopped(log, perr)
	op.Close()
	mon.Print(out)
	t := app.NewTally([]xmit.Stats{ports.Stats(portTrunk), ports.Stats(portUplink)}, router.Counters())
	t.AddNeigh(router.Table.Counters())
	if pipe != nil {
		t.AddPipeline(pipe.Stats())
	}
	for _, e := range errs {
		t.Errors.Add(e)
	}
	if pcap != nil {
		if err := pcap.Close(); err != nil {
			printf(out, "pcap: %v\n", err)
		}
	}
	t.Report(out, pcap)
	trunkgen.PrintNeighbours(out, router.Table, append([]string{cfg.Uplink}, names[1:]...))
	return t, nil
}

var _ fwd.Tap = (*app.Pcap)(nil)
