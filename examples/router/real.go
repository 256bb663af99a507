package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/wirespeed/wirespeed/examples/internal/app"
	"github.com/wirespeed/wirespeed/examples/internal/monitor"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/ops"
	"github.com/wirespeed/wirespeed/xmit"
)

// runReal routes between real interfaces with cfg.Workers workers, each with its own socket
// (AF_PACKET, a PACKET_FANOUT group per interface) or queue (AF_XDP) on every port, until ctx ends;
// then every worker drains what it was handed and the final counters are checked.
//
// The router answers to the interfaces' own MAC addresses and resolves its neighbours by ARP
// (-neigh entries are permanent).
// Give the interfaces no IPv4 address in the kernel: the router answers for its addresses itself
// (echo, ICMP errors), and with AF_PACKET the kernel would answer too.
func runReal(ctx context.Context, cfg Config, out io.Writer) (app.Tally, error) {
	var macs []frame.MAC
	var names []string
	for _, p := range cfg.Ports {
		mac, err := app.IfaceMAC(p.Name)
		if err != nil {
			return app.Tally{}, fmt.Errorf("-port %s: %w", p.Name, err)
		}
		macs, names = append(macs, mac), append(names, p.Name)
	}
	pool, err := frame.NewPool(&frame.PoolConfig{Buffers: 4096, BufSize: 9216 + 128})
	if err != nil {
		return app.Tally{}, err
	}
	var cp *cpRouter // -linuxcp: the kernel side
	var pr *parts
	if cfg.LinuxCP {
		if cp, err = openCP(cfg, macs); err != nil {
			return app.Tally{}, err
		}
		defer func() {
			if err := cp.close(); err != nil {
				cfg.logger().Error("linux-cp: close", "err", err)
			}
		}()
		pr, err = buildCP(cfg, macs, cp.addrs, pool)
	} else {
		pr, err = build(cfg, macs, pool)
	}
	if err != nil {
		return app.Tally{}, err
	}
	maxMTU := 0
	for _, p := range cfg.Ports {
		maxMTU = max(maxMTU, p.MTU)
	}
	ports, err := app.Open(app.OpenConfig{Backend: cfg.Backend, Ifnames: names, Workers: cfg.Workers, MaxFrame: maxMTU + 18})
	if err != nil {
		return app.Tally{}, err
	}
	defer ports.Close()
	byWorker, opsPorts := app.PortSource(names, ports.ByWorker)
	log := cfg.logger()
	src := &ops.Source{Ports: opsPorts, Stage: pr.router, Neigh: pr.table, Routes: pr.routes, Trace: cfg.NewTrace()}
	op, err := startOperator(cfg, src, log)
	if err != nil {
		return app.Tally{}, err
	}
	log.Info("router started", "backend", cfg.Backend, "ports", len(names), "workers", len(ports.ByWorker), "batch", cfg.Batch,
		"static_neighbours", len(cfg.Neigh), "routes", len(cfg.Routes))
	for i, p := range cfg.Ports {
		if cp != nil {
			fmt.Fprintf(out, "router: %s %v (MAC %s, MTU %d), kernel side %s\n", p.Name, cp.addrs[i], macs[i], p.MTU, cp.taps[i].Name())
			log.Info("port opened", append([]any{"port", p.Name, "addrs", fmt.Sprint(cp.addrs[i]), "mac", macs[i].String(), "mtu", p.MTU, "tap", cp.taps[i].Name()}, app.PortMode(ports.ByWorker[0][i], cfg.Workers)...)...)
			continue
		}
		fmt.Fprintf(out, "router: %s %v (MAC %s, MTU %d)\n", p.Name, p.Addr, macs[i], p.MTU)
		log.Info("port opened", append([]any{"port", p.Name, "addr", p.Addr, "mac", macs[i].String(), "mtu", p.MTU}, app.PortMode(ports.ByWorker[0][i], cfg.Workers)...)...)
	}
	fmt.Fprintf(out, "%s, %d worker(s), %d static neighbour(s), %d route(s) besides the connected ones\n\n", cfg.Backend, len(ports.ByWorker), len(cfg.Neigh), len(cfg.Routes))

	if cp != nil {
		if err := cp.start(pr.demux, len(byWorker), cfg.Batch); err != nil {
			return app.Tally{}, err
		}
		if err := startMirror(cp, pr, log); err != nil {
			return app.Tally{}, err
		}
	}

	wctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	errs := make([]app.PortErrors, len(ports.ByWorker))
	resolvers := make([]*app.Resolver, len(ports.ByWorker))
	for i, wp := range byWorker {
		w := pr.router.NewWorker(cfg.Batch)
		hook := src.Trace.Hook(i, w, nil, 1)
		if cp != nil {
			wg.Add(1)
			go func(i int, wp []xmit.Port) {
				defer wg.Done()
				runtime.LockOSThread()
				errs[i] = runCPWorker(wctx, w, cp.x.Worker(i), hook, wp, cfg.Batch, 1024, app.Options{Spin: cfg.Spin, IdleSpin: cfg.IdleSpin})
			}(i, wp)
			continue
		}
		resolvers[i] = app.NewResolver(pr.table, pr.demux, cfg.Batch)
		wg.Add(1)
		go func(i int, wp []xmit.Port) {
			defer wg.Done()
			runtime.LockOSThread()
			errs[i] = app.RunWith(wctx, w, resolvers[i], hook, wp, cfg.Batch, 1024, app.Options{Spin: cfg.Spin, IdleSpin: cfg.IdleSpin})
		}(i, wp)
	}
	if cfg.ready != nil {
		cfg.ready()
	}
	mon := monitor.NewWith("router: rates", ports.Rows(names), cfg.MonitorOptions(pr.router))
	mon.PrintEvery(ctx, out, cfg.Interval)
	stop()
	wg.Wait()
	var perr app.PortErrors
	for i := range errs {
		perr.Add(errs[i])
	}
	app.LogStopped(log, perr)
	if cfg.stopped != nil {
		cfg.stopped()
	}
	op.Close()
	mon.Print(out)
	var st []xmit.Stats
	for p := range names {
		st = append(st, ports.Stats(p))
	}
	t := app.NewTally(st, pr.router.Counters())
	for i := range errs {
		t.Errors.Add(errs[i])
	}
	if cp != nil {
		cp.x.Close() // the TAPs' goroutines stop; what they still held is counted
		xc := cp.x.Counters()
		t.Forwarded += xc.Taken // the kernel's frames, sent on the ports
		t.Report(out, nil)
		if !reportCP(out, xc, t.Drops, cp.taps, cp.stats) {
			return t, fmt.Errorf("linux-cp: accounting mismatch: %+v", xc)
		}
		return t, nil
	}
	t.AddNeigh(pr.table.Counters())
	t.Report(out, nil)
	printNeighbours(out, pr, names)
	return t, nil
}

// printNeighbours prints the neighbour table as `ip neigh` does.
func printNeighbours(out io.Writer, pr *parts, names []string) {
	fmt.Fprintln(out, "neighbours:")
	for _, e := range pr.table.Entries() {
		fmt.Fprintf(out, "  %v dev %s lladdr %s %v\n", e.Addr, names[e.Iface], e.MAC, e.State)
	}
}
