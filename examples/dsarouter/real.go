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
	"github.com/wirespeed/wirespeed/xmit"
)

// runReal runs the router on a real conduit interface (cfg.Conduit) with cfg.Workers workers, each
// with its own socket (AF_PACKET, one PACKET_FANOUT group) or queue (AF_XDP), its own dsa.Conduit
// and fwd worker, and the one shared LAN FDB, until ctx ends; then every worker drains what it
// was handed and the final counters are checked.
//
// The router's MAC on br-lan and on wan is the conduit's own, as DSA user ports inherit it. It
// resolves its neighbours by ARP (each worker's resolver, one shared neighbour table): the ISP's
// gateway 203.0.113.1 on wan, the LAN hosts as traffic for them comes, its requests on br-lan
// flooded to lan1-lan4; it answers ARP for its addresses, and the final report prints the table as
// `ip neigh` does. Other frames for the router are released and counted. The conduit is opened in
// promiscuous mode, as several tag formats put something other than the conduit's MAC where the
// NIC filters.
func runReal(ctx context.Context, cfg Config, out io.Writer) (Result, error) {
	mac, err := app.IfaceMAC(cfg.Conduit)
	if err != nil {
		return Result{}, err
	}
	pool, err := frame.NewPool(&frame.PoolConfig{Buffers: 4096})
	if err != nil {
		return Result{}, err
	}
	t, err := build(cfg, mac, mac, pool)
	if err != nil {
		return Result{}, err
	}
	ports, err := app.Open(app.OpenConfig{Backend: cfg.Backend, Ifnames: []string{cfg.Conduit}, Workers: cfg.Workers, Promiscuous: true})
	if err != nil {
		return Result{}, err
	}
	defer ports.Close()
	op, src, byWorker, err := t.operator(cfg, cfg.Conduit, ports.ByWorker)
	if err != nil {
		return Result{}, err
	}
	fmt.Fprintf(out, "dsarouter: %s conduit (MAC %s), %s tags; br-lan = lan1-lan4 (192.168.1.1/24), %s = WAN (203.0.113.2/24, default route); PTP timestamping %s; %s, %d worker(s)\n\n",
		cfg.Conduit, mac, t.tagger.Name(), wanIfName(cfg), ptpNote(cfg), cfg.Backend, len(ports.ByWorker))

	planes := make([]*dataPlane, len(byWorker))
	for w, wp := range byWorker {
		if planes[w], err = t.newDataPlane(cfg.Batch, wp[0]); err != nil {
			op.Close()
			return Result{}, err
		}
		planes[w].trace = src.Trace.Hook(w, planes[w].fw, nil, 1)
		planes[w].reinsert = cfg.Backend.IsAFPacket() // it reports the outer 802.1Q tag (a tag_8021q switch tag) out of band
	}
	wctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w, d := range planes {
		wg.Add(1)
		go func(d *dataPlane, port xmit.Port) {
			defer wg.Done()
			runtime.LockOSThread()
			d.run(wctx, port, cfg.Batch)
		}(d, byWorker[w][0])
	}
	if cfg.ready != nil {
		cfg.ready()
	}
	mon := monitor.NewWith("dsarouter: rates (the conduit, its switch ports, the L3 interfaces)",
		t.monitorRows(ports.Rows([]string{cfg.Conduit})), cfg.MonitorOptions(t.router))
	if cfg.Interval > 0 {
		mon.PrintEvery(ctx, out, cfg.Interval)
	} else {
		<-ctx.Done()
	}
	stop()
	wg.Wait()
	app.LogStopped(op.Log, app.ErrorsOf(src))
	op.Close()
	if cfg.Interval > 0 {
		mon.Print(out)
	}
	var r Result
	t.collect(&r, ports.Stats(0))
	report(out, r, cfg)
	fmt.Fprintln(out, "neighbours:")
	for _, e := range t.table.Entries() {
		name := t.router.Ifaces()[e.Iface].Name
		if e.MAC == (frame.MAC{}) {
			fmt.Fprintf(out, "  %v dev %s %v\n", e.Addr, name, e.State)
			continue
		}
		fmt.Fprintf(out, "  %v dev %s lladdr %v %v\n", e.Addr, name, e.MAC, e.State)
	}
	return r, nil
}
