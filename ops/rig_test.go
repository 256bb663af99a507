package ops_test

import (
	"encoding/binary"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/fib"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/fwd"
	"github.com/wirespeed/wirespeed/neigh"
	"github.com/wirespeed/wirespeed/ops"
	"github.com/wirespeed/wirespeed/vlan"
	"github.com/wirespeed/wirespeed/xmit"
)

// The rig: a router with two in-memory ports, port0 (10.0.1.1/24) and port1 (10.0.2.1/24), a host
// on each (.2, static neighbours), a route to 198.51.100.0/24 through 10.0.2.254 (a gateway that
// never answers ARP) and a blackhole for 192.0.2.0/24.
var (
	hostMAC   = [2]frame.MAC{{2, 0x68, 0, 0, 0, 0}, {2, 0x68, 0, 0, 0, 1}}
	routerMAC = [2]frame.MAC{{2, 0x72, 0, 0, 0, 0}, {2, 0x72, 0, 0, 0, 1}}
	hostAddr  = [2]netip.Addr{netip.MustParseAddr("10.0.1.2"), netip.MustParseAddr("10.0.2.2")}
	gateway   = netip.MustParseAddr("10.0.2.254")
)

const (
	nhHost0 = iota
	nhHost1
	nhGateway
	nhBlackhole
)

type rig struct {
	pool   *frame.Pool
	router *fwd.Router
	table  *neigh.Table
	routes *fib.Table
	ports  []xmit.Port     // the router's ends
	mems   []*xmit.MemPort // the router's ends
	hosts  []*xmit.MemPort
	errs   []*ops.ErrorLog
	w      *fwd.Worker
	in     *frame.Batch
	hb     *frame.Batch
	seq    uint16
	now    atomic.Int64 // the neighbour table's clock, in nanoseconds
}

func newRig(t testing.TB) *rig {
	t.Helper()
	pool, err := frame.NewPool(&frame.PoolConfig{Buffers: 4096})
	if err != nil {
		t.Fatal(err)
	}
	g := &rig{pool: pool, in: frame.NewBatch(64), hb: frame.NewBatch(64)}
	demux := vlan.NewDemux(2, vlan.Parser{})
	var ifaces []fwd.Iface
	var nifs []neigh.Iface
	for i, a := range []string{"10.0.1.1/24", "10.0.2.1/24"} {
		name := []string{"port0", "port1"}[i]
		r, h := xmit.Pipe(pool, &xmit.PipeConfig{Names: [2]string{name, name + "-host"}, Depth: 4096})
		e := new(ops.ErrorLog)
		g.mems, g.hosts, g.errs = append(g.mems, r), append(g.hosts, h), append(g.errs, e)
		g.ports = append(g.ports, ops.CountErrors(r, e))
		if err := demux.Add(vlan.Interface{ID: uint16(i), Port: uint16(i)}); err != nil {
			t.Fatal(err)
		}
		p := netip.MustParsePrefix(a)
		ifaces = append(ifaces, fwd.Iface{Name: name, MAC: routerMAC[i], Addrs: []netip.Prefix{p}})
		nifs = append(nifs, neigh.Iface{MAC: routerMAC[i], Addrs: []netip.Prefix{p}})
	}
	nh := new(fib.NextHops)
	g.routes = fib.New()
	if g.table, err = neigh.New(&neigh.Config{Ifaces: nifs, NextHops: nh, Pool: pool,
		Now: func() time.Time { return time.Unix(0, g.now.Load()) }}); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range 2 {
		must(g.table.AddNextHop(uint32(i), uint16(i), hostAddr[i]))
		must(g.table.AddStatic(uint16(i), hostAddr[i], hostMAC[i]))
		must(g.routes.Insert(netip.PrefixFrom(hostAddr[i], 24).Masked(), uint32(i)))
	}
	must(g.table.AddNextHop(nhGateway, 1, gateway))
	must(g.routes.Insert(netip.MustParsePrefix("198.51.100.0/24"), nhGateway))
	must(nh.Set(nhBlackhole, fib.NextHop{Flags: fib.NextHopDrop}))
	must(g.routes.Insert(netip.MustParsePrefix("192.0.2.0/24"), nhBlackhole))
	g.router, err = fwd.New(demux, &fwd.Config{Ifaces: ifaces, Routes: g.routes, NextHops: nh, Pool: pool, ICMPBurst: 1 << 30})
	must(err)
	g.w = g.router.NewWorker(64)
	t.Cleanup(func() {
		for i := range g.mems {
			g.mems[i].Close()
			g.hosts[i].Close()
		}
	})
	return g
}

func (g *rig) source() *ops.Source {
	src := &ops.Source{Stage: g.router, Neigh: g.table, Routes: g.routes}
	for i, p := range g.ports {
		op := ops.PortOf(p.Name(), p)
		op.Errors = g.errs[i]
		src.Ports = append(src.Ports, op)
	}
	return src
}

// send queues n UDP frames from host p to dst with the given TTL; it allocates nothing.
func (g *rig) send(p, n int, dst netip.Addr, ttl byte) {
	for n > 0 {
		k := min(n, g.hb.Cap())
		g.sendBatch(p, k, dst, ttl)
		n -= k
	}
}

func (g *rig) sendBatch(p, n int, dst netip.Addr, ttl byte) {
	b := g.hb
	got, _ := g.pool.Alloc(b, n)
	for i := len(b.Frames) - got; i < len(b.Frames); i++ {
		g.seq++
		b.Frames[i].Resize(60)
		d := b.Bytes(i)
		e := frame.Ether(d)
		e.SetDst(routerMAC[p])
		e.SetSrc(hostMAC[p])
		e.SetType(frame.TypeIPv4)
		ip := frame.IPv4(d[14:])
		clear(ip[:46])
		ip[0], ip[8], ip[9] = 0x45, ttl, frame.ProtoUDP
		binary.BigEndian.PutUint16(ip[2:], 46)
		binary.BigEndian.PutUint16(ip[4:], g.seq)
		src, da := hostAddr[p].As4(), dst.As4()
		copy(ip[12:16], src[:])
		copy(ip[16:20], da[:])
		binary.BigEndian.PutUint16(ip[20:], 40000)
		binary.BigEndian.PutUint16(ip[22:], 9)
		binary.BigEndian.PutUint16(ip[24:], 26)
		ip.SetChecksum()
	}
	g.hosts[p].Send(b)
}

// forward runs the router until both its ports are empty, publishes its counters and empties the
// hosts' ends; it returns the frames the hosts received. It allocates nothing.
func (g *rig) forward() int {
	for {
		got := false
		for p, port := range g.ports {
			if n, _ := port.Recv(g.in); n > 0 {
				g.w.Forward(uint16(p), g.in, g.ports)
				got = true
			}
		}
		if !got {
			break
		}
	}
	g.w.Flush()
	n := 0
	for _, h := range g.hosts {
		for {
			k, _ := h.Recv(g.in)
			if k == 0 {
				break
			}
			n += k
			g.in.Free()
		}
	}
	return n
}
