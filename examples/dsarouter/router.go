package main

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wirespeed/wirespeed/dsa"
	"github.com/wirespeed/wirespeed/examples/internal/app"
	"github.com/wirespeed/wirespeed/fib"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/fwd"
	"github.com/wirespeed/wirespeed/neigh"
	"github.com/wirespeed/wirespeed/ops"
	"github.com/wirespeed/wirespeed/vlan"
	"github.com/wirespeed/wirespeed/xmit"
)

// Config is the example's configuration.
type Config struct {
	Duration time.Duration // how long to run; 0: until the context ends
	Interval time.Duration // rate table interval; 0: none, only the final counters
	Tagger   string        // dsa tag protocol of the switch
	WANVID   int           // 802.1Q VID on the WAN port (0: untagged)
	PTP      []string      // switch ports with PTP receive timestamping on
	Batch    int
	Rate     int     // mem: generator rate limit, frames/s (0: as fast as the router takes them)
	Bad      float64 // mem: share of generated frames the router must drop

	Backend app.Backend // mem, afpacket or afxdp
	Conduit string      // afpacket, afxdp: the conduit interface
	Workers int         // afpacket, afxdp: sockets (fanout group) or queues on the conduit

	// The operator's flags: -metrics, -metrics-any, -log, -view, -top, -per-worker.
	app.OperatorFlags
	// logw (tests) is the event log's destination (nil: stderr).
	logw io.Writer

	// minDelivered (tests, mem): keep running past ctx until the switch has delivered at least this
	// many frames out of the WAN port and out of lan4, so that a short test on a loaded machine
	// still sees every kind of frame (bounded by 60 s).
	minDelivered uint64
	// ownPool (tests, mem): the router's pool is not the link's, so that the frames the router
	// generates cross arenas on their way out, as they do on a real back-end.
	ownPool bool
	// ready (tests) is called once the ports are open and the workers started.
	ready func()
	// now (tests) is the neighbour table's clock (nil: time.Now).
	now func() time.Time
}

func defaultConfig() Config {
	return Config{Duration: 5 * time.Second, Interval: time.Second, Tagger: "edsa", Batch: 64, Bad: 0.01,
		Backend: app.Mem, Workers: 1, OperatorFlags: app.DefaultOperatorFlags()}
}

// maxBatch bounds -batch: the frames a data plane handles per step.
const maxBatch = 256

// ErrUsage matches (errors.Is) every configuration error: a flag value or argument the example
// cannot run with. The error's text says which and why.
var ErrUsage = errors.New("dsarouter: bad command line")

type usageError struct{ msg string }

func (e *usageError) Error() string        { return e.msg }
func (e *usageError) Is(target error) bool { return target == ErrUsage }

func usage(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

// check validates a configuration and returns the tagger it names.
func (cfg *Config) check() (dsa.Tagger, error) {
	tg, err := dsa.ByName(cfg.Tagger)
	if err == nil {
		err = usableTagger(tg)
	}
	if err != nil {
		return nil, usage("-tagger: %v (usable: %s)", err, strings.Join(usableTaggers(), ", "))
	}
	switch {
	case cfg.WANVID < 0 || cfg.WANVID > vlan.VIDMax:
		return nil, usage("-wan-vid %d out of range 0-%d", cfg.WANVID, vlan.VIDMax)
	case cfg.Batch < 1 || cfg.Batch > maxBatch:
		return nil, usage("-batch %d out of range 1-%d", cfg.Batch, maxBatch)
	case cfg.Duration < 0:
		return nil, usage("-duration %v is negative (0 runs until Ctrl-C)", cfg.Duration)
	case cfg.Interval < 0:
		return nil, usage("-interval %v is negative (0 prints no rates)", cfg.Interval)
	case cfg.Rate < 0:
		return nil, usage("-rate %d is negative (0: no limit)", cfg.Rate)
	case !(cfg.Bad >= 0 && cfg.Bad <= 1): // NaN too
		return nil, usage("-bad %v out of range 0-1", cfg.Bad)
	case cfg.Workers < 1:
		return nil, usage("-workers %d: at least 1", cfg.Workers)
	}
	for _, name := range cfg.PTP {
		if swIndex(name) < 0 {
			return nil, usage("-ptp: no switch port %q (ports: %s)", name, strings.Join(swNames[:], ", "))
		}
	}
	if err := cfg.OperatorFlags.Check(); err != nil {
		return nil, usage("%v", err)
	}
	switch cfg.Backend {
	case app.Mem:
		if cfg.Conduit != "" {
			return nil, usage("-conduit %s needs -backend afpacket or afxdp (mem runs its own in-memory conduit)", cfg.Conduit)
		}
		if cfg.Workers != 1 {
			return nil, usage("-workers %d: the in-memory conduit has one queue (more workers need -backend afpacket or afxdp)", cfg.Workers)
		}
	case app.AFPacket, app.AFPacketV2, app.AFXDP:
		if cfg.Conduit == "" {
			return nil, usage("-backend %s needs -conduit IFNAME", cfg.Backend)
		}
	default:
		_, err := app.ParseBackend(string(cfg.Backend))
		return nil, usage("-backend: %v", err)
	}
	return tg, nil
}

// The switch: lan1-lan4 are switch ports 0-3, wan is port 4 (as on MT7530 and many Marvell
// boards); the CPU port (5) never appears in a tag. The conduit knows ports 0-4, so a tag naming
// port 5 or above is dropped as an unknown port.
const (
	swLAN1      = 0
	swWAN       = 4
	numSwPorts  = 5
	numLANPorts = 4
	swUnknown   = 6 // the generator's "unknown switch port"
)

var swNames = [numSwPorts]string{"lan1", "lan2", "lan3", "lan4", "wan"}

func swIndex(name string) int {
	for i, n := range swNames {
		if n == name {
			return i
		}
	}
	return -1
}

// The router's own ports as package fwd and the vlan demux number them: the LAN bridge (br-lan,
// lan1-lan4 as one broadcast domain) and the WAN port. Each carries one L3 interface with the same
// number.
const (
	portLAN  = 0
	portWAN  = 1
	numPorts = 2
	ifLAN    = 0
	ifWAN    = 1
)

// Addresses. The LAN is 192.168.1.0/24 (router .1); host h (0-3) behind lanN has 192.168.1.N0+h;
// the WAN is 203.0.113.0/24 with the ISP's gateway at .1 and the router at .2; the "internet"
// is 198.18.0.0/15.
const (
	lanNet      = 0xc0a80100
	lanRouterIP = lanNet | 1
	hostsPerLAN = 4
	wanNet      = 0xcb007100
	wanRouterIP = wanNet | 2
	netInternet = 0xc6120000
	maskNet     = 0x1ffff
)

var (
	// The router's MACs in memory (on a real conduit both are the conduit's, as DSA user ports
	// inherit it).
	lanMAC     = frame.MAC{0x02, 0x77, 0x73, 0x00, 0x00, 0x01}
	wanMAC     = frame.MAC{0x02, 0x77, 0x73, 0x00, 0x00, 0x02}
	gatewayMAC = frame.MAC{0x02, 0x67, 0x77, 0x00, 0x00, 0x01}
	gatewayIP  = netip.AddrFrom4([4]byte{203, 0, 113, 1}) // the ISP's gateway: the default route's next hop
)

func hostMAC(lan, h int) frame.MAC { return frame.MAC{0x02, 0x68, 0x6f, 0x00, byte(lan), byte(h)} }
func hostIP(lan, h int) uint32     { return lanNet | uint32(10*(lan+1)+h) }

// usableTagger reports whether the switch side of t can address lan1-4, wan and the unknown port
// both ways (ksz8795, ksz9893, hellcreek and lan9303 are switches with fewer ports).
func usableTagger(t dsa.Tagger) error {
	if t.Spec().Ports < numSwPorts {
		return fmt.Errorf("tagger %s addresses %d ports, the example needs %d", t.Name(), t.Spec().Ports, numSwPorts)
	}
	sw, err := dsa.NewSwitchSide(t)
	if err != nil {
		return err
	}
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 1})
	b := frame.NewBatch(1)
	for _, p := range []int{swLAN1, swWAN, swUnknown} {
		pool.Alloc(b, 1)
		b.Frames[0].Resize(60)
		clear(b.Bytes(0))
		err := sw.Encode(b, 0, dsa.Info{Port: uint16(p)})
		var in dsa.Info
		if err == nil {
			err = t.Parse(b.Bytes(0), &in)
		}
		b.Free()
		if err != nil || int(in.Port) != p {
			return fmt.Errorf("tagger %s cannot carry switch port %d", t.Name(), p)
		}
	}
	return nil
}

// usableTaggers lists the taggers -tagger accepts.
func usableTaggers() []string {
	var ok []string
	for _, n := range dsa.Names() {
		if t, _ := dsa.ByName(n); usableTagger(t) == nil {
			ok = append(ok, n)
		}
	}
	return ok
}

// topology is the router, its tables and its data planes, built for a config.
type topology struct {
	cfg    Config
	tagger dsa.Tagger
	pool   *frame.Pool // the router's pool (fwd.Config.Pool, neigh.Config.Pool): the frames it generates and holds
	router *fwd.Router
	table  *neigh.Table // the neighbour table beside it, shared by the data planes
	routes *fib.Table   // the route table the stage looks up
	demux  *vlan.Demux
	fdb    *fdb  // the LAN bridge's, shared by the data planes
	ptp    []int // switch ports with timestamping on
	dc     dsa.Config

	mu     sync.Mutex
	planes []*dataPlane
}

// build makes the router for cfg with lanMAC and wanMAC as its addresses and pool as the pool of
// the frames it generates.
func build(cfg Config, lanMAC, wanMAC frame.MAC, pool *frame.Pool) (*topology, error) {
	tg, err := cfg.check()
	if err != nil {
		return nil, err
	}
	t := &topology{cfg: cfg, tagger: tg, pool: pool, fdb: newFDB(256)}
	for _, name := range cfg.PTP {
		t.ptp = append(t.ptp, swIndex(name))
	}
	t.dc = dsa.Config{Tagger: tg, Ports: numSwPorts}
	if len(t.ptp) > 0 && kszTimestamps(tg) {
		t.dc.TxFlags = dsa.DestTimestamp // a KSZ switch with hardware timestamping wants the field on every frame
	}

	demux := vlan.NewDemux(numPorts, vlan.Parser{})
	if err := demux.Add(vlan.Interface{ID: ifLAN, Port: portLAN}); err != nil {
		return nil, err
	}
	wan := vlan.Interface{ID: ifWAN, Port: portWAN}
	if cfg.WANVID != 0 {
		wan.Outer = vlan.C(uint16(cfg.WANVID))
	}
	if err := demux.Add(wan); err != nil {
		return nil, err
	}
	ifaces := []fwd.Iface{
		{Name: "br-lan", MAC: lanMAC, Addrs: []netip.Prefix{netip.PrefixFrom(addr(lanRouterIP), 24)}},
		{Name: wanIfName(cfg), MAC: wanMAC, Addrs: []netip.Prefix{netip.PrefixFrom(addr(wanRouterIP), 24)}},
	}

	// Next hops: 0 the ISP's gateway, 1 the LAN's subnet, 2 the WAN's, all resolved by ARP (each
	// host of a subnet the table resolves gets a next hop of its own, from hostNextHops, and a /32
	// route).
	nexthops := new(fib.NextHops)
	routes := fib.New()
	t.routes = routes
	t.table, err = neigh.New(&neigh.Config{
		Ifaces:   []neigh.Iface{{MAC: lanMAC, Addrs: ifaces[ifLAN].Addrs}, {MAC: wanMAC, Addrs: ifaces[ifWAN].Addrs}},
		NextHops: nexthops, Pool: pool, Now: cfg.now, Hosts: neigh.FIBHosts(routes), HostNextHops: hostNextHops,
	})
	if err != nil {
		return nil, err
	}
	if err := routes.Apply([]fib.Change{
		{Prefix: netip.MustParsePrefix("0.0.0.0/0"), NextHop: 0},
		{Prefix: ifaces[ifLAN].Addrs[0].Masked(), NextHop: 1},
		{Prefix: ifaces[ifWAN].Addrs[0].Masked(), NextHop: 2},
	}); err != nil {
		return nil, err
	}
	if err := t.table.AddNextHop(0, ifWAN, gatewayIP); err != nil {
		return nil, err
	}
	if err := t.table.AddSubnet(1, ifLAN); err != nil {
		return nil, err
	}
	if err := t.table.AddSubnet(2, ifWAN); err != nil {
		return nil, err
	}
	t.demux = demux
	t.router, err = fwd.New(demux, &fwd.Config{Ifaces: ifaces, Routes: routes, NextHops: nexthops, Pool: pool, HoldUnresolved: true})
	return t, err
}

// hostNextHops are the next-hop indices the neighbour table gives the hosts of the connected
// subnets: every host of both /24s.
var hostNextHops = neigh.IndexRange{First: 16, Count: 2 * 254}

func wanIfName(cfg Config) string {
	if cfg.WANVID != 0 {
		return fmt.Sprintf("wan.%d", cfg.WANVID)
	}
	return "wan"
}

func kszTimestamps(t dsa.Tagger) bool { return t.Name() == "ksz9477" || t.Name() == "lan937x" }

func addr(a uint32) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(a >> 24), byte(a >> 16), byte(a >> 8), byte(a)})
}

// Bridge drop reasons: what the data plane could not hand to the conduit after routing.
const (
	dropFDBMiss = iota // unicast to a MAC the bridge learnt no switch port for (a real bridge would flood it)
	dropNoRoom         // the conduit batch was full (the batches are sized so that it never is)
	numBridgeReasons
)

var bridgeReasonNames = [numBridgeReasons]string{"fdb-miss", "no-room"}

// The LAN bridge floods what is broadcast or multicast (the router's ARP requests and
// announcements) to lan1-lan4: the frame to lan1 and a copy to each other LAN port, each tagged for
// its port (every tag format can address one port; some could take a port mask, dsa.SendTo, which
// the example does not use). It does so for the frames the neighbour table sends (the resolver's
// ports, planePort), whose buffers are the router's pool; unicast to a MAC it never learnt is
// dropped as fdb-miss: the router only sends unicast to hosts that answered its ARP, and their
// answers taught the bridge their ports.

// dataPlane is one worker's pipeline: conduit demux, bridge ingress (learning), fwd (IPv4
// checks, route lookup, rewrite, ICMP errors, echo replies), bridge egress (switch port by learnt
// MAC), conduit tagging and one Send on the conduit per batch (and one more for the frames the
// router generated, which live in its own pool). Beside fwd, its neighbour resolver (app.Resolver)
// takes the ARP frames for the router and the frames of unresolved neighbours; what the resolver
// sends (ARP, held frames once resolved, ICMP host unreachable) goes through the same bridge and
// tagging, LAN broadcasts flooded (planePort).
//
// A dataPlane belongs to one goroutine: step, poll and flush must not be called concurrently. Each
// has its own Conduit and resolver; the FDB and the neighbour table are the topology's, shared.
// Counters are published by flush for any goroutine to read.
type dataPlane struct {
	t        *topology
	fw       *fwd.Worker
	trace    *ops.TraceHook // the packet trace's hook of fw (Trace.Hook); nil: none
	conduit  *dsa.Conduit
	eth0     xmit.Port
	fdb      *fdb
	reinsert bool               // put a VLAN tag the port reported out of band back into the bytes before decoding
	pend     *frame.Batch       // forwarded frames and echo replies for the conduit (the received batch's arena)
	gen      *frame.Batch       // the router's ICMP errors and fragments for the conduit (its pool's arena)
	side     *frame.Batch       // what the resolver sends, bridged (planePort)
	toPort   [numSwPorts]uint16 // switch port -> router port
	isLAN    [numSwPorts]bool
	res      *app.Resolver
	ports    []xmit.Port // the resolver's ports: portLAN and portWAN through the bridge (planePort)
	lastPoll time.Time

	drops      [numBridgeReasons]uint64
	flooded    uint64 // copies the LAN bridge made of broadcast frames (the originals not counted)
	pubDrop    [numBridgeReasons]atomic.Uint64
	pubFlooded atomic.Uint64
	pubLocal   atomic.Uint64 // the resolver's Discarded: local frames other than ARP, released
	pubARPDrop atomic.Uint64 // the resolver's ARPDrops
}

// planePort is the data plane's router port p (portLAN, portWAN) as the resolver sends on it: Send
// bridges the batch to switch ports (flooding LAN broadcasts), tags it and sends it on the conduit.
type planePort struct {
	d *dataPlane
	p int
}

func (p *planePort) Name() string                     { return [numPorts]string{"br-lan", "wan"}[p.p] }
func (p *planePort) Recv(b *frame.Batch) (int, error) { return 0, nil }
func (p *planePort) Stats() xmit.Stats                { return xmit.Stats{} }
func (p *planePort) Close() error                     { return nil }

// Send implements xmit.Port; it takes every frame of b (b is empty afterwards).
func (p *planePort) Send(b *frame.Batch) (int, error) {
	d := p.d
	n := len(b.Frames)
	d.side.Adopt(b)
	var flood *frame.Pool
	if b.Owner == frame.Owner(d.t.pool) {
		flood = d.t.pool
	}
	d.bridge(b, d.side, p.p == portLAN, swWAN, flood)
	if len(d.side.Frames) > 0 {
		d.conduit.Send(d.side, nil)
		d.eth0.Send(d.side)
	}
	return n, nil
}

// newDataPlane makes a worker's pipeline sending on eth0.
func (t *topology) newDataPlane(batch int, eth0 xmit.Port) (*dataPlane, error) {
	c, err := dsa.NewConduit(t.dc)
	if err != nil {
		return nil, err
	}
	for _, u := range t.ptp {
		if err := c.EnableTimestamps(u, true); err != nil {
			return nil, err
		}
	}
	d := &dataPlane{
		t: t, fw: t.router.NewWorker(batch), conduit: c, eth0: eth0, fdb: t.fdb,
		pend: frame.NewBatch(batch), gen: frame.NewBatch(2 * 4 * batch), // fwd's generated batches hold 4 batches each
		res: app.NewResolver(t.table, t.demux, batch),
	}
	d.side = frame.NewBatch(numLANPorts * max(4*batch, 256)) // the resolver's batches (ARP: 256), flooded
	d.ports = []xmit.Port{&planePort{d, portLAN}, &planePort{d, portWAN}}
	for u := 0; u < numSwPorts; u++ {
		d.toPort[u], d.isLAN[u] = portLAN, u < numLANPorts
	}
	d.toPort[swWAN] = portWAN
	t.mu.Lock()
	t.planes = append(t.planes, d)
	t.mu.Unlock()
	return d, nil
}

// step forwards one batch received on the conduit; in is empty afterwards.
func (d *dataPlane) step(in *frame.Batch) {
	if d.reinsert {
		d.inBand(in)
	}
	d.conduit.Recv(in, nil) // tags stripped, Frame.Port = switch port; bad tags counted and freed
	fr := in.Frames
	mem := in.Mem
	for i := range fr {
		f := &fr[i]
		u := f.Port // < numSwPorts: the conduit dropped the others
		if d.isLAN[u] {
			d.fdb.learn(mem[f.Off+6:f.Off+12], u) // the conduit kept at least an Ethernet header
		}
		f.Port = d.toPort[u]
	}
	d.pend.Adopt(in)
	o := d.fw.Process(vlan.PerFramePort, in)
	d.bridge(o.Egress[portLAN], d.pend, true, 0, nil)
	d.bridge(o.Egress[portWAN], d.pend, false, swWAN, nil)
	if len(d.pend.Frames) > 0 {
		d.conduit.Send(d.pend, nil) // tag toward Frame.Out; failures counted and freed
		d.eth0.Send(d.pend)         // one Send on the conduit per batch
	}
	if len(o.Generated[portLAN].Frames)+len(o.Generated[portWAN].Frames) > 0 {
		d.gen.Adopt(o.Generated[portLAN])
		d.bridge(o.Generated[portLAN], d.gen, true, 0, nil)
		d.bridge(o.Generated[portWAN], d.gen, false, swWAN, nil)
		if len(d.gen.Frames) > 0 {
			d.conduit.Send(d.gen, nil)
			d.eth0.Send(d.gen) // of another arena than the port's on a real back-end: copied
		}
	}
	// ARP for the router goes to the neighbour table, frames of unresolved neighbours are held;
	// what that answers or resolves goes out at once.
	if len(o.Local.Frames)+len(o.Unresolved.Frames) > 0 {
		d.res.Take(o)
		d.poll()
	}
}

// poll runs the neighbour table's timers and sends what it made: requests, replies, held frames
// that resolved, host unreachables (through planePort).
func (d *dataPlane) poll() { d.res.Poll(d.fw, d.ports) }

// bridge moves every frame of b (one of fwd's output batches) to dst, of b's arena, with Frame.Out
// set to its switch port: the WAN's (swPort), or on the LAN bridge the one learnt for the
// destination MAC; with flood (the pool of b's buffers) a LAN broadcast or multicast goes to lan1
// and a copy of it, from flood, to each other LAN port. Frames it cannot place are counted and
// released. b is empty afterwards.
func (d *dataPlane) bridge(b, dst *frame.Batch, lan bool, swPort uint16, flood *frame.Pool) {
	fr := b.Frames
	k := 0 // fr[:k]: dropped
	for i := range fr {
		f := &fr[i]
		u := swPort
		if lan {
			if flood != nil && b.Mem[f.Off]&1 != 0 && d.floodCopies(b, *f, dst, flood) {
				u = swLAN1 // the frame itself: lan1, its copies went to the others
			} else if p, ok := d.fdb.lookup(b.Mem[f.Off : f.Off+6]); ok {
				u = p
			} else {
				d.drops[dropFDBMiss]++
				fr[k], fr[i] = fr[i], fr[k]
				k++
				continue
			}
		}
		f.Out = u
		if !dst.Append(*f) {
			d.drops[dropNoRoom]++
			fr[k], fr[i] = fr[i], fr[k]
			k++
		}
	}
	if k > 0 && b.Owner != nil {
		b.Owner.Release(fr[:k])
	}
	b.Frames = fr[:0]
}

// floodCopies appends to dst a copy of frame f (of b) for each LAN port but lan1, in buffers of
// pool (dst's arena), and reports whether dst had room for them and f; a copy the pool has no
// buffer for is not made.
func (d *dataPlane) floodCopies(b *frame.Batch, f frame.Frame, dst *frame.Batch, pool *frame.Pool) bool {
	if dst.Space() < numLANPorts {
		return false
	}
	src := f.Data(b.Mem)
	for u := swLAN1 + 1; u < swLAN1+numLANPorts; u++ {
		if n, _ := pool.Alloc(dst, 1); n == 0 {
			break
		}
		c := &dst.Frames[len(dst.Frames)-1]
		c.Resize(len(src))
		copy(c.Data(dst.Mem), src)
		c.Flags, c.TPID, c.TCI, c.L3, c.Out = f.Flags, f.TPID, f.TCI, f.L3, uint16(u)
		d.flooded++
	}
	return true
}

// inBand puts the VLAN tag of frames whose port reported it out of band (frame.FlagVLAN: AF_PACKET
// takes the outer 802.1Q tag off, and a tag_8021q switch tag is one) back into their bytes, where
// the tagger reads it. A frame without headroom for it keeps the flag and fails the tag decode.
func (d *dataPlane) inBand(in *frame.Batch) {
	for i := range in.Frames {
		if in.Frames[i].Flags&frame.FlagVLAN != 0 {
			vlan.Reinsert(in, i)
		}
	}
}

// flush publishes the counters.
func (d *dataPlane) flush() {
	d.fw.Flush()
	d.res.Flush()
	for i, v := range d.drops {
		d.pubDrop[i].Store(v)
	}
	d.pubFlooded.Store(d.flooded)
	d.pubLocal.Store(d.res.Discarded)
	d.pubARPDrop.Store(d.res.ARPDrops)
}

// planeCounts is what the data planes counted besides fwd and the conduits, summed.
type planeCounts struct {
	drops    [numBridgeReasons]uint64 // bridge drops by reason
	local    uint64                   // local frames other than ARP, released
	flooded  uint64                   // copies of LAN broadcasts
	arpDrops uint64                   // ARP frames the resolvers could not give their header
}

// planeCounts sums the published counters of every data plane.
func (t *topology) planeCounts() (c planeCounts) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, d := range t.planes {
		for i := range c.drops {
			c.drops[i] += d.pubDrop[i].Load()
		}
		c.local += d.pubLocal.Load()
		c.flooded += d.pubFlooded.Load()
		c.arpDrops += d.pubARPDrop.Load()
	}
	return c
}

// portStats sums switch port u's counters over the data planes' conduits.
func (t *topology) portStats(u int) (s dsa.PortStats) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, d := range t.planes {
		p := d.conduit.Stats(u)
		s.RxFrames += p.RxFrames
		s.RxBytes += p.RxBytes
		s.RxTrapped += p.RxTrapped
		s.RxPTP += p.RxPTP
		s.TxFrames += p.TxFrames
		s.TxBytes += p.TxBytes
	}
	return s
}

// conduitDrops sums the conduits' receive and transmit drops by reason.
func (t *topology) conduitDrops() (rx, tx [dsa.NumReasons]uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, d := range t.planes {
		for r := range dsa.NumReasons {
			rx[r] += d.conduit.RxDrops(r)
			tx[r] += d.conduit.TxDrops(r)
		}
	}
	return rx, tx
}
