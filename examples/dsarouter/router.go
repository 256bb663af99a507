package main

import (
	"errors"
	"fmt"
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

	// minDelivered (tests, mem): keep running past ctx until the switch has delivered at least this
	// many frames out of the WAN port and out of lan4, so that a short test on a loaded machine
	// still sees every kind of frame (bounded by 60 s).
	minDelivered uint64
	// ownPool (tests, mem): the router's pool is not the link's, so that the frames the router
	// generates cross arenas on their way out, as they do on a real back-end.
	ownPool bool
	// ready (tests) is called once the ports are open and the workers started.
	ready func()
}

func defaultConfig() Config {
	return Config{Duration: 5 * time.Second, Interval: time.Second, Tagger: "edsa", Batch: 64, Bad: 0.01,
		Backend: app.Mem, Workers: 1}
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
	switch cfg.Backend {
	case app.Mem:
		if cfg.Conduit != "" {
			return nil, usage("-conduit %s needs -backend afpacket or afxdp (mem runs its own in-memory conduit)", cfg.Conduit)
		}
		if cfg.Workers != 1 {
			return nil, usage("-workers %d: the in-memory conduit has one queue (more workers need -backend afpacket or afxdp)", cfg.Workers)
		}
	case app.AFPacket, app.AFXDP:
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
	pool   *frame.Pool // the router's pool (fwd.Config.Pool): the frames it generates
	router *fwd.Router
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

	// Next hops: 0 the ISP's gateway, 1 an unresolved LAN neighbour (dropped, as a router without
	// an ARP answer would), 2+ one per LAN host: the neighbour table, as /32 routes.
	nexthops := new(fib.NextHops)
	nhs := []fib.NextHopChange{
		{Index: 0, Entry: fib.NextHop{Ifindex: ifWAN, DstMAC: gatewayMAC}},
		{Index: 1, Entry: fib.NextHop{Ifindex: ifLAN, Flags: fib.NextHopUnresolved}},
	}
	changes := []fib.Change{
		{Prefix: netip.MustParsePrefix("0.0.0.0/0"), NextHop: 0},
		{Prefix: netip.MustParsePrefix("192.168.1.0/24"), NextHop: 1},
	}
	for lan := 0; lan < numLANPorts; lan++ {
		for h := 0; h < hostsPerLAN; h++ {
			i := uint32(2 + lan*hostsPerLAN + h)
			nhs = append(nhs, fib.NextHopChange{Index: i, Entry: fib.NextHop{Ifindex: ifLAN, DstMAC: hostMAC(lan, h)}})
			changes = append(changes, fib.Change{Prefix: netip.PrefixFrom(addr(hostIP(lan, h)), 32), NextHop: i})
		}
	}
	if err := nexthops.Apply(nhs); err != nil {
		return nil, err
	}
	routes := fib.New()
	if err := routes.Apply(changes); err != nil {
		return nil, err
	}
	t.router, err = fwd.New(demux, &fwd.Config{Ifaces: ifaces, Routes: routes, NextHops: nexthops, Pool: pool})
	return t, err
}

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
	dropFDBMiss = iota // no learnt switch port for the frame's destination MAC (a real bridge would flood)
	dropNoRoom         // the conduit batch was full (the batches are sized so that it never is)
	numBridgeReasons
)

var bridgeReasonNames = [numBridgeReasons]string{"fdb-miss", "no-room"}

// dataPlane is one worker's pipeline: conduit demux, bridge ingress (learning), fwd (IPv4
// checks, route lookup, rewrite, ICMP errors, echo replies), bridge egress (switch port by learnt
// MAC), conduit tagging and one Send on the conduit per batch (and one more for the frames the
// router generated, which live in its own pool).
//
// A dataPlane belongs to one goroutine: step and flush must not be called concurrently. Each has
// its own Conduit; the FDB is the topology's, shared. Counters are published by flush for any
// goroutine to read.
type dataPlane struct {
	t        *topology
	fw       *fwd.Worker
	conduit  *dsa.Conduit
	eth0     xmit.Port
	fdb      *fdb
	reinsert bool               // put a VLAN tag the port reported out of band back into the bytes before decoding
	pend     *frame.Batch       // forwarded frames and echo replies for the conduit (the received batch's arena)
	gen      *frame.Batch       // the router's ICMP errors and fragments for the conduit (its pool's arena)
	toPort   [numSwPorts]uint16 // switch port -> router port
	isLAN    [numSwPorts]bool

	drops    [numBridgeReasons]uint64
	local    uint64 // frames for the router itself, released: there is no ARP or other local stack
	pubDrop  [numBridgeReasons]atomic.Uint64
	pubLocal atomic.Uint64
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
	}
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
	d.bridge(o.Egress[portLAN], d.pend, true, 0)
	d.bridge(o.Egress[portWAN], d.pend, false, swWAN)
	if n := len(o.Local.Frames) + len(o.Unresolved.Frames); n > 0 {
		d.local += uint64(n)
		o.Local.Free()
		o.Unresolved.Free()
	}
	if len(d.pend.Frames) > 0 {
		d.conduit.Send(d.pend, nil) // tag toward Frame.Out; failures counted and freed
		d.eth0.Send(d.pend)         // one Send on the conduit per batch
	}
	if len(o.Generated[portLAN].Frames)+len(o.Generated[portWAN].Frames) > 0 {
		d.gen.Adopt(o.Generated[portLAN])
		d.bridge(o.Generated[portLAN], d.gen, true, 0)
		d.bridge(o.Generated[portWAN], d.gen, false, swWAN)
		if len(d.gen.Frames) > 0 {
			d.conduit.Send(d.gen, nil)
			d.eth0.Send(d.gen) // of another arena than the port's on a real back-end: copied
		}
	}
}

// bridge moves every frame of b (one of fwd's output batches) to dst, of b's arena, with Frame.Out
// set to its switch port: the WAN's (swPort), or on the LAN bridge the one learnt for the
// destination MAC. Frames it cannot place are counted and released. b is empty afterwards.
func (d *dataPlane) bridge(b, dst *frame.Batch, lan bool, swPort uint16) {
	fr := b.Frames
	k := 0 // fr[:k]: dropped
	for i := range fr {
		f := &fr[i]
		u := swPort
		if lan {
			p, ok := d.fdb.lookup(b.Mem[f.Off : f.Off+6])
			if !ok {
				d.drops[dropFDBMiss]++
				fr[k], fr[i] = fr[i], fr[k]
				k++
				continue
			}
			u = p
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
	for i, v := range d.drops {
		d.pubDrop[i].Store(v)
	}
	d.pubLocal.Store(d.local)
}

// bridgeDrops sums the published bridge drops and released local frames of every data plane.
func (t *topology) bridgeDrops() (drops [numBridgeReasons]uint64, local uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, d := range t.planes {
		for i := range drops {
			drops[i] += d.pubDrop[i].Load()
		}
		local += d.pubLocal.Load()
	}
	return drops, local
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
