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
	"github.com/wirespeed/wirespeed/lag"
	"github.com/wirespeed/wirespeed/ops"
	"github.com/wirespeed/wirespeed/xmit"
)

// runReal forwards between an aggregate of two real interfaces (cfg.Members, carrying the VLANs)
// and an untagged uplink with cfg.Workers workers. Each worker opens every interface itself (an
// AF_PACKET socket in a PACKET_FANOUT group per interface, or AF_XDP queue w) and builds its own
// aggregate over its two member sockets, so workers share nothing but the published member state.
// The carrier poller (-miimon) takes a member whose link goes down out of every aggregate.
//
// The router answers to member 0's MAC on every VLAN (as a bond takes its first slave's address;
// member interfaces are opened promiscuous so they receive it) and to the uplink's own MAC, and
// resolves its neighbours by ARP (tagged on the VLANs, sent through the aggregate): the gateway
// (-gateway), the VLAN hosts traffic goes to, the gateways of an `ip route` file; an interface with
// a -nexthop MAC has no ARP, everything routed out of it goes to that MAC. Each worker has its own
// resolver (app.Resolver); they share one neighbour table, which the final report prints as `ip
// neigh` does.
func runReal(ctx context.Context, cfg Config, out io.Writer) (app.Tally, error) {
	if len(cfg.Members) != numMembers || cfg.Uplink == "" {
		return app.Tally{}, fmt.Errorf("-backend %s needs -members IF1,IF2 and -uplink", cfg.Backend)
	}
	lc, err := lagConfig(cfg)
	if err != nil {
		return app.Tally{}, err
	}
	lagMAC, err := app.IfaceMAC(cfg.Members[0])
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
		return lagMAC
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
	ifnames := append(append([]string(nil), cfg.Members...), cfg.Uplink)
	ports, err := app.Open(app.OpenConfig{Backend: cfg.Backend, Ifnames: ifnames, Workers: cfg.Workers, Promiscuous: true})
	if err != nil {
		return app.Tally{}, err
	}
	defer ports.Close()
	var aggs []*lag.Aggregate
	defer func() {
		for _, a := range aggs {
			a.Close()
		}
	}()
	for _, wp := range ports.ByWorker {
		a, err := lag.New([]xmit.Port{wp[0], wp[1]}, lc)
		if err != nil {
			return app.Tally{}, err
		}
		aggs = append(aggs, a)
	}
	var pcap *app.Pcap
	if cfg.Pcap != "" {
		if pcap, err = app.CreatePcap(cfg.Pcap, 0); err != nil {
			return app.Tally{}, err
		}
		defer pcap.Close()
	}
	printf(out, "lagrouter: lag0 (%s over %s, %s; MAC %s) with %d VLANs (%s..%s) routed to %s (MAC %s, gateway %v); %s, %d worker(s)\n\n",
		cfg.LAG, cfg.Members[0], cfg.Members[1], lagMAC, cfg.VLANs, names[1], names[cfg.VLANs], cfg.Uplink, upMAC, cfg.Gateway, cfg.Backend, len(ports.ByWorker))

	trace := cfg.NewTrace()
	op, err := startMetrics(cfg, router, ifnames, ports.ByWorker, trace)
	if err != nil {
		return app.Tally{}, err
	}
	defer stopMetrics(op)
	wctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); router.FlushEvery(wctx, time.Millisecond) }() // the hosts' routes
	errs := make([]app.PortErrors, len(ports.ByWorker))
	for w, wp := range ports.ByWorker {
		fw := router.NewWorker(cfg.Batch)
		var tap fwd.Tap
		if pcap != nil {
			tap = pcap
		}
		hook := trace.Hook(w, fw, tap, cfg.PcapSample)
		res := app.NewResolver(router.Table, router.Demux, cfg.Batch)
		wg.Add(1)
		go func(ports []xmit.Port) {
			defer wg.Done()
			runtime.LockOSThread()
			errs[w] = app.RunTraced(wctx, fw, res, hook, ports, cfg.Batch, 1024)
		}([]xmit.Port{aggs[w], wp[2]})
	}

	aggStats := func() xmit.Stats {
		var s xmit.Stats
		for w, a := range aggs {
			s = ops.SumQueues(s, a.Stats(), w == 0) // the members' kernel counters once, not once per worker
		}
		return s
	}
	if cfg.ready != nil {
		cfg.ready()
	}
	rows := []monitor.Row{{Name: "lag0", Rx: func() uint64 { return aggStats().RxPackets }, Tx: func() uint64 { return aggStats().TxPackets }}}
	for p, name := range ifnames {
		p := p
		rows = append(rows, monitor.Row{Name: name, Detail: p < numMembers,
			Rx: func() uint64 { return ports.Stats(p).RxPackets }, Tx: func() uint64 { return ports.Stats(p).TxPackets }})
	}
	for id, name := range names {
		id := uint16(id)
		rows = append(rows, monitor.Row{Name: name, Detail: true,
			Rx: func() uint64 { return router.IfaceStats(id).RxPackets },
			Tx: func() uint64 { return router.IfaceStats(id).TxPackets }})
	}
	mon := monitor.New("lagrouter: packets per second", rows)
	mon.PrintEvery(ctx, out, cfg.Interval)
	stop()
	wg.Wait()
	mon.Print(out)
	t := app.NewTally([]xmit.Stats{aggStats(), ports.Stats(numMembers)}, router.Counters())
	t.AddNeigh(router.Table.Counters())
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
