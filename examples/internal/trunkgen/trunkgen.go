// Package trunkgen is the synthetic traffic of the VLAN-trunk examples (vlanrouter, lagrouter): the
// address plan (VLAN i is VID 100+i with subnet 10.0.i.0/24; the upstream is 198.18.0.0/15) and a
// generator that plays every host, sends tagged frames upstream and untagged frames down, a share
// of them bad on purpose (TTL 1, an unknown VLAN, a broken checksum), and sinks what the router
// sends back, checking every frame (Generator.Check) and counting it by kind (SinkCounts); its hosts
// and the upstream gateway answer the router's ARP requests. BuildRouter makes the router both
// examples share: the forwarding stage with a neighbour table beside it that resolves every next
// hop by ARP.
package trunkgen

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/wirespeed/wirespeed/examples/internal/app"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/vlan"
	"github.com/wirespeed/wirespeed/xmit"
)

// IfUplink is the uplink's interface ID; VLAN sub-interface i (1..VLANs) has ID i.
const IfUplink = 0

// VID is the VLAN ID of sub-interface i.
func VID(i int) uint16 { return uint16(100 + i) }

// RouterMAC is the router's address on interface id; HostMAC the address of host h on VLAN i;
// GatewayMAC the upstream router's.
func RouterMAC(id int) frame.MAC { return frame.MAC{0x02, 0x77, 0x73, 0x00, byte(id >> 8), byte(id)} }

// HostMAC is the address of host h on VLAN i.
func HostMAC(i, h int) frame.MAC { return frame.MAC{0x02, 0x68, 0x6f, byte(i), 0x00, byte(h)} }

// GatewayMAC is the upstream gateway's address.
var GatewayMAC = frame.MAC{0x02, 0x67, 0x77, 0x00, 0x00, 0x01}

// Config says where the generator's frames come from and go.
type Config struct {
	Pool  *frame.Pool
	VLANs int     // VLAN sub-interfaces (1..VLANs)
	Batch int     // frames per batch
	Rate  int     // frames/s per direction (0: as fast as the router takes them)
	Bad   float64 // share of frames the router must drop
	// TrunkSinks are the far ends of the trunk (or of the aggregate's members), UplinkSink the far
	// end of the uplink: what the router sends there is checked and counted.
	TrunkSinks []xmit.Port
	UplinkSink xmit.Port
	Neighbours app.Neighbours       // the router's static next-hop MACs (Plan.Neighbours)
	Gateway    netip.Addr           // the router's gateway on the uplink (Plan.Gateway; zero: DefaultGateway)
	OwnRoutes  bool                 // the router has a routes file: a frame's egress interface is not checked against its destination
	SendUp     func(b *frame.Batch) // tagged frames from the VLAN hosts toward the router
	SendDown   func(b *frame.Batch) // untagged frames from the upstream toward the router
	// Until (tests; nil: none) keeps Run going after ctx ends until it reports true for the far
	// ends' counts so far, at most 60 s from Run's start: a test that checks what a short run
	// must show does not fail because a loaded machine ran it slowly.
	Until func(SinkCounts) bool
}

// Generator plays every host. Run it on one goroutine; Stopped and Drain as documented.
type Generator struct {
	cfg     Config
	rng     *rand.Rand
	n       uint64 // frames built, for the share of bad ones
	badEach uint64
	dsts    int             // downstream traffic goes to hosts .2 to .(1+dsts) of each VLAN
	gw      uint32          // the gateway's address: the generator answers ARP for it on the uplink
	gwMAC   frame.MAC       // the MAC the router sends upstream to (the gateway's, or -nexthop uplink's)
	static  []frame.MAC     // by VLAN: the -nexthop MAC the router sends everything on it to, or zero
	replies [2]*frame.Batch // ARP replies for the trunk and the uplink
	sunk    SinkCounts
	stopped atomic.Bool
}

// New returns a generator.
func New(cfg Config) *Generator {
	gw := cfg.Gateway
	if !gw.IsValid() {
		gw = DefaultGateway
	}
	g := &Generator{cfg: cfg, rng: rand.New(rand.NewPCG(1, 2)), gw: binary.BigEndian.Uint32(gw.AsSlice()),
		gwMAC: cfg.Neighbours.Get("uplink", "", GatewayMAC), static: []frame.MAC{{}}, dsts: downstreamHosts(cfg.VLANs)}
	for i := 1; i <= cfg.VLANs; i++ {
		g.static = append(g.static, cfg.Neighbours.Get(fmt.Sprintf("vlan%d", VID(i)), "trunk", frame.MAC{}))
	}
	g.replies = [2]*frame.Batch{frame.NewBatch(max(cfg.Batch, 64)), frame.NewBatch(max(cfg.Batch, 64))}
	if cfg.Bad > 0 {
		g.badEach = uint64(1 / cfg.Bad)
	}
	return g
}

// Sunk is what the far ends received, by kind. Call it after Drain.
func (g *Generator) Sunk() SinkCounts { return g.sunk }

// Stopped reports whether Run has returned.
func (g *Generator) Stopped() bool { return g.stopped.Load() }

// downstreamHosts is how many hosts of each VLAN the upstream sends to: 250 (.2 to .251), fewer
// with more than 20 VLANs, about 5,000 in all. Every one is a neighbour the router resolves by ARP
// and a /32 route in its table, and fib rebuilds the part of the table a route falls in (all of
// 10.0.0.0/16 here) at every change: 5,000 hosts resolve within the first tenth of a second or so,
// 50,000 would take the router's core for seconds.
func downstreamHosts(vlans int) int { return min(lastHost-firstHost+1, max(2, 5000/max(vlans, 1))) }

// inFlight bounds the frames between the generator and the router: below every queue's depth.
const inFlight = 1536

const frameLen = 64 // with a VLAN tag; untagged frames are 60

// UDP writes an IPv4/UDP packet of total length 46 at d (which must have room).
func UDP(d []byte, src, dst uint32, ttl byte) {
	ip := frame.IPv4(d[:20])
	clear(d[:46])
	ip[0], ip[8], ip[9] = 0x45, ttl, frame.ProtoUDP
	binary.BigEndian.PutUint16(ip[2:], 46)
	binary.BigEndian.PutUint32(ip[12:], src)
	binary.BigEndian.PutUint32(ip[16:], dst)
	ip.SetChecksum()
	binary.BigEndian.PutUint16(d[20:], 40000)
	binary.BigEndian.PutUint16(d[22:], 9)
	binary.BigEndian.PutUint16(d[24:], 26)
}

// fill appends batch-size fresh frames for one direction to b; upstream picks the direction.
func (g *Generator) fill(b *frame.Batch, upstream bool) {
	n, _ := g.cfg.Pool.Alloc(b, g.cfg.Batch)
	for i := len(b.Frames) - n; i < len(b.Frames); i++ {
		g.n++
		bad := g.badEach > 0 && g.n%g.badEach == 0
		kind := (g.n / max(g.badEach, 1)) % 3
		vl := 1 + g.rng.IntN(g.cfg.VLANs)
		ttl := byte(64)
		if bad && kind == 0 {
			ttl = 1
		}
		f := &b.Frames[i]
		if upstream {
			f.Resize(frameLen)
			d := b.Bytes(i)
			e := frame.Ether(d)
			e.SetDst(RouterMAC(vl))
			e.SetSrc(HostMAC(vl, 2))
			vid := VID(vl)
			if bad && kind == 1 {
				vid = 4000 // no such VLAN on the trunk
			}
			binary.BigEndian.PutUint16(d[12:], vlan.TPID8021Q)
			binary.BigEndian.PutUint16(d[14:], vid)
			binary.BigEndian.PutUint16(d[16:], frame.TypeIPv4)
			// 10.0.vl.2 → 198.18.0.0/15 (the benchmarking range), random host.
			UDP(d[18:], 0x0a000002|uint32(vl)<<8, 0xc6120000|g.rng.Uint32()&0x1ffff, ttl)
			if bad && kind == 2 {
				d[18+10] ^= 0xff
			}
		} else {
			f.Resize(frameLen - 4)
			d := b.Bytes(i)
			e := frame.Ether(d)
			e.SetDst(RouterMAC(IfUplink))
			e.SetSrc(GatewayMAC)
			e.SetType(frame.TypeIPv4)
			UDP(d[14:], 0xc6120000|g.rng.Uint32()&0x1ffff, 0x0a000000|uint32(vl)<<8|uint32(firstHost+g.rng.IntN(g.dsts)), ttl)
			if bad && kind != 0 {
				d[14+10] ^= 0xff
			}
		}
	}
}

// sink checks, counts and frees whatever the router sent to the hosts; it reports whether anything
// came.
func (g *Generator) sink(b *frame.Batch) bool {
	got := false
	for _, h := range g.cfg.TrunkSinks {
		got = g.sinkPort(b, h, false) || got
	}
	if g.cfg.UplinkSink != nil {
		got = g.sinkPort(b, g.cfg.UplinkSink, true) || got
	}
	return got
}

func (g *Generator) sinkPort(b *frame.Batch, h xmit.Port, uplink bool) bool {
	got := false
	side, send := 0, g.cfg.SendUp
	if uplink {
		side, send = 1, g.cfg.SendDown
	}
	rb := g.replies[side]
	for {
		n, _ := h.Recv(b)
		if n == 0 {
			return got
		}
		got = true
		for i := range b.Frames {
			switch v, id, tpa := g.check(&b.Frames[i], b.Bytes(i), uplink); v {
			case SinkForwarded:
				g.sunk.Forwarded++
			case SinkTimeExceeded:
				g.sunk.TimeExceeded++
			case SinkUnreachable:
				g.sunk.Unreachable++
			case SinkARP:
				g.sunk.ARP++
				// The hosts answer while the generator runs; after it stopped (Drain) the
				// router has stopped too, and an answer would never be read.
				if !g.stopped.Load() && rb.Space() > 0 && g.reply(rb, id, tpa) {
					g.sunk.ARPReplies++
				}
			default:
				g.sunk.Bad++
			}
		}
		b.Free()
		if len(rb.Frames) > 0 {
			send(rb) // empties rb; the hosts' Stats count them as generated
		}
	}
}

// Run generates until ctx ends (and Config.Until holds). Run it on its own goroutine; Stopped
// reports when it returned.
func (g *Generator) Run(ctx context.Context) {
	defer g.stopped.Store(true)
	up, down, sb := frame.NewBatch(g.cfg.Batch), frame.NewBatch(g.cfg.Batch), frame.NewBatch(g.cfg.Batch)
	start := time.Now()
	var sent uint64
	spins := 0
	var asked time.Time // when Until last said no: it is asked at most once a millisecond
	more := func() bool {
		if g.cfg.Until == nil {
			return false
		}
		now := time.Now()
		if now.Sub(asked) < time.Millisecond {
			return true
		}
		asked = now
		return !g.cfg.Until(g.sunk) && now.Sub(start) < 60*time.Second
	}
	for ctx.Err() == nil || more() {
		g.sink(sb)
		// Self-clocking: keep fewer frames in flight than any queue holds, so the generator never
		// overruns the router (frames it could not queue would be counted, but generating them is
		// wasted work the router's core could use).
		if g.cfg.Pool.InUse()+2*g.cfg.Batch > inFlight {
			if spins++; spins < 32 {
				runtime.Gosched()
			} else {
				time.Sleep(10 * time.Microsecond)
			}
			continue
		}
		spins = 0
		g.fill(up, true)
		g.cfg.SendUp(up)
		g.fill(down, false)
		g.cfg.SendDown(down)
		sent += uint64(g.cfg.Batch)
		if g.cfg.Rate > 0 {
			due := start.Add(time.Duration(float64(sent) / float64(g.cfg.Rate) * float64(time.Second)))
			if d := time.Until(due); d > 0 {
				time.Sleep(d)
			}
		}
	}
}

// Drain sinks until the hosts' queues stay empty (call it after the router stopped).
func (g *Generator) Drain() {
	sb := frame.NewBatch(g.cfg.Batch)
	for g.sink(sb) {
	}
}
