package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wirespeed/wirespeed/examples/internal/app"
	"github.com/wirespeed/wirespeed/examples/internal/monitor"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/fwd"
	"github.com/wirespeed/wirespeed/neigh"
	"github.com/wirespeed/wirespeed/ops"
	"github.com/wirespeed/wirespeed/xmit"
)

// What the in-memory hosts send, in turn: mostly UDP to the host on the other port, and one frame
// in memCycle of each kind the router answers or drops.
const (
	kindUDP        = iota // to the other host: forwarded, TTL 63
	kindTTL1              // TTL 1: ICMP time exceeded from the router (rate-limited)
	kindEcho              // an echo request to the router's address: answered
	kindBig               // 1700 bytes, DF clear, to the other host: two fragments
	kindUnresolved        // to .9 on the other subnet, where no host answers ARP: held, then ICMP host unreachable
	kindNoRoute           // to 192.0.2.1, no route: ICMP network unreachable
	numKinds
	memCycle = 16 // every 16th frame is of kind (n/16) % (numKinds-1) + 1
	bigLen   = 1700
)

// Result is what an in-memory run counted, end to end.
type Result struct {
	Generated uint64 // frames the hosts sent (all queued: the generator paces itself)
	RouterRx  uint64 // frames the router's ports received
	Stage     fwd.Counters
	Neigh     neigh.Counters
	HeldLeft  uint64 // frames the neighbour table still held at the end
	Discarded uint64 // local frames other than ARP, released
	RouterTx  uint64 // frames the router's ports queued
	TxDropped uint64
	Sink      sinkCounts
	Leaked    int // pool buffers out at the end, besides the held frames
}

// sinkCounts is what the hosts received, each frame checked.
type sinkCounts struct {
	UDP, Fragments, TimeExceeded, Unreachable, EchoReplies, ARP, Bad uint64
	ARPReplies                                                       uint64 // the hosts' answers (sent, not received)
}

// everyKind reports whether the hosts got back every kind of frame the generator makes them send
// (forwarded, fragmented, time exceeded, unreachable, echo replies) and ARP from the router, and
// answered it.
func (s *sinkCounts) everyKind() bool {
	return s.UDP != 0 && s.Fragments != 0 && s.TimeExceeded != 0 && s.Unreachable != 0 && s.EchoReplies != 0 && s.ARP != 0 && s.ARPReplies != 0
}

func (s *sinkCounts) total() uint64 {
	return s.UDP + s.Fragments + s.TimeExceeded + s.Unreachable + s.EchoReplies + s.ARP + s.Bad
}

// Balanced reports whether every frame is accounted for: what the hosts sent the router received
// and judged (held frames that resolved are judged twice); local frames are ARP the table took;
// held frames resolved, failed, were dropped while held or are still held; what the router sent
// (the stage's and the table's frames) its ports queued or dropped; the hosts received what the
// ports queued, each frame what the router said it made, none malformed; no buffer leaked.
func (r Result) Balanced() bool {
	c, n := r.Stage, r.Neigh
	holdDrops := n.HoldNoNeighbour + n.HoldNoHost + n.HoldTooBig + n.HoldNoBuffer
	return r.Generated == r.RouterRx && r.RouterRx+n.Ready == c.Received() &&
		c.Local == n.ARPIn+r.Discarded && c.Held == n.HoldIn && n.HoldIn == n.Held+holdDrops &&
		n.Held == n.Ready+n.Failed+n.QueueOverflow+n.BacklogOverflow+r.HeldLeft &&
		app.Sent(c)+app.ARPSent(n) == r.RouterTx+r.TxDropped && r.Sink.total() == r.RouterTx && r.Sink.Bad == 0 &&
		r.Sink.UDP == c.Forwarded && r.Sink.Fragments == c.Fragments && r.Sink.EchoReplies == c.Echoed &&
		r.Sink.TimeExceeded+r.Sink.Unreachable == c.ICMPErrors && r.Sink.ARP == app.ARPSent(n) && r.Leaked == 0
}

// Report prints the final counters and the accounting check.
func (r Result) Report(out io.Writer) {
	g := func(v uint64) string { return monitor.Group(float64(v)) }
	fmt.Fprintf(out, "final counters\n")
	fmt.Fprintf(out, "  generated   %14s\n", g(r.Generated))
	fmt.Fprintf(out, "  router rx   %14s\n", g(r.RouterRx))
	fmt.Fprintf(out, "  sent        %14s  (egress queued %s, egress dropped %s)\n", g(app.Sent(r.Stage)), g(r.RouterTx), g(r.TxDropped))
	app.ReportStage(out, r.Stage)
	n := r.Neigh
	fmt.Fprintf(out, "  neighbours: ARP in %s, sent %s; held %s, resumed %s, failed %s (ICMP host unreachable), dropped while held %s, still held %s\n",
		g(n.ARPIn), g(app.ARPSent(n)), g(n.Held), g(n.Ready), g(n.Failed), g(n.QueueOverflow+n.BacklogOverflow), g(r.HeldLeft))
	s := r.Sink
	fmt.Fprintf(out, "  hosts received %s: UDP %s, fragments %s, time exceeded %s, unreachable %s, echo replies %s, ARP %s, malformed %s; they answered ARP %s times\n",
		g(s.total()), g(s.UDP), g(s.Fragments), g(s.TimeExceeded), g(s.Unreachable), g(s.EchoReplies), g(s.ARP), g(s.Bad), g(s.ARPReplies))
	fmt.Fprintf(out, "  pool buffers still out %d\n", r.Leaked)
	if r.Balanced() {
		fmt.Fprintf(out, "accounting: ok (rx = forwarded + local + dropped; sent = egress queued + egress dropped = what the hosts received, frame by frame)\n")
	} else {
		fmt.Fprintf(out, "accounting: MISMATCH\n")
	}
}

// memNet is the in-memory network: the router's two ports, the hosts' ends of the links.
type memNet struct {
	pool   *frame.Pool
	router *fwd.Router
	parts  *parts
	ports  []xmit.Port // the router's ends, the errors of their calls counted (portSource)
	ops    []ops.Port  // the same ports, as the metrics and the event log see them
	mems   []*xmit.MemPort
	hosts  []*xmit.MemPort
	cfg    Config
	sink   sinkCounts
	sent   atomic.Uint64
	done   atomic.Bool
	arp    *frame.Batch // the hosts' ARP replies
}

func newMemNet(cfg Config) (*memNet, error) {
	cfg.Ports, cfg.Neigh, cfg.Routes = memPorts(), nil, nil
	pool, err := frame.NewPool(&frame.PoolConfig{Buffers: 8192})
	if err != nil {
		return nil, err
	}
	m := &memNet{pool: pool, cfg: cfg}
	var macs []frame.MAC
	var names []string
	var raw []xmit.Port
	for i, p := range cfg.Ports {
		r, h := xmit.Pipe(pool, &xmit.PipeConfig{Names: [2]string{p.Name, p.Name + "-host"}, Depth: 2048})
		m.mems, m.hosts, raw = append(m.mems, r), append(m.hosts, h), append(raw, r)
		macs, names = append(macs, memRouterMAC(i)), append(names, p.Name)
	}
	wrapped, opsPorts := app.PortSource(names, [][]xmit.Port{raw})
	m.ports, m.ops = wrapped[0], opsPorts
	if m.parts, err = build(cfg, macs, pool); err != nil {
		return nil, err
	}
	m.router = m.parts.router
	m.arp = frame.NewBatch(8)
	return m, nil
}

// hostIP is the address of the in-memory host on port p: 10.0.(p+1).2.
func hostIP(p int) uint32 { return 0x0a000002 | uint32(p+1)<<8 }

// fill appends up to n frames from host p to b.
func (m *memNet) fill(b *frame.Batch, p, n int) {
	got, _ := m.pool.Alloc(b, n)
	other := 1 - p
	for i := len(b.Frames) - got; i < len(b.Frames); i++ {
		k := m.sent.Add(1)
		kind := kindUDP
		if k%memCycle == 0 {
			kind = int(k/memCycle)%(numKinds-1) + 1
		}
		f := &b.Frames[i]
		size, ttl, dst := 60, byte(64), hostIP(other)
		switch kind {
		case kindTTL1:
			ttl = 1
		case kindEcho:
			dst = hostIP(p) - 1 // the router: 10.0.(p+1).1
		case kindBig:
			size = bigLen
		case kindUnresolved:
			dst = hostIP(other) + 7
		case kindNoRoute:
			dst = 0xc0000201
		}
		f.Resize(size)
		d := b.Bytes(i)
		e := frame.Ether(d)
		e.SetDst(memRouterMAC(p))
		e.SetSrc(memHostMAC(p))
		e.SetType(frame.TypeIPv4)
		ip := frame.IPv4(d[14:])
		ip[0], ip[1], ip[8], ip[9] = 0x45, 0, ttl, frame.ProtoUDP
		binary.BigEndian.PutUint16(ip[2:], uint16(size-14))
		binary.BigEndian.PutUint16(ip[4:], uint16(k))
		binary.BigEndian.PutUint16(ip[6:], 0)
		binary.BigEndian.PutUint32(ip[12:], hostIP(p))
		binary.BigEndian.PutUint32(ip[16:], dst)
		l4 := ip[20 : size-14]
		if kind == kindEcho {
			ip[9] = frame.ProtoICMP
			clear(l4)
			l4[0] = 8
			binary.BigEndian.PutUint16(l4[4:], uint16(p))
			binary.BigEndian.PutUint16(l4[6:], uint16(k))
			binary.BigEndian.PutUint16(l4[2:], frame.Checksum(l4))
		} else {
			binary.BigEndian.PutUint16(l4[0:], 40000)
			binary.BigEndian.PutUint16(l4[2:], 9)
			binary.BigEndian.PutUint16(l4[4:], uint16(len(l4)))
			binary.BigEndian.PutUint16(l4[6:], 0)
		}
		ip.SetChecksum()
	}
}

// receive checks and counts every frame the router sent to host p.
func (m *memNet) receive(b *frame.Batch, p int) bool {
	got := false
	for {
		n, _ := m.hosts[p].Recv(b)
		if n == 0 {
			return got
		}
		got = true
		for i := 0; i < n; i++ {
			m.check(b.Bytes(i), p)
		}
		b.Free()
		if len(m.arp.Frames) > 0 {
			m.hosts[p].Send(m.arp)
		}
	}
}

// check classifies one frame host p received; anything but what the router should send is Bad.
func (m *memNet) check(d []byte, p int) {
	s := &m.sink
	e := frame.Ether(d)
	if len(d) >= 42 && e.Type() == frame.TypeARP {
		m.checkARP(d, p)
		return
	}
	ip, err := frame.ParseIPv4(d[14:])
	if len(d) < 34 || e.Dst() != memHostMAC(p) || e.Src() != memRouterMAC(p) || e.Type() != frame.TypeIPv4 ||
		err != nil || !ip.ChecksumOK() || ip.Dst() != hostIP(p) {
		s.Bad++
		return
	}
	switch {
	case ip.Protocol() == frame.ProtoUDP && ip.Src() == hostIP(1-p) && ip.TTL() == 63:
		if ip.IsFragment() {
			s.Fragments++
		} else {
			s.UDP++
		}
	case ip.Protocol() == frame.ProtoICMP && ip.TTL() == 64 && len(ip) >= 28 && frame.Checksum(ip[20:]) == 0:
		switch t := ip[20]; {
		case t == 0 && ip.Src() == hostIP(p)-1:
			s.EchoReplies++
		case (t == 11 || t == 3) && ip.Src() == hostIP(p)-1 && len(ip) >= 48 && frame.IPv4(ip[28:]).Src() == hostIP(p):
			if t == 11 {
				s.TimeExceeded++
			} else {
				s.Unreachable++
			}
		default:
			s.Bad++
		}
	default:
		s.Bad++
	}
}

// checkARP takes an ARP frame from the router to host p: a request (broadcast, or unicast to the
// host: a probe) or an announcement from the router's address on p; host p answers requests for
// its own address.
func (m *memNet) checkARP(d []byte, p int) {
	s := &m.sink
	e := frame.Ether(d)
	a := d[14:42]
	spa, tpa := binary.BigEndian.Uint32(a[14:]), binary.BigEndian.Uint32(a[24:])
	if (e.Dst() != frame.MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff} && e.Dst() != memHostMAC(p)) || e.Src() != memRouterMAC(p) ||
		binary.BigEndian.Uint64(a[0:8]) != 0x0001080006040001 || frame.MAC(a[8:14]) != memRouterMAC(p) || spa != hostIP(p)-1 {
		s.Bad++
		return
	}
	s.ARP++
	if tpa != hostIP(p) {
		return // a request for .9, or the router's announcement of its own address
	}
	if n, _ := m.pool.Alloc(m.arp, 1); n == 0 {
		return
	}
	f := &m.arp.Frames[len(m.arp.Frames)-1]
	f.Resize(60)
	r := m.arp.Bytes(len(m.arp.Frames) - 1)
	clear(r)
	frame.Ether(r).SetDst(memRouterMAC(p))
	frame.Ether(r).SetSrc(memHostMAC(p))
	frame.Ether(r).SetType(frame.TypeARP)
	binary.BigEndian.PutUint64(r[14:], 0x0001080006040002)
	h := memHostMAC(p)
	copy(r[22:], h[:])
	binary.BigEndian.PutUint32(r[28:], hostIP(p))
	copy(r[32:], a[8:14])
	binary.BigEndian.PutUint32(r[38:], spa)
	s.ARPReplies++
}

// generate sends from both hosts until ctx ends, keeping fewer frames in flight than the links hold.
// With cfg.everyKind it goes on after that until the hosts got every kind of frame back (at most
// 60 s from its start).
func (m *memNet) generate(ctx context.Context) {
	b := frame.NewBatch(32)
	start := time.Now()
	var sent uint64
	for ctx.Err() == nil || m.cfg.everyKind && !m.sink.everyKind() && time.Since(start) < 60*time.Second {
		m.receive(b, 0)
		m.receive(b, 1)
		if m.pool.InUse() > 1024 {
			runtime.Gosched()
			continue
		}
		for p, h := range m.hosts {
			m.fill(b, p, 32)
			h.Send(b)
		}
		sent += 32
		if m.cfg.Rate > 0 {
			if d := time.Until(start.Add(time.Duration(float64(sent) / float64(m.cfg.Rate) * 1e9))); d > 0 {
				time.Sleep(d)
			}
		}
	}
	m.done.Store(true)
}

func runMem(ctx context.Context, cfg Config, out io.Writer) (Result, error) {
	m, err := newMemNet(cfg)
	if err != nil {
		return Result{}, err
	}
	log := cfg.logger()
	src := &ops.Source{Ports: m.ops, Stage: m.router, Neigh: m.parts.table, Routes: m.parts.routes, Trace: cfg.NewTrace()}
	op, err := startOperator(cfg, src, log)
	if err != nil {
		return Result{}, err
	}
	log.Info("router started", "backend", cfg.Backend, "mode", "in-memory links", "ports", len(m.ports), "workers", 1, "batch", cfg.Batch)
	fmt.Fprintf(out, "router: %s (%v) and %s (%v), in-memory links, hosts 10.0.1.2 and 10.0.2.2 sending to each other and to the router\n\n",
		m.cfg.Ports[0].Name, memPorts()[0].Addr, memPorts()[1].Name, memPorts()[1].Addr)
	genCtx, stopGen := context.WithCancel(context.Background())
	routerCtx, stopRouter := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); m.generate(genCtx) }()
	res := app.NewResolver(m.parts.table, m.parts.demux, cfg.Batch)
	var errs app.PortErrors
	go func() {
		defer wg.Done()
		w := m.router.NewWorker(cfg.Batch)
		errs = app.RunTraced(routerCtx, w, res, src.Trace.Hook(0, w, nil, 1), m.ports, cfg.Batch, 1<<20)
	}()
	if cfg.ready != nil {
		cfg.ready()
	}
	mon := monitor.NewWith("router: rates", portRows(m.ports), cfg.MonitorOptions(m.router))
	mon.PrintEvery(ctx, out, cfg.Interval)
	mon.Print(out)
	stopGen()
	for !m.done.Load() {
		time.Sleep(time.Millisecond)
	}
	stopRouter()
	wg.Wait()
	b := frame.NewBatch(64)
	for m.receive(b, 0) || m.receive(b, 1) {
	}
	app.LogStopped(log, errs)
	if cfg.stopped != nil {
		cfg.stopped()
	}
	op.Close()
	r := Result{Stage: m.router.Counters(), Neigh: m.parts.table.Counters(), Sink: m.sink, Discarded: res.Discarded}
	for _, e := range m.parts.table.Entries() {
		r.HeldLeft += uint64(e.Held)
	}
	for i := range m.mems {
		r.Generated += m.hosts[i].Stats().TxPackets
		s := m.mems[i].Stats()
		r.RouterRx += s.RxPackets
		r.RouterTx += s.TxPackets
		r.TxDropped += s.TxDropped
	}
	for _, p := range append(m.mems, m.hosts...) {
		p.Close()
	}
	r.Leaked = m.pool.InUse() - int(r.HeldLeft) // the table's held frames keep their buffers
	r.Report(out)
	return r, nil
}

// portRows are the monitor's rows: one per port.
func portRows(ports []xmit.Port) []monitor.Row {
	var rows []monitor.Row
	for _, p := range ports {
		p := p
		rows = append(rows, monitor.PortRow(p.Name(), p.Stats))
	}
	return rows
}
