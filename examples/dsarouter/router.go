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
	"github.com/wirespeed/wirespeed/fib"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/fwd"
	"github.com/wirespeed/wirespeed/vlan"
	"github.com/wirespeed/wirespeed/xmit"
)

// Config is the example's configuration.
type Config struct {
	Duration time.Duration
	Interval time.Duration
	Tagger   string   // dsa tag protocol of the switch
	WANVID   int      // 802.1Q VID on the WAN port (0: untagged)
	PTP      []string // switch ports with PTP receive timestamping on
	Batch    int
	Rate     int     // generator rate limit, frames/s (0: as fast as the router takes them)
	Bad      float64 // share of generated frames the router must drop

	// minDelivered (tests): keep running past ctx until the switch has delivered at least this many
	// frames out of the WAN port and out of lan4, so that a short test on a loaded machine still sees
	// every kind of frame (bounded by 60 s).
	minDelivered uint64
}

func defaultConfig() Config {
	return Config{Duration: 5 * time.Second, Interval: time.Second, Tagger: "edsa", Batch: 64, Bad: 0.01}
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
// the WAN is 203.0.113.0/24 with the ISP's gateway at .1; the "internet" is 198.18.0.0/15.
const (
	lanNet      = 0xc0a80100
	lanRouterIP = lanNet | 1
	hostsPerLAN = 4
	netInternet = 0xc6120000
	maskNet     = 0x1ffff
)

var (
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

// topology is the router and its links, built for a config.
type topology struct {
	cfg     Config
	pool    *frame.Pool
	tagger  dsa.Tagger
	eth0    *xmit.MemPort // the router's end of the conduit link
	swEnd   *xmit.MemPort // the switch's end (the generator)
	conduit *dsa.Conduit
	router  *fwd.Router
	fdbCap  int
	ptp     []int // switch ports with timestamping on

	mu   sync.Mutex
	rtrs []*dataPlane
}

func build(cfg Config) (*topology, error) {
	tg, err := dsa.ByName(cfg.Tagger)
	if err != nil {
		return nil, fmt.Errorf("-tagger: %w (usable: %s)", err, strings.Join(usableTaggers(), ", "))
	}
	if err := usableTagger(tg); err != nil {
		return nil, fmt.Errorf("-tagger: %w (usable: %s)", err, strings.Join(usableTaggers(), ", "))
	}
	if cfg.WANVID < 0 || cfg.WANVID > vlan.VIDMax {
		return nil, fmt.Errorf("-wan-vid %d out of range 0-%d", cfg.WANVID, vlan.VIDMax)
	}
	if cfg.Batch < 1 || cfg.Batch > 256 {
		return nil, fmt.Errorf("-batch %d out of range 1-256", cfg.Batch)
	}
	t := &topology{cfg: cfg, tagger: tg, fdbCap: 256}
	for _, name := range cfg.PTP {
		u := -1
		for i, n := range swNames {
			if n == name {
				u = i
			}
		}
		if u < 0 {
			return nil, fmt.Errorf("-ptp: no switch port %q (ports: %s)", name, strings.Join(swNames[:], ", "))
		}
		t.ptp = append(t.ptp, u)
	}
	t.pool, err = frame.NewPool(&frame.PoolConfig{Buffers: 8192})
	if err != nil {
		return nil, err
	}
	t.eth0, t.swEnd = xmit.Pipe(t.pool, &xmit.PipeConfig{Names: [2]string{"eth0", "switch-cpu"}, Depth: 4096})

	dc := dsa.Config{Tagger: tg, Ports: numSwPorts}
	if len(t.ptp) > 0 && kszTimestamps(tg) {
		dc.TxFlags = dsa.DestTimestamp // a KSZ switch with hardware timestamping wants the field on every frame
	}
	if t.conduit, err = dsa.NewConduit(dc); err != nil {
		return nil, err
	}
	for _, u := range t.ptp {
		if err := t.conduit.EnableTimestamps(u, true); err != nil {
			return nil, err
		}
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
	ifaces := []fwd.Iface{{Name: "br-lan", MAC: lanMAC}, {Name: wanIfName(cfg), MAC: wanMAC}}

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
	t.router, err = fwd.New(demux, &fwd.Config{Ifaces: ifaces, Routes: routes, NextHops: nexthops, Pool: t.pool})
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

// Bridge drop reasons: what the LAN bridge could not deliver after routing.
const (
	dropFDBMiss = iota // no learnt switch port for the next hop's MAC (a real bridge would flood)
	numBridgeReasons
)

var bridgeReasonNames = [numBridgeReasons]string{"fdb-miss"}

// dataPlane is one worker's pipeline: conduit demux, bridge ingress (learning), fwd (IPv4
// checks, route lookup, rewrite), bridge egress (switch port by learnt MAC), conduit tagging and
// one Send on the conduit per batch.
//
// A dataPlane belongs to one goroutine: step and flush must not be called concurrently, and its
// FDB is its own (with several workers, give each its own conduit queue and dataPlane; a MAC
// learnt by one is learnt by the others from the hosts' next frames). Counters are published by
// flush for any goroutine to read (bridgeDrops).
type dataPlane struct {
	t       *topology
	fw      *fwd.Worker
	conduit *dsa.Conduit
	eth0    xmit.Port
	fdb     fdb
	pend    *frame.Batch // frames for the conduit, tagged and sent once per batch
	ports   []xmit.Port  // fwd's egress ports: br-lan, wan
	lanOut  egress
	wanOut  egress
	toPort  [numSwPorts]uint16 // switch port -> router port
	isLAN   [numSwPorts]bool
	drops   [numBridgeReasons]uint64
	pubDrop [numBridgeReasons]atomic.Uint64
	learnt  atomic.Int64
}

func (t *topology) newDataPlane(batch int) *dataPlane {
	d := &dataPlane{
		t: t, fw: t.router.NewWorker(batch), conduit: t.conduit, eth0: t.eth0,
		fdb: newFDB(t.fdbCap), pend: frame.NewBatch(batch),
	}
	for u := 0; u < numSwPorts; u++ {
		d.toPort[u], d.isLAN[u] = portLAN, u < numLANPorts
	}
	d.toPort[swWAN] = portWAN
	d.lanOut = egress{d: d, name: "br-lan", bridge: true}
	d.wanOut = egress{d: d, name: wanIfName(t.cfg), swPort: swWAN}
	d.ports = []xmit.Port{&d.lanOut, &d.wanOut}
	t.mu.Lock()
	t.rtrs = append(t.rtrs, d)
	t.mu.Unlock()
	return d
}

// step forwards one batch received on the conduit; in is empty afterwards.
func (d *dataPlane) step(in *frame.Batch) {
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
	d.fw.Forward(vlan.PerFramePort, in, d.ports) // fills d.pend through lanOut and wanOut
	if len(d.pend.Frames) > 0 {
		d.conduit.Send(d.pend, nil) // tag toward Frame.Out; failures counted and freed
		d.eth0.Send(d.pend)         // one Send on the conduit per batch
	}
}

// flush publishes the counters.
func (d *dataPlane) flush() {
	d.fw.Flush()
	for i, v := range d.drops {
		d.pubDrop[i].Store(v)
	}
	d.learnt.Store(int64(d.fdb.n))
}

// egress is one of fwd's egress ports: its Send picks each frame's switch port (the WAN's, or the
// one the LAN bridge learnt for the destination MAC) and moves the frame to the data plane's
// pending conduit batch. It never touches the wire itself.
type egress struct {
	d      *dataPlane
	name   string
	bridge bool
	swPort uint16
	stats  xmit.Counters
}

func (e *egress) Name() string { return e.name }

// Recv: an egress port receives nothing (the conduit does).
func (e *egress) Recv(b *frame.Batch) (int, error) { return 0, nil }

func (e *egress) Send(b *frame.Batch) (int, error) {
	d := e.d
	fr := b.Frames
	if !d.pend.SameArena(b) || d.pend.Space() < len(fr) {
		// Cannot happen: fwd's batches come from the conduit batch pend adopted, and pend holds a
		// whole batch. Keep the Port contract anyway: drop and count.
		e.stats.TxDrop(len(fr))
		b.Free()
		return 0, errors.New("dsarouter: egress batch from another arena")
	}
	k := 0
	for i := range fr {
		f := &fr[i]
		u := e.swPort
		if e.bridge {
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
		d.pend.Append(*f)
	}
	if k > 0 && b.Owner != nil {
		b.Owner.Release(fr[:k])
	}
	e.stats.Tx(len(fr)-k, 0)
	e.stats.TxDrop(k)
	b.Frames = fr[:0]
	return len(fr) - k, nil
}

func (e *egress) Stats() xmit.Stats { return e.stats.Stats() }
func (e *egress) Close() error      { return nil }

var _ xmit.Port = (*egress)(nil)

// bridgeDrops sums the published bridge drops of every data plane.
func (t *topology) bridgeDrops() (drops [numBridgeReasons]uint64, learnt int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, d := range t.rtrs {
		for i := range drops {
			drops[i] += d.pubDrop[i].Load()
		}
		learnt += int(d.learnt.Load())
	}
	return drops, learnt
}
