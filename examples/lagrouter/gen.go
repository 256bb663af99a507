package main

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/vlan"
)

// generator plays every host: VLAN hosts sending upstream through the aggregate's members, the upstream sending
// to VLAN hosts through the uplink. It also sinks what the router sends them.
type generator struct {
	t       *topology
	cfg     Config
	rng     *rand.Rand
	n       uint64 // frames built, for the share of bad ones
	badEach uint64
	stopped atomic.Bool
	turn    int
}

func newGenerator(t *topology, cfg Config) *generator {
	g := &generator{t: t, cfg: cfg, rng: rand.New(rand.NewPCG(1, 2))}
	if cfg.Bad > 0 {
		g.badEach = uint64(1 / cfg.Bad)
	}
	return g
}

// inFlight bounds the frames between the generator and the router: below every queue's depth.
const inFlight = 1536

const frameLen = 64 // with a VLAN tag; untagged frames are 60

// udp writes an IPv4/UDP packet of total length 46 at d (which must have room).
func udp(d []byte, src, dst uint32, ttl byte) {
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
func (g *generator) fill(b *frame.Batch, upstream bool) {
	n, _ := g.t.pool.Alloc(b, g.cfg.Batch)
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
			e.SetDst(routerMAC(vl))
			e.SetSrc(hostMAC(vl, 2))
			vid := vidOf(vl)
			if bad && kind == 1 {
				vid = 4000 // no such VLAN on the trunk
			}
			binary.BigEndian.PutUint16(d[12:], vlan.TPID8021Q)
			binary.BigEndian.PutUint16(d[14:], vid)
			binary.BigEndian.PutUint16(d[16:], frame.TypeIPv4)
			// 10.0.vl.2 → 198.18.0.0/15 (the benchmarking range), random host.
			udp(d[18:], 0x0a000002|uint32(vl)<<8, 0xc6120000|g.rng.Uint32()&0x1ffff, ttl)
			if bad && kind == 2 {
				d[18+10] ^= 0xff
			}
		} else {
			f.Resize(frameLen - 4)
			d := b.Bytes(i)
			e := frame.Ether(d)
			e.SetDst(routerMAC(ifUplink))
			e.SetSrc(gatewayMAC)
			e.SetType(frame.TypeIPv4)
			udp(d[14:], 0xc6120000|g.rng.Uint32()&0x1ffff, 0x0a000000|uint32(vl)<<8|uint32(2+g.rng.IntN(250)), ttl)
			if bad && kind != 0 {
				d[14+10] ^= 0xff
			}
		}
	}
}

// sink frees whatever the router sent to the hosts; it reports whether anything came.
func (g *generator) sink(b *frame.Batch) bool {
	got := false
	for _, h := range g.t.hosts {
		for {
			n, _ := h.Recv(b)
			if n == 0 {
				break
			}
			got = true
			b.Free()
		}
	}
	return got
}

func (g *generator) run(ctx context.Context) {
	defer g.stopped.Store(true)
	up, down, sb := frame.NewBatch(g.cfg.Batch), frame.NewBatch(g.cfg.Batch), frame.NewBatch(g.cfg.Batch)
	start := time.Now()
	var sent uint64
	spins := 0
	for ctx.Err() == nil {
		g.sink(sb)
		// Self-clocking: keep fewer frames in flight than any queue holds, so the generator never
		// overruns the router (frames it could not queue would be counted, but generating them is
		// wasted work the router's core could use).
		if g.t.pool.InUse()+2*g.cfg.Batch > inFlight {
			if spins++; spins < 32 {
				runtime.Gosched()
			} else {
				time.Sleep(10 * time.Microsecond)
			}
			continue
		}
		spins = 0
		g.fill(up, true)
		// The switch on the far side spreads its frames over the members whose link is up.
		g.turn = (g.turn + 1) % numMembers
		m := g.turn
		if !g.t.hosts[m].LinkUp() {
			m = (m + 1) % numMembers
		}
		g.t.hosts[m].Send(up)
		g.fill(down, false)
		g.t.hosts[memberUplink].Send(down)
		sent += uint64(g.cfg.Batch)
		if g.cfg.Rate > 0 {
			due := start.Add(time.Duration(float64(sent) / float64(g.cfg.Rate) * float64(time.Second)))
			if d := time.Until(due); d > 0 {
				time.Sleep(d)
			}
		}
	}
}

// drain sinks until the hosts' queues stay empty (after the router stopped).
func (g *generator) drain() {
	sb := frame.NewBatch(g.cfg.Batch)
	for g.sink(sb) {
	}
}
