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
	"github.com/wirespeed/wirespeed/lag/lacp"
	"github.com/wirespeed/wirespeed/ops"
	"github.com/wirespeed/wirespeed/xmit"
	"github.com/wirespeed/wirespeed/xmit/afpacket"
)

// runReal forwards between an aggregate of two real interfaces (cfg.Members, carrying the VLANs)
// and an untagged uplink with cfg.Workers workers. Each worker opens every interface itself (an
// AF_PACKET socket in a PACKET_FANOUT group per interface, or AF_XDP queue w) and builds its own
// aggregate over its two member sockets, so workers share nothing but the published member state.
// The carrier poller (-miimon) takes a member whose link goes down out of every aggregate. With
// -lag 802.3ad one lacp.Controller drives every worker's aggregate: the aggregates hand it the
// LACPDUs their members receive, it sends through a lacp.Sender per member and sets the members
// usable while they are collecting and distributing.
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
	oc := app.OpenConfig{Backend: cfg.Backend, Ifnames: ifnames, Workers: cfg.Workers, Promiscuous: true}
	// Under LACP the slow-protocols frames stay out of the members' data path: on AF_PACKET the
	// sockets filter them out (in the kernel), on AF_XDP the XDP program passes them to the
	// kernel; the controller reads them through its Senders, and the aggregates never look for
	// them.
	filtered := cfg.usesLACP() && (cfg.Backend.IsAFPacket() || cfg.Backend == app.AFXDP)
	if filtered {
		oc.Filters = [][]afpacket.BPF{lacp.NoSlowFilter, lacp.NoSlowFilter}
		oc.XDPPass = []uint16{lacp.EtherType, lacp.EtherType}
	}
	ports, err := app.Open(oc)
	if err != nil {
		return app.Tally{}, err
	}
	defer ports.Close()

	log := cfg.logger()
	var ctl *lacp.Controller
	var senders []*lacp.Sender
	if cfg.usesLACP() {
		// One controller for every worker's aggregate; its PDUs leave through a send-only
		// socket per member (each PDU's source is the member's own MAC, the system id member 0's).
		var tx []xmit.Port
		for _, name := range cfg.Members {
			s, err := lacp.OpenSender(name)
			if err != nil {
				return app.Tally{}, err
			}
			defer s.Close()
			tx = append(tx, s)
			senders = append(senders, s)
			if filtered {
				if err := s.Listen(); err != nil { // here: in the interfaces' namespace
					return app.Tally{}, err
				}
			}
		}
		if ctl, err = lacp.New(cfg.lacpConfig(lagMAC, tx, nil, logLACP(log, lc.Name, cfg.Members))); err != nil {
			return app.Tally{}, err
		}
		lc.SlowProtocols, lc.SlowFiltered = ctl, filtered
		if cfg.onLACP != nil {
			cfg.onLACP(ctl)
		}
	}
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
		if ctl != nil {
			ctl.Attach(a)
		}
	}
	if cfg.onOpen != nil {
		cfg.onOpen(ports, aggs)
	}
	var pcap *app.Pcap
	if cfg.Pcap != "" {
		if pcap, err = app.CreatePcap(cfg.Pcap, 0); err != nil {
			return app.Tally{}, err
		}
		defer pcap.Close()
	}
	printf(out, "lagrouter: lag0 (%s over %s, %s; MAC %s) with %d VLANs (%s..%s) routed to %s (MAC %s, gateway %v); %s, %d worker(s)\n\n",
		cfg.modeName(), cfg.Members[0], cfg.Members[1], lagMAC, cfg.VLANs, names[1], names[cfg.VLANs], cfg.Uplink, upMAC, cfg.Gateway, cfg.Backend, len(ports.ByWorker))

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
	wg.Add(1)
	if ctl != nil {
		go func() { defer wg.Done(); ctl.Run(wctx) }()
		if filtered {
			for m, s := range senders {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := s.Receive(wctx, ctl, m); err != nil {
						log.Error("lacp receive", "member", s.Name(), "err", err)
					}
				}()
			}
		}
	} else {
		go func() { defer wg.Done(); watchMembers(wctx, log, aggs[0], cfg.Members, cfg.Miimon) }()
	}
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
			errs[w] = app.RunWith(wctx, fw, res, hook, ports, cfg.Batch, 1024, app.Options{Spin: cfg.Spin, IdleSpin: cfg.IdleSpin})
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
	stats := make([]func() xmit.Stats, len(ifnames))
	for p := range ifnames {
		stats[p] = func() xmit.Stats { return ports.Stats(p) }
	}
	mon := monitor.NewWith("lagrouter: rates", rateRows(aggStats, ifnames[0], ifnames[1], ifnames[numMembers], stats, router.Router, names),
		cfg.MonitorOptions(router.Router))
	mon.PrintEvery(ctx, out, cfg.Interval)
	stop()
	wg.Wait()
	mon.Print(out)
	as := aggStats()
	for _, a := range aggs { // those are in the LACP line; the tally's are the kernel's
		as.RxDropped -= a.RxInactive()
	}
	t := app.NewTally([]xmit.Stats{as, ports.Stats(numMembers)}, router.Counters())
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
	var st *lacp.Status
	if ctl != nil {
		s := ctl.Status()
		st = &s
	}
	printf(out, "  %s\n", memberReport(lc.Name, cfg.Members, []xmit.Stats{ports.Stats(0), ports.Stats(1)}, st))
	if st != nil {
		var direct uint64 // the Senders' (filtered): the aggregates saw none
		for _, s := range senders {
			direct += s.Received()
		}
		printf(out, "  %s\n", slowReport(lc.Name, aggs, st, direct))
	}
	trunkgen.PrintNeighbours(out, router.Table, append([]string{cfg.Uplink}, names[1:]...))
	return t, nil
}
